# amaranth: UnusedElaboratable=no
"""`hw.reg_queue.RegQueue` (shifting and ``ring``) against a Python model of a queue
of 2 and 3 entries, every cycle: random writes, reads and flushes; ``w_ready``/``r_valid``/``empty``/
``count`` from the count, ``r_data`` the oldest entry, order kept, a flush drops
everything (and the write of its cycle), one entry per cycle sustained."""

import random
from collections import deque

import pytest
from amaranth.sim import Simulator

from xdsa.hw.reg_queue import RegQueue


@pytest.mark.parametrize("ring", [False, True])
@pytest.mark.parametrize("depth", [2, 3])
def test_against_model(depth, ring):
    dut = RegQueue(16, depth, ring=ring)
    model = deque()
    rng = random.Random(7)
    passed = []

    async def bench(ctx):
        nxt = 0
        for cycle in range(3000):
            w = rng.random() < 0.6
            r = rng.random() < 0.6
            flush = rng.random() < 0.02
            ctx.set(dut.w_valid, w)
            ctx.set(dut.w_data, nxt)
            ctx.set(dut.r_ready, r)
            ctx.set(dut.flush, flush)
            assert ctx.get(dut.w_ready) == (len(model) < depth), cycle
            assert ctx.get(dut.r_valid) == (len(model) > 0), cycle
            assert ctx.get(dut.empty) == (len(model) == 0), cycle
            assert ctx.get(dut.count) == len(model), cycle
            if model:
                assert ctx.get(dut.r_data) == model[0], cycle
            popped = r and model
            pushed = w and len(model) < depth and not flush
            if popped:
                passed.append(model.popleft())
            if pushed:
                model.append(nxt)
                nxt = (nxt + 1) & 0xFFFF
            if flush:
                model.clear()
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert len(passed) > 1000


@pytest.mark.parametrize("ring", [False, True])
@pytest.mark.parametrize("depth", [2, 3])
def test_one_entry_per_cycle(depth, ring):
    """Written and read every cycle, the queue passes one entry per cycle, one cycle late."""
    dut = RegQueue(8, depth, ring=ring)

    async def bench(ctx):
        ctx.set(dut.w_valid, 1)
        ctx.set(dut.r_ready, 1)
        seen = []
        for cycle in range(20):
            ctx.set(dut.w_data, cycle)
            if ctx.get(dut.r_valid):
                seen.append(ctx.get(dut.r_data))
            await ctx.tick()
        assert seen == list(range(19))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def test_depth_is_checked():
    with pytest.raises(ValueError, match="at least 2 entries, not 1"):
        RegQueue(8, 1)
