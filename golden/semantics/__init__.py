"""Instruction semantics of the golden model, one module per ISA group family.

Importing this package registers every handler in `xdsa.golden.dispatch.HANDLERS`.
"""

from . import control, elementwise, reduction, datamove, matrix  # noqa: F401
