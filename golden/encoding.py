"""Encoders and decoders: instruction <-> 136-bit value <-> named fields, and
operand table <-> bytes for each address space. Little-endian throughout.
"""

from dataclasses import dataclass

from .isa import (DID_FIELD, PAYLOAD_FIELD, UNITY_FIELDS, SYNC_CTRL_FIELDS, INSTRUCTION_BITS,
                  PAYLOAD_BITS, AddrSpace, Opcode, field_map, lookup)

__all__ = ["Instruction", "SyncCtrl", "UnityInstruction", "encode_table", "decode_table",
           "table_length", "INSTRUCTION_BYTES"]

INSTRUCTION_BYTES = INSTRUCTION_BITS // 8
_U = field_map(UNITY_FIELDS)
_S = field_map(SYNC_CTRL_FIELDS)


@dataclass(frozen=True)
class Instruction:
    """One 136-bit instruction: ``payload[135:8] | did[7:0]``."""
    did: int
    payload: int = 0

    def __post_init__(self):
        if not 0 <= self.did <= 0xFF:
            raise ValueError(f"DID must be 0..255, not {self.did!r}")
        if not 0 <= self.payload < (1 << PAYLOAD_BITS):
            raise ValueError(f"payload must be a 128-bit unsigned value, not {self.payload:#x}")

    @property
    def value(self) -> int:
        return PAYLOAD_FIELD.put(DID_FIELD.put(0, self.did), self.payload)

    @classmethod
    def from_value(cls, value: int) -> "Instruction":
        if not 0 <= value < (1 << INSTRUCTION_BITS):
            raise ValueError(f"an instruction is a 136-bit value, not {value:#x}")
        return cls(DID_FIELD.get(value), PAYLOAD_FIELD.get(value))

    def to_bytes(self) -> bytes:
        return self.value.to_bytes(INSTRUCTION_BYTES, "little")

    @classmethod
    def from_bytes(cls, data: bytes) -> "Instruction":
        if len(data) != INSTRUCTION_BYTES:
            raise ValueError(f"an instruction is {INSTRUCTION_BYTES} bytes, not {len(data)}")
        return cls.from_value(int.from_bytes(data, "little"))


@dataclass(frozen=True)
class SyncCtrl:
    """SYNC_CTRL as named fields (bit positions in isa.SYNC_CTRL_FIELDS)."""
    fetch: bool = False           # sync_en[0]
    deposit: bool = False         # sync_en[1]
    blk: bool = False
    num_keys: int = 1             # 1..8 (encoded as NUM_KEY = n - 1)
    keyr_bar: int = 0
    fetch_key_addr: int = 0
    keyw_bar: int = 0
    deposit_key_addr: int = 0
    rsvd: int = 0

    def encode(self) -> int:
        if not 1 <= self.num_keys <= 8:
            raise ValueError(f"num_keys must be 1..8, not {self.num_keys!r}")
        v = 0
        v = _S["sync_en"].put(v, int(bool(self.fetch)) | (int(bool(self.deposit)) << 1))
        v = _S["blk"].put(v, int(bool(self.blk)))
        v = _S["num_key"].put(v, self.num_keys - 1)
        v = _S["keyr_bar"].put(v, self.keyr_bar)
        v = _S["fetch_key_addr"].put(v, self.fetch_key_addr)
        v = _S["keyw_bar"].put(v, self.keyw_bar)
        v = _S["deposit_key_addr"].put(v, self.deposit_key_addr)
        v = _S["rsvd"].put(v, self.rsvd)
        return v

    @classmethod
    def decode(cls, value: int) -> "SyncCtrl":
        en = _S["sync_en"].get(value)
        return cls(fetch=bool(en & 1), deposit=bool(en & 2), blk=bool(_S["blk"].get(value)),
                   num_keys=_S["num_key"].get(value) + 1,
                   keyr_bar=_S["keyr_bar"].get(value), fetch_key_addr=_S["fetch_key_addr"].get(value),
                   keyw_bar=_S["keyw_bar"].get(value), deposit_key_addr=_S["deposit_key_addr"].get(value),
                   rsvd=_S["rsvd"].get(value))

    @property
    def is_default(self) -> bool:
        return self == SyncCtrl()


@dataclass(frozen=True)
class UnityInstruction:
    """The named fields of a Unity (DID 0) payload."""
    op_section: int
    op_code: int
    addr_space: int = AddrSpace.AS32
    sync: SyncCtrl = SyncCtrl()
    operand_descriptor: int = 0
    rsvd: int = 0

    def encode(self) -> Instruction:
        p = 0
        p = _U["op_section"].put(p, self.op_section)
        p = _U["addr_space"].put(p, self.addr_space)
        p = _U["op_code"].put(p, self.op_code)
        p = _U["rsvd"].put(p, self.rsvd)
        p = _U["sync_ctrl"].put(p, self.sync.encode())
        p = _U["operand_descriptor"].put(p, self.operand_descriptor)
        return Instruction(0, p)

    @classmethod
    def decode(cls, insn: Instruction) -> "UnityInstruction":
        if insn.did != 0:
            raise ValueError(f"not a Unity instruction: DID {insn.did:#04x}")
        p = insn.payload
        return cls(op_section=_U["op_section"].get(p), op_code=_U["op_code"].get(p),
                   addr_space=_U["addr_space"].get(p), sync=SyncCtrl.decode(_U["sync_ctrl"].get(p)),
                   operand_descriptor=_U["operand_descriptor"].get(p), rsvd=_U["rsvd"].get(p))

    @property
    def opcode(self) -> Opcode:
        """The opcode, or None if the section/group/code is not in the ISA."""
        return lookup(self.op_section, self.op_code)

    @property
    def as_bits(self):
        """16/32/64, or None for the reserved AS value."""
        return (16, 32, 64, None)[self.addr_space]


def table_length(op: Opcode, as_bits: int) -> int:
    """The operand table's length in bytes (0 for an opcode without a table)."""
    return op.table.resolve(as_bits).nbytes if op.table else 0


def encode_table(op: Opcode, as_bits: int, values: dict) -> bytes:
    """Encode an operand table from {field name: integer} (missing fields are zero).

    Signed fields accept negative values; unit fields accept DataUnit members.
    """
    if op.table is None:
        if values:
            raise ValueError(f"{op.mnemonic} has no operand table")
        return b""
    layout = op.table.resolve(as_bits)
    known = {f.name: f for f in layout.fields}
    raw = 0
    for name, value in values.items():
        f = known.get(name)
        if f is None:
            raise KeyError(f"{op.mnemonic} has no operand field {name!r}; its fields are "
                           + ", ".join(known))
        raw = f.insert(raw, f.to_raw(int(value)))
    return raw.to_bytes(layout.nbytes, "little")


def decode_table(op: Opcode, as_bits: int, data: bytes, *, signed=True) -> dict:
    """Decode an operand table into {field name: integer}. Signed fields are returned
    as negative numbers when `signed`; reserved bits are ignored."""
    layout = op.table.resolve(as_bits)
    if len(data) < layout.nbytes:
        raise ValueError(f"{op.mnemonic} (AS={as_bits}) needs a {layout.nbytes}-byte operand table, "
                         f"got {len(data)} bytes")
    raw = int.from_bytes(bytes(data[:layout.nbytes]), "little")
    out = {}
    for f in layout.fields:
        v = f.extract(raw)
        out[f.name] = f.to_signed(v) if signed else v
    return out
