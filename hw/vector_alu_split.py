"""The vector ALU with a narrow path: stage S1 of the beat pipeline when
`CoreConfig.vector_narrow_bits` is smaller than the datapath.

Two `hw.vector_alu.VectorAlu` instances share the stage's ports:

* the **wide path**, ``n`` bits, builds the kinds that stay at one beat per cycle
  (ADD, SUB, ABS, MAX .. CMP, THRES, SIGN, the identity kinds, LOGIC): no multiplier;
* the **narrow path**, ``nb`` bits, builds the `NARROW_KINDS` (POW, MEDIAN, CLIP,
  MUL, LSL, LSR, ROR, ASL, ASR/NSR, DIV/MOD) with the only multiplier array, and
  takes the beat one ``nb``-bit lane group after the other (lanes are at most 64
  bits, so a group holds whole lanes and the SWAR words need no change). Each group
  takes the steps a whole beat would take on a full-width ALU (``cfg.occ_g``, set
  by the engine; G = n / nb groups);
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
full-width rate without stages (e.g. CLIP on int8 at 8 bytes per cycle; `base`'s 13
stages make it 0.89). DIV/MOD were one 64-bit lane group at a time already and keep
their number of steps.

The narrow path's beat (the kept groups and the last group's result) is registered
at ``take``, beside the wide path's front words.

**Stages** (`CoreConfig.vector_narrow_stages`, K): registers inside the narrow
path, at the first K of `NARROW_CUTS`: the multipliers' outputs, adder A1's result,
the right shifter's, the 96-bit product sums, the narrow ALU's result, the selected
lane group's operands, the multipliers' inputs, adder A2's result, the division's
subtraction, the magnitudes, the multiplier array's outputs (after the second
pass's accumulation and the choice by lane width), the step's decodings of its
number (and "the group's last step"), the operands' lane flags. Each *step* of the
narrow path then takes 1 + D cycles, D the most registers any path of the narrow
path crosses: its inputs (the group's operands, the step number, the iterative
state) hold still for that long, the registers load every cycle, and the state (the
iterative kinds', the multiplier's pass-0 product, the kept groups, the group
counter) changes only in the step's last cycle, when every path has settled. A path
crosses the cuts in the order of their ranks (`CUT_RANK`: cuts of one rank, such as
the magnitudes and A2, never lie on one path), so D is at most the number of ranks
among the enabled cuts (`narrow_step_cycles`): 7 with 8 to 10 cuts (steps of 8
cycles), 8 with 11 or more (9 cycles). No path of the narrow path is longer than the
logic between two cuts; the narrow kinds take 1 + D times their cycles. With all 13
(`base`) the narrow path alone, synthesised for the ECP5 (`synth_ecp5 -abc9`), has
no path deeper than 9.0 LUT levels (`hw.logic_depth`; 13.6 with the 10 cuts of
session 17); inside the engine, whose deeper paths elsewhere (15.3: the operand
unpacking, the reducer) let abc trade depth for area, 12.0 (15.6).

Latency: one cycle after ``take``, like `VectorAlu`. Throughput: one beat per ``occ`` cycles
(``occ`` as the engine computes it, G times the full-width figure for the
narrow kinds but DIV/MOD, times 1 + D for all narrow kinds); ``cfg.occ_g`` is the
steps per lane group.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .vector_alu import ALL_KINDS, ALU_CUTS, MAG_KINDS, OCC_BITS, VectorAlu, beat_config_layout
from .vector_convert import exact_from_magnitude
from .vector_ops import NARROW_KINDS
from .vector_swar import LANE_BITS, Lanes, cut_registers
from .wide_mux import select_word

__all__ = ["SplitAlu", "NARROW_CUTS", "CUT_RANK", "narrow_step_cycles"]

# where the narrow path's stages put their registers, in the order they are added: the
# ALU's (`hw.vector_alu.ALU_CUTS`), the selected group's operands, the narrow ALU's result
NARROW_CUTS = ("products", "a1", "shift", "sums", "result", "operands", "mul_in", "a2", "div", "mag",
               "mul_out", "step", "flags")

# The rank of each cut along the narrow path: every path of the narrow ALU crosses cuts in
# increasing rank, never two of one rank (the operands or the step's decodings of its
# number, which only the step's held inputs feed; the magnitudes, the operands' lane flags
# (read only by the results, the state and the multiplier's input 2**s) or A2; the right
# shifter or the division's subtraction; A1 or the multipliers' inputs; their outputs; the
# product sums; the array's outputs after the second pass's accumulation, which the sums
# (and for L <= 32 the products) feed and only the result and the iterative state read;
# the result), so no path holds more registers than the enabled cuts have distinct ranks,
# and a step needs that many cycles plus one.
CUT_RANK = {"operands": 1, "step": 1, "mag": 2, "flags": 2, "a2": 2, "shift": 3, "div": 3, "a1": 4,
            "mul_in": 4, "products": 5, "sums": 6, "mul_out": 7, "result": 8}


def narrow_step_cycles(stages):
    """Cycles per step of the narrow path with the first `stages` of `NARROW_CUTS`:
    1 + the number of distinct ranks (`CUT_RANK`) among them."""
    return 1 + len({CUT_RANK[c] for c in NARROW_CUTS[:stages]})

PORTS_IN = ("a", "as_", "b", "bs", "c", "cs", "am", "bm")
PORTS_OUT = ("low", "neg", "fit")


class SplitAlu(wiring.Component):
    """Stage S1 with a narrow path of `nb` bits (see the module docstring)."""

    def __init__(self, n, nb, widths=LANE_BITS, stages=0):
        if not (64 <= nb < n and n % nb == 0):
            raise ValueError(f"the narrow path must be 64 bits or more and divide the {n}-bit datapath, "
                             f"not {nb!r} bits")
        if stages not in range(len(NARROW_CUTS) + 1):
            raise ValueError(f"the narrow path has 0 to {len(NARROW_CUTS)} stages, not {stages!r}")
        self.n, self.nb, self.widths, self.stages = n, nb, tuple(widths), stages
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
        n, nb, K = self.n, self.nb, self.stages
        G = n // nb
        cfg = self.cfg
        cuts = NARROW_CUTS[:K]
        D = narrow_step_cycles(K) - 1           # registers on the narrow path's deepest path

        def cut(where, *sigs):
            """`sigs`, or their registers if the narrow path has the cut `where`."""
            return cut_registers(m, where in cuts, *sigs)

        m.submodules.wide = wide = VectorAlu(n, ALL_KINDS - NARROW_KINDS, self.widths)
        m.submodules.narrow = narrow = VectorAlu(nb, NARROW_KINDS, self.widths, registered=False,
                                                 cuts=[c for c in cuts if c in ALU_CUTS])

        is_narrow = Signal()
        m.d.comb += is_narrow.eq(Cat(cfg.kind == k for k in sorted(NARROW_KINDS)).any())

        # group counter, the step inside the group and the cycle inside the step: registers
        # that `take` (a beat's last cycle) returns to 0, so they are 0 in every beat's first
        # cycle (`it` = 0), and a beat held in its last cycle (S1 stalled) keeps its group
        g = Signal(range(G), name="grp")
        sub = Signal(OCC_BITS, name="sub_it")
        group_last = Signal(name="group_last")
        m.d.comb += group_last.eq(sub == cfg.occ_g - 1)
        group_last, = cut("step", group_last)   # read at the step's end only
        step_end = Signal()                     # the last cycle of a step
        # the state's advance at a step's end (`step` and `step_end`): with stages `step_end`
        # alone, no path from the pipeline's cycle count into the state's enables (`cyc`
        # leaves 0 only while the pipeline steps a beat, and the only step's end without
        # `step` is the beat's last cycle, which ends the last group, where neither the
        # narrow ALU's state nor a kept result changes)
        adv = Signal()
        if D:
            cyc = Signal(range(D + 1), name="cyc")
            m.d.comb += [step_end.eq(cyc == D), adv.eq(step_end)]
        else:
            m.d.comb += [step_end.eq(1), adv.eq(self.step)]

        m.d.comb += [wide.cfg.eq(cfg), wide.it.eq(self.it), wide.step.eq(self.step),
                     wide.take.eq(self.take),
                     narrow.cfg.eq(cfg), narrow.it.eq(sub),
                     narrow.step.eq(adv & ~group_last)]
        for p in PORTS_IN:
            word = Signal(nb, name=f"grp_{p}")
            m.d.comb += word.eq(select_word(m, getattr(self, p), g, nb, f"grp_{p}", platform))
            m.d.comb += [getattr(wide, p).eq(getattr(self, p)),
                         getattr(narrow, p).eq(cut("operands", word)[0])]

        # the narrow path's results in exact mode (flags at the lane MSBs)
        cm = Module()
        m.submodules.consts = cm
        ln = Lanes(m, nb, cfg.lsel, "nx", cm=cm, widths=self.widths, registered=K > 0, platform=platform)
        mag = Signal(name="mag_mode")
        cm.d.comb += mag.eq(cfg.kind.matches(*MAG_KINDS))
        mag, = cut_registers(cm, K > 0, mag)    # with stages a register, like the lane constants
        r_low, r_hi, r_neg, r_fit = cut("result", narrow.low, narrow.hi, narrow.neg, narrow.fit)
        v, negm, fitm = exact_from_magnitude(ln, r_low, r_hi, r_neg, "nx")
        nres = {}
        for p, word in (("low", Mux(mag, v, r_low)), ("neg", Mux(mag, negm & ln.H, r_neg)),
                        ("fit", Mux(mag, fitm & ln.H, r_fit))):
            nres[p] = Signal(nb, name=f"n_{p}")
            m.d.comb += nres[p].eq(word)

        # results of the finished groups (every group but the last)
        kept = {p: [Signal(nb, name=f"kept_{p}_{i}", reset_less=True) for i in range(G - 1)] for p in PORTS_OUT}
        with m.If(adv & group_last):
            with m.Switch(g):
                for i in range(G - 1):
                    with m.Case(i):
                        m.d.sync += [kept[p][i].eq(nres[p]) for p in PORTS_OUT]
        with m.If(self.step):
            with m.If(step_end):
                with m.If(group_last):
                    m.d.sync += [g.eq(g + 1), sub.eq(0)]
                with m.Else():
                    m.d.sync += sub.eq(sub + 1)
            if D:
                m.d.sync += cyc.eq(Mux(step_end, 0, cyc + 1))
        with m.Elif(self.take):
            m.d.sync += [g.eq(0), sub.eq(0)] + ([cyc.eq(0)] if D else [])
        # the narrow path's beat, registered at `take` like the wide path's front words
        n_out = {p: Signal(n, name=f"t_n_{p}", reset_less=True) for p in PORTS_OUT}
        with m.If(self.take):
            m.d.sync += [n_out[p].eq(Cat(*kept[p], nres[p])) for p in PORTS_OUT]
        for p in PORTS_OUT:
            m.d.comb += getattr(self, p).eq(Mux(is_narrow, n_out[p], getattr(wide, p)))
        return m
