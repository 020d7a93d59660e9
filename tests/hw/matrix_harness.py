"""Shared harness of the matrix-engine tests (tests/hw/test_matrix*.py).

A `Case` is one Matrix_Mul or CONV2D instruction: its operand fields and the
memory contents it runs on (a seeded random image plus explicit byte patches).
`golden` runs it on the golden `Machine`; `run_rtl` runs a list of cases back to
back on `MatrixEngine` in pysim, on a behavioural memory (a bytearray) that
answers each read port exactly one cycle after the request transferred and
withholds ``req.ready`` of the three ports at random. The harness checks the
stream rules on the engine's requests (a request holds until it transfers), that
no request leaves the memory, that the engine takes the held command before it
answers ``done``, and records the bytes written.
"""

import os
import random
from dataclasses import dataclass, field

import numpy as np
from amaranth.sim import Simulator

from xdsa.golden.builder import ProgramBuilder
from xdsa.golden.encoding import encode_table
from xdsa.golden.isa import Section, by_mnemonic
from xdsa.golden.machine import Machine
from xdsa.hw.matrix import MatrixEngine

TABLE_AT = 0x240
DATA_AT = 0x400
AS_CODE = {16: 0, 32: 1, 64: 2}


@dataclass
class Case:
    name: str
    op: str                                    # "matrix_mul" or "conv2d"
    fields: dict
    as_bits: int = 32
    seed: int = 0
    patches: list = field(default_factory=list)   # [(address, bytes)]


def table_bytes(case):
    return encode_table(by_mnemonic(case.op), case.as_bits, case.fields)


def initial_memory(cfg, case):
    b = ProgramBuilder(case.as_bits)
    b.text(0)
    b.insn(case.op, table=TABLE_AT, **case.fields)
    b.exit()
    b.end()
    image = b.build()
    rng = np.random.default_rng(case.seed)
    mem = rng.integers(0, 256, cfg.mem_bytes, dtype=np.uint8)
    image.write_into(mem)
    for a, data in case.patches:
        assert a >= DATA_AT, "patches must not overwrite the program"
        mem[a:a + len(data)] = np.frombuffer(bytes(data), dtype=np.uint8)
    tb = table_bytes(case)
    assert bytes(mem[TABLE_AT:TABLE_AT + len(tb)]) == tb
    return image, mem


def golden(cfg, case, capability=None):
    """(initial memory, final memory, fault, bytes written (a mask), detail)."""
    image, mem = initial_memory(cfg, case)
    m = Machine(cfg.mem_bytes, capability=capability)
    m.mem[:] = mem
    before = m.mem.copy()
    m.reset(image.start)
    rec = m.step()
    touched = np.zeros(cfg.mem_bytes, dtype=bool)
    for a, n in rec.writes:
        touched[a:a + n] = True
    return before, m.mem.copy(), int(rec.fault), touched, rec.detail


class BusModel:
    def __init__(self, cfg, rng, stall):
        self.cfg, self.rng, self.stall = cfg, rng, stall
        self.R = cfg.row_bytes
        self.mem = bytearray(cfg.mem_bytes)
        self.touched = np.zeros(cfg.mem_bytes, dtype=bool)
        self.cycle = 0
        self.errors = []
        self.reads = 0
        self.writes = 0


