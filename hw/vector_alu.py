"""The vector ALU: stage S1 of the beat pipeline (docs/isa-decisions.md D-ARITH,
D-LOGIC, D-SHIFT, D-NARROW, D-DIV, D-COMPARE, D-ROUNDUP, D-DATACONVERT).

Input: one beat of unpacked operands (lane words ``a``, ``b``, ``c`` with their
sign words, see `hw.vector_swar`, and lane-wide sign masks ``am``, ``bm`` of a
and b), all lanes of the same width L (the widest unit of the instruction).
Output: for every lane the exact result, before conversion to the destination
unit, in one of two forms that `Converter` understands:

* exact mode (every kind except the five below): ``low`` = result mod 2**L,
  ``neg``/``fit`` = flags at the lane MSBs (result < 0; result in [-2**L, 2**L));
* magnitude mode (MUL, ASL, POW, DIV, MOD): ``low``/``hi`` = the low/high L bits
  of |result| (``hi`` = 2 marks "at least 2**(L+1)"), ``neg`` = the sign.

Shared resources: one exact adder A1 (ADD, SUB, ABS, SIGN, the comparisons of MAX ..
CMP, THRES, CLIP, MEDIAN, the rounding add of ASR), one subtractor A2 (CLIP's
second bound, MEDIAN's b < c, ASR's s - 1, the amounts that make 2**s for
the left shifts; A2 feeds A1, never the reverse), one right barrel shifter (masks
by lane width), two lane negators (magnitudes), the multiplier array, and three
state words for the iterative kinds. Left shifts are products: LSL and ASL
multiply by 2**s, ROR by 2**(w - k) (the low w bits of the product are x << (w - k),
the next w bits x >> k); 2**t is the lane MSB shifted right by L - 1 - t.

The pipeline presents a beat for ``occ`` cycles (``it`` = 0 .. occ-1) and raises
``take`` in the last one; ``step`` is high in every earlier cycle and lets the
iterative units advance. The ALU is two stages, the *front* and the *tail*:
``take`` registers the front's words and the tail computes the outputs from those
registers in the next cycle (latency 1 after ``take``; a new beat can enter the
front meanwhile, so the throughput stays one beat per ``occ`` cycles). For the
kinds the tail selects (`TAIL_KINDS`: ADD .. LOGIC, the single-cycle kinds without
the multiplier or shifter) the front's words are A1's result, "a != b" and the
operands: the front is the operand routing and the adder, the tail the lane flags,
the choice by kind and the result selection, which on one cycle was the vector
ALU's longest path. For every other kind the front computes the whole result and
the tail passes it on. Per kind:

=========  ==============================================================  =====================
kind       how                                                             cycles per beat (occ)
=========  ==============================================================  =====================
ADD/SUB    one exact lane-parallel adder                                   1
MAX..CMP   a - b, equality                                                 1
THRES      a against the threshold immediate (clamped to the lane, plus    1
           above/below-lane flags)
CLIP       a against both bounds; the result is a or a bound               1
MEDIAN     a < b, then a < c and b < c: a, b or c by the three flags       2
ABS/SIGN   x - 0 or 0 - x by the sign, on A1 (SIGN: x = 1)                 1
IDENT      ROUND, CEIL, FLOOR, DATA_CONVERT, SXT, UXT: the value itself    1
LOGIC      the variant's truth table, looked up per bit                    1
LSR        six-stage per-lane barrel shifter on source 0's bit pattern     1
LSL        x * 2**s on the multiplier array (2**s from the right shifter)  1; 2 for L = 64
ROR        x * 2**(w - k): its low w bits OR the next w bits                1; 2 for L = 64
ASR/NSR    right shifter by s-1 (of ~v for negative v, complemented after:  1
           sign fill), then the rounding add
MUL        multiplier array (`hw.vector_mul`) on magnitudes                1; 2 for 64 x 64 bits
ASL        x * 2**s on the multiplier array (2**s from the right shifter)  1; 2 for L = 64
DIV/MOD    radix-2 restoring division of magnitudes, one 64-bit lane       N / 64 * L
           group at a time (N / 64 groups, L cycles each)
POW        right-to-left square and multiply over the bits of y, both      1 + 2 * bits(y) * passes
           products on the multiplier array, tracking "|x**k| >= 2**L"
=========  ==============================================================  =====================
"""

from functools import reduce
from operator import or_

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .replicate import replicas
from .vector_mul import MUL_CUTS, MulArray
from .vector_ops import Kind
from .vector_swar import LANE_BITS, Lanes, cut_registers

__all__ = ["VectorAlu", "beat_config_layout", "MAG_KINDS", "ALL_KINDS", "OCC_BITS", "ALU_CUTS"]


def beat_config_layout():
    from amaranth.lib import data
    return data.StructLayout({
        "kind": 5, "variant": 3,
        "lsel": 3,                              # lane width 4 << lsel
        "b0": 3, "b1": 3, "b2": 3, "bd": 3,     # unit widths 4 << b*
        "sg0": 1, "sg1": 1, "sg2": 1,           # sources unpacked as signed
        "rsg": 1,                               # LSL/LSR/ROR: read the result pattern as signed
        "sd": 1,                                # destination signed
        "sat": 1, "rnd": 1, "lt": 1,
        "ws": 3,                                # shift field width 4 << ws (b0 for LSL/LSR/ROR, else L)
        "pass2": 1,                             # products take two passes
        "swap": 1,                              # MUL: multiply b * a (narrower operand second)
        "occ": OCC_BITS,                        # cycles per beat in S1
        "occ_g": OCC_BITS,                      # narrow path: steps per lane group (`hw.vector_alu_split`)
        "imm0": 16, "imm1": 16, "isg": 1,       # THRES / CLIP immediates, signed
    })


