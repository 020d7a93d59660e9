"""Enumerations of the xDSA architecture: domain IDs, sections, address spaces,
data units and fault codes.

These are the only place where these codes are written down; the assembler, the
golden model, the hardware decode ROMs and the ISA reference page import them.
"""

import enum
from dataclasses import dataclass

__all__ = [
    "DID", "DidClass", "did_class", "Section", "AddrSpace", "DataUnit", "UnitInfo",
    "UNIT_INFO", "Fault",
]


class DID(enum.IntEnum):
    """The STANDARD domain IDs of the seed (section 1, execution format)."""
    UNITY = 0b0000_0000
    ZHOUYI = 0b0000_0001
    ARM32 = 0b0000_0010
    ARM64 = 0b0000_0011
    RISCV32 = 0b0000_0100
    RISCV64 = 0b0000_0101
    MIPS32 = 0b0000_0110
    END = 0b0111_1111


class DidClass(enum.Enum):
    UNITY = "unity"          # DID 0: executed by the Unity core
    STANDARD = "standard"    # other STANDARD domains: routed to a domain port
    END = "end"              # last instruction of the program
    CUSTOM = "custom"        # 8'b1xxx_xxxx: vendor-specific, routed to a domain port
    RESERVED = "reserved"    # every other 8'b0xxx_xxxx: faults RESERVED_DID


def did_class(did: int) -> DidClass:
    """Classify an 8-bit domain ID."""
    if not 0 <= did <= 0xFF:
        raise ValueError(f"DID must be an 8-bit value, not {did!r}")
    if did == DID.UNITY:
        return DidClass.UNITY
    if did == DID.END:
        return DidClass.END
    if did & 0x80:
        return DidClass.CUSTOM
    if did in DID._value2member_map_:
        return DidClass.STANDARD
    return DidClass.RESERVED


class Section(enum.IntEnum):
    """OP_SECTION values; every other 6-bit value is reserved."""
    BASE = 0x3F
    AI = 0x00


class AddrSpace(enum.IntEnum):
    """The ADDR SPACE (AS) field. The value 3 is reserved and faults RESERVED_AS."""
    AS16 = 0b00
    AS32 = 0b01
    AS64 = 0b10

    @property
    def bits(self) -> int:
        return (16, 32, 64)[self.value]

    @classmethod
    def from_bits(cls, bits: int) -> "AddrSpace":
        try:
            return cls((16, 32, 64).index(bits))
        except ValueError:
            raise ValueError(f"address space must be 16, 32 or 64 bits, not {bits!r}") from None


@dataclass(frozen=True)
class UnitInfo:
    name: str       # assembler spelling
    bits: int       # element width in bits
    signed: bool
    is_float: bool
    numpy: str      # numpy dtype name used by the golden model ("" for int4)


class DataUnit(enum.IntEnum):
    """UNIT[3:0] codes (DATA_CONVERT note in the seed). Codes 13..15 are reserved."""
    U4 = 0b0000
    U8 = 0b0001
    U16 = 0b0010
    U32 = 0b0011
    U64 = 0b0100
    S4 = 0b0101
    S8 = 0b0110
    S16 = 0b0111
    S32 = 0b1000
    S64 = 0b1001
    FP16 = 0b1010
    FP32 = 0b1011
    FP64 = 0b1100

    @property
    def info(self) -> UnitInfo:
        return UNIT_INFO[self]

    @property
    def bits(self) -> int:
        return UNIT_INFO[self].bits

    @property
    def signed(self) -> bool:
        return UNIT_INFO[self].signed

    @property
    def is_float(self) -> bool:
        return UNIT_INFO[self].is_float

    @property
    def is_int(self) -> bool:
        return not UNIT_INFO[self].is_float

    @property
    def mnemonic(self) -> str:
        return UNIT_INFO[self].name

    @classmethod
    def from_mnemonic(cls, name: str) -> "DataUnit":
        for unit, info in UNIT_INFO.items():
            if info.name == name.lower():
                return unit
        raise ValueError(f"unknown data unit {name!r}; expected one of "
                         + ", ".join(i.name for i in UNIT_INFO.values()))


UNIT_INFO = {
    DataUnit.U4: UnitInfo("u4", 4, False, False, ""),
    DataUnit.U8: UnitInfo("u8", 8, False, False, "uint8"),
    DataUnit.U16: UnitInfo("u16", 16, False, False, "uint16"),
    DataUnit.U32: UnitInfo("u32", 32, False, False, "uint32"),
    DataUnit.U64: UnitInfo("u64", 64, False, False, "uint64"),
    DataUnit.S4: UnitInfo("s4", 4, True, False, ""),
    DataUnit.S8: UnitInfo("s8", 8, True, False, "int8"),
    DataUnit.S16: UnitInfo("s16", 16, True, False, "int16"),
    DataUnit.S32: UnitInfo("s32", 32, True, False, "int32"),
    DataUnit.S64: UnitInfo("s64", 64, True, False, "int64"),
    DataUnit.FP16: UnitInfo("f16", 16, True, True, "float16"),
    DataUnit.FP32: UnitInfo("f32", 32, True, True, "float32"),
    DataUnit.FP64: UnitInfo("f64", 64, True, True, "float64"),
}


class Fault(enum.IntEnum):
    """Precise fault codes. A fault latches its code and the PC of the faulting
    instruction, stops the core, and is visible on the host port. The golden model
    and the RTL raise exactly the same codes."""
    NONE = 0x00
    RESERVED_DID = 0x01        # DID in the RESERVED category
    ILLEGAL_OPCODE = 0x02      # reserved OP_SECTION, or no opcode at this group/code
    RESERVED_BITS = 0x03       # a reserved payload or SYNC_CTRL bit is set
    RESERVED_AS = 0x04         # ADDR SPACE = 2'b11
    RESERVED_UNIT = 0x05       # a UNIT field holds a reserved code (13..15)
    UNSUPPORTED_UNIT = 0x06    # a legal unit (combination) this opcode/config does not support
    ILLEGAL_OPERAND = 0x07     # an operand-table field holds a reserved or impossible value
    ADDRESS_RANGE = 0x08       # an operand byte range lies outside data memory
    OPTABLE_RANGE = 0x09       # the operand table lies outside data memory
    FETCH_RANGE = 0x0A         # an instruction group lies outside memory / misaligned start
    KEY_TIMEOUT = 0x0B         # a key fetch was not satisfied within the bound
    KEY_OVERFLOW = 0x0C        # a key deposit would overflow its 8-bit counter
    DOMAIN_ABSENT = 0x0D       # non-Unity DID with no domain port/handler configured
    UNIMPLEMENTED = 0x0E       # a legal instruction this model/core does not execute
