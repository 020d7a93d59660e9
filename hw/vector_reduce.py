"""The vector engine's reduction unit: ASUM and REDUCE_ALL .. REDUCE_VAR
(docs/isa-decisions.md D-ARITH ASUM, D-REDUCE; golden/semantics/reduction.py).

The source is a C x H x W tensor (``fc``, ``fh``, ``fw``; 0 means 1); `axis`
selects the reduced axes. Integer results do not depend on the order of the
elements (sums, products capped at 2**bits, extremes), so the elements of one
result are read in memory order: the *walker* cuts them into runs of contiguous
elements (a whole W row when W is reduced, single elements otherwise) and hands
each run to reader 0 (`hw.vector_stream.StreamReader`), which realigns it; the
unit takes one element per cycle from the reader's window into a two-entry queue
(the window's first 64 bits) and from its head into the element register (two
cycles of latency, no loss of rate; the reader's take waits only for the queue's
"not full", and the reader's realignment and the element's flags are in separate
cycles).

Per element (one cycle, except as noted):

* sum (exact, 64 + log2(elements) + 2 bits), nonzero flags (ALL, ANY), the
  extreme (MAX or MIN, one comparator);
* REDUCE_VAR: the square, on a radix-2 shift-add multiplier that skips leading
  zeros: one cycle per significant bit of |x|, and one to start;
* REDUCE_PROD: the magnitude times |x| on the same multiplier, capped at
  2**bits (a product that reaches it saturates whatever follows), and the sign;
  zero and capped products take one cycle, others one per significant bit of |x|
  and one to start.

Per result: SUM/ASUM, MAX, MIN, ALL, ANY, PROD at once; MEAN the exact sum
divided by K (toward zero) on a restoring divider, bits + 1 cycles; VAR
``(K * sum(x^2) - sum(x)^2) // K**2`` with three shift-add products and a
restoring division of 2 * bits + 2 steps. The divider keeps the divisor in place
and moves the dividend through a partial remainder as wide as K**2 (K < 2**NB
once the operand ranges have passed), so its compare-subtract is 2 NB bits wide,
not as wide as the numerator; the dividend's low bits are loaded at the top of the
quotient register and the steps are counted down, so no step decodes the unit.
Then saturation to the destination unit (wrapping
for ASUM without ``sat``; compares on 65 bits, a wider result saturates by its
sign: a cycle for the compares, one for the choice) and one element to the writer.

The dimension products (C*H, H*W, C*W, C*H*W) for the range checks are computed
on the same multiplier when `dims_start` pulses (at most 52 cycles); ``n_total``
and ``n_out`` (registers) are exact from the first cycle of `dims_ready` on.

``checks``: simulation-only `Assert`s on the unit's register copies (the unit tests
set it).
"""

from amaranth.hdl import Assert, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .carry_select import carry_select_add
from .reg_queue import RegQueue
from .replicate import own_replicas
from .thermometer import thermometer

__all__ = ["Reducer"]

ALL, ANY, MEAN, MAX, MIN, PROD, SUM, VAR = range(8)


def _by_width(bsel, fn):
    """``fn(bits)`` for the unit width 4 << bsel (a multiplexer over the five widths)."""
    out = fn(4)
    for bs in range(1, 5):
        out = Mux(bsel == bs, fn(4 << bs), out)
    return out


