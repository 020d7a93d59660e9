"""Operand-table field extraction in hardware, generated from golden/isa.

An engine receives the raw operand table (table bit i is bit i of the table in
memory) and the instruction's AS code. `field()` builds the multiplexer that
picks a named field out of it for AS 16/32/64, from the same layouts the
assembler and the golden model use; nothing about positions is written here.
"""

from amaranth.hdl import Cat, Const, Mux, Value

from xdsa.golden.isa import Kind, DataUnit

__all__ = ["AS_BITS", "table_bits", "field", "field_width", "reserved_unit"]

AS_BITS = (16, 32, 64)


def table_bits(opcodes) -> int:
    """Bits needed to hold the operand table of any of `opcodes` at any AS."""
    return max((op.table.resolve(a).bits for op in opcodes if op.table for a in AS_BITS), default=1)


def field_width(op, name) -> int:
    return max(op.table.resolve(a).field(name).width for a in AS_BITS)


def _extract(table: Value, layout_field, width) -> Value:
    parts = [table[t_lo:t_lo + w] for t_lo, w, _ in sorted(layout_field.pieces, key=lambda p: p[2])]
    v = Cat(*parts)
    return v if len(v) >= width else Cat(v, Const(0, width - len(v)))


def field(table: Value, as_code: Value, op, name: str) -> Value:
    """Field `name` of opcode `op` (unsigned, zero-extended to its widest AS width)."""
    width = field_width(op, name)
    per_as = [_extract(table, op.table.resolve(a).field(name), width) for a in AS_BITS]
    if all(repr(v) == repr(per_as[0]) for v in per_as[1:]):
        return per_as[0]
    return Mux(as_code == 0, per_as[0], Mux(as_code == 1, per_as[1], per_as[2]))


def reserved_unit(table: Value, as_code: Value, op) -> Value:
    """1 when any unit field of `op` holds a reserved code (13..15)."""
    checks = [field(table, as_code, op, f.name) > max(DataUnit)
              for f in op.table.resolve(32).fields if f.kind == Kind.UNIT] if op.table else []
    if not checks:
        return Const(0, 1)
    out = checks[0]
    for c in checks[1:]:
        out = out | c
    return out
