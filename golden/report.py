"""Readable output of a run: memory dumps in data units, the retire trace, the outcome."""

import re

from . import units as U
from .isa import DataUnit, Fault

__all__ = ["DumpSpec", "parse_dump", "format_values", "format_retired", "format_outcome"]


class DumpSpec:
    """A region to print: `count` elements of `unit` at `address` (named `label`)."""

    def __init__(self, label, address, count, unit):
        self.label, self.address, self.count, self.unit = label, address, count, unit

    @property
    def nbytes(self):
        return U.nbytes(self.unit, self.count)


def parse_dump(spec: str, symbols: dict) -> DumpSpec:
    """``ADDR:COUNT:UNIT`` where ADDR is a number or a label (``vec+4`` too)."""
    parts = spec.split(":")
    if len(parts) != 3:
        raise ValueError(f"--dump {spec!r}: expected ADDR:COUNT:UNIT, e.g. 0x800:16:s8 or result:4:f32")
    where, count, unit = parts
    m = re.fullmatch(r"\s*([A-Za-z_.$][\w.$]*)?\s*([+-]\s*(?:0x[0-9a-fA-F]+|\d+))?\s*", where)
    try:
        if m and m.group(1):
            if m.group(1) not in symbols:
                raise ValueError(f"--dump {spec!r}: unknown label {m.group(1)!r}")
            address = symbols[m.group(1)] + (int(m.group(2).replace(" ", ""), 0) if m.group(2) else 0)
        else:
            address = int(where, 0)
        count = int(count, 0)
    except ValueError as e:
        if "unknown label" in str(e):
            raise
        raise ValueError(f"--dump {spec!r}: ADDR and COUNT must be numbers (or ADDR a label)") from None
    try:
        u = DataUnit.from_mnemonic(unit)
    except ValueError as e:
        raise ValueError(f"--dump {spec!r}: {e}") from None
    if count < 0:
        raise ValueError(f"--dump {spec!r}: COUNT must be >= 0")
    return DumpSpec(where.strip(), address, count, u)


def format_values(mem, spec: DumpSpec) -> str:
    if spec.address < 0 or spec.address + spec.nbytes > len(mem):
        return (f"{spec.label} ({spec.address:#x}): {spec.count} x {spec.unit.mnemonic} lies outside the "
                f"{len(mem)}-byte memory")
    vals = U.read(mem, spec.address, spec.unit, spec.count)
    if spec.unit.is_float:
        items = [str(v) for v in vals]
    else:
        items = [str(int(v)) for v in vals]
    head = f"{spec.label} ({spec.address:#x}, {spec.count} x {spec.unit.mnemonic}):"
    return head + " " + " ".join(items)


def format_retired(r) -> str:
    did = "----" if r.did is None else f"{r.did:#04x}"
    what = r.mnemonic or ({0x7F: "end"}.get(r.did, "") if r.did is not None else "")
    writes = ", ".join(f"{a:#x}+{n}" for a, n in r.writes)
    text = f"#{r.index:<5d} pc={r.pc:#07x} did={did} {what:16s}"
    if writes:
        text += f" wrote {writes}"
    if r.fault != Fault.NONE:
        text += f"  FAULT {r.fault.name}"
    return text


def format_outcome(result) -> str:
    if result.status == "fault":
        detail = f": {result.detail}" if result.detail else ""
        return f"fault {result.fault.name} at pc {result.fault_pc:#x} after {result.retired} instructions{detail}"
    if result.status == "limit":
        return f"stopped after the instruction limit ({result.retired} instructions)"
    return f"{result.status.upper()} after {result.retired} instructions"
