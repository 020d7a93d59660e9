"""The vector ALU with a narrow path: stage S1 of the beat pipeline when
`CoreConfig.vector_narrow_bits` is smaller than the datapath.

Two `hw.vector_alu.VectorAlu` instances share the stage's ports:

* the **wide path**, ``n`` bits, builds the kinds that stay at one beat per cycle
  (ADD, SUB, ABS, MAX .. CMP, THRES, SIGN, the identity kinds, LOGIC): no multiplier;
* the **narrow path**, ``nb`` bits, builds the `NARROW_KINDS` (POW, MEDIAN, CLIP,
  MUL, LSL, LSR, ROR, ASL, ASR/NSR, DIV/MOD) with the only multiplier array, and
  takes the beat one ``nb``-bit lane group after the other (lanes are at most 64
  bits, so a group holds whole lanes and the SWAR words need no change). Each group takes the cycles a whole beat
  would take on a full-width ALU (``occ / G``, G = n / nb, set by the engine);
  the results of groups 0 .. G-2 are kept in registers and the last group's is
  passed through, so the beat is complete in its last cycle, exactly where a
  full-width ALU has it. The narrow path's magnitude-mode
  results (MUL, ASL, POW, DIV, MOD) are turned into exact ones on its ``nb`` bits
  (`hw.vector_convert.exact_from_magnitude`), so the stage's outputs are always in
  exact mode and have no ``hi`` word: the full-width converter needs no magnitude
  mode.

On `base` (n = 256, nb = 64) the two paths with their sequencing take 43 % of the
cells of the full-width ALU (yosys, flattened, `abc -lut 4`: 19,606 LUT4 + 1,501
CCU2C against 47,634 + 1,312); the narrow kinds run at one quarter of their
full-width rate, e.g. CLIP on int8 at 8 bytes per cycle. DIV/MOD were one 64-bit lane group at a time
already and keep their speed.

The narrow path's beat (the kept groups and the last group's result) is registered
at ``take``, beside the wide path's front words.

Latency: one cycle after ``take``, like `VectorAlu`. Throughput: one beat per ``occ`` cycles
(``occ`` as the engine computes it, G times the full-width figure for the
narrow kinds but DIV/MOD).
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from .vector_alu import ALL_KINDS, MAG_KINDS, OCC_BITS, VectorAlu, beat_config_layout
from .vector_convert import exact_from_magnitude
from .vector_ops import NARROW_KINDS
from .vector_swar import LANE_BITS, Lanes
from .wide_mux import select_word

__all__ = ["SplitAlu"]

PORTS_IN = ("a", "as_", "b", "bs", "c", "cs", "am", "bm")
PORTS_OUT = ("low", "neg", "fit")


class SplitAlu(wiring.Component):
    """Stage S1 with a narrow path of `nb` bits (see the module docstring)."""

    def __init__(self, n, nb, widths=LANE_BITS):
        if not (64 <= nb < n and n % nb == 0):
            raise ValueError(f"the narrow path must be 64 bits or more and divide the {n}-bit datapath, "
                             f"not {nb!r} bits")
        self.n, self.nb, self.widths = n, nb, tuple(widths)
        super().__init__({
            "cfg": In(beat_config_layout()),
            **{p: In(n) for p in PORTS_IN},
            "it": In(OCC_BITS),
            "step": In(1),
            "take": In(1),
            **{p: Out(n) for p in PORTS_OUT},
        })

    def elaborate(self, platform):
        m = Module()
        n, nb = self.n, self.nb
        G = n // nb
        cfg = self.cfg
        m.submodules.wide = wide = VectorAlu(n, ALL_KINDS - NARROW_KINDS, self.widths)
        m.submodules.narrow = narrow = VectorAlu(nb, NARROW_KINDS, self.widths, registered=False)

        is_narrow = Signal()
        m.d.comb += is_narrow.eq(Cat(cfg.kind == k for k in sorted(NARROW_KINDS)).any())

        # group counter and the cycle inside the group; both read as 0 in a beat's first
        # cycle (`it` = 0), so a beat held in its last cycle (S1 stalled) keeps its group
        g_r = Signal(range(G), name="grp_r")
        sub_r = Signal(OCC_BITS, name="sub_r")
        g, sub = Signal(range(G), name="grp"), Signal(OCC_BITS, name="sub_it")
        first = self.it == 0
        m.d.comb += [g.eq(Mux(first, 0, g_r)), sub.eq(Mux(first, 0, sub_r))]
        occ_g = Signal(OCC_BITS, name="occ_g")
        m.d.comb += occ_g.eq(cfg.occ >> exact_log2(G))
        group_last = Signal()
        m.d.comb += group_last.eq(sub == occ_g - 1)

        m.d.comb += [wide.cfg.eq(cfg), wide.it.eq(self.it), wide.step.eq(self.step),
                     wide.take.eq(self.take),
                     narrow.cfg.eq(cfg), narrow.it.eq(sub), narrow.step.eq(self.step & ~group_last)]
        for p in PORTS_IN:
            m.d.comb += [getattr(wide, p).eq(getattr(self, p)),
                         getattr(narrow, p).eq(select_word(m, getattr(self, p), g, nb, f"grp_{p}", platform))]

        # the narrow path's results in exact mode (flags at the lane MSBs)
        cm = Module()
        m.submodules.consts = cm
        ln = Lanes(m, nb, cfg.lsel, "nx", cm=cm, widths=self.widths)
        mag = Signal(name="mag_mode")
        cm.d.comb += mag.eq(cfg.kind.matches(*MAG_KINDS))
        v, negm, fitm = exact_from_magnitude(ln, narrow.low, narrow.hi, narrow.neg, "nx")
        nres = {"low": Signal(nb, name="n_low"), "neg": Signal(nb, name="n_neg"), "fit": Signal(nb, name="n_fit")}
        m.d.comb += [nres["low"].eq(Mux(mag, v, narrow.low)),
                     nres["neg"].eq(Mux(mag, negm & ln.H, narrow.neg)),
                     nres["fit"].eq(Mux(mag, fitm & ln.H, narrow.fit))]

        # results of the finished groups (every group but the last)
        kept = {p: [Signal(nb, name=f"kept_{p}_{i}", reset_less=True) for i in range(G - 1)] for p in PORTS_OUT}
        with m.If(self.step):
            with m.If(group_last):
                m.d.sync += [g_r.eq(g + 1), sub_r.eq(0)]
                with m.Switch(g):
                    for i in range(G - 1):
                        with m.Case(i):
                            m.d.sync += [kept[p][i].eq(nres[p]) for p in PORTS_OUT]
            with m.Else():
                m.d.sync += [g_r.eq(g), sub_r.eq(sub + 1)]
        # the narrow path's beat, registered at `take` like the wide path's front words
        n_out = {p: Signal(n, name=f"t_n_{p}", reset_less=True) for p in PORTS_OUT}
        with m.If(self.take):
            m.d.sync += [n_out[p].eq(Cat(*kept[p], nres[p])) for p in PORTS_OUT]
        for p in PORTS_OUT:
            m.d.comb += getattr(self, p).eq(Mux(is_narrow, n_out[p], getattr(wide, p)))
        return m
