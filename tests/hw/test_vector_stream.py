"""The vector engine's realigning reader (`hw.vector_stream.StreamReader`) on its own,
against a model of its contract: ``has`` says whether the nibbles a take would consume
have arrived (``take_rest``: the run's rest; else ``take`` nibbles, no more than are
left), ``left`` counts the nibbles not yet taken, and the window starts at the
consumer's position. The memory answers after a latency with random stalls; the
consumer takes at random while ``has``, a rest when fewer than ``take`` nibbles are
left (as the engine does at a run's last beat; at random also when at most a row is
left), and ``has`` is checked for the cases the engine never takes (a take of more
than is left, a rest of more than a row, the cycles after a run's end). The reader's
own checks (``checks=True``) assert in every cycle too."""

import random

import pytest
from amaranth.sim import Simulator

from xdsa.hw.vector_stream import StreamReader

R = 8                           # row bytes
RN = 2 * R                      # nibbles per row
NIB_BITS = 10
ROWS = 1 << (NIB_BITS - 4)      # rows the nibble addresses reach


def nibble(mem, a):
    return (mem[a // RN] >> (4 * (a % RN))) & 0xF


@pytest.mark.parametrize("slots,latency,seed", [(4, 1, 1), (5, 2, 2), (3, 2, 3), (5, 1, 4)])
def test_reader_against_its_contract(slots, latency, seed):
    rng = random.Random(seed)
    mem = [rng.getrandbits(8 * R) for _ in range(ROWS)]
    dut = StreamReader(R, NIB_BITS, NIB_BITS - 4, slots=slots, has_copies=2, checks=True)   # (checks: the copies equal)
    counts = {"takes": 0, "rests": 0, "has_low": 0, "runs": 0}

    async def bench(ctx):
        pending = []                        # (cycle the response is due, row)
        cycle = 0
        for _ in range(40):                 # runs, back to back
            start = rng.randrange(0, ROWS * RN // 2)
            if rng.random() < 0.2:          # at a row's start (the verdicts after `start` differ)
                start -= start % RN
            length = 0 if rng.random() < 0.1 else rng.randrange(0, min(ROWS * RN - start, 6 * RN))
            take = rng.randrange(1, RN + 1)
            ctx.set(dut.start, 1)
            ctx.set(dut.start_nib, start)
            ctx.set(dut.start_len, length)
            ctx.set(dut.take, take)
            ctx.set(dut.take_en, 0)
            ctx.set(dut.req_ready, 0)
            ctx.set(dut.rsp_valid, 0)
            await ctx.tick()
            ctx.set(dut.start, 0)
            counts["runs"] += 1
            consumed, rows_in, idle = 0, 0, rng.randrange(1, 4)
            for _ in range(40 * RN):
                left = length - consumed
                if left == 0:               # a few cycles after the end: nothing more to take
                    if idle == 0:
                        break
                    idle -= 1
                due = [p for p in pending if p[0] == cycle]
                pending = [p for p in pending if p[0] != cycle]
                ctx.set(dut.rsp_valid, bool(due))
                if due:
                    ctx.set(dut.rsp_data, mem[due[0][1]])
                # (a take of more than is left, or a rest of more than a row: never taken)
                rest = rng.random() < (0.8 if left < take else 0.3 if left <= RN else 0.05)
                ctx.set(dut.take_rest, rest)
                avail = rows_in * RN - start % RN - consumed
                want = left <= avail if rest else take <= avail and take <= left
                assert ctx.get(dut.has) == want, (cycle, start, length, take, consumed, avail, rest)
                # both outcomes, whichever the consumer picks (`take` changes only at a start)
                assert ctx.get(dut.has_rest) == (left <= avail), (cycle, start, length, consumed, avail)
                assert ctx.get(dut.has_take) == (take <= avail and take <= left), (cycle, start, length, take)
                assert ctx.get(dut.left) == left and ctx.get(dut.left_zero) == (left == 0)
                window = ctx.get(dut.window)
                for k in range(min(avail, left, RN)):
                    assert (window >> (4 * k)) & 0xF == nibble(mem, start + consumed + k), (cycle, k)
                go = want and left > 0 and (left <= RN or not rest) and rng.random() < 0.7
                counts["has_low"] += not want
                ctx.set(dut.take_en, go)
                ready = rng.random() < 0.7
                ctx.set(dut.req_ready, ready)
                if ready and ctx.get(dut.req_valid):
                    pending.append((cycle + latency, ctx.get(dut.req_row)))
                rows_in += bool(due)
                await ctx.tick()
                cycle += 1
                if go:
                    consumed += left if rest else take
                    counts["rests" if rest else "takes"] += 1
            assert length - consumed == 0, "the run did not finish"
            assert not pending, "a row was requested beyond the run"
            ctx.set(dut.take_en, 0)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    # the stimulus reached every case it is meant to
    assert counts["runs"] == 40 and counts["takes"] > 100 and counts["rests"] > 10 and counts["has_low"] > 50, counts
