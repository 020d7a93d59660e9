"""`hw.vector_mul.MulArray` against Python products: for every lane width, random
and extreme lane values, ``pl``/``ph`` are the low and high L bits of each lane's
product; for L = 64 the two passes (pass 0 stored by ``acc_load``, then pass 1)
give the full 128-bit product, and pass 0 alone is the product when y < 2**32."""

import random

import pytest
from amaranth.sim import Simulator

from xdsa.hw.vector_mul import MulArray
from xdsa.hw.vector_swar import LANE_BITS

N = 256


def _lanes(word, L):
    return [(word >> (k * L)) & ((1 << L) - 1) for k in range(N // L)]


def _word(lanes, L):
    return sum(v << (k * L) for k, v in enumerate(lanes))


def _cases(L, rng, count=40):
    top = (1 << L) - 1
    edge = [0, 1, top, top - 1, 1 << (L - 1), (1 << (L // 2)) - 1, 1 << (L // 2)]
    for i in range(count):
        if i < len(edge) ** 2 // 4:
            xs = [edge[rng.randrange(len(edge))] for _ in range(N // L)]
            ys = [edge[rng.randrange(len(edge))] for _ in range(N // L)]
        else:
            xs = [rng.getrandbits(L) for _ in range(N // L)]
            ys = [rng.getrandbits(L) for _ in range(N // L)]
        if i % 5 == 4:                               # y < 2**32: one pass is enough for L = 64
            ys = [y & 0xFFFF_FFFF for y in ys]
        yield xs, ys


@pytest.mark.parametrize("lsel", range(5))
def test_products(lsel):
    L = LANE_BITS[lsel]
    dut = MulArray(N)
    rng = random.Random(100 + lsel)
    checked = []

    async def bench(ctx):
        ctx.set(dut.lsel, lsel)
        for xs, ys in _cases(L, rng):
            ctx.set(dut.x, _word(xs, L))
            ctx.set(dut.y, _word(ys, L))
            ctx.set(dut.pass_, 0)
            prods = [x * y for x, y in zip(xs, ys)]
            if L == 64:
                ctx.set(dut.acc_load, 1)
                await ctx.tick()
                ctx.set(dut.acc_load, 0)
                if all(y < 1 << 32 for y in ys):
                    assert _lanes(ctx.get(dut.pl), L) == [p & (2 ** L - 1) for p in prods]
                    assert _lanes(ctx.get(dut.ph), L) == [p >> L for p in prods]
                ctx.set(dut.pass_, 1)
            assert _lanes(ctx.get(dut.pl), L) == [p & (2 ** L - 1) for p in prods], (xs, ys)
            assert _lanes(ctx.get(dut.ph), L) == [p >> L for p in prods], (xs, ys)
            checked.append(1)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert len(checked) == 40
