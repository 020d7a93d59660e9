"""The pysim harness shared by the engine tests (data move, matrix, vector): a
behavioural data memory on an engine's ports and a driver that runs commands back
to back.

`EngineMemory` is a bytearray that answers each read port exactly
``cfg.mem_latency`` cycles after the request transferred (with the row as it was
in the transfer cycle, as the memory system does), writes with byte enables, and
withholds ``req.ready`` of every port at random (probability `stall`) or as `ready_fn(cycle)` says. It checks
the stream rules on the engine's requests (a request holds until it transfers) and
that no request leaves the memory, and records the bytes written (``touched``).
`run_commands` drives ``cmd`` (held until the engine takes it) and ``done`` (with
random ``ready``) and returns, per command, the fault code, the final memory, the
bytes written and the cycles from the command to ``done``.
"""

import os
import random

import numpy as np
from amaranth.sim import Simulator

from xdsa.golden.isa import Section, by_mnemonic

__all__ = ["AS_CODE", "EngineMemory", "add_memory", "run_commands", "ranges", "touched_mask"]

AS_CODE = {16: 0, 32: 1, 64: 2}


class EngineMemory:
    """The behavioural memory and the harness's observations."""

    def __init__(self, cfg, rng, stall):
        self.cfg, self.rng, self.stall = cfg, rng, stall
        self.R = cfg.row_bytes
        self.mem = bytearray(cfg.mem_bytes)
        self.touched = np.zeros(cfg.mem_bytes, dtype=bool)
        self.cycle = 0
        self.errors = []
        self.reads = 0
        self.writes = 0


def add_memory(sim, bus, read_ports, wr, ready_fn=None):
    """Serve `read_ports` (a list of ReadPort interfaces) and the write port `wr`.
    `ready_fn(cycle)` -> one ready per read port, then the write port's, overrides
    the random stalls."""
    R, rows = bus.R, bus.cfg.rows
    ports = list(read_ports)
    n = len(ports)

    async def memory(ctx):
        for p in ports + [wr]:
            ctx.set(p.req.ready, 1)
        prev = [None] * (n + 1)
        # per read port, the responses of the last mem_latency - 1 cycles' transfers, oldest first
        in_flight = [[None] * (bus.cfg.mem_latency - 1) for _ in ports]
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
                in_flight[k].append(data)
                data = in_flight[k].pop(0)
                ctx.set(p.rsp.valid, data is not None)
                ctx.set(p.rsp.payload, data or 0)
            wv, wrd, wrow, wdata, wbe = vals[3 * n:]
            if prev[n] is not None and (not wv or (wrow, wdata, wbe) != prev[n]):
                bus.errors.append(f"cycle {bus.cycle}: write request {prev[n]} withdrawn")
            prev[n] = (wrow, wdata, wbe) if wv and not wrd else None
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
            if ready_fn is not None:
                for p, ready in zip(ports + [wr], ready_fn(bus.cycle)):
                    ctx.set(p.req.ready, ready)
            elif bus.stall:
                for p in ports + [wr]:
                    ctx.set(p.req.ready, bus.rng.random() >= bus.stall)

    sim.add_process(memory)


def run_commands(dut, cfg, read_ports, commands, *, stall=0.3, seed=1, vcd_name=None, max_cycles=200_000,
                 traces=None, table_addr=0):
    """Run `commands` [(mnemonic, AS bits, operand-table bytes, initial memory, name)]
    back to back on engine `dut` (whose read ports are `read_ports`); returns
    [(fault, final memory, touched bytes, cycles from command to done)]. With a list
    `traces`, a micro-coded engine's micro-PC trace of each command is appended to it
    (``dut.upc`` in the cycles where ``dut.step`` is high). `table_addr` is the
    command's table address (where the initial memories hold the table)."""
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    bus = EngineMemory(cfg, random.Random(seed), stall)
    add_memory(sim, bus, read_ports, dut.wr)
    results = []

    async def testbench(ctx):
        rng = random.Random(seed + 1)
        for mnemonic, as_bits, table, before, name in commands:
            op = by_mnemonic(mnemonic)
            bus.mem[:] = bytes(before)
            bus.touched[:] = False
            ctx.set(dut.cmd.payload.table, int.from_bytes(table, "little"))
            ctx.set(dut.cmd.payload.as_code, AS_CODE[as_bits])
            ctx.set(dut.cmd.payload.table_addr, table_addr)
            ctx.set(dut.cmd.payload.op_code, op.op_code)
            ctx.set(dut.cmd.payload.section_ai, int(op.section == Section.AI))
            ctx.set(dut.cmd.valid, 1)
            start = bus.cycle
            taken = False
            trace = []
            for _ in range(max_cycles):
                ctx.set(dut.done.ready, not stall or rng.random() >= stall)
                if traces is not None and ctx.get(dut.step):
                    trace.append(ctx.get(dut.upc))
                _, _, c_ready, valid, ready, fault = await ctx.tick().sample(
                    dut.cmd.ready, dut.done.valid, dut.done.ready, dut.done.payload.fault)
                if c_ready and not taken:
                    taken = True
                    ctx.set(dut.cmd.valid, 0)
                    ctx.set(dut.cmd.payload.table, 0)
                if valid and ready:
                    assert taken, f"{name}: done before the command was taken"
                    break
            else:
                raise AssertionError(f"{name}: no done within {max_cycles} cycles")
            results.append((fault, np.frombuffer(bytes(bus.mem), dtype=np.uint8).copy(),
                            bus.touched.copy(), bus.cycle - start))
            if traces is not None:
                traces.append(trace)
            ctx.set(dut.done.ready, 0)

    sim.add_testbench(testbench)
    if os.environ.get("XDSA_VCD") and vcd_name:
        with sim.write_vcd(f"{vcd_name}.vcd"):
            sim.run()
    else:
        sim.run()
    assert not bus.errors, bus.errors[:5]
    return results


def touched_mask(mem_bytes, writes):
    """The bytes a golden retire record's ``writes`` [(address, length)] cover."""
    touched = np.zeros(mem_bytes, dtype=bool)
    for a, n in writes:
        touched[a:a + n] = True
    return touched


def ranges(mask):
    """[(address, length)] of the runs of True in `mask`."""
    idx = np.flatnonzero(mask)
    if not len(idx):
        return []
    br = np.flatnonzero(np.diff(idx) != 1)
    starts = np.concatenate(([idx[0]], idx[br + 1]))
    ends = np.concatenate((idx[br], [idx[-1]]))
    return [(int(a), int(b - a + 1)) for a, b in zip(starts, ends)]
