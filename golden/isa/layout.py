"""Operand-table layouts as a function of the address space.

An operand table is a little-endian bit vector in memory: table byte i holds
table bits [8i+7:8i]. The seed describes every table as a list of slots whose
bit ranges are expressions in AddrSpace (A = 16/32/64) and max(32, A) (M); the
slots of every table in the seed are contiguous from bit 0 upwards, so a table is
written here as an ordered list of slots with a width of "A", "M" or a number of
bits. A slot either holds one value or a packed group written exactly in the
seed's Verilog notation ``{MSB_FIELD[3:0], ..., LSB_FIELD[11:0]}``; the last
listed sub-field is the least significant.

Two rules cover every inconsistency in the seed's packed groups (see
docs/isa-decisions.md, D-TABLE-*):

* a packed group wider than its slot widens the slot to the next multiple of 32
  bits and moves every later slot up;
* a field split over two slots (``SRC_line_stride[23:16]`` and ``[15:0]``) is one
  logical field to the assembler and the decoders.
"""

import re
from dataclasses import dataclass, field as dc_field

from .enums import AddrSpace, DataUnit

__all__ = [
    "Kind", "Slot", "Part", "Table", "TableLayout", "FieldLayout", "SlotLayout",
    "slot", "addr", "word", "ENUMS", "parse_group",
]


class Kind:
    """What a field's value means; chooses how the assembler parses it."""
    ADDR = "addr"       # a byte address (labels allowed)
    UINT = "uint"
    SINT = "sint"       # two's complement
    UNIT = "unit"       # a DataUnit code
    ENUM = "enum"       # a small enumeration (see ENUMS)
    RSVD = "rsvd"       # reserved bits: written as zero, ignored when read


# Small enumerations named by the seed; values are the seed's encodings.
ENUMS = {
    "transfer_mode": {"normal": 0, "immediate": 1, "upsample": 2, "transpose": 3},
    "data_format": {"nhwc": 0, "nchw": 1},
    "padding_mode": {"per_layer": 0, "per_channel": 1},
    "scale_mode": {"imm": 0, "per_channel": 1, "per_element": 2},
    "shift_mode": {"imm": 0, "per_channel": 1, "per_element": 2},
    "mul_mode": {"imm": 0, "per_channel": 1, "per_element": 2},
    "bias_mode": {"imm": 0, "per_channel": 1, "per_element": 2},
}

# Fields whose value is two's complement (the seed calls the ROLL shifts "sign
# data"; clip bounds and zero points are signed in every quantisation scheme).
SIGNED_FIELDS = {
    "clip_min", "clip_max", "izero_imm", "ozero_imm", "shift_c", "shift_h", "shift_w",
    "thres", "imm",
}


def _kind_of(name: str) -> str:
    if name.startswith("rsvd"):
        return Kind.RSVD
    if name.endswith("_unit"):
        return Kind.UNIT
    if name in ENUMS:
        return Kind.ENUM
    if name in SIGNED_FIELDS:
        return Kind.SINT
    return Kind.UINT


@dataclass(frozen=True)
class Part:
    """One sub-field of a packed group: bits [hi:lo] of the logical field `name`."""
    name: str
    hi: int
    lo: int
    fill: bool = False      # an un-sized RSVD that fills the rest of the slot

    @property
    def width(self) -> int:
        return self.hi - self.lo + 1


_PART_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\[\s*(\d+)\s*(?::\s*(\d+)\s*)?\])?\s*$")


def parse_group(text: str) -> tuple:
    """Parse ``{A[3:0], B, C[11:0]}`` into parts listed MSB-first, names lower-cased."""
    text = text.strip()
    if not (text.startswith("{") and text.endswith("}")):
        raise ValueError(f"packed group must be written {{...}}, not {text!r}")
    parts = []
    for item in text[1:-1].split(","):
        m = _PART_RE.match(item)
        if not m:
            raise ValueError(f"cannot parse sub-field {item!r} in {text!r}")
        name, hi, lo = m.group(1).lower(), m.group(2), m.group(3)
        if hi is None:
            parts.append(Part(name, 0, 0, fill=name.startswith("rsvd")))
        else:
            hi = int(hi)
            lo = int(lo) if lo is not None else hi
            if hi < lo:
                raise ValueError(f"bit range [{hi}:{lo}] is reversed in {text!r}")
            parts.append(Part(name, hi, lo))
    return tuple(parts)


