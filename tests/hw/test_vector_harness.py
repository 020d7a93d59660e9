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

import os
import random
from dataclasses import dataclass, field

import numpy as np
from amaranth.sim import Simulator

from xdsa.golden.builder import ProgramBuilder
from xdsa.golden.encoding import encode_table
from xdsa.golden.isa import DataUnit, Section, by_mnemonic
from xdsa.golden.machine import Machine
from xdsa.hw.capabilities import golden_capability
from xdsa.hw.vector import VectorEngine

TABLE_AT = 0x240                      # the operand table (the program group is at 0)
AS_CODE = {16: 0, 32: 1, 64: 2}
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


class Memory:
    """The behavioural memory and the harness's observations."""

    def __init__(self, cfg, rng, stall):
        self.cfg, self.rng, self.stall = cfg, rng, stall
        self.R = cfg.row_bytes
        self.mem = bytearray(cfg.mem_bytes)
        self.cycle = 0
        self.errors = []
        self.writes = 0


def add_memory(sim, dut, bus, ready_fn=None):
    """The memory process. `ready_fn(cycle)` -> (a, b, w) readies overrides the
    random stalls (for the cycle-model test)."""
    R, rows = bus.R, bus.cfg.rows

    async def memory(ctx):
        for p in (dut.rd_a, dut.rd_b, dut.wr):
            ctx.set(p.req.ready, 1)
        prev = {}
        async for vals in ctx.tick().sample(
                dut.rd_a.req.valid, dut.rd_a.req.ready, dut.rd_a.req.payload,
                dut.rd_b.req.valid, dut.rd_b.req.ready, dut.rd_b.req.payload,
                dut.wr.req.valid, dut.wr.req.ready, dut.wr.req.payload.row, dut.wr.req.payload.data,
                dut.wr.req.payload.be):
            _, _, av, ar, aa, bv, br, ba, wv, wrd, wrow, wdata, wbe = vals
            bus.cycle += 1
            cur = {"rd_a": (av, ar, aa), "rd_b": (bv, br, ba), "wr": (wv, wrd, (wrow, wdata, wbe))}
            for name, (v, r, payload) in cur.items():
                if name in prev and (not v or payload != prev[name]):
                    bus.errors.append(f"cycle {bus.cycle}: {name} request {prev[name]} withdrawn")
                if v and not r:
                    prev[name] = payload
                else:
                    prev.pop(name, None)
            rsp = {}
            for name, (v, r, row) in (("rd_a", cur["rd_a"]), ("rd_b", cur["rd_b"])):
                if v and r:
                    if row >= rows:
                        bus.errors.append(f"cycle {bus.cycle}: {name} read of row {row} outside the memory")
                    else:
                        rsp[name] = int.from_bytes(bus.mem[row * R:row * R + R], "little")
            if wv and wrd:
                bus.writes += 1
                if wrow >= rows:
                    bus.errors.append(f"cycle {bus.cycle}: write of row {wrow} outside the memory")
                else:
                    raw = wdata.to_bytes(R, "little")
                    for i in range(R):
                        if wbe >> i & 1:
                            bus.mem[wrow * R + i] = raw[i]
            for name, port in (("rd_a", dut.rd_a), ("rd_b", dut.rd_b)):
                ctx.set(port.rsp.valid, name in rsp)
                ctx.set(port.rsp.payload, rsp.get(name, 0))
            if ready_fn is not None:
                ra, rb, rw = ready_fn(bus.cycle)
                ctx.set(dut.rd_a.req.ready, ra)
                ctx.set(dut.rd_b.req.ready, rb)
                ctx.set(dut.wr.req.ready, rw)
            elif bus.stall:
                for p in (dut.rd_a, dut.rd_b, dut.wr):
                    ctx.set(p.req.ready, bus.rng.random() >= bus.stall)

    sim.add_process(memory)


def run_rtl(cfg, jobs, *, stall=0.3, seed=1, vcd_name=None, max_cycles=100_000, dut=None):
    """Run `jobs` [(case, initial memory)] back to back on one engine; returns
    [(fault, final memory, cycles from command accepted to done)]."""
    dut = dut or VectorEngine(cfg)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    bus = Memory(cfg, random.Random(seed), stall)
    add_memory(sim, dut, bus)
    results = []

    async def testbench(ctx):
        rng = random.Random(seed + 1)
        for case, before in jobs:
            bus.mem[:] = bytes(before)
            op = case.op
            ctx.set(dut.cmd.payload.table, int.from_bytes(table_bytes(case), "little"))
            ctx.set(dut.cmd.payload.as_code, AS_CODE[case.as_bits])
            ctx.set(dut.cmd.payload.op_code, op.op_code)
            ctx.set(dut.cmd.payload.section_ai, int(op.section == Section.AI))
            ctx.set(dut.cmd.valid, 1)
            await ctx.tick().until(dut.cmd.ready)
            ctx.set(dut.cmd.valid, 0)
            start = bus.cycle
            for _ in range(max_cycles):
                ctx.set(dut.done.ready, not stall or rng.random() >= stall)
                _, _, valid, ready, fault = await ctx.tick().sample(
                    dut.done.valid, dut.done.ready, dut.done.payload.fault)
                if valid and ready:
                    break
            else:
                raise AssertionError(f"{case.name}: no done within {max_cycles} cycles")
            results.append((fault, np.frombuffer(bytes(bus.mem), dtype=np.uint8).copy(), bus.cycle - start))
            ctx.set(dut.done.ready, 0)

    sim.add_testbench(testbench)
    if os.environ.get("XDSA_VCD") and vcd_name:
        with sim.write_vcd(f"{vcd_name}.vcd"):
            sim.run()
    else:
        sim.run()
    assert not bus.errors, bus.errors[:5]
    return results


def compare(case, exp, got):
    """Assertion message for a mismatch between golden `exp` and RTL `got`, or None."""
    from xdsa.golden.isa import Fault
    before, want, want_fault, detail = exp
    fault, mem, _ = got
    if fault != want_fault:
        return f"{case.name}: fault {Fault(fault).name}, golden {Fault(want_fault).name} ({detail})"
    diff = np.flatnonzero(mem != want)
    if len(diff):
        a = diff[0]
        return (f"{case.name}: {len(diff)} bytes differ, first at {a:#x}: RTL {mem[a]:#04x}, golden {want[a]:#04x}, "
                f"before {before[a]:#04x} (differing: {[hex(int(x)) for x in diff[:12]]})")
    return None
