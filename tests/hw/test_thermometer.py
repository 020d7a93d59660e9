# amaranth: UnusedElaboratable=no
"""`hw.thermometer.thermometer` against ``count > i`` for every count value: unsigned
counts narrower than, as wide as and wider than the mask needs, signed counts (no bit
for a negative one), masks of 1 bit, of powers of two and of other widths; and that
yosys builds no adder for it (the reason it exists)."""


import pytest
from amaranth.hdl import Module, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from xdsa.hw.thermometer import thermometer

from yosys_netlist import yosys_cells


def _check(shape, n):
    m = Module()
    count = Signal(shape)
    out = thermometer(m, count, n, "mask")
    lo, hi = (-(1 << (shape.width - 1)), 1 << (shape.width - 1)) if shape.signed else (0, 1 << shape.width)
    wrong = []

    async def bench(ctx):
        for v in range(lo, hi):
            ctx.set(count, v)
            want = sum(1 << i for i in range(n) if v > i)
            got = ctx.get(out)
            if got != want:
                wrong.append((v, got, want))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert not wrong, f"count {wrong[0][0]}: mask {wrong[0][1]:#x}, expected {wrong[0][2]:#x}"


@pytest.mark.parametrize("width,n", [(1, 1), (1, 4), (3, 8), (4, 8), (7, 64), (9, 64), (8, 96), (5, 13),
                                     (6, 3), (2, 100)])
def test_unsigned(width, n):
    _check(Signal(width).shape(), n)


@pytest.mark.parametrize("width,n", [(4, 8), (6, 8), (9, 13)])
def test_signed(width, n):
    _check(signed(width), n)


def test_rejects_empty_mask():
    with pytest.raises(ValueError, match="at least one bit, not 0"):
        thermometer(Module(), Signal(4), 0, "mask")


def test_no_adder_in_yosys(tmp_path):
    """A 64-bit mask of a 7-bit count: yosys's coarse netlist has no compare or adder cell
    (the compares `count > i` it replaces became 64 of them)."""

    class Top(wiring.Component):
        count: In(7)
        mask: Out(64)

        def elaborate(self, platform):
            m = Module()
            m.d.comb += self.mask.eq(thermometer(m, self.count, 64, "t"))
            return m

    cells = yosys_cells(tmp_path, Top(), "proc; opt").values()
    kinds = {c["type"] for c in cells}
    assert not kinds & {"$lt", "$le", "$gt", "$ge", "$sub", "$add", "$alu"}, sorted(kinds)
