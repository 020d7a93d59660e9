# amaranth: UnusedElaboratable=no
"""`hw.replicate.replicas`: every copy equals an ordinary register loading the same
values (simulation, random inputs, with the reset), and on the ECP5 yosys keeps every
copy, mapped as it maps an ordinary register with the same reset value.
`own_replicas`: copies that compute their next values from their own equal the
register too, and on the ECP5 each copy's input is logic of its own. `kept_and`: the
AND of its terms, and on the ECP5 each copy a LUT4 of its own."""

import itertools
import re
import random

import pytest

from amaranth.back import rtlil
from amaranth.hdl import ClockDomain, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from xdsa.hw.replicate import kept_and, own_replicas, replicas
from xdsa.hw.synth import FlowPlatform

from yosys_netlist import yosys_cells

INIT = 0b101


class _Top(wiring.Component):
    """Three replicas of a 3-bit register with initial value INIT, and the register itself."""
    d: In(3)
    copies: Out(9)
    ref: Out(3)

    def elaborate(self, platform):
        m = Module()
        ref = Signal(3, init=INIT)
        m.d.sync += ref.eq(self.d)
        qs = replicas(m, platform, self.d, 3, "r", init=INIT)
        for k, q in enumerate(qs):
            m.d.comb += self.copies[3 * k:3 * k + 3].eq(q)
        m.d.comb += self.ref.eq(ref)
        return m


def test_copies_follow_the_register():
    top = _Top()
    rng = random.Random(5)
    seen = []

    async def bench(ctx):
        for cycle in range(200):
            ctx.set(top.d, rng.randrange(8))
            if cycle == 100:
                ctx.set(top.d, 0)
            await ctx.tick()
            ref = ctx.get(top.ref)
            seen.append(ref)
            copies = ctx.get(top.copies)
            assert [(copies >> (3 * k)) & 7 for k in range(3)] == [ref] * 3, f"cycle {cycle}"

    sim = Simulator(top)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert len(set(seen)) == 8                          # the inputs reached every value


def test_reset_returns_copies_to_init():
    top = _Top()
    m = Module()
    m.domains.sync = cd = ClockDomain()
    m.submodules.top = top

    async def bench(ctx):
        ctx.set(top.d, 2)
        await ctx.tick()
        assert ctx.get(top.ref) == 2 and ctx.get(top.copies) == 2 * 0b001001001
        ctx.set(cd.rst, 1)
        await ctx.tick()
        assert ctx.get(top.ref) == INIT and ctx.get(top.copies) == INIT * 0b001001001

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def _cells(tmp_path, family, top):
    """The cells of `top` (a component) after yosys's `synth_ecp5`, by name."""
    return yosys_cells(tmp_path, top, family=family)


def _ffs(tmp_path, family):
    return [c for c in _cells(tmp_path, family, _Top()).values() if c["type"] == "TRELLIS_FF"]


def test_ecp5_keeps_every_copy(tmp_path):
    ffs = _ffs(tmp_path, "ecp5")
    assert len(ffs) == 4 * 3                            # the register and three copies, 3 bits each
    params = {}
    for c in ffs:
        p = dict(c["parameters"])
        bit = c["connections"]["DI"][0]
        params.setdefault(bit, []).append(p)
    # every copy of a bit has the parameters yosys gave the ordinary register's flip-flop
    assert len(params) == 3
    for bit, ps in params.items():
        assert len(ps) == 4 and all(p == ps[0] for p in ps), ps


def test_elsewhere_ordinary_registers(tmp_path):
    """Without the ECP5 the copies are ordinary registers, which yosys merges."""
    assert len(_ffs(tmp_path, "ice40")) == 3


class _OwnTop(wiring.Component):
    """A 3-bit counter with load and enable (initial value INIT), and three copies that
    count from their own values (`own_replicas`)."""
    d: In(3)
    load: In(1)
    en: In(1)
    copies: Out(9)
    ref: Out(3)

    def elaborate(self, platform):
        m = Module()

        def next_of(q):
            return Mux(self.load, self.d, Mux(self.en, q + 1, q))
        ref = Signal(3, init=INIT)
        m.d.sync += ref.eq(next_of(ref))
        qs = own_replicas(m, platform, next_of, 3, 3, "c", init=INIT)
        for k, q in enumerate(qs):
            m.d.comb += self.copies[3 * k:3 * k + 3].eq(q)
        m.d.comb += self.ref.eq(ref)
        return m