def add_memory(sim, dut, bus):
    R, rows = bus.R, bus.cfg.rows
    ports = (dut.rd_a, dut.rd_b)
    wr = dut.wr

    async def memory(ctx):
        for p in ports:
            ctx.set(p.req.ready, 1)
        ctx.set(wr.req.ready, 1)
        prev = [None, None, None]
        sigs = []
        for p in ports:
            sigs += [p.req.valid, p.req.ready, p.req.payload]
        sigs += [wr.req.valid, wr.req.ready, wr.req.payload.row, wr.req.payload.data, wr.req.payload.be]
        async for _, _, *vals in ctx.tick().sample(*sigs):
            bus.cycle += 1
            for k, p in enumerate(ports):
                v, r, a = vals[3 * k:3 * k + 3]
                if prev[k] is not None and (not v or a != prev[k]):
                    bus.errors.append(f"cycle {bus.cycle}: read request {prev[k]} on port {k} withdrawn")
                prev[k] = a if v and not r else None
                data = None
                if v and r:
                    bus.reads += 1
                    if a >= rows:
                        bus.errors.append(f"cycle {bus.cycle}: read of row {a} outside the memory")
                    else:
                        data = int.from_bytes(bus.mem[a * R:a * R + R], "little")
                ctx.set(p.rsp.valid, data is not None)
                ctx.set(p.rsp.payload, data or 0)
            wv, wrd, wrow, wdata, wbe = vals[6:]
            if prev[2] is not None and (not wv or (wrow, wdata, wbe) != prev[2]):
                bus.errors.append(f"cycle {bus.cycle}: write request {prev[2]} withdrawn")
            prev[2] = (wrow, wdata, wbe) if wv and not wrd else None
            if wv and wrd:
                bus.writes += 1
                if wrow >= rows:
                    bus.errors.append(f"cycle {bus.cycle}: write of row {wrow} outside the memory")
                else:
                    raw = wdata.to_bytes(R, "little")
                    for b in range(R):
                        if wbe >> b & 1:
                            bus.mem[wrow * R + b] = raw[b]
                            bus.touched[wrow * R + b] = True
            if bus.stall:
                for p in ports:
                    ctx.set(p.req.ready, bus.rng.random() >= bus.stall)
                ctx.set(wr.req.ready, bus.rng.random() >= bus.stall)

    sim.add_process(memory)


def run_rtl(cfg, jobs, *, stall=0.25, seed=1, vcd_name=None, max_cycles=400_000, pb=None, rq_lanes=2):
    """Run `jobs` [(case, initial memory)] back to back; returns [(fault, final memory,
    touched bytes, cycles from command to done)]."""
    dut = MatrixEngine(cfg, pb=pb, rq_lanes=rq_lanes)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    bus = BusModel(cfg, random.Random(seed), stall)
    add_memory(sim, dut, bus)
    results = []

    async def testbench(ctx):
        rng = random.Random(seed + 1)
        for case, before in jobs:
            op = by_mnemonic(case.op)
            bus.mem[:] = bytes(before)
            bus.touched[:] = False
            ctx.set(dut.cmd.payload.table, int.from_bytes(table_bytes(case), "little"))
            ctx.set(dut.cmd.payload.as_code, AS_CODE[case.as_bits])
            ctx.set(dut.cmd.payload.op_code, op.op_code)
            ctx.set(dut.cmd.payload.section_ai, int(op.section == Section.AI))
            ctx.set(dut.cmd.valid, 1)
            start = bus.cycle
            taken = False
            for _ in range(max_cycles):
                ctx.set(dut.done.ready, not stall or rng.random() >= stall)
                _, _, c_ready, valid, ready, fault = await ctx.tick().sample(
                    dut.cmd.ready, dut.done.valid, dut.done.ready, dut.done.payload.fault)
                if c_ready and not taken:
                    taken = True
                    ctx.set(dut.cmd.valid, 0)
                    ctx.set(dut.cmd.payload.table, 0)
                if valid and ready:
                    assert taken, "done before the command was taken"
                    break
            else:
                raise AssertionError(f"{case.name}: no done within {max_cycles} cycles")
            results.append((fault, np.frombuffer(bytes(bus.mem), dtype=np.uint8).copy(),
                            bus.touched.copy(), bus.cycle - start))
            ctx.set(dut.done.ready, 0)

    sim.add_testbench(testbench)
    if os.environ.get("XDSA_VCD") and vcd_name:
        with sim.write_vcd(f"{vcd_name}.vcd"):
            sim.run()
    else:
        sim.run()
    assert not bus.errors, bus.errors[:5]
    return results


def ranges(mask):
    idx = np.flatnonzero(mask)
    if not len(idx):
        return []
    br = np.flatnonzero(np.diff(idx) != 1)
    starts = np.concatenate(([idx[0]], idx[br + 1]))
    ends = np.concatenate((idx[br], [idx[-1]]))
    return [(int(a), int(b - a + 1)) for a, b in zip(starts, ends)]
