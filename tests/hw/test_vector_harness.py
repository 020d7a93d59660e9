"""Shared harness of the vector engine tests: cases, the golden side and a pysim
run of `VectorEngine` against a behavioural memory.

A case is one instruction (mnemonic, operand fields, AS) plus the memory image it
runs on. The golden side builds the program with `ProgramBuilder` (the operand
table encoded by `encode_table` at `TABLE_AT`) and executes it on `Machine` with
the configuration's capability (so float units fault UNSUPPORTED_UNIT there too).
The RTL side runs the same table on the engine in pysim; the memory answers each
read exactly one cycle after the request transferred, applies a write at the
edge that transfers it (a read in the same cycle sees the old data) and withholds
``req.ready`` of every port at random. The harness checks the stream rules on the
engine's requests (a request, once valid, holds until it transfers) and that no
request leaves the memory.
"""

from dataclasses import dataclass, field

import numpy as np

from xdsa.golden.builder import ProgramBuilder
from xdsa.golden.encoding import encode_table
from xdsa.golden.isa import DataUnit, by_mnemonic
from xdsa.golden.machine import Machine
from xdsa.hw.capabilities import golden_capability
from xdsa.hw.vector import VectorEngine

from engine_harness import run_commands

TABLE_AT = 0x240                      # the operand table (the program group is at 0)
U = {u.mnemonic: u for u in DataUnit}
INT_UNITS = [u for u in DataUnit if not u.is_float]


@dataclass
class Case:
    name: str
    mnemonic: str
    fields: dict
    as_bits: int = 32
    seed: int = 0
    patches: list = field(default_factory=list)     # [(address, bytes)] written over the random image

    @property
    def op(self):
        return by_mnemonic(self.mnemonic)


def table_bytes(case):
    return encode_table(case.op, case.as_bits, case.fields)


def initial_memory(cfg, case):
    rng = np.random.default_rng(case.seed)
    mem = rng.integers(0, 256, cfg.mem_bytes, dtype=np.uint8)
    for addr, data in case.patches:
        data = bytes(data)[:max(0, cfg.mem_bytes - addr)]
        if data:
            mem[addr:addr + len(data)] = np.frombuffer(data, dtype=np.uint8)
    return mem


def golden(cfg, case):
    """(initial memory, final memory, fault, detail) of one case."""
    b = ProgramBuilder(case.as_bits)
    b.text(0)
    b.insn(case.mnemonic, table=TABLE_AT, **case.fields)
    b.exit()
    b.end()
    image = b.build()
    m = Machine(cfg.mem_bytes, capability=golden_capability(cfg))
    m.mem[:] = initial_memory(cfg, case)
    image.write_into(m.mem)
    tb = table_bytes(case)
    assert bytes(m.mem[TABLE_AT:TABLE_AT + len(tb)]) == tb       # the builder agrees with encode_table
    before = m.mem.copy()
    m.reset(image.start)
    rec = m.step()
    return before, m.mem.copy(), int(rec.fault), rec.detail


def run_rtl(cfg, jobs, *, stall=0.3, seed=1, vcd_name=None, max_cycles=100_000, dut=None):
    """Run `jobs` [(case, initial memory)] back to back on one engine; returns
    [(fault, final memory, bytes written, cycles from command to done)]."""
    dut = dut or VectorEngine(cfg, checks=True)
    return run_commands(dut, cfg, [dut.rd_a, dut.rd_b],
                        [(case.op.mnemonic, case.as_bits, table_bytes(case), before, case.name)
                         for case, before in jobs],
                        stall=stall, seed=seed, vcd_name=vcd_name, max_cycles=max_cycles)


def compare(case, exp, got):
    """Assertion message for a mismatch between golden `exp` and RTL `got`, or None."""
    from xdsa.golden.isa import Fault
    before, want, want_fault, detail = exp
    fault, mem = got[0], got[1]
    if fault != want_fault:
        return f"{case.name}: fault {Fault(fault).name}, golden {Fault(want_fault).name} ({detail})"
    diff = np.flatnonzero(mem != want)
    if len(diff):
        a = diff[0]
        return (f"{case.name}: {len(diff)} bytes differ, first at {a:#x}: RTL {mem[a]:#04x}, golden {want[a]:#04x}, "
                f"before {before[a]:#04x} (differing: {[hex(int(x)) for x in diff[:12]]})")
    return None