MAG_KINDS = (Kind.MUL, Kind.ASL, Kind.POW, Kind.DIV, Kind.MOD)
# the kinds whose result the tail selects (from A1's result, "a != b" and the operands)
TAIL_KINDS = (Kind.ADD, Kind.SUB, Kind.ABS, Kind.SIGN, Kind.MAX, Kind.MIN, Kind.THRES, Kind.IDENT,
              Kind.MAXSI, Kind.MINSI, Kind.CMP, Kind.LOGIC)
TAIL_SET = frozenset(TAIL_KINDS)
KIND_NAMES = {v: k.lower() for k, v in vars(Kind).items() if k.isupper() and isinstance(v, int)}


ALU_CUTS = ("a2", "shift", "a1", "mag", "div", "step", "flags") + MUL_CUTS
OCC_BITS = 14       # the ALU iteration counter: POW on a 64-bit narrow path takes 4 x 257 steps per beat,
                    # each `CoreConfig.narrow_step_cycles` cycles
ALL_KINDS = frozenset(range(Kind.COUNT)) - {Kind.REDUCE}


class VectorAlu(wiring.Component):
    """Stage S1 (see the module docstring). ``n`` = datapath bits (8 W); `kinds`: the
    kinds built (default all; for the others the outputs stay at their defaults, see
    `hw.vector_alu_split`); `widths`: the lane widths built (``cfg.lsel`` selects no
    other); `registered`: the front's words are registered at ``take`` and the outputs
    follow one cycle later (else the ALU is combinational and ``take`` unused);
    `cuts`: registers inside the ALU (`ALU_CUTS`: after adder A2, after the right
    shifter (with "right amount >= field width"), after adder A1, after the
    magnitudes, after the division's subtraction, the step's decodings of ``it``
    ("step": the first step, DIV's first and last bit step, POW's phase and pass),
    the operands' lane flags ("flags": b = 0, s >= field width, |a| = 1, ...), and
    `hw.vector_mul.MUL_CUTS` in the multiplier array): the narrow path's stages
    (`hw.vector_alu_split`); the caller then holds every input for as many cycles
    more than a step as the deepest path has cut registers (at most one per rank of
    `hw.vector_alu_split.CUT_RANK`) and raises ``step`` only in the last of them.

    ``cfg`` must hold its value from the cycle before a beat's first S1 cycle (the
    engine sets it in PREP, before the first read): the selects of the operands of
    A1, A2, the shifter and the multiplier array and of the front's and the tail's
    results (AND-ORs of the kinds' words), and the lane constants of the immediates,
    are registered functions of it, and so are the lane-width constants
    (`hw.vector_swar.Lanes`; kept flip-flops per 64-bit slice if the ALU is `registered`
    or has `cuts`) and, if the ALU has `cuts`, the selects of the choices by lane width
    (if it is `registered` without cuts, those choices decode copies of the lane width
    per 64-bit slice, `sliced_lsel`): no decoding of the kind, and with `cuts` none of the
    lane width outside the multiplier array, in the paths."""

    def __init__(self, n, kinds=ALL_KINDS, widths=LANE_BITS, registered=True, cuts=()):
        unknown = sorted(set(cuts) - set(ALU_CUTS))
        if unknown:
            raise ValueError(f"the vector ALU has no cut {unknown[0]!r}; its cuts are {ALU_CUTS}")
        self.n = n
        self.cuts = frozenset(cuts)
        self.kinds = frozenset(kinds)
        self.widths = tuple(widths)
        self.registered = registered
        super().__init__({
            "cfg": In(beat_config_layout()),
            "a": In(n), "as_": In(n), "b": In(n), "bs": In(n), "c": In(n), "cs": In(n),
            "am": In(n), "bm": In(n),           # lane-wide sign masks of a and b
            "it": In(OCC_BITS),
            "step": In(1),
            "take": In(1),
            "low": Out(n), "hi": Out(n), "neg": Out(n), "fit": Out(n),
        })

    def elaborate(self, platform):
        m = Module()
        cm = Module()
        m.submodules.consts = cm
        n = self.n
        cfg = self.cfg
        # the lane-width constants are kept registers per 64-bit slice if the ALU is
        # `registered` or has cuts (with cuts the selects by lane width are registers as
        # well): the lane width's decoding,
        # shared by yosys with the unpacker's and the narrow ALU's (fan-out 300-800), led
        # the paths into adder A1's carry chains (16.65-17.3 ns in the placed `base`,
        # session 42); plain registers were merged to one per distinct bit, driving
        # thousands of loads (37.8-38.7 MHz, session 38, docs/boards.md)
        ln = Lanes(m, n, cfg.lsel, "alu", cm=cm, widths=self.widths, registered=bool(self.cuts),
                   kept_consts=self.registered and not self.cuts, platform=platform,
                   sliced_lsel=self.registered and not self.cuts)
        H, LO, NH, ALL = ln.H, ln.LO, ln.NH, ln.ALL
        a, as_, b, bs, c, cs = self.a, self.as_, self.b, self.bs, self.c, self.cs
        # the front's result words (see `registered`)
        low, hi, neg, fit = (Signal(n, name="f_" + nm) for nm in ("low", "hi", "neg", "fit"))

        def bits(sel):
            return 4 << sel

        def kcase(*ks):
            """A case of those of `ks` this ALU builds (none: never active, its logic unused)."""
            return m.Case(*(k for k in ks if k in self.kinds))

        # --- lane constants of the immediates (THRES threshold / CLIP bounds) -----------
        def imm_consts(imm, tag):
            v = Signal(64, name=f"{tag}_v")            # the immediate, sign- or zero-extended
            cm.d.comb += v.eq(Mux(cfg.isg, imm.as_signed(), imm))
            val = ln.per_lane(f"{tag}_low", lambda L: Cat(v[:L] for _ in range(n // L)), module=cm)
            flags = {f: Signal(name=f"{tag}_{f}") for f in ("fit", "above", "below")}
            # v >= 2**L and v < -2**L as bit tests of the bits from L up (all 0 but the sign,
            # all 1 with it): compares with constants would be 64-bit carry chains
            neg = v[63]
            with cm.Switch(cfg.lsel):
                for i, L in ln.widths:
                    with cm.Case(i):
                        if L < 63:
                            above, below = ~neg & v[L:63].any(), neg & ~v[L:63].all()
                            cm.d.comb += [flags["above"].eq(above), flags["below"].eq(below),
                                          flags["fit"].eq(~above & ~below)]
                        else:
                            cm.d.comb += flags["fit"].eq(1)
            sgn = Signal(n, name=f"{tag}_neg")
            cm.d.comb += sgn.eq(Mux(neg, H, 0))
            # registered: functions of `cfg` only, set a cycle before a beat needs them (see A1's selects)
            regs = [Signal(n, name=f"{tag}_{w}_r", reset_less=True) for w in ("low", "neg")]
            fregs = {f: Signal(name=f"{tag}_{f}_r", reset_less=True) for f in flags}
            m.d.sync += [regs[0].eq(val), regs[1].eq(sgn)] + [fregs[f].eq(flags[f]) for f in flags]
            return regs[0], regs[1], fregs, val, sgn, flags

        t_low, t_neg, t_f, t_low_c, t_neg_c, t_f_c = imm_consts(cfg.imm0, "imm0")
        u_low, u_neg, u_f, _, _, _ = imm_consts(cfg.imm1, "imm1")

        asm, bsm = self.am, self.bm
        kind = cfg.kind
        WS = [(cfg.ws, range(5))]                    # key: shift field width (b0, or L)

        # iterative state (DIV/MOD, POW; MEDIAN keeps a < b in sf0)
        st0, st1, st2 = (Signal(n, name=nm, reset_less=True) for nm in ("st0", "st1", "st2"))
        sf0, sf1 = (Signal(n, name=nm, reset_less=True) for nm in ("sf0", "sf1"))
        # DIV/MOD: one 64-bit lane group at a time
        dl = Lanes(m, 64, cfg.lsel, "dv", cm=cm, widths=self.widths, registered=bool(self.cuts),
                   platform=platform)
        dr, dq, da = (Signal(64, name=nm, reset_less=True) for nm in ("div_rr", "div_qr", "div_ar"))

        # --- adder A1: x - y or x + y, exact -----------------------------------------------------------
        x1, x1s, y1, y1s = (Signal(n, name=f"a1_{nm}") for nm in ("x", "xs", "y", "ys"))
        sub1 = Signal(name="a1_sub")
        # --- adder A2 ------------------------------------------------------------------------------------
        x2, x2s, y2, y2s = (Signal(n, name=f"a2_{nm}") for nm in ("x", "xs", "y", "ys"))
        # --- barrel shifter ---------------------------------------------------------------------------------
        xr, ar = Signal(n, name="shr_x"), Signal(n, name="shr_amt")

        def cut(where, *sigs):
            """`sigs`, or their registers if the ALU has the cut `where`."""
            return cut_registers(m, where in self.cuts, *sigs)

        # the step's decodings of `it` (the first step here; DIV's and POW's below): with the
        # cut "step" registers, like the operands of a narrow path's step (`it` holds as still)
        first = Signal(name="first")
        m.d.comb += first.eq(self.it == 0)
        if "step" in self.cuts:
            # a copy for MEDIAN's operand routes, one for the multiplier's controls and one for
            # POW's state: one register of fan-out 208 was 64 tiles from A2's routes (17.8 ns)
            first_med, first_mul, first = replicas(m, platform, first, 3, "first_r", reset_less=True)
        else:
            first_med = first_mul = first

        r1_low, r1_neg, r1_fit = cut("a1", *ln.add(x1, x1s, Mux(sub1, ~y1, y1), Mux(sub1, ~y1s & H, y1s),
                                                   Mux(sub1, LO, 0), "a1"))
        lt1 = ln.lane_flag(r1_neg, "lt1")              # x1 < y1 (subtraction)
        r2_low, r2_neg = cut("a2", *ln.add(x2, x2s, ~y2, ~y2s & H, LO, "a2")[:2])
        lt2 = ln.lane_flag(r2_neg, "lt2")              # x2 < y2

        wmask = ln.const(lambda L, w: None if bits(w) > L else (1 << bits(w)) - 1, "wmask", keys=WS)
        wtop = ln.const(lambda L, w: None if bits(w) > L else 1 << (bits(w) - 1), "wtop", keys=WS)
        bigm = ln.const(lambda L, w: None if bits(w) > L else
                        ((1 << L) - 1) & ~((1 << (bits(w).bit_length() - 1)) - 1), "bigm", keys=WS)
        # the shifted word and "right amount >= field width", beside it at the cut
        right, bigr = cut("shift",
                          ln.shift(xr, ar, lambda L, j: ((1 << (L - (1 << j))) - 1) if (1 << j) < L else 0,
                                   left=False, name="shr"),
                          ln.lane_any(ar & bigm, "bigr"))

        # --- magnitudes (MUL, ASL, POW, DIV, MOD) ---------------------------------------------------------
        ma, mb = cut("mag", ln.neg_if(a, asm, "ma"), ln.neg_if(b, bsm, "mb"))

        m.submodules.mul = mul = MulArray(n, self.widths, self.cuts & set(MUL_CUTS))
        m.d.comb += mul.lsel.eq(cfg.lsel)

        # ROR: k = s mod w, shift amount k - (w + 1 - L) = L - 1 - (w - k); LSL, ASL: L - 1 - s
        kmask = ln.const(lambda L, w: None if bits(w) > L else bits(w) - 1, "kmask", keys=WS)
        rorc = ln.const(lambda L, w: None if bits(w) > L else bits(w) + 1 - L, "rorc", keys=WS)
        lm1 = ln.const(lambda L: L - 1, "lm1")
        k = ln.comb(b & kmask, "ror_k")

        # --- the operands' lane flags, read by the results (and 2**s by the multiplier): with
        # the cut "flags" registers, of the magnitudes' rank (the operands' functions beside them)
        flags = {"bigl": ln.lane_any(b & bigm, "bigl"),         # LSL, ASL: s >= field width
                 "szero": ln.comb(~ln.lane_any(b, "b_nz"), "szero")}   # b == 0 (ASR: s == 0, DIV: divisor 0)
        if self.kinds & {Kind.POW, Kind.ASL}:
            # |a| == 1: a = 1, or a = -1 (all ones in a negative lane: ma = -a)
            flags["ma_is1"] = ln.comb(~ln.lane_any((a ^ asm) ^ (LO & ~asm), "ma_ne1"), "ma_is1")
        if Kind.ROR in self.kinds:
            flags["kz"] = ln.comb(~ln.lane_any(k, "ror_knz"), "ror_kz")    # k = 0: 2**w may not fit
        if Kind.ASL in self.kinds:
            flags["xnz"] = ln.lane_any(a, "asl_xnz")                       # |a| != 0
            flags["eql"] = ln.comb(~ln.lane_any(b ^ ln.const(lambda L: L, "asl_L"), "asl_eqL"), "asl_eql")
        if Kind.POW in self.kinds:
            flags["yodd"] = ln.lane_bit(b, 0, "pow_yodd")
        flags = dict(zip(flags, cut("flags", *flags.values())))
        bigl, szero = flags["bigl"], flags["szero"]
        pow2 = ln.comb(right & ~bigl, "pow2")          # LSL, ASL: 2**s (0 for s >= the field width)
        # ASR: the value shifted by s - 1, then once more with the rounding bit added
        # ASR shifts the complement of a negative lane with zero fill and complements the
        # result (~(~v >> s) = v >> s with sign fill): the shifter needs no fill input
        y_asr = ln.sel(bigr, asm, right ^ asm, "asr_y")
        rb = ln.comb(Mux(cfg.rnd, y_asr & LO, 0), "asr_rb")
        ysh = ln.comb(((y_asr >> 1) & NH) | (asm & H), "asr_ysh")

        # A1's operands: an AND-OR of the choices, each under a registered select, the
        # choices that are constants (the threshold, SIGN's 1) registered with their select.
        # Selects and constants are functions of `cfg` only, which the engine sets (PREP) at
        # least a cycle before a beat's first S1 cycle: registering them takes the decoding
        # of the kind out of the path from the operands through the adder.
        def route_sel(name, cond, kept=False):
            if kept:                                   # a flip-flop yosys does not merge (see MEDIAN's)
                sel, = replicas(m, platform, cond, 1, "a1_sel_" + name, reset_less=True)
                return sel
            sel = Signal(name="a1_sel_" + name, reset_less=True)    # (loaded in every cycle, like the words)
            m.d.sync += sel.eq(cond)
            return sel

        def route_word(name, value):
            word = Signal(n, name="a1_k_" + name, reset_less=True)
            m.d.sync += word.eq(value)
            return word

        def kind_is(*ks, cond=1):
            built = [k for k in ks if k in self.kinds]
            return (cond & kind.matches(*built)) if built else Const(0)

        c_tlt, c_tgt = kind_is(Kind.THRES, cond=cfg.lt), kind_is(Kind.THRES, cond=~cfg.lt)
        c_clip, c_abs, c_sign = kind_is(Kind.CLIP), kind_is(Kind.ABS), kind_is(Kind.SIGN)
        c_asr, c_med = kind_is(Kind.ASR), kind_is(Kind.MEDIAN)
        c_ab = ~(c_tlt | c_tgt | c_clip | c_abs | c_sign | c_asr | c_med)      # a - b: every other kind
        # MEDIAN's select is kept where MEDIAN is built: yosys merged the narrow ALU's with the
        # wide ALU's and the pipeline's `is_median`, one register driving 76 loads over 24
        # tiles into the narrow ALU's A2 (17.0 ns in the placed `base`, session 46). Only
        # there: a kept flip-flop of a kind not built is no longer a constant that yosys
        # folds (every select kept cost the narrow ALU 576 LUT4s, session 47).
        s_med = route_sel("med", c_med, kept=Kind.MEDIAN in self.kinds)
        s_asr, s_abs = route_sel("asr", c_asr), route_sel("abs", c_abs)
        s_med_b = s_med & first_med                    # MEDIAN's first cycle: a < b; then a < c
        s_med_c = s_med & ~first_med

        def rep(sel):
            return sel.replicate(n)

        k_sign = route_word("sign", Mux(c_sign, LO, 0))          # SIGN: ABS of 1, 1 - 0 or 0 - 1
        m.d.comb += [
            x1.eq((a & (rep(route_sel("x_a", c_tlt | c_clip | c_med | c_ab)) | (rep(s_abs) & ~asm)))
                  | route_word("x_t", Mux(c_tgt, t_low_c, 0)) | (k_sign & ~asm) | (ysh & rep(s_asr))),
            x1s.eq((as_ & rep(route_sel("xs_a", ~(c_tgt | c_abs | c_sign))))
                   | route_word("xs_t", Mux(c_tgt, t_neg_c, 0))),
            y1.eq((b & rep(route_sel("y_b", c_ab) | s_med_b)) | (c & rep(s_med_c))
                  | route_word("y_t", Mux(c_tlt | c_clip, t_low_c, 0))
                  | (a & (rep(route_sel("y_a", c_tgt)) | (rep(s_abs) & asm))) | (k_sign & asm)
                  | (rb & rep(s_asr))),
            y1s.eq((bs & rep(route_sel("ys_b", c_ab) | s_med_b)) | (cs & rep(s_med_c))
                   | route_word("ys_t", Mux(c_tlt | c_clip, t_neg_c, 0))
                   | (as_ & rep(route_sel("ys_a", c_tgt | c_abs)))),
        ]
        m.d.comb += sub1.eq(route_sel("sub", ~kind.matches(Kind.ADD, Kind.ASR)))

        # A2's operands and the right shifter's, AND-ORs under registered selects like A1's:
        # CLIP hi < a; MEDIAN (once c has arrived, A1 a < c) b < c; ROR 2**(w - k); ASR a
        # (negative lanes complemented) right by s - 1; LSL, ASL 2**s; else a right by b
        s2_clip, s2_ror, s2_asr = (route_sel("a2_" + KIND_NAMES[k_], kind_is(k_))
                                   for k_ in (Kind.CLIP, Kind.ROR, Kind.ASR))
        s2_lsl = route_sel("a2_lsl", kind_is(Kind.LSL, Kind.ASL))
        s_hx = route_sel("shr_h", kind_is(Kind.ROR, Kind.LSL, Kind.ASL))                # x = H
        s_ra = route_sel("shr_a2", kind_is(Kind.ROR, Kind.ASR, Kind.LSL, Kind.ASL))    # amount from A2
        m.d.comb += [
            x2.eq((u_low & rep(s2_clip)) | (b & rep(s_med_c | s2_asr)) | (k & rep(s2_ror)) | (lm1 & rep(s2_lsl))),
            x2s.eq((u_neg & rep(s2_clip)) | (bs & rep(s_med_c))),
            y2.eq((a & rep(s2_clip)) | (c & rep(s_med_c)) | (rorc & rep(s2_ror)) | (LO & rep(s2_asr))
                  | (b & rep(s2_lsl))),
            y2s.eq((as_ & rep(s2_clip)) | (cs & rep(s_med_c))),
            xr.eq(((a & rep(~s_hx)) | (H & rep(s_hx))) ^ (asm & rep(s2_asr))),
            ar.eq((b & rep(~s_ra)) | (r2_low & rep(s_ra))),
        ]

        # --- the kinds' results ---------------------------------------------------------------------------
        # each kind's words of its own (computed whatever the kind), the front's result an
        # AND-OR of them under registered selects (decoded from `cfg` like A1's): no choice
        # by kind after the kinds' logic. Only the shared resources' inputs (the multiplier's)
        # and the iterative state are set by kind (the `Switch` after the results).
        fronts = []

        def built(*ks):
            return any(k in self.kinds for k in ks)

        def result(k_, lo_, ng, ft=None, h=None):
            """The front's words for kind `k_` (if this ALU builds it)."""
            if built(k_):
                fronts.append((k_, lo_, ng & H, H if ft is None else ft, h))

        if built(Kind.CLIP):
            lo_ok = Signal(n, name="clip_ge_lo")                   # a >= lo
            m.d.comb += lo_ok.eq(Mux(t_f["below"], ALL, Mux(t_f["above"], 0, ~lt1)))
            hi_ok = Signal(n, name="clip_le_hi")                   # a <= hi
            m.d.comb += hi_ok.eq(Mux(u_f["above"], ALL, Mux(u_f["below"], 0, ~lt2)))
            lo_le_hi = route_sel("clip_lo_le_hi", Mux(cfg.isg, cfg.imm0.as_signed() <= cfg.imm1.as_signed(),
                                                      cfg.imm0 <= cfg.imm1))
            tfit = Mux(t_f["fit"], H, 0)
            ufit = Mux(u_f["fit"], H, 0)
            bound_l = ln.comb(Mux(lo_le_hi, t_low, u_low), "bnd_l")
            bound_n = ln.comb(Mux(lo_le_hi, t_neg, u_neg), "bnd_n")
            bound_f = ln.comb(Mux(lo_le_hi, tfit, ufit), "bnd_f")
            in_rng = ln.comb(lo_ok & hi_ok, "in_rng")
            use_hi = ln.comb(lo_ok & ~hi_ok, "use_hi")
            result(Kind.CLIP, (a & in_rng) | (u_low & use_hi) | (bound_l & ~lo_ok),
                   (as_ & in_rng) | (u_neg & use_hi) | (bound_n & ~lo_ok),
                   ((H & in_rng) | (ufit & use_hi) | (bound_f & ~lo_ok)) & H)

        if built(Kind.MEDIAN):
            # cycle 0: a < b into sf0 (c comes a cycle after a and b); cycle 1: a < c, b < c.
            # a lies between b and c when a < b and a < c differ; else the median is
            # min(b, c) (a below both) or max(b, c) (a above both): c when a < b and
            # b < c differ, else b (ties pick equal values)
            take_a = ln.comb(sf0 ^ lt1, "med_a")
            take_c = ln.comb(~take_a & (sf0 ^ lt2), "med_c")
            take_b = ln.comb(~take_a & ~take_c, "med_b")
            result(Kind.MEDIAN, (a & take_a) | (c & take_c) | (b & take_b),
                   (as_ & take_a) | (cs & take_c) | (bs & take_b))

        if built(Kind.LSL, Kind.LSR, Kind.ROR):
            # source 0's bit pattern (zero-extended), read back in its unit, and the lanes
            # whose pattern bit w - 1 is set: an OR tree per candidate pattern (wtop is one
            # bit per lane), the choice after the trees
            def pattern(k_, pat, msb):
                sm = ln.comb(Mux(cfg.rsg, msb, 0), "psm")
                result(k_, pat | (sm & ~wmask), sm)

            pattern(Kind.LSL, mul.pl & wmask, ln.lane_any(mul.pl & wtop, "pmsb_l"))
            pattern(Kind.LSR, right & ~bigr, ln.lane_any(right & wtop, "pmsb_r") & ~bigr)
            if built(Kind.ROR):
                # the product's low w bits OR its bits [w, 2w) (the high half when w = L): the
                # low word shifted right by w under a mask of the w low lane bits that is 0 unless
                # w is the field width (a register, no choice by w in the path); bit w - 1 of that:
                # the product's bit w - 1 or 2w - 1, or bit L - 1 of the high half (w = L), one
                # OR tree
                rmask = {v: ln.const(lambda L, w, v=v: None if bits(w) > L else
                                     (1 << v) - 1 if bits(w) == v < L else 0, f"ror_m{v}", keys=WS)
                         for v in LANE_BITS[:-1]}
                hmask = ln.const(lambda L, w: None if bits(w) > L else (1 << L) - 1 if bits(w) == L else 0,
                                 "ror_mh", keys=WS)
                rot = ln.comb(reduce(or_, ((mul.pl >> v) & rmask[v] for v in rmask),
                                     (mul.pl & wmask) | (mul.ph & hmask)), "ror_rot")
                wtop_l = ln.const(lambda L, w: None if bits(w) > L else
                                  (1 << (bits(w) - 1)) | ((1 << (2 * bits(w) - 1)) if bits(w) < L else 0),
                                  "wtop_l", keys=WS)
                wtop_h = ln.const(lambda L, w: None if bits(w) > L else (1 << (L - 1)) if bits(w) == L else 0,
                                  "wtop_h", keys=WS)
                kz = flags["kz"]
                pattern(Kind.ROR, (a & kz) | (rot & ~kz),
                        (ln.lane_any(a & wtop, "pmsb_a") & kz)
                        | (ln.lane_any((mul.pl & wtop_l) | (mul.ph & wtop_h), "pmsb_p") & ~kz))

        result(Kind.ASR, (a & szero) | (r1_low & ~szero), (as_ & szero) | (r1_neg & ~szero),
               ((H & szero) | (r1_fit & ~szero)) & H)
        result(Kind.MUL, mul.pl, asm ^ bsm, h=mul.ph)

        if built(Kind.ASL):
            # x * 2**s; s >= L leaves no low bits
            one = ln.comb(flags["eql"] & flags["ma_is1"], "asl_one")
            ph_big = ln.comb(flags["xnz"] & ((LO & one) | ((LO << 1)[:n] & ~one)), "asl_phb")
            result(Kind.ASL, mul.pl & ~bigl, asm, h=(mul.ph & ~bigl) | (ph_big & bigl))

        if built(Kind.DIV, Kind.MOD):
            # one 64-bit lane group per L cycles (group g = it // L, bit step j = it % L);
            # dr / dq / da: the group's remainder, quotient and remaining dividend bits;
            # st2 collects the finished groups' results (quotient or remainder)
            G = n // 64
            gi = Signal(range(G), name="div_g") if G > 1 else Const(0, 1)   # no zero-width signal
            jz = Signal(name="div_j0")                     # first step of a group
            jl = Signal(name="div_jl")                     # last step of a group
            with m.Switch(cfg.lsel):
                for i, L in ln.widths:
                    with m.Case(i):
                        lb = L.bit_length() - 1
                        m.d.comb += [jz.eq(self.it[:lb] == 0), jl.eq(self.it[:lb] == L - 1)]
                        if G > 1:
                            m.d.comb += gi.eq(self.it[lb:])
            jz, jl = cut("step", jz, jl)
            if G > 1:
                gi, = cut("step", gi)
            ga, gb = Signal(64, name="div_ga"), Signal(64, name="div_gb")
            with m.Switch(gi):
                for g in range(G):
                    with m.Case(g):
                        m.d.comb += [ga.eq(ma[64 * g:64 * g + 64]), gb.eq(mb[64 * g:64 * g + 64])]
            r_in = dl.comb(Mux(jz, 0, dr), "div_r")
            q_in = dl.comb(Mux(jz, 0, dq), "div_q")
            a_in = dl.comb(Mux(jz, ga, da), "div_a")
            rin = dl.lane_flag(a_in & dl.H, "div_rin")
            r2 = dl.comb(((r_in << 1)[:64] & ~dl.LO) | (rin & dl.LO), "div_r2")
            ge_h, d = cut("div", *dl.carry(r2, gb, "div_sub"))
            gem = dl.lane_flag(ge_h | (r_in & dl.H), "div_ge")
            r_new = dl.sel(gem, d, r2, "div_rn")
            q_new = dl.comb(((q_in << 1)[:64] & ~dl.LO) | (gem & dl.LO), "div_qn")
            g_res = Signal(64, name="div_res")
            s_q = route_sel("div_q", kind_is(Kind.DIV)).replicate(64)
            m.d.comb += g_res.eq((q_new & s_q) | (r_new & ~s_q))
            full = ln.comb(Cat(st2[:64 * (G - 1)], g_res), "div_full")
            zb = szero
            mbd = ln.const(lambda L, d_: None if bits(d_) > L else (1 << bits(d_)) - 1, "div_mbd",
                           keys=[(cfg.bd, range(5))])
            zq = Mux(cfg.sd, LO, mbd)
            result(Kind.DIV, (full & ~zb) | (zq & zb), ((asm ^ bsm) & ~zb) | Mux(cfg.sd, zb, 0))
            result(Kind.MOD, full, asm)

        if built(Kind.POW):
            # st0 = result, st1 = base (both mod 2**L), st2 = remaining exponent bits,
            # sf0 / sf1 = "result / base >= 2**L" (lane masks); the step's phase (square or
            # multiply) and pass of the array
            cyc = Signal(OCC_BITS, name="pow_c")
            m.d.comb += cyc.eq(self.it - 1)
            phase, pidx, last_pass = (Signal(name=nm) for nm in ("pow_phase", "pow_pass", "pow_last_pass"))
            m.d.comb += [phase.eq(Mux(cfg.pass2, cyc[1], cyc[0])), pidx.eq(Mux(cfg.pass2, cyc[0], 0)),
                         last_pass.eq(Mux(cfg.pass2, cyc[0], 1))]
            phase, pidx, last_pass = cut("step", phase, pidx, last_pass)
            big = ln.lane_any(mul.ph, "pow_big")
            ybit = ln.lane_bit(st2, 0, "pow_ybit")
            yodd = flags["yodd"]
            xone = flags["ma_is1"] & ~asm
            xm1 = flags["ma_is1"] & asm
            yneg = bsm
            r_l = ln.comb((st0 & ~yneg) | (LO & (xone | xm1) & yneg), "pow_rl")
            r_h = ln.comb(((LO << 1)[:n] & sf0 & ~yneg), "pow_rh")
            r_s = ln.comb((asm & yodd & ~yneg) | (xm1 & yodd & yneg), "pow_rs")
            result(Kind.POW, r_l, r_s, h=r_h)

        # the front's result
        fsel = [rep(route_sel("f_" + KIND_NAMES[f[0]], kind_is(f[0]))) for f in fronts]
        for word, i in ((low, 1), (neg, 2), (fit, 3), (hi, 4)):
            m.d.comb += word.eq(reduce(or_, (f[i] & sel for f, sel in zip(fronts, fsel) if f[i] is not None),
                                       Const(0, n)))

        # --- the multiplier's inputs: AND-ORs under registered selects -------------------------------------
        # LSL, LSR, ROR: a * 2**s or 2**(w - k) (LSR: unused); MUL: |a| * |b|, or |b| * |a|
        # (swap); ASL: |a| * 2**s; POW: the result or the base times the base. The first step
        # stores pass 0 of a two-pass product; POW's passes take steps of their own.
        def msel(name, *ks, cond=1):
            return route_sel("m_" + name, kind_is(*ks, cond=cond))

        s_mul, s_swap = msel("mul", Kind.MUL, cond=~cfg.swap), msel("mul_swap", Kind.MUL, cond=cfg.swap)
        s_asl = msel("asl", Kind.ASL)
        x = (a & rep(msel("x_a", Kind.LSL, Kind.LSR, Kind.ROR))) | (ma & rep(s_mul | s_asl)) | (mb & rep(s_swap))
        y = ((pow2 & rep(msel("y_p2", Kind.LSL, Kind.LSR, Kind.ASL))) | (right & rep(s2_ror))
             | (ma & rep(s_swap)) | (mb & rep(s_mul)))
        pass_ = msel("pass", Kind.LSL, Kind.LSR, Kind.ROR, Kind.MUL, Kind.ASL, cond=cfg.pass2) & ~first_mul
        load = msel("load", Kind.LSL, Kind.LSR, Kind.ROR, Kind.MUL, Kind.ASL) & first_mul
        if built(Kind.POW):
            s_pow = msel("pow", Kind.POW)
            x |= (st1 & rep(s_pow & phase)) | (st0 & rep(s_pow & ~phase))
            y |= st1 & rep(s_pow)
            pass_ |= s_pow & pidx
            load |= msel("pow_p2", Kind.POW, cond=cfg.pass2) & ~first_mul & ~pidx
        m.d.comb += [mul.x.eq(x), mul.y.eq(y), mul.pass_.eq(pass_), mul.acc_load.eq(self.step & load)]

        # --- the iterative state, by kind ----------------------------------------------------------------
        with m.Switch(kind):
            with kcase(Kind.MEDIAN):
                with m.If(self.step):
                    m.d.sync += sf0.eq(lt1)
            if built(Kind.DIV, Kind.MOD):
                with kcase(Kind.DIV, Kind.MOD):
                    with m.If(self.step):
                        m.d.sync += [dr.eq(r_new), dq.eq(q_new), da.eq((a_in << 1)[:64] & ~dl.LO)]
                        with m.If(jl):
                            with m.Switch(gi):
                                for g in range(G):
                                    with m.Case(g):
                                        m.d.sync += st2[64 * g:64 * g + 64].eq(g_res)
            if built(Kind.POW):
                with kcase(Kind.POW):
                    with m.If(self.step):
                        with m.If(first):
                            m.d.sync += [st0.eq(LO), st1.eq(ma), st2.eq(b), sf0.eq(0), sf1.eq(0)]
                        with m.Elif(last_pass & ~phase):
                            m.d.sync += [st0.eq((mul.pl & ybit) | (st0 & ~ybit)),
                                         sf0.eq(sf0 | (ybit & (sf1 | big)))]
                        with m.Elif(last_pass & phase):
                            m.d.sync += [st1.eq(mul.pl), sf1.eq(sf1 | big), st2.eq((st2 >> 1) & NH)]

        # --- the tail: registered front words (`take`), the tail kinds' selections --------------------------
        # the front's result (every kind but the tail kinds, for which it is 0: no front select
        # is set; no register where no such kind is built), A1's result, the OR tree of
        # "a != b" (MAXSI, MINSI, CMP) and the operands
        ne_flags = ln.lane_any_flags((a ^ b) | (as_ ^ bs), "ne") if TAIL_SET & self.kinds else []
        words = {"low": low, "hi": hi, "neg": neg, "fit": fit, "a": a, "as": as_, "b": b, "bs": bs,
                 "r1_low": r1_low, "r1_neg": r1_neg, "r1_fit": r1_fit,
                 **{f"ne{i}": f for i, f in enumerate(ne_flags)}}
        t = {k: Signal(len(v), name="t_" + k, reset_less=True) for k, v in words.items()}
        if self.registered:
            with m.If(self.take):
                m.d.sync += [t[k].eq(v) for k, v in words.items()]
        else:
            m.d.comb += [t[k].eq(v) for k, v in words.items()]
        ta, tas, tb, tbs = t["a"], t["as"], t["b"], t["bs"]
        tlt = ln.lane_flag(t["r1_neg"], "t_lt")            # a < b (A1's subtraction)

        # the result: an AND-OR of the kinds' selections under registered selects (decoded
        # from `cfg` like A1's), no multiplexer chain by kind after the lane flags
        def tsel(name, *ks, cond=1):
            return rep(route_sel("t_" + name, kind_is(*ks, cond=cond)))

        var = cfg.variant
        s_arith = tsel("arith", Kind.ADD, Kind.SUB, Kind.ABS, Kind.SIGN)
        s_mm = tsel("mm", Kind.MAX, Kind.MIN, Kind.THRES, Kind.IDENT)
        s_cmp = tsel("cmp", Kind.MAXSI, Kind.MINSI, Kind.CMP)
        s_logic = tsel("logic", Kind.LOGIC)
        # MAX, MIN, THRES, IDENT: a, except in the lanes of `take`: b (MAX, MIN) or 0 (THRES)
        # THRES keeps a < t (lt) or t < a: take every lane when t is above (below) every
        # lane value, else the lanes where the comparison fails
        t_all = tsel("thr_all", Kind.THRES, cond=Mux(cfg.lt, t_f_c["above"], t_f_c["below"]))
        t_cmp = tsel("thr_cmp", Kind.THRES, cond=t_f_c["fit"])
        keep_b = ln.comb((tlt & tsel("max", Kind.MAX)) | (~tlt & tsel("min", Kind.MIN)), "take_b")
        take = ln.comb(keep_b | (tsel("thr", Kind.THRES) & ~(t_all | (t_cmp & tlt))), "take")
        mm_low = ln.comb((ta & ~take) | (tb & keep_b), "mm_low")
        mm_neg = ln.comb((tas & ~take) | (tbs & keep_b), "mm_neg")
        # MAXSI, MINSI, CMP: a flag per lane (tne: a != b)
        tne = ln.broadcast([t[f"ne{i}"] for i in range(len(ne_flags))], "t_ne") if ne_flags else Const(0, n)
        cmp_t = ln.comb((tlt & (tsel("c_maxsi", Kind.MAXSI) | tsel("c_lt", Kind.CMP, cond=var == 3)))
                        | (~tlt & tne & (tsel("c_minsi", Kind.MINSI) | tsel("c_gt", Kind.CMP, cond=var == 5)))
                        | (~tne & tsel("c_eq", Kind.CMP, cond=var == 0)) | (tne & tsel("c_ne", Kind.CMP, cond=var == 1))
                        | ((tlt | ~tne) & tsel("c_le", Kind.CMP, cond=var == 2))
                        | (~tlt & tsel("c_ge", Kind.CMP, cond=var == 4)), "cmp_t")
        # LOGIC: the variant's truth table (tt[2a + b]), one lookup per bit
        tt = Signal(4, name="logic_tt", reset_less=True)     # (loaded in every cycle from `cfg`)
        with m.Switch(var):
            for v, tv in enumerate((0b1000, 0b1110, 0b0110, 0b0011, 0b0100)):
                with m.Case(v):
                    m.d.sync += tt.eq(tv)
        logic = ln.comb((ta & tb & tt[3].replicate(n)) | (ta & ~tb & tt[2].replicate(n))
                        | (~ta & tb & tt[1].replicate(n)) | (~ta & ~tb & tt[0].replicate(n)), "logic")
        m.d.comb += [
            self.low.eq((t["r1_low"] & s_arith) | (mm_low & s_mm) | (cmp_t & LO & s_cmp) | (logic & s_logic)
                        | t["low"]),
            self.neg.eq((((t["r1_neg"] & s_arith) | (mm_neg & s_mm)) & H) | t["neg"]),
            self.fit.eq((t["r1_fit"] & s_arith) | (H & (s_mm | s_cmp | s_logic)) | t["fit"]),
            self.hi.eq(t["hi"]),
        ]

        return m
