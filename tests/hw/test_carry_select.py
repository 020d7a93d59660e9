# amaranth: UnusedElaboratable=no
"""`hw.carry_select.carry_select_add` against Python's ``(x + y) mod 2**width``: words of
1 to 4 parts, parts of unequal widths, the carries that cross every part boundary (all
ones plus one, each boundary's carry alone), differences and a carry-in signal, signed
operands narrower than the word; and that yosys builds as many carry chains as it
says, none longer than a part."""

import random

import pytest
from amaranth.hdl import Module, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from xdsa.hw.carry_select import carry_select_add

from yosys_netlist import yosys_cells


def _values(width, rng):
    top = (1 << width) - 1
    vals = [(0, 0), (top, 1), (1, top), (top, top), (top, 0)]
    cuts = sorted({width * k // p for p in (2, 3, 4) for k in range(1, p)} - {0})
    vals += [((1 << c) - 1, 1) for c in cuts]                    # a carry into each boundary alone
    vals += [(((1 << c) - 1) | (rng.getrandbits(width) >> c << c), 1) for c in cuts]
    vals += [(rng.getrandbits(width), rng.getrandbits(width)) for _ in range(300)]
    return vals


@pytest.mark.parametrize("width,parts", [(1, 1), (8, 1), (8, 2), (9, 3), (64, 2), (88, 3), (165, 3), (165, 4)])
def test_sum(width, parts):
    m = Module()
    x, y = Signal(width), Signal(width)
    out = carry_select_add(m, x, y, width, parts, "s")
    vals = _values(width, random.Random(width * 10 + parts))
    wrong = []

    async def bench(ctx):
        for a, b in vals:
            ctx.set(x, a)
            ctx.set(y, b)
            if ctx.get(out) != (a + b) % (1 << width):
                wrong.append((a, b, ctx.get(out)))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert not wrong, f"{wrong[0][0]:#x} + {wrong[0][1]:#x}: {wrong[0][2]:#x}"


@pytest.mark.parametrize("width,parts", [(8, 1), (64, 3), (165, 3)])
def test_difference_and_carry_in(width, parts):
    """``x - y`` as ``x + ~y`` with carry in 1, and a carry-in signal (0 and 1)."""
    m = Module()
    x, y, cin = Signal(width), Signal(width), Signal()
    diff = carry_select_add(m, x, ~y, width, parts, "d", carry_in=1)
    total = carry_select_add(m, x, y, width, parts, "s", carry_in=cin)
    vals = _values(width, random.Random(width + parts))
    wrong = []

    async def bench(ctx):
        for a, b in vals:
            ctx.set(x, a)
            ctx.set(y, b)
            if ctx.get(diff) != (a - b) % (1 << width):
                wrong.append(("-", a, b, ctx.get(diff)))
            for c in (0, 1):
                ctx.set(cin, c)
                if ctx.get(total) != (a + b + c) % (1 << width):
                    wrong.append((f"+ {c} +", a, b, ctx.get(total)))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert not wrong, f"{wrong[0][1]:#x} {wrong[0][0]} {wrong[0][2]:#x}: {wrong[0][3]:#x}"


def test_signed_operands_extend():
    """A signed operand narrower than the word is sign-extended (an accumulator plus a
    negative step)."""
    m = Module()
    x, y = Signal(40), Signal(signed(12))
    out = carry_select_add(m, x, y, 40, 3, "s")
    cases = [(5, -1), (0, -2048), ((1 << 40) - 1, 2047), (1 << 20, -7)]
    got = []

    async def bench(ctx):
        for a, b in cases:
            ctx.set(x, a)
            ctx.set(y, b)
            got.append(ctx.get(out))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert got == [(a + b) % (1 << 40) for a, b in cases]


def test_bad_parts():
    with pytest.raises(ValueError, match="1 to 8 parts, not 0"):
        carry_select_add(Module(), Signal(8), Signal(8), 8, 0, "s")


def test_chains_no_longer_than_a_part(tmp_path):
    """synth_ecp5 builds a 96-bit adder of 3 parts as 5 carry chains (the lowest part's
    and two per other part), none longer than a part's: 16 CCU2Cs of two bits each, and
    the one that takes the carry out or the carry in."""

    class Top(wiring.Component):
        a: In(96)
        b: In(96)
        o: Out(96)

        def elaborate(self, platform):
            m = Module()
            m.d.comb += self.o.eq(carry_select_add(m, self.a, self.b, 96, 3, "s"))
            return m

    cells = yosys_cells(tmp_path, Top()).values()
    ccu = [c["connections"] for c in cells if c["type"] == "CCU2C"]
    after = {c["CIN"][0]: c for c in ccu}                      # the cell a carry net feeds
    outs = {c["COUT"][0] for c in ccu}
    lengths = []
    for c in ccu:
        if c["CIN"][0] in outs:                                 # not the head of a chain
            continue
        n = 1
        while c["COUT"][0] in after:
            c, n = after[c["COUT"][0]], n + 1
        lengths.append(n)
    assert len(lengths) == 5, lengths
    assert max(lengths) <= 17, lengths