class Reducer(wiring.Component):
    def __init__(self, config, nib_bits, *, checks=False):
        self.config, self.checks = config, checks
        self.nb = nib_bits
        R = config.row_bytes
        super().__init__({
            # configuration (static from `start` on)
            "variant": In(3), "asum": In(1),
            "src_nib": In(nib_bits), "length": In(nib_bits),
            "fw": In(12), "fh": In(12), "fc": In(12), "axis": In(3),
            "bsel": In(3), "signed": In(1), "dbsel": In(3), "dsigned": In(1), "sat": In(1),
            # dimension products (for the range checks)
            "dims_start": In(1), "dims_ready": Out(1),
            "n_total": Out(36), "n_out": Out(36),
            # run
            "start": In(1), "run": In(1), "idle": Out(1),
            "run_start": Out(1), "run_nib": Out(nib_bits), "run_len": Out(nib_bits),
            "window": In(8 * R), "has": In(1), "rd_left_zero": In(1), "take": Out(1), "take_nib": Out(nib_bits),
            "out_valid": Out(1), "out_ready": In(1), "out_data": Out(8 * R), "out_cnt": Out(range(2 * R + 1)),
            "out_mask": Out(2 * R),
        })

    def elaborate(self, platform):
        m = Module()
        NB = self.nb
        SW = 64 + NB + 2                        # sum (signed)
        QW = 128 + NB + 1                       # sum of squares
        PW = max(QW + NB, 2 * SW) + 1           # products, numerators
        BW = max(SW, 2 * NB)                    # second multiplier operand
        QB = 2 * 64 + 2                         # quotients: VAR's is below 2**(2 bits + 2)
        DB = 2 * NB                             # divisors: K <= elements < 2**NB once the ranges pass
        c = Signal(12)
        h = Signal(12)
        w = Signal(12)
        m.d.comb += [c.eq(Mux(self.fc == 0, 1, self.fc)), h.eq(Mux(self.fh == 0, 1, self.fh)),
                     w.eq(Mux(self.fw == 0, 1, self.fw))]
        # the unit as a register of the unit's own (the engine's `bsel`, fan-out 180 over 86
        # tiles, began the reducer's paths into its walker, x and divider registers, 15.6-20.0
        # ns in the placed `base`, session 51); it holds still from the engine's DECODE, cycles
        # before `start`, so the copy a cycle later is the same while the unit runs
        bsel = Signal(3, name="red_bsel", reset_less=True)
        m.d.sync += bsel.eq(self.bsel)
        el = bsel                               # nibbles per element = 1 << bsel

        # --- shift-add multiplier: p = a * b, one cycle per significant bit of b -------------------
        # (the operands and the product reset-less: loaded at `sa_go`, read while sa_busy, reset)
        sa_a = Signal(PW, reset_less=True)
        sa_b = Signal(BW, reset_less=True)
        sa_p = Signal(PW, reset_less=True)
        sa_busy = Signal()
        sa_go = Signal()
        sa_ga, sa_gb = Signal(PW, name="sa_ga"), Signal(BW, name="sa_gb")
        # A product starts a cycle after its request (`mul`), from registers of the request
        # and its operands: the FSMs' decoding -> `sa_go` (fan-out 428, the operands' and the
        # product's enables) was 17.4 ns in the placed `base` (session 45). sa_busy is low in
        # that cycle (a request drops a product still going, as the direct start replaced it),
        # so no `sa_done` is seen before the product's own.
        sa_go_q = Signal()
        sa_ga_q = Signal(PW, reset_less=True)       # (loaded in every cycle, read at sa_go_q)
        sa_gb_q = Signal(BW, reset_less=True)
        m.d.sync += [sa_go_q.eq(sa_go), sa_ga_q.eq(sa_ga), sa_gb_q.eq(sa_gb)]
        # sa_bz: sa_b == 0, a register computed from the step before (a new b counts as
        # nonzero: b = 0 takes one step more), so no wide zero test is on the control paths
        sa_bz = Signal()
        # the PW-bit step in three carry chains (one was 13.6 ns of cells placed)
        sa_sum = carry_select_add(m, sa_p, Mux(sa_b[0], sa_a, 0), PW, 3, "sa_sum")
        # The step's registers do not look at `sa_go`: a step in a request's cycle is undone
        # by the load in the next (sa_go_q) and read by nobody (sa_busy drops, so no
        # `sa_done`): through their enables, the FSMs' decoding -> `sa_go` (fan-out 256 over
        # 26 tiles) -> the operands was 15.5 ns and 282 of the worst end points in the
        # placed `base` (session 48). Only `sa_busy` sees `sa_go`.
        with m.If(sa_go_q):
            m.d.sync += [sa_a.eq(sa_ga_q), sa_b.eq(sa_gb_q), sa_p.eq(0), sa_busy.eq(1), sa_bz.eq(0)]
        with m.Elif(sa_busy & ~sa_bz):
            m.d.sync += [sa_p.eq(sa_sum), sa_a.eq(sa_a << 1), sa_b.eq(sa_b >> 1),
                         sa_bz.eq(sa_b[1:] == 0)]
        with m.If(~sa_go_q & (sa_go | sa_bz)):
            m.d.sync += sa_busy.eq(0)               # (a product still going is dropped, as before)
        sa_done = sa_busy & sa_bz
        if self.checks:
            m.d.sync += Assert(~(sa_go & sa_go_q), "Reducer: a product requested in its predecessor's first cycle")

        def mul(a, b):
            m.d.comb += [sa_go.eq(1), sa_ga.eq(a), sa_gb.eq(b)]

        # --- dimension products ------------------------------------------------------------------------
        # (the products reset-less: computed after `dims_start`, read once dims_ready, reset)
        ch, hw, cw = (Signal(24, reset_less=True, name=nm) for nm in ("ch", "hw", "cw"))
        chw = Signal(36, reset_less=True)
        dstep = Signal(3)
        dims_ready = Signal()
        m.d.comb += self.dims_ready.eq(dims_ready)
        with m.If(self.dims_start):
            m.d.sync += [dstep.eq(0), dims_ready.eq(0)]
            mul(c, h)
        with m.Elif(~dims_ready & sa_done):
            with m.Switch(dstep):
                with m.Case(0):
                    m.d.sync += [ch.eq(sa_p), dstep.eq(1)]
                    mul(h, w)
                with m.Case(1):
                    m.d.sync += [hw.eq(sa_p), dstep.eq(2)]
                    mul(c, w)
                with m.Case(2):
                    m.d.sync += [cw.eq(sa_p), dstep.eq(3)]
                    mul(ch, w)
                with m.Case(3):
                    m.d.sync += [chw.eq(sa_p), dims_ready.eq(1)]

        # per-axis geometry (elements): results M, elements per result K, walker loops
        M = Signal(36)
        K, o1, o1s, o2, o2s, rc, rs, rl = (Signal(36, name=nm + "_c")
                                           for nm in ("k", "o1", "o1s", "o2", "o2s", "rc", "rs", "rl"))
        geo = {
            1: (ch, w, 1, 0, ch, w, 1, 0, w),
            2: (cw, h, c, hw, w, 1, h, w, 1),
            3: (c, hw, 1, 0, c, hw, 1, 0, hw),
            4: (hw, c, 1, 0, hw, 1, c, hw, 1),
            5: (h, cw, 1, 0, h, w, c, hw, w),
            6: (w, ch, 1, 0, w, 1, ch, w, 1),
            7: (1, chw, 1, 0, 1, 0, 1, 0, chw),
        }
        with m.If(self.asum):
            m.d.comb += [M.eq(1), K.eq(self.length), o1.eq(1), o2.eq(1), rc.eq(1), rl.eq(self.length)]
        with m.Else():
            with m.Switch(self.axis):
                for ax, vals in geo.items():
                    with m.Case(ax):
                        m.d.comb += [s.eq(v) for s, v in zip((M, K, o1, o1s, o2, o2s, rc, rs, rl), vals)]
        # the result count as a register: its operands are final from the cycle after step 2
        # (cw), before the cycle that sets `dims_ready`, so it is exact from then on while
        # the instruction's fields hold (the engine reads it from dims_ready's first cycle).
        # The fields' dimension -> the axis choice -> the engine's slot facts was a 21.6 ns
        # path on the placed `base` (session 38: the reducer and the slot registers lie far
        # apart). (Reset-less: loaded in every cycle.)
        M_r = Signal(36, name="n_out_r", reset_less=True)
        m.d.sync += M_r.eq(M)
        m.d.comb += [self.n_total.eq(chw), self.n_out.eq(M_r)]
        if self.checks:
            # (in the first cycle of `dims_ready`, when the engine takes the slot facts from it)
            dims_was = Signal()
            m.d.sync += dims_was.eq(dims_ready)
            m.d.sync += Assert(~dims_ready | dims_was | (M_r == M), "Reducer: n_out differs from its axis' product")
        # the walker's and the accumulators' geometry as registers: static from the cycle after
        # `dims_ready` (or the fields, for ASUM), which comes at least two cycles before `start`
        geo_c = (K, o1, o1s, o2, o2s, rc, rs, rl)
        rl_c = rl                                   # (the run length's next value, for run_len)
        # (reset-less: loaded in every cycle)
        K, o1, o1s, o2, o2s, rc, rs, rl = (Signal(36, name=g.name[:-2], reset_less=True) for g in geo_c)
        m.d.sync += [r.eq(g) for r, g in zip((K, o1, o1s, o2, o2s, rc, rs, rl), geo_c)]
        k_m1 = Signal(36, reset_less=True)
        m.d.sync += k_m1.eq(geo_c[0] - 1)

        # --- walker ------------------------------------------------------------------------------------------
        # (the counters and addresses reset-less: loaded by `start`, read while `pend`, reset)
        pend = Signal()
        wc1, wc2, wrc = (Signal(NB, reset_less=True, name=nm) for nm in ("wc1", "wc2", "wrc"))
        wa1, wa2, war = (Signal(NB + 1, reset_less=True, name=nm) for nm in ("wa1", "wa2", "war"))
        run_start = Signal()
        run_len = Signal(NB, name="run_len_r", reset_less=True)
        m.d.comb += [run_start.eq(self.run & pend & self.rd_left_zero),
                     self.run_start.eq(run_start), self.run_nib.eq(war), self.run_len.eq(run_len)]
        # the run's length in nibbles as a register, loaded in every cycle like `rl` (from the
        # same geometry, so valid when `rl` is; `bsel` holds still from before `start`): the
        # unit's shift was in series with reader 0's last-row adder and compare (`bsel` ->
        # `run_len` -> the reader's `rows_more`, 22.0 ns in the placed `base`, session 37)
        m.d.sync += run_len.eq((rl_c << el)[:NB])
        # the strides in nibbles, registers loaded in every cycle in the same way: the
        # engine's `bsel` (fan-out 180 over 86 tiles) -> the shift -> the walker's adders was
        # 17.8-20.0 ns in the placed `base` (session 51)
        rs_n, o1s_n, o2s_n = (Signal(NB + 1, name=f"{nm}_nib", reset_less=True) for nm in ("rs", "o1s", "o2s"))
        m.d.sync += [r.eq((g << el)[:NB + 1]) for r, g in zip((rs_n, o1s_n, o2s_n), (geo_c[6], geo_c[2], geo_c[4]))]
        if self.checks:
            m.d.sync += Assert(self.idle | (bsel == self.bsel), "Reducer: the unit changed while the reducer runs")
            m.d.sync += Assert(~pend | ((rs_n == (rs << el)[:NB + 1]) & (o1s_n == (o1s << el)[:NB + 1])
                                        & (o2s_n == (o2s << el)[:NB + 1])),
                               "Reducer: a stride register differs from its shifted stride")
        with m.If(self.start):
            m.d.sync += [pend.eq(1), wc1.eq(0), wc2.eq(0), wrc.eq(0),
                         wa1.eq(self.src_nib), wa2.eq(self.src_nib), war.eq(self.src_nib)]
        with m.Elif(run_start):
            with m.If(wrc + 1 < rc):
                m.d.sync += [wrc.eq(wrc + 1), war.eq(war + rs_n)]
            with m.Elif(wc2 + 1 < o2):
                n2 = wa2 + o2s_n
                m.d.sync += [wrc.eq(0), wc2.eq(wc2 + 1), wa2.eq(n2), war.eq(n2)]
            with m.Elif(wc1 + 1 < o1):
                n1 = wa1 + o1s_n
                m.d.sync += [wrc.eq(0), wc2.eq(0), wc1.eq(wc1 + 1), wa1.eq(n1), wa2.eq(n1), war.eq(n1)]
            with m.Else():
                m.d.sync += pend.eq(0)

        # --- element --------------------------------------------------------------------------------------------
        # a two-entry queue (`hw.reg_queue`) takes the window's first 64 bits (the reader's
        # realignment ends there) and `x` the element from its head, sign- or zero-extended,
        # with its flags, when `x` is empty or used in this cycle. The take waits only for
        # the queue's own "not full", a register beside the reader, not for the accumulators'
        # use of `x`. (Reader 0's slot pointer -> the window -> the element's flags -> `xbig`
        # led the placed `base` of session 36, 18.5-20.8 ns.)
        m.submodules.elq = elq = RegQueue(64)
        y = elq.r_data
        xw = Signal(65, name="x_win")
        xsign = Signal()
        # the element's flags x != 0 and x in {1, -1} from its b bits in `y`, chosen
        # by the unit after the compares (not compares of the extended 65-bit element)
        w_nz, w_pm1 = Signal(name="x_win_nz"), Signal(name="x_win_pm1")
        with m.Switch(bsel):
            for bs in range(5):
                b = 4 << bs
                with m.Case(bs):
                    el_bits = y[:b]
                    m.d.comb += [xsign.eq(y[b - 1] & self.signed),
                                 xw.eq(Cat(el_bits, xsign.replicate(65 - b))),
                                 w_nz.eq(el_bits != 0),
                                 w_pm1.eq((el_bits == 1) | (el_bits.all() & self.signed))]
        x = Signal(65, reset_less=True)                   # (x, xnz, xbig: data, valid under xv)
        xv = Signal()                                     # x holds an element
        use = Signal()                                    # ACC uses x in this cycle
        xs = x.as_signed()
        xneg = x[64]
        # x != 0 and |x| > 1 (x none of 0, 1, -1) registered with x, from `y`'s element;
        # |x| from the register x: the 65-bit negation is not in series with the
        # extraction (it feeds only the multiplier's operand registers)
        xnz, xbig = (Signal(reset_less=True, name=nm) for nm in ("xnz", "xbig"))
        xabs = Signal(65)
        m.d.comb += xabs.eq(Mux(xneg, -xs, xs))
        el_nib = Signal(6, reset_less=True)               # a register (bsel holds still from before
        m.d.sync += el_nib.eq(Const(1, 6) << el)          # start): no decoding before the reader's `has`
        cap = Signal(66)                                  # PROD magnitudes saturate here: 2**bits
        m.d.comb += cap.eq(_by_width(bsel, lambda b: Const(1 << b, 66)))

        # The accumulators, counts and results are reset-less: the FSM (reset) leaves IDLE only
        # on `start`; the accumulators, kcnt and outs are cleared in IDLE (`reset_acc`), ext is
        # loaded by an output's first element (kcnt == 0), and every later register is loaded
        # in the state before the one that reads it.
        acc_sum = Signal(SW, reset_less=True)
        acc_sq = Signal(QW, reset_less=True)
        pmag = Signal(66, reset_less=True)
        # pmag != 0 and pmag == cap as registers set with pmag (no 66-bit compares before the
        # multiplier's start); a product in PROD is of pmag != 0 and |x| > 1, so never 0
        pm_nz, pm_cap = (Signal(reset_less=True, name=nm) for nm in ("pm_nz", "pm_cap"))
        pneg = Signal(reset_less=True)
        ext = Signal(65, reset_less=True)                 # MAX / MIN: the extreme so far
        anynz = Signal(reset_less=True)
        allnz = Signal(reset_less=True)
        kcnt = Signal(36, reset_less=True)
        outs = Signal(36, reset_less=True)                # results emitted
        num = Signal(PW, reset_less=True)                 # VAR: K * sum(x^2), then minus sum^2
        # the sums with the product in three carry chains each (num - sa_p in one was 13.4 ns
        # of cells placed)
        sq_sum = carry_select_add(m, acc_sq, sa_p, QW, 3, "sq_sum")
        num_diff = carry_select_add(m, num, ~sa_p, PW, 3, "num_diff", carry_in=1)
        VW = QB + 1                                       # results, signed (sums need less)
        v = Signal(VW, reset_less=True)
        vneg = Signal(reset_less=True)                    # the quotient's sign
        # divider (MEAN, VAR): the divisor stays put and the dividend moves left through
        # the partial remainder dv_r, one bit per step, the quotient bits entering dv_q
        dv_d = Signal(DB, reset_less=True)                # K or K**2
        dv_r = Signal(DB, reset_less=True)                # partial remainder, below dv_d
        dv_q = Signal(QB, reset_less=True)                # dividend bits below the remainder, then the quotient
        dv_n = Signal(8, reset_less=True)
        # the result, one element's nibbles and their mask: registers loaded in SAT and 0
        # outside OUT (the engine ORs them with the pipeline's outputs, 0 while it has none);
        # the unit's decoding (`dbsel` holds still from before `start`) is off the writer's paths
        o_data = Signal(64)
        sat_over, sat_under = (Signal(name=nm, reset_less=True) for nm in ("sat_over", "sat_under"))  # (SAT -> CLIP)
        out_cnt = Signal.like(self.out_cnt, name="o_cnt")
        out_mask = Signal.like(self.out_mask, name="o_mask")
        el_cnt = Signal.like(self.out_cnt)
        m.d.comb += el_cnt.eq(Const(1, 5) << self.dbsel)
        el_mask = thermometer(m, el_cnt, len(self.out_mask), "el_mask")

        def reset_acc():
            m.d.sync += [acc_sum.eq(0), acc_sq.eq(0), pmag.eq(1), pm_nz.eq(1), pm_cap.eq(0), pneg.eq(0),
                         anynz.eq(0), allnz.eq(1), kcnt.eq(0)]

        last_el = kcnt == k_m1
        var = self.variant
        take = Signal()
        advance = Signal()                                # the queue's head moves into x
        m.d.comb += [self.take.eq(take), self.take_nib.eq(el_nib),
                     take.eq(self.run & ~self.idle & elq.w_ready & self.has),
                     elq.w_valid.eq(take), elq.w_data.eq(self.window[:64]), elq.flush.eq(self.start),
                     advance.eq(elq.r_valid & (~xv | use)), elq.r_ready.eq(advance)]
        with m.If(self.start):
            m.d.sync += xv.eq(0)
        with m.Elif(advance):
            m.d.sync += [x.eq(xw), xv.eq(1), xnz.eq(w_nz), xbig.eq(w_nz & ~w_pm1)]
        with m.Elif(use):
            m.d.sync += xv.eq(0)
        # the destination's bounds, registers: `dbsel` and `dsigned` hold still from before
        # `start`, and the first result comes cycles later (no unit decoding on the result path)
        dsat_lo = Signal(65, reset_less=True)             # (loaded in every cycle)
        dsat_hi = Signal(65, reset_less=True)
        with m.Switch(Cat(self.dbsel, self.dsigned)):
            for bs in range(5):
                for sg in (0, 1):
                    b = 4 << bs
                    lo, hi = (-(1 << (b - 1)), (1 << (b - 1)) - 1) if sg else (0, (1 << b) - 1)
                    with m.Case(bs | (sg << 3)):
                        m.d.sync += [dsat_lo.eq(lo & ((1 << 65) - 1)), dsat_hi.eq(hi)]

        # MAX / MIN: x < ext from one 66-bit difference as a carry-select adder (MAX takes x
        # when x >= ext: an equal x leaves ext as it was): the two 65-bit compares' carry
        # chains were in series with ext's select (x -> ext, 15.7 ns; -> the FSM, 16.1 ns
        # placed, session 41)
        ext_d = carry_select_add(m, xs, ~ext.as_signed(), 66, 3, "ext_d", carry_in=1)
        ext_lt = ext_d[65]

        with m.FSM(name="red") as red_fsm:
            with m.State("IDLE"):
                m.d.comb += self.idle.eq(1)
                # the accumulators and `outs` clear in every IDLE cycle, not only at `start`,
                # and `ext` not at all (an output's first element loads it): their clear (a
                # flip-flop's LSR) is then of the state alone (x -> ext's compare -> the
                # clear of `outs` and `ext`, fan-out 101, was 15.0-16.7 ns in the placed `base`)
                reset_acc()
                m.d.sync += outs.eq(0)
                with m.If(self.start):
                    m.next = "ACC"

            with m.State("ACC"):
                with m.If(xv):
                    m.d.comb += use.eq(1)
                    first = kcnt == 0
                    better = Mux(var == MAX, ~ext_lt, ext_lt)          # (x == ext: either is ext)
                    m.d.sync += [
                        acc_sum.eq(acc_sum + xs), kcnt.eq(kcnt + 1),
                        anynz.eq(anynz | xnz), allnz.eq(allnz & xnz),
                        ext.eq(Mux(first | better, x, ext)),
                        pneg.eq(pneg ^ xneg),
                    ]
                    with m.If(var == VAR):
                        mul(xabs, xabs)
                        m.next = "SQ"
                    with m.Elif((var == PROD) & pm_nz & ~pm_cap & xbig):
                        mul(pmag, xabs)
                        m.next = "PROD"
                    with m.Else():
                        with m.If(var == PROD):
                            with m.If(~xnz):
                                m.d.sync += [pmag.eq(0), pm_nz.eq(0)]
                        with m.If(last_el):
                            m.next = "FIN"

            with m.State("SQ"):
                with m.If(sa_done):
                    m.d.sync += acc_sq.eq(sq_sum)
                    with m.If(kcnt == K):
                        m.next = "FIN"
                    with m.Else():
                        m.next = "ACC"

            with m.State("PROD"):
                with m.If(sa_done):
                    capped = _by_width(bsel, lambda b: sa_p[b:].any())     # sa_p >= 2**bits
                    m.d.sync += [pmag.eq(Mux(capped, cap, sa_p)), pm_cap.eq(capped)]
                    with m.If(kcnt == K):
                        m.next = "FIN"
                    with m.Else():
                        m.next = "ACC"

            with m.State("FIN"):
                sum_neg = acc_sum[SW - 1]
                sum_abs = Mux(sum_neg, -acc_sum.as_signed(), acc_sum)
                with m.Switch(var):
                    with m.Case(ALL):
                        m.d.sync += v.eq(allnz)
                        m.next = "SAT"
                    with m.Case(ANY):
                        m.d.sync += v.eq(anynz)
                        m.next = "SAT"
                    with m.Case(MAX, MIN):
                        m.d.sync += v.eq(ext.as_signed())
                        m.next = "SAT"
                    with m.Case(SUM):
                        m.d.sync += v.eq(acc_sum.as_signed())
                        m.next = "SAT"
                    with m.Case(PROD):
                        neg_p = pneg & (pmag != 0)
                        m.d.sync += v.eq(Mux(neg_p, -pmag.as_signed(), pmag))
                        m.next = "SAT"
                    with m.Case(MEAN):
                        # |sum| / K: quotient below 2**(bits + 1)
                        m.d.sync += [dv_r.eq(_by_width(bsel, lambda b: sum_abs >> (b + 1))),
                                     dv_q.eq(_by_width(bsel, lambda b: (sum_abs << (QB - b - 1))[:QB])),
                                     dv_d.eq(K), dv_n.eq(_by_width(bsel, lambda b: b + 1)), vneg.eq(sum_neg)]
                        m.next = "DIV"
                    with m.Case(VAR):
                        mul(acc_sq, K)
                        m.next = "VAR1"

            with m.State("VAR1"):                             # num = K * sum(x^2)
                sum_abs = Mux(acc_sum[SW - 1], -acc_sum.as_signed(), acc_sum)
                with m.If(sa_done):
                    m.d.sync += num.eq(sa_p)
                    mul(sum_abs, sum_abs)
                    m.next = "VAR2"

            with m.State("VAR2"):                             # num -= sum^2
                with m.If(sa_done):
                    m.d.sync += num.eq(num_diff)
                    mul(K, K)
                    m.next = "VAR3"

            with m.State("VAR3"):                             # num // K^2, below 2**(2 bits + 2)
                with m.If(sa_done):
                    m.d.sync += [dv_r.eq(_by_width(bsel, lambda b: num >> (2 * b + 2))),
                                 dv_q.eq(_by_width(bsel, lambda b: (num << (QB - 2 * b - 2))[:QB])),
                                 dv_d.eq(sa_p), dv_n.eq(_by_width(bsel, lambda b: 2 * b + 2)), vneg.eq(0)]
                    m.next = "DIV"

            with m.State("DIV"):
                # nq = bits + 1 (MEAN) or 2 bits + 2 (VAR) steps, counted down in dv_n; the
                # dividend's nq low bits were loaded at the top of dv_q (no unit decoding here),
                # so its next bit is dv_q's top and the quotient fills it from the bottom
                with m.If(dv_n == 0):
                    # only MEAN negates, and its quotient is below 2**65: a 66-bit negation
                    m.d.sync += v.eq(Mux(vneg, -dv_q[:66], dv_q))
                    m.next = "SAT"
                with m.Else():
                    t = Cat(dv_q[QB - 1], dv_r)                    # below 2 * dv_d
                    ge = t >= dv_d
                    m.d.sync += [dv_r.eq(Mux(ge, t - dv_d, t)), dv_q.eq(Cat(ge, dv_q)), dv_n.eq(dv_n - 1)]

            with m.State("SAT"):
                # exact against 65-bit bounds: beyond 65 bits only the sign matters. The
                # verdicts are registers and CLIP chooses the result: the compares' carry
                # chains and the choice were 7.7-8.0 ns of cells from v into o_data
                # (15.8-16.0 ns in the placed `base`, session 45)
                vs = v[:65].as_signed()
                big = ~(v[64:].all() | ~v[64:].any())
                over = Mux(big, ~v[VW - 1], vs > dsat_hi.as_signed())
                under = Mux(big, v[VW - 1], vs < dsat_lo.as_signed())
                m.d.sync += [sat_over.eq(self.sat & over), sat_under.eq(self.sat & under)]
                m.next = "CLIP"

            with m.State("CLIP"):
                with m.If(sat_over):
                    m.d.sync += o_data.eq(dsat_hi)
                with m.Elif(sat_under):
                    m.d.sync += o_data.eq(dsat_lo)
                with m.Else():
                    m.d.sync += o_data.eq(v)
                m.d.sync += [out_cnt.eq(el_cnt), out_mask.eq(el_mask)]
                m.next = "OUT"

            with m.State("OUT"):
                with m.If(self.out_ready):
                    reset_acc()
                    m.d.sync += [outs.eq(outs + 1), o_data.eq(0), out_cnt.eq(0), out_mask.eq(0)]
                    with m.If(outs + 1 == M):
                        m.next = "IDLE"
                    with m.Else():
                        m.next = "ACC"

        # `out_valid` (the state is OUT) is a kept register of its own, for the writer's
        # input only: the state's decoding also enables the result registers (fan-out 79 over
        # 139 tiles), and through it the state -> the writer's `take` -> its position was
        # 15.8 ns in the placed `base`, 7.8 ns of it one hop (session 44)
        out_v, = own_replicas(m, platform,
                              lambda q: Mux(red_fsm.ongoing("CLIP"), 1,
                                            Mux(red_fsm.ongoing("OUT") & self.out_ready, 0, q)),
                              1, 1, "red_out_valid")
        m.d.comb += [self.out_valid.eq(out_v),
                     self.out_data.eq(o_data), self.out_cnt.eq(out_cnt), self.out_mask.eq(out_mask)]
        if self.checks:
            m.d.sync += Assert(out_v == red_fsm.ongoing("OUT"), "Reducer: out_valid differs from the state")
        return m