@dataclass(frozen=True)
class Slot:
    """A contiguous slot of an operand table.

    `width` is "A" (the address-space width), "M" (max(32, A)) or a bit count.
    `parts` is empty for a slot holding a single value of kind `kind`.
    """
    name: str
    width: object
    parts: tuple = ()
    kind: str = Kind.UINT
    doc: str = ""

    def bits(self, a: int) -> int:
        if self.width == "A":
            base = a
        elif self.width == "M":
            base = max(32, a)
        else:
            base = int(self.width)
        need = sum(p.width for p in self.parts if not p.fill)
        if need > base:
            # Widening rule (D-TABLE-WIDEN): a packed group wider than its slot
            # takes the next multiple of 32 bits.
            base = -(-need // 32) * 32
        return base


def slot(name, width, group=None, *, kind=None, doc=""):
    parts = parse_group(group) if group else ()
    if kind is None:
        kind = _kind_of(name.lower()) if not parts else Kind.UINT
    return Slot(name.lower(), width, parts, kind, doc)


def addr(name, width="A", doc=""):
    """An address slot (A bits unless given)."""
    return Slot(name.lower(), width, (), Kind.ADDR, doc)


def word(name, group=None, width=32, *, kind=None, doc=""):
    """A 32-bit (or given width) slot holding a value or a packed group."""
    return slot(name, width, group, kind=kind, doc=doc)


@dataclass(frozen=True)
class Table:
    """An operand-table description: slots from bit 0 upwards."""
    slots: tuple
    doc: str = ""

    def resolve(self, as_bits: int) -> "TableLayout":
        return _resolve(self, as_bits)


@dataclass(frozen=True)
class SlotLayout:
    name: str
    lo: int
    width: int

    @property
    def hi(self):
        return self.lo + self.width - 1


@dataclass(frozen=True)
class FieldLayout:
    """A logical field of a resolved table: one or more (table_lo, width, value_lo) pieces."""
    name: str
    kind: str
    width: int
    pieces: tuple          # ((table_lo, width, value_lo), ...)
    slot: str
    signed: bool = False
    enum: dict = dc_field(default=None, compare=False, hash=False)

    @property
    def lo(self) -> int:
        return min(p[0] for p in self.pieces)

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1

    def extract(self, table_value: int) -> int:
        v = 0
        for t_lo, w, v_lo in self.pieces:
            v |= ((table_value >> t_lo) & ((1 << w) - 1)) << v_lo
        return v

    def insert(self, table_value: int, value: int) -> int:
        for t_lo, w, v_lo in self.pieces:
            m = (1 << w) - 1
            table_value = (table_value & ~(m << t_lo)) | (((value >> v_lo) & m) << t_lo)
        return table_value

    def to_signed(self, raw: int) -> int:
        if self.signed and raw >> (self.width - 1):
            return raw - (1 << self.width)
        return raw

    def to_raw(self, value: int) -> int:
        """Check `value` against the field's range and return its raw bits."""
        if self.signed:
            lo, hi = -(1 << (self.width - 1)), (1 << (self.width - 1)) - 1
            if not lo <= value <= hi:
                # Accept the raw two's complement spelling as well.
                if 0 <= value <= self.mask:
                    return value
                raise ValueError(f"{self.name} is a signed {self.width}-bit field: "
                                 f"expected {lo}..{hi}, got {value}")
            return value & self.mask
        if not 0 <= value <= self.mask:
            raise ValueError(f"{self.name} is a {self.width}-bit field: expected 0..{self.mask}, "
                             f"got {value}")
        return value

    def describe_bits(self) -> str:
        return ", ".join(f"[{t + w - 1}:{t}]" if w > 1 else f"[{t}]"
                         for t, w, _ in sorted(self.pieces, reverse=True))


@dataclass(frozen=True)
class TableLayout:
    """A table resolved for one address space."""
    as_bits: int
    slots: tuple            # SlotLayout, from bit 0 upwards
    fields: tuple           # FieldLayout, in table order
    bits: int

    @property
    def nbytes(self) -> int:
        return (self.bits + 7) // 8

    def field(self, name: str) -> FieldLayout:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def field_names(self) -> tuple:
        return tuple(f.name for f in self.fields)


def _resolve(table: Table, as_bits: int) -> TableLayout:
    AddrSpace.from_bits(as_bits)   # validates
    slots, pieces, order, meta = [], {}, [], {}
    lo = 0
    for s in table.slots:
        width = s.bits(as_bits)
        slots.append(SlotLayout(s.name, lo, width))
        if not s.parts:
            if s.kind != Kind.RSVD:
                _add_piece(pieces, order, meta, s.name, s.kind, s.name, lo, width, 0)
        else:
            # The last listed sub-field is the least significant: pack upwards from
            # the slot's bit 0. Bits above the listed sub-fields (the seed's
            # "{RSVD, ...}") are reserved.
            if any(p.fill for p in s.parts[1:]):
                raise ValueError(f"slot {s.name}: an un-sized RSVD must come first")
            pos = lo
            for p in reversed(s.parts):
                if p.fill:
                    continue
                kind = _kind_of(p.name)
                if kind != Kind.RSVD:
                    _add_piece(pieces, order, meta, p.name, kind, s.name, pos, p.width, p.lo)
                pos += p.width
            assert pos <= lo + width, (s, as_bits)
        lo += width
    fields = []
    for name in order:
        kind, slot_name = meta[name]
        ps = tuple(sorted(pieces[name], key=lambda p: p[2]))
        width = max(v + w for _, w, v in ps)
        covered = sum(w for _, w, _ in ps)
        if covered != width:
            raise ValueError(f"field {name} has gaps in its bit pieces {ps}")
        fields.append(FieldLayout(name, kind, width, ps, slot_name,
                                  signed=(kind == Kind.SINT), enum=ENUMS.get(name)))
    return TableLayout(as_bits, tuple(slots), tuple(fields), lo)


def _add_piece(pieces, order, meta, name, kind, slot_name, t_lo, width, v_lo):
    if name not in pieces:
        pieces[name] = []
        order.append(name)
        meta[name] = (kind, slot_name)
    else:
        for t, w, v in pieces[name]:
            if not (v_lo + width <= v or v + w <= v_lo):
                raise ValueError(f"field {name} has overlapping pieces")
    pieces[name].append((t_lo, width, v_lo))
