"""Bit positions of the instruction, the Unity payload and SYNC_CTRL.

Everything that encodes or decodes these fields (the Python encoders, the
hardware `lib.data` layouts, the reference page) is derived from the tables below.
"""

from dataclasses import dataclass

__all__ = [
    "BitField", "INSTRUCTION_BITS", "PAYLOAD_BITS", "DID_FIELD", "PAYLOAD_FIELD",
    "UNITY_FIELDS", "SYNC_CTRL_FIELDS", "SYNC_CTRL_BITS", "field_map",
    "GROUP_SIZE", "DID_PACK_BYTES", "PAYLOAD_BYTES", "GROUP_BYTES", "ROW_BYTES",
    "GROUP_ROWS", "END_PADDING_DID",
]


@dataclass(frozen=True)
class BitField:
    name: str
    lo: int
    width: int
    doc: str = ""

    @property
    def hi(self) -> int:
        return self.lo + self.width - 1

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1

    def get(self, value: int) -> int:
        return (value >> self.lo) & self.mask

    def put(self, value: int, field: int) -> int:
        if not 0 <= field <= self.mask:
            raise ValueError(f"{self.name} must fit in {self.width} bits (0..{self.mask}), "
                             f"not {field!r}")
        return (value & ~(self.mask << self.lo)) | (field << self.lo)


INSTRUCTION_BITS = 136
PAYLOAD_BITS = 128

# Execution format: Bit 135:8 payload, bit 7:0 DID.
DID_FIELD = BitField("did", 0, 8, "Domain ID")
PAYLOAD_FIELD = BitField("payload", 8, 128, "128-bit payload")

# Unity payload fields, as offsets into the 128-bit payload (payload bit 0 is
# instruction bit 8; the seed numbers them 135:8).
UNITY_FIELDS = (
    BitField("op_section", 0, 6, "OP_SECTION: 0x3F BASE, 0x00 AI, others reserved"),
    BitField("addr_space", 6, 2, "ADDR SPACE: 0 -> 16 bit, 1 -> 32 bit, 2 -> 64 bit, 3 reserved"),
    BitField("op_code", 8, 14, "OP_CODE: group [13:5], code [4:0]"),
    BitField("rsvd", 22, 10, "RSVD: must be zero"),
    BitField("sync_ctrl", 32, 32, "SYNC_CTRL (see SYNC_CTRL_FIELDS)"),
    BitField("operand_descriptor", 64, 64, "OPERAND DESCRIPTOR: address of the operand table"),
)

# SYNC_CTRL: the seed names the sub-fields but gives no positions; this layout is
# a project decision (docs/isa-decisions.md, D-SYNC).
SYNC_CTRL_BITS = 32
SYNC_CTRL_FIELDS = (
    BitField("fetch_key_addr", 0, 8, "index of the key-table entry to fetch keys from"),
    BitField("deposit_key_addr", 8, 8, "index of the key-table entry to deposit a key to"),
    BitField("keyr_bar", 16, 2, "key table (0..3) to fetch from"),
    BitField("keyw_bar", 18, 2, "key table (0..3) to deposit to"),
    BitField("sync_en", 20, 2, "bit 0: key fetch enable, bit 1: key deposit enable"),
    BitField("blk", 22, 1, "block further instruction fetch until this instruction completes"),
    BitField("num_key", 23, 3, "number of keys to fetch minus one (0 -> 1 key ... 7 -> 8 keys)"),
    BitField("rsvd", 26, 6, "reserved: must be zero"),
)


def field_map(fields):
    return {f.name: f for f in fields}


# Storage format: groups of 32 instructions; a 256-bit DID pack, then 16 rows of
# two 128-bit payloads (the even instruction in the low half of the row).
GROUP_SIZE = 32
ROW_BYTES = 32
DID_PACK_BYTES = 32
PAYLOAD_BYTES = 16
GROUP_ROWS = 1 + GROUP_SIZE // 2
GROUP_BYTES = DID_PACK_BYTES + GROUP_SIZE * PAYLOAD_BYTES     # 544
# A partial last group is padded to a full group: DID END, payload zero.
END_PADDING_DID = 0x7F
