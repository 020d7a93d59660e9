"""`hw.matrix_writer.VectorWriter` alone, against a byte-level reference: random
vectors (every element size, contiguous and strided, from zero elements to all lanes,
at any row offset) written through a write port that stalls at random; the memory
must hold exactly the reference's bytes. Without stalls, the writer offers a write in
every cycle and takes each vector in the cycle its last write transfers: the number of
cycles is the reference's number of row writes.

The test configuration has 16-byte rows and 4 lanes, so a contiguous vector of 8-byte
elements is two pieces of a row's worth each (the matrix unit's own tests use rows of
at least as many bytes as a vector of 8-byte results)."""

import random

from amaranth.sim import Simulator

from xdsa.hw.config import CoreConfig
from xdsa.hw.matrix_writer import VectorWriter

CFG = CoreConfig("writer", mem_bytes=1024, row_bytes=16)
LANES, AW = 4, 10
R = CFG.row_bytes


def _vectors(rng, n):
    out = []
    for _ in range(n):
        lsz = rng.randrange(4)
        size = 1 << lsz
        count = rng.choice([0, 1, LANES, LANES, rng.randrange(LANES + 1)])
        stride = size if rng.random() < 0.6 else size * rng.randrange(2, 9)
        base = rng.randrange(CFG.mem_bytes - stride * LANES - size)
        data = [rng.randrange(1 << 32) for _ in range(LANES)]
        out.append(dict(base=base, stride=stride, lsz=lsz, count=count, data=data))
    return out


def _reference(vectors):
    """The memory after the vectors, and the number of row writes they take."""
    mem = bytearray(CFG.mem_bytes)
    writes = 0
    for v in vectors:
        size = 1 << v["lsz"]
        for j in range(v["count"]):
            word = v["data"][j] | ((0xFFFFFFFF << 32) if v["data"][j] >> 31 and size == 8 else 0)
            a = v["base"] + j * v["stride"]
            mem[a:a + size] = word.to_bytes(8, "little")[:size]
        if v["stride"] == size:              # pieces of up to a row's worth of elements
            per = R // size
            pieces = [(v["base"] + j * size, min(per, v["count"] - j) * size)
                      for j in range(0, v["count"], per)]
        else:                                # one piece per element
            pieces = [(v["base"] + j * v["stride"], size) for j in range(v["count"])]
        writes += sum(1 + ((a % R) + n > R) for a, n in pieces)
    return mem, writes


def _run(vectors, *, stall, seed):
    dut = VectorWriter(CFG, lanes=LANES, addr_bits=AW, checks=True)
    rng = random.Random(seed)
    mem = bytearray(CFG.mem_bytes)
    result = {}

    async def feed(ctx):
        for v in vectors:
            for name in ("base", "stride", "lsz", "count"):
                ctx.set(getattr(dut.vec.payload, name), v[name])
            ctx.set(dut.vec.payload.contig, v["stride"] == 1 << v["lsz"])
            for i, d in enumerate(v["data"]):
                ctx.set(dut.vec.payload.data[i], d)
            ctx.set(dut.vec.valid, 1)
            await ctx.tick().until(dut.vec.ready)
            ctx.set(dut.vec.valid, 0)
            if stall and rng.random() < stall:
                await ctx.tick()

    async def drain(ctx):
        cycles = busy = 0
        idle = 0
        while idle < 4:
            ready = not (stall and rng.random() < stall)
            ctx.set(dut.wr.req.ready, ready)
            await ctx.delay(1e-9)
            req = dut.wr.req
            valid = ctx.get(req.valid)
            if valid and ready:
                row, data, be = ctx.get(req.payload.row), ctx.get(req.payload.data), ctx.get(req.payload.be)
                for b in range(R):
                    if be >> b & 1:
                        mem[row * R + b] = data >> (8 * b) & 0xFF
            busy += valid
            cycles += 1
            idle = 0 if valid or ctx.get(dut.vec.valid) else idle + 1
            await ctx.tick()
        result.update(cycles=cycles - idle, busy=busy)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(feed)
    sim.add_testbench(drain)
    sim.run_until(1e-3)
    return mem, result


def test_writes_match_reference_with_stalls():
    vectors = _vectors(random.Random(7), 120)
    want, _ = _reference(vectors)
    got, _ = _run(vectors, stall=0.3, seed=3)
    bad = [a for a in range(CFG.mem_bytes) if got[a] != want[a]]
    assert not bad, f"{len(bad)} bytes differ, first at {bad[0]}: {got[bad[0]]:#x}, expected {want[bad[0]]:#x}"


def test_one_write_per_cycle_without_stalls():
    vectors = [v for v in _vectors(random.Random(11), 80) if v["count"]]
    want, writes = _reference(vectors)
    got, result = _run(vectors, stall=0, seed=0)
    assert got == want
    # the first write is offered the cycle after the first vector is taken
    assert result["busy"] == writes
    assert result["cycles"] == writes + 1
