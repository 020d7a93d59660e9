"""The xDSA ISA as code: the single source of truth for encodings and layouts."""

from .enums import *          # noqa: F401,F403
from .fields import *         # noqa: F401,F403
from .layout import *         # noqa: F401,F403
from .opcodes import Opcode, OPCODES, GROUP_NAMES
from .enums import Section

__all__ = ["Opcode", "OPCODES", "GROUP_NAMES", "by_mnemonic", "lookup", "opcode_count"]

_BY_MNEMONIC = {op.mnemonic: op for op in OPCODES}
_BY_KEY = {op.key: op for op in OPCODES}

assert len(_BY_MNEMONIC) == len(OPCODES), "mnemonics must be unique"
assert len(_BY_KEY) == len(OPCODES), "section/group/code must be unique"


def by_mnemonic(mnemonic: str) -> Opcode:
    """The opcode with this assembler mnemonic (KeyError if none)."""
    return _BY_MNEMONIC[mnemonic.lower()]


def lookup(section: int, op_code: int):
    """The opcode at OP_SECTION `section`, OP_CODE `op_code`, or None."""
    return _BY_KEY.get((section, op_code))


def opcode_count(section=None) -> int:
    return sum(1 for op in OPCODES if section is None or op.section == section)
