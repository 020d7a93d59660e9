"""The matrix accumulators (hw/matrix_acc.py) against a Python reference, cycle by
cycle: random vectors, most of them to the position of the vector one or two before
(the writes a read cannot see, which the unit forwards), first passes at random; the
write (``w_valid``/``w_tag``) two cycles after the input, and every position read back
through the drain's port, also during the stream (never the position being written:
the unit's `Assert` checks that), the data holding while the port's enables are low."""

import random

from amaranth.sim import Simulator

from xdsa.hw.matrix_acc import Accumulators, memories

N, PB, PSUM = 4, 4, 20
POSITIONS = 2 * PB


def _stream(cycles, seed):
    rng = random.Random(seed)
    out, hist = [], [0, 1]
    for _ in range(cycles):
        if rng.random() < 0.15:
            out.append(None)
            continue
        r = rng.random()
        addr = hist[-1] if r < 0.35 else hist[-2] if r < 0.6 else rng.randrange(POSITIONS)
        hist.append(addr)
        sums = [rng.randrange(-(1 << (PSUM - 1)), 1 << (PSUM - 1)) for _ in range(N)]
        out.append((addr, rng.random() < 0.2, sums, rng.randrange(4)))
    return out


def test_accumulators_against_the_reference():
    dut = Accumulators(n=N, pb=PB, psum_width=PSUM, tag_bits=2, checks=True)
    stream = _stream(3000, 5)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    forwarded = {"f1": 0, "f2": 0}                  # writes that needed the last / the one before

    async def bench(ctx):
        rng = random.Random(9)
        ref = [[0] * N for _ in range(POSITIONS)]
        pending = []                                 # inputs in flight, oldest first: (cycle due, item)
        read_back = None                             # (position, expected words) of last cycle's read
        written = {}                                 # cycle -> position written
        for cycle, item in enumerate(stream + [None] * 4):
            if item is None:
                ctx.set(dut.in_valid, 0)
            else:
                addr, first, sums, tag = item
                ctx.set(dut.in_valid, 1)
                ctx.set(dut.in_addr, addr)
                ctx.set(dut.in_first, first)
                ctx.set(dut.in_tag, tag)
                for j in range(N):
                    ctx.set(dut.in_sums[j], sums[j])
                pending.append((cycle + 2, item))
            # the write of this cycle (the input of two cycles ago)
            due = pending[0] if pending and pending[0][0] == cycle else None
            assert ctx.get(dut.w_valid) == (due is not None), f"cycle {cycle}: w_valid"
            # the drain reads a position not written this cycle
            wpos = due[1][0] if due else None
            rpos = rng.choice([p for p in range(POSITIONS) if p != wpos])
            ctx.set(dut.rd_addr, rpos)
            # the read is enabled in most cycles (each memory by its own enable bit);
            # otherwise the data holds
            enable = read_back is None or rng.random() < 0.8
            ctx.set(dut.rd_en, (1 << memories(N)) - 1 if enable else 0)
            ctx.set(dut.rd_use, enable)
            if read_back is not None:
                pos, want = read_back
                got = [ctx.get(dut.rd_data[j]) for j in range(N)]
                assert got == want, f"cycle {cycle}: position {pos} read {got}, expected {want}"
            if enable:
                read_back = (rpos, list(ref[rpos]))  # the read sees the memory before this edge
            if due is not None:
                pending.pop(0)
                addr, first, sums, tag = due[1]
                assert ctx.get(dut.w_tag) == tag, f"cycle {cycle}: w_tag"
                for j in range(N):
                    ref[addr][j] = (0 if first else ref[addr][j]) + sums[j]
                written[cycle] = addr
                if not first:                        # the sum depends on a write the read missed
                    if written.get(cycle - 1) == addr:
                        forwarded["f1"] += 1
                    elif written.get(cycle - 2) == addr:
                        forwarded["f2"] += 1
            await ctx.tick()
        for pos in range(POSITIONS):
            ctx.set(dut.rd_addr, pos)
            ctx.set(dut.rd_en, (1 << memories(N)) - 1)
            ctx.set(dut.rd_use, 1)
            await ctx.tick()
            assert [ctx.get(dut.rd_data[j]) for j in range(N)] == ref[pos], f"final position {pos}"

    sim.add_testbench(bench)
    sim.run()
    assert forwarded["f1"] > 300 and forwarded["f2"] > 150, forwarded
