"""xDSA NPU generator.

Subpackages: ``xdsa.golden`` (ISA tables, assembler, golden model), ``xdsa.hw``
(Amaranth RTL), ``xdsa.sim`` (simulation harnesses). The command line is ``xdsa``.
"""

__version__ = "0.1.0"
