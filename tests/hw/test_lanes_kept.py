# amaranth: UnusedElaboratable=no
"""`hw.vector_swar.Lanes` with `kept_consts` (the full-rate vector ALU's lane-width
constants) or `registered` (the narrow path's, the packing's): every constant is a register of the lane width's constant (it follows
``lsel`` one cycle later), and on the ECP5 yosys keeps one flip-flop per 64-bit slice
and distinct bit function, where ordinary registers of the constants are merged
across slices (session 38: one flip-flop per distinct bit for the whole word).
With `sliced_lsel` (the full-rate ALU's choices by lane width) each 64-bit slice of a
choice follows a copy of ``lsel`` of its own, a cycle later, and the data at once.
The vector ALU's MEDIAN select is kept only where MEDIAN is built."""

import re

import pytest
from amaranth.back import rtlil
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from xdsa.hw.synth import FlowPlatform
from xdsa.hw.vector_alu import VectorAlu
from xdsa.hw.vector_ops import Kind
from xdsa.hw.vector_swar import LANE_BITS, Lanes, lane_const

from yosys_netlist import yosys_cells

N = 128


class _Consts(wiring.Component):
    """H, LO and NH of `Lanes` (N bits) for the lane width ``lsel``."""
    lsel: In(3)
    h: Out(N)
    lo: Out(N)
    nh: Out(N)

    def __init__(self, kept, registered=False):
        self.kept, self.registered = kept, registered
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        ln = Lanes(m, N, self.lsel, "t", kept_consts=self.kept, registered=self.registered, platform=platform)
        m.d.comb += [self.h.eq(ln.H), self.lo.eq(ln.LO), self.nh.eq(ln.NH)]
        return m


def _expected(L):
    return (lane_const(N, L, 1 << (L - 1)), lane_const(N, L, 1), lane_const(N, L, (1 << (L - 1)) - 1))


@pytest.mark.parametrize("kept, registered", [(True, False), (False, True)])
def test_kept_constants_follow_the_lane_width_a_cycle_later(kept, registered):
    top = _Consts(kept, registered)
    order = [4, 64, 8, 32, 16, 16, 4, 32]

    async def bench(ctx):
        prev = None
        for L in order:
            ctx.set(top.lsel, LANE_BITS.index(L))
            if prev is not None:                        # still the last width's constants
                assert (ctx.get(top.h), ctx.get(top.lo), ctx.get(top.nh)) == _expected(prev), L
            await ctx.tick()
            assert (ctx.get(top.h), ctx.get(top.lo), ctx.get(top.nh)) == _expected(L), L
            prev = L

    sim = Simulator(top)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("kept, registered", [(True, False), (False, True)])
def test_ecp5_keeps_one_flip_flop_per_slice_and_bit_function(tmp_path, kept, registered):
    """A bit of H, LO or NH is set for the lane widths up to some width (or from some
    width up): for a slice of 64 bits there are four such functions of the five widths
    per constant (one bit of each is the same for every width: a constant), so 3 x 4
    per slice, 24 for the two slices."""
    cells = yosys_cells(tmp_path, _Consts(kept, registered), family="ecp5").values()
    assert sum(c["type"] == "TRELLIS_FF" for c in cells) == 24
    plain = yosys_cells(tmp_path, _Consts(kept=False), family="ecp5").values()
    assert sum(c["type"] == "TRELLIS_FF" for c in plain) == 0     # without: the decoding alone


class _Choice(wiring.Component):
    """A choice by lane width of `Lanes` (N bits, `sliced_lsel`): ``a`` with lane width
    L's LO constant flipped, for the lane width ``lsel``."""
    lsel: In(3)
    a: In(N)
    out: Out(N)

    def elaborate(self, platform):
        m = Module()
        ln = Lanes(m, N, self.lsel, "t", sliced_lsel=True, platform=platform)
        m.d.comb += self.out.eq(ln.per_lane("x", lambda L: self.a ^ lane_const(N, L, 1)))
        return m


def test_sliced_choice_follows_the_lane_width_a_cycle_later_and_the_data_at_once():
    top = _Choice()
    order = [4, 64, 8, 32, 16, 16, 4, 32]
    a = (0x0123456789ABCDEF << 64) | 0xFEDCBA9876543210

    async def bench(ctx):
        prev = None
        for k, L in enumerate(order):
            ctx.set(top.lsel, LANE_BITS.index(L))
            data = (a >> k | a << (N - k)) & ((1 << N) - 1)
            ctx.set(top.a, data)
            if prev is not None:                        # still the last width's choice, this data
                assert ctx.get(top.out) == data ^ lane_const(N, prev, 1), L
            await ctx.tick()
            assert ctx.get(top.out) == data ^ lane_const(N, L, 1), L
            prev = L

    sim = Simulator(top)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def test_ecp5_keeps_a_copy_of_the_lane_width_per_slice(tmp_path):
    """Three bits of ``lsel`` for each of the two 64-bit slices."""
    cells = yosys_cells(tmp_path, _Choice(), family="ecp5").values()
    assert sum(c["type"] == "TRELLIS_FF" for c in cells) == 6


@pytest.mark.parametrize("kinds, kept", [((Kind.MEDIAN, Kind.ADD), ["a1_sel_med_r0_ff0"]),
                                         ((Kind.ADD, Kind.ABS), [])])
def test_ecp5_keeps_the_median_select_only_where_median_is_built(kinds, kept):
    """An ALU's MEDIAN operand select is a kept flip-flop on the ECP5 where the ALU builds
    MEDIAN (yosys merged it with other ALUs' selects), and its other selects are plain
    registers (kept, the selects of kinds not built would not fold to constants)."""
    text = rtlil.convert(VectorAlu(64, kinds), name="top", platform=FlowPlatform("ecp5"))
    assert sorted(set(re.findall(r"cell .TRELLIS_FF .(a1_sel_[a-z0-9_]+)", text))) == kept