def test_own_copies_follow_the_register():
    top = _OwnTop()
    m = Module()
    m.domains.sync = cd = ClockDomain()
    m.submodules.top = top
    rng = random.Random(7)
    seen = set()

    async def bench(ctx):
        for cycle in range(300):
            ctx.set(top.d, rng.randrange(8))
            ctx.set(top.load, rng.random() < 0.1)
            ctx.set(top.en, rng.random() < 0.6)
            ctx.set(cd.rst, cycle == 150)
            await ctx.tick()
            ref = ctx.get(top.ref)
            seen.add(ref)
            copies = ctx.get(top.copies)
            assert [(copies >> (3 * k)) & 7 for k in range(3)] == [ref] * 3, f"cycle {cycle}"
            if cycle == 150:
                assert ref == INIT

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert seen == set(range(8))


def test_ecp5_gives_each_own_copy_its_logic(tmp_path):
    """Every copy is kept, and the copies' flip-flops of one bit have three different
    inputs: each copy's next value is computed from its own flip-flops."""
    cells = _cells(tmp_path, "ecp5", _OwnTop())
    copies = {}
    for name, c in cells.items():
        hit = re.match(r"c_r(\d+)_ff(\d+)", name)
        if hit and c["type"] == "TRELLIS_FF":
            copies.setdefault(int(hit[2]), set()).add(c["connections"]["DI"][0])
    assert sorted(copies) == [0, 1, 2]
    assert all(len(inputs) == 3 for inputs in copies.values()), copies


def test_no_unread_copies_in_a_reader_without_funnel():
    """On the ECP5 a copy is a kept instance, so a copy that nothing reads stays in the
    netlist: the stream reader makes its offset's copies only for a funnel of its own
    (`realign`); readers 1 and 2 of the vector engine have none (48 flip-flops in the
    placed `base` before session 26)."""
    from xdsa.hw.vector_stream import StreamReader
    for realign, copies in ((False, 0), (True, 4)):
        text = rtlil.convert(StreamReader(32, 20, 12, realign=realign, slots=5), name="top",
                             platform=FlowPlatform("ecp5"))
        assert len(set(re.findall(r"cell \\TRELLIS_FF \\offset_r(\d+)_ff", text))) == copies, realign
        # the read pointers: a copy per 32 bits of the 256-bit rows, with or without a
        # funnel, in two groups of four, each with its copy of the cross pair (and one for
        # the request count `ahead`)
        assert len(set(re.findall(r"cell \\TRELLIS_FF \\(slots\d+_r\d+)_ff", text))) == 8
        assert len(set(re.findall(r"cell \\TRELLIS_FF \\slots(\d+)_r", text))) == 2
        assert len(set(re.findall(r"cell \\TRELLIS_FF \\cross_r(\d+)_ff", text))) == 3


class _AndTop(wiring.Component):
    """Two copies of the AND of the registered inputs' first `n` bits (`kept_and`), each
    registered after an XOR with a bit of its own (the loads of each copy)."""
    d: In(4)
    e: In(2)
    x: Out(2)

    def __init__(self, n):
        self.n = n
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        r = Signal(4)
        m.d.sync += r.eq(self.d)
        for k in range(2):
            a = kept_and(m, platform, [r[i] for i in range(self.n)], f"and{k}")
            m.d.sync += self.x[k].eq(a ^ self.e[k])
        return m


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_kept_and_is_the_and(n):
    top = _AndTop(n)

    async def bench(ctx):
        for d, e in itertools.product(range(16), range(4)):
            ctx.set(top.d, d)
            ctx.set(top.e, e)
            await ctx.tick()                            # d registered
            await ctx.tick()                            # the ANDs' results registered
            want = int(d & ((1 << n) - 1) == (1 << n) - 1)
            assert ctx.get(top.x) == (want ^ (e & 1)) | ((want ^ (e >> 1)) << 1), (d, e)

    sim = Simulator(top)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def test_ecp5_keeps_each_and_copy(tmp_path):
    """Both copies stay LUT4s of their own, with the AND's truth table and the unused
    inputs tied high; without the ECP5 yosys merges them into one."""
    cells = _cells(tmp_path, "ecp5", _AndTop(3))
    luts = [c for name, c in cells.items() if re.match(r"and\d_lut", name)]
    assert len(luts) == 2
    for c in luts:
        assert int(c["parameters"]["INIT"], 2) == 0x8000
        assert c["connections"]["D"] == ["1"]
    assert len({c["connections"]["A"][0] for c in luts}) == 1       # the same terms
    ice = _cells(tmp_path, "ice40", _AndTop(3))
    assert sum(c["type"] == "SB_LUT4" for c in ice.values()) <= 2    # the XORs, the AND merged into them


def test_kept_and_refuses_wide_terms():
    m = Module()
    with pytest.raises(ValueError, match="one to four 1-bit terms"):
        kept_and(m, None, [Signal(2)], "x")
    with pytest.raises(ValueError, match="one to four 1-bit terms"):
        kept_and(m, None, [Signal()] * 5, "x")
