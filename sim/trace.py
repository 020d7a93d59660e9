"""Retire traces from any backend, in one comparable form.

A `TraceEntry` is what the golden model's `Retired.key()` holds: PC, DID (None if
the instruction could not be fetched), section and op_code (None unless Unity),
fault, and the bytes written as sorted, merged (address, length) ranges. The RTL
reports writes as (row, byte-enable) pairs; `ranges_from_rows` turns them into the
same form.
"""

from dataclasses import dataclass

from xdsa.golden.isa import Fault

__all__ = ["TraceEntry", "ranges_from_rows", "normalise_ranges", "from_golden", "RunOutcome",
           "compare"]


@dataclass(frozen=True)
class TraceEntry:
    index: int
    pc: int
    did: object
    section: object
    op_code: object
    fault: Fault
    writes: tuple

    def describe(self):
        what = f"did={self.did:#04x}" if self.did is not None else "unfetched"
        if self.section is not None:
            from xdsa.golden.isa import lookup
            op = lookup(self.section, self.op_code)
            what += f" {op.mnemonic if op else f'section={self.section:#x} op_code={self.op_code:#x}'}"
        text = f"#{self.index} pc={self.pc:#x} {what} fault={Fault(self.fault).name}"
        if self.writes:
            text += " writes=" + ",".join(f"{a:#x}+{n}" for a, n in self.writes)
        return text


def normalise_ranges(ranges):
    """Sorted, merged byte ranges."""
    out = []
    for a, n in sorted(r for r in ranges if r[1]):
        if out and a <= out[-1][0] + out[-1][1]:
            end = max(out[-1][0] + out[-1][1], a + n)
            out[-1] = (out[-1][0], end - out[-1][0])
        else:
            out.append((a, n))
    return tuple(out)


def ranges_from_rows(rows, row_bytes):
    """(row, byte enables) pairs -> merged byte ranges."""
    ranges = []
    for row, be in rows:
        b = 0
        while b < row_bytes:
            if be >> b & 1:
                start = b
                while b < row_bytes and be >> b & 1:
                    b += 1
                ranges.append((row * row_bytes + start, b - start))
            else:
                b += 1
    return normalise_ranges(ranges)


def from_golden(retired):
    """TraceEntries from golden.machine.Retired records."""
    return [TraceEntry(r.index, r.pc, r.did, r.section, r.op_code, Fault(r.fault), normalise_ranges(r.writes))
            for r in retired]


@dataclass
class RunOutcome:
    """What any backend reports about one run."""
    status: str                 # "end", "exit", "fault", "limit"
    fault: Fault
    fault_pc: object
    trace: list                 # TraceEntry
    memory: bytes
    keys: object = None         # 4 x 256 key counts, if the backend reads them
    cycles: int = None
    backend: str = ""
    run_seconds: float = None   # wall-clock time of the simulated run itself (no build, load or read-back)
    detail: str = ""            # why it faulted, when the backend can say (the golden model does)

    @property
    def retired(self) -> int:
        """Instructions retired (the faulting one included)."""
        return len(self.trace)


def compare(golden: RunOutcome, rtl: RunOutcome, *, limit=10):
    """A list of human-readable differences (empty when the runs agree)."""
    diffs = []
    if golden.status != rtl.status:
        diffs.append(f"status: golden {golden.status}, {rtl.backend} {rtl.status}")
    if golden.fault != rtl.fault or golden.fault_pc != rtl.fault_pc:
        gpc = "-" if golden.fault_pc is None else f"{golden.fault_pc:#x}"
        rpc = "-" if rtl.fault_pc is None else f"{rtl.fault_pc:#x}"
        diffs.append(f"fault: golden {Fault(golden.fault).name} at {gpc}, "
                     f"{rtl.backend} {Fault(rtl.fault).name} at {rpc}")
    for k in range(max(len(golden.trace), len(rtl.trace))):
        g = golden.trace[k] if k < len(golden.trace) else None
        r = rtl.trace[k] if k < len(rtl.trace) else None
        if g != r:
            diffs.append(f"retire #{k}: golden {g.describe() if g else 'nothing'}; "
                         f"{rtl.backend} {r.describe() if r else 'nothing'}")
            if len(diffs) >= limit:
                break
    if golden.memory != rtl.memory:
        n = min(len(golden.memory), len(rtl.memory))
        bad = [i for i in range(n) if golden.memory[i] != rtl.memory[i]]
        if len(golden.memory) != len(rtl.memory):
            diffs.append(f"memory size: golden {len(golden.memory)}, {rtl.backend} {len(rtl.memory)}")
        if bad:
            first = bad[0]
            diffs.append(f"memory: {len(bad)} bytes differ, first at {first:#x}: golden "
                         f"{golden.memory[first:first + 8].hex()} {rtl.backend} {rtl.memory[first:first + 8].hex()}")
    if golden.keys is not None and rtl.keys is not None and list(golden.keys) != list(rtl.keys):
        diffs.append("key tables differ")
    return diffs
