"""The beat pipeline of the vector engine: aligned windows (A), unpack (S0), ALU front
(S1), ALU tail (T), convert (S2) and pack (P). `golden/cycle/vector.py` models its timing
register for register.

A *beat* is up to E = N / L elements (N = 8 W datapath bits, L = the widest unit
of the instruction), so every beat moves at most W bytes of its widest operand:
the datapath width, not the element width, sets the throughput.

Stages (each a register with a valid bit; a stage advances when the next one is
empty or advancing in the same cycle):

* **A (aligned windows)**: a ring of two slots. `load` captures the realigned
  windows of sources 0 and 1 as the readers show them (``win0``, ``win1``) into the
  free slot; MEDIAN's source 2 comes through the source-1 window one cycle later:
  ``c_due`` is high in the cycle after a MEDIAN `load` (``c_due_next`` is its value
  for the next cycle, for a caller's own copies), the caller then shows
  source 2 on ``win1`` (one realignment shifter serves sources 1 and 2) and it is
  captured into its own window register. The stage takes the readers' realignment
  shifters off the paths of the unpacking (docs/boards.md). ``in_free`` (a slot is
  free; for MEDIAN, both are, since source 2 has one register; low in a ``c_due``
  cycle, the shifter is busy) is a register loaded with its next value, so the
  stall chain from the writer ends at A and `load` starts at a flip-flop.
* **S0 (unpack)**: the windows of A, unpacked into lanes of L bits (sign- or
  zero-extended per source unit; `hw.vector_swar` sign words); MEDIAN's source 2 one
  cycle after sources 0 and 1 (in the beat's first ALU cycle, which uses only
  sources 0 and 1): one unpacker serves sources 1 and 2.
* **S1 (ALU front)**: `hw.vector_alu` (or `hw.vector_alu_split`, with a narrow
  path) computes from the S0 register for ``occ`` cycles (1 for every single-cycle
  kind); the ALU's ``take`` registers its front words at the end of the last one
  (the T register, freeing S0).
* **T (ALU tail)**: the ALU's outputs, computed from the T register, are captured
  into the S1 result register.
* **S2 (convert)**: `hw.vector_convert.Converter` applies D-CONVERT to the lanes.
* **P (pack)**: `hw.vector_convert.pack` packs the destination elements; the P
  register is the beat offered to the writer.

Latency: six cycles from `load` to `out_valid` for single-cycle kinds
(``occ + 5`` in general); throughput one beat per ``occ`` cycles. A holds up to two
beats while S0 is busy (one for MEDIAN).
"""

from amaranth.hdl import Assert, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .replicate import mux_sliced, replicas, slices
from .thermometer import thermometer
from .vector_alu import OCC_BITS, VectorAlu, beat_config_layout
from .vector_alu_split import SplitAlu
from .vector_convert import Converter, pack
from .vector_ops import Kind
from .vector_swar import LANE_BITS, Lanes

__all__ = ["BeatPipe"]


class BeatPipe(wiring.Component):
    """The three stages for an `n`-bit datapath whose narrow kinds run on `nb` bits
    (`nb` = n: one full-width `VectorAlu`; less: `hw.vector_alu_split.SplitAlu`), with
    lanes of the `widths` only (``cfg.lsel`` selects no other). ``checks``: simulation-only
    `Assert`s that the copies of ``in_free`` and of c_due equal their direct forms."""

    def __init__(self, n, nb=None, widths=LANE_BITS, narrow_stages=0, *, checks=False):
        self.n = n
        self.checks = checks
        self.nb = nb or n
        self.narrow_stages = narrow_stages
        self.widths = tuple(widths)
        cnt_w = n // 4 + 1
        super().__init__({
            "cfg": In(beat_config_layout()),
            "win0": In(n), "win1": In(n),        # win1: source 2 while c_due
            "load": In(1),
            "c_due": Out(1),
            "c_due_next": Out(1),                # c_due of the next cycle (load & MEDIAN)
            "load_dnib": In(range(cnt_w)),       # destination nibbles of the beat
            "in_free": Out(1),                   # `load` may be raised
            "out_valid": Out(1),
            "out_ready": In(1),
            "out_data": Out(n),
            "out_cnt": Out(range(cnt_w)),
            "out_mask": Out(n // 4),             # out_cnt as a mask (its low out_cnt bits set)
            # pipeline state, for the cycle model
            "va": Out(1), "v0": Out(1), "vt": Out(1), "v1": Out(1), "v2": Out(1), "vp": Out(1),
            "it": Out(OCC_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        cm = Module()
        m.submodules.consts = cm
        n, cfg = self.n, self.cfg
        ln = Lanes(m, n, cfg.lsel, "unp", cm=cm, widths=self.widths)

        # --- S0: unpack ----------------------------------------------------------------------------
        def unpack(win, bsel, sg, tag):
            sbits = Signal(n, name=tag + "_sbits")          # the window's bits where they are signs
            m.d.comb += sbits.eq(Mux(sg, win, 0))

            def f(L, b):
                b = 4 << b
                if b > L:
                    return None
                return Cat(Cat(win[k * b:(k + 1) * b], sbits[(k + 1) * b - 1].replicate(L - b))
                           for k in range(n // L))
            def fm(L, b):                                   # every bit of a lane: its sign
                b = 4 << b
                if b > L:
                    return None
                return Cat(sbits[(k + 1) * b - 1].replicate(L) for k in range(n // L))
            v = ln.per_lane(tag, f, keys=[(bsel, range(5))])
            s = ln.comb(v & ln.H & sg.replicate(n), tag + "_s")
            sm = ln.per_lane(tag + "_m", fm, keys=[(bsel, range(5))])
            return v, s, sm

        va, v0, vt, v1, v2, vp = (Signal(name=nm) for nm in ("va", "v0", "vt", "v1", "v2", "vp"))
        it = Signal(OCC_BITS)
        # --- A: the windows, registered, in a ring of two slots (source 2 a cycle after
        # sources 0 and 1, in a register of its own) ----------------------------------------------
        # `in_free` is a register (its next value from the slot count, the kind and c_due): the
        # stall chain from the writer (out_ready -> ... -> load0) stops at the ring's registers
        # (its count, read pointer and `in_free`'s copies) and never reaches `load` or the
        # readers (in the placed full core it ran through `in_free`, fan-out 520, into the
        # readers: session 23).
        wa = [[Signal(n, name=f"win{i}_a{k}", reset_less=True) for i in range(2)] for k in range(2)]
        wa2 = Signal(n, name="win2_a", reset_less=True)
        da = [Signal.like(self.load_dnib, name=f"dnib_a{k}", reset_less=True) for k in range(2)]
        a_n = Signal(range(3), name="a_n")             # beats in A
        a_full = Signal(name="a_full")                  # a_n == 2
        a_wp, a_rp = Signal(name="a_wp"), Signal(name="a_rp")
        # c_due: the cycle after a MEDIAN `load` (`cfg` holds still from before the first load,
        # so the kind's decoding is a register too); s0_c_due: the cycle after the beat enters
        # S0, its first S1 cycle (MEDIAN takes two or more, so S0 keeps it for the next one)
        c_due, s0_c_due = (Signal(name=nm) for nm in ("c_due", "s0_c_due"))
        is_med = Signal(name="is_median", reset_less=True)     # (loaded in every cycle from `cfg`)
        m.d.comb += self.c_due_next.eq(self.load & is_med)
        m.d.sync += [is_med.eq(cfg.kind == Kind.MEDIAN), c_due.eq(self.c_due_next)]
        # the free slot captures the windows whenever A may take a beat (`in_free`), not only
        # on `load`: its contents matter only once `load` counts it, and the enable is then free
        # of the readers' `has` compares, which `load` waits for. `in_free` is a register loaded
        # with its next value (below), two copies: the port's (the engine's `load`) and the
        # slots' enables (its next value takes the stall chain, so the copies stay few: 17
        # copies spread over the windows drew that chain out to 21.3 ns in the placed `base`).
        # Source 2's window register loads on copies of c_due: c_due (fan-out 286) -> in_free
        # -> `load` -> the readers was 20.9 ns in the placed `base` (session 28).
        in_free_n = Signal(name="in_free_next")
        in_free, free_en = replicas(m, platform, in_free_n, 2, "in_free", init=1)
        for k in range(2):
            with m.If(free_en & (a_wp == k)):
                m.d.sync += [wa[k][0].eq(self.win0), wa[k][1].eq(self.win1), da[k].eq(self.load_dnib)]
        c_wa2 = replicas(m, platform, self.c_due_next, slices(n), "c_due_win2")
        m.d.sync += wa2.eq(mux_sliced(c_wa2, self.win1, wa2))
        # the head slot's windows, each 64-bit slice of each window through its own copy of
        # the read pointer (`hw.replicate`: it selects in 2 n multiplexers, which feed two
        # unpackers; one copy per slice for both windows, fan-out 135 over 54 tiles, headed
        # 15.1-15.6 ns paths into the operand registers in the placed `base`, session 49)
        a_rp_n = Signal(name="a_rp_next")
        a_rps = replicas(m, platform, a_rp_n, 2 * slices(n), "a_rp")
        head0, head1 = (mux_sliced(a_rps[i::2], wa[1][i], wa[0][i]) for i in range(2))
        head_d = Mux(a_rp, da[1], da[0])
        src0 = unpack(head0, cfg.b0, cfg.sg0, "u0")
        # s0_c_due also as one register per 64-bit slice (`hw.replicate`): it selects in 4 n
        # multiplexers and enables (fan-out about 600 in the placed engine, session 23)
        s0_c_due_n = Signal(name="s0_c_due_next")
        c_slices = replicas(m, platform, s0_c_due_n, slices(n), "s0_c_due")
        # the unit and sign of the source this unpacker serves (1, or 2 at s0_c_due) as
        # registers of the pipeline's own, chosen with s0_c_due's next value (`cfg` holds
        # still from before the first load): `cfg.sg1` was placed 86 tiles from this
        # unpacker, the head of an 18.6 ns path into `cs` (session 36), and s0_c_due's
        # choice of them 65 tiles, 17.6 ns into `c` (session 42)
        u1_b = Signal.like(cfg.b1, name="u1_b", reset_less=True)
        u1_sg = Signal(name="u1_sg", reset_less=True)
        m.d.sync += [u1_b.eq(Mux(s0_c_due_n, cfg.b2, cfg.b1)), u1_sg.eq(Mux(s0_c_due_n, cfg.sg2, cfg.sg1))]
        src12 = unpack(mux_sliced(c_slices, wa2, head1), u1_b, u1_sg, "u1")
        # the operands, their sign words (flags at the lane MSBs) and for sources 0 and 1
        # lane-wide sign masks (straight from the window, beside the unpacking: the ALU
        # needs no broadcast of the sign flags in its paths). The stages' data registers
        # (these and the beat counts, the results below, like A's windows) are reset-less:
        # each is read only while its stage's valid bit (va .. vp, reset) is set.
        regs = [Signal(n, name=nm, reset_less=True) for nm in ("a", "as_", "b", "bs", "c", "cs", "am", "bm")]
        d0 = Signal.like(self.load_dnib, name="dnib0", reset_less=True)
        dt = Signal.like(self.load_dnib, name="dnib_t", reset_less=True)
        d1 = Signal.like(self.load_dnib, name="dnib1", reset_less=True)

        # --- S1 -------------------------------------------------------------------------------------
        m.submodules.alu = alu = (VectorAlu(n, widths=self.widths) if self.nb == n
                                    else SplitAlu(n, self.nb, self.widths, self.narrow_stages))
        m.d.comb += [alu.cfg.eq(cfg), alu.it.eq(it)]
        for port, r in zip((alu.a, alu.as_, alu.b, alu.bs, alu.c, alu.cs, alu.am, alu.bm), regs):
            m.d.comb += port.eq(r)
        # the S1 result; a `SplitAlu` delivers exact mode only (no `hi` word)
        res_ports = ("low", "hi", "neg", "fit") if self.nb == n else ("low", "neg", "fit")
        res = {p: Signal(n, name="r_" + p, reset_less=True) for p in res_ports}

        # --- S2 -------------------------------------------------------------------------------------
        m.submodules.conv = conv = Converter(n, magnitude="hi" in res, widths=self.widths)
        m.d.comb += [conv.cfg.eq(cfg)] + [getattr(conv, p).eq(r) for p, r in res.items()]
        s2_lanes = Signal(n, name="s2_lanes", reset_less=True)
        d2 = Signal.like(self.load_dnib, name="dnib2", reset_less=True)

        # --- P --------------------------------------------------------------------------------------
        # P's data, count and mask are 0 while P is empty (reset, and cleared when its beat
        # leaves without a successor), so the engine ORs them with the reducer's, which are 0
        # outside its OUT state, instead of choosing between them (`red_run`'s copies selected
        # all 8 W bits of the writer's input: fan-out up to 208 over ~100 tiles, session 36)
        o_data = Signal(n)
        o_cnt = Signal.like(self.load_dnib, name="dnib_p")
        o_mask = Signal(n // 4, name="nibs_p")

        # --- control -------------------------------------------------------------------------------
        # Whether each stage's register may load (`free_*`: empty, or its beat moves on), each
        # from the valid bits and the output's ready: no stage's advance (an enable of
        # hundreds of registers, placed beside them) is an input of the next stage's, so
        # the writer's ready reaches every enable in one hop; as a chain (adv1 from adv2,
        # advt from adv1, S0's `fin` from advt) it crossed the pipeline four times, 53-66
        # tiles each (the writer's `at_end` -> the ALU's group counter, 19.0 ns in the
        # placed `base`, session 44)
        takep = vp & self.out_ready
        free_p = ~vp | self.out_ready
        free_2 = ~v2 | free_p
        free_1 = ~v1 | free_2
        free_t = ~vt | free_1
        adv2 = v2 & free_p
        adv1 = v1 & free_2
        advt = vt & free_1
        # occ - 1 as a register: `cfg` holds still from before the first beat reaches S0
        occ_m1 = Signal.like(cfg.occ, name="occ_m1", reset_less=True)     # (loaded in every cycle)
        m.d.sync += occ_m1.eq(cfg.occ - 1)
        # it == occ_m1 as a register, set from the next value of `it`: no 14-bit compare in
        # series with the stall chain (fin -> load0 -> in_free fans out to ~2,000 enables).
        # It lags occ_m1 by a cycle, which changes only in PREP, cycles before a beat is in S0.
        last_it = Signal(name="last_it")
        fin = v0 & last_it & free_t
        step = v0 & ~last_it
        s0_free = ~v0 | (last_it & free_t)         # (~v0 | fin, not from fin: fan-out 1,289)
        load0 = va & s0_free                    # A -> S0
        m.d.comb += s0_c_due_n.eq(load0 & is_med)
        m.d.sync += s0_c_due.eq(s0_c_due_n)
        m.d.comb += [
            alu.step.eq(step), alu.take.eq(fin),
            # MEDIAN keeps one beat in A: its source 2 has one register, read at s0_c_due
            self.in_free.eq(in_free), self.c_due.eq(c_due),
            self.out_valid.eq(vp), self.out_data.eq(o_data), self.out_cnt.eq(o_cnt), self.out_mask.eq(o_mask),
            self.va.eq(va), self.v0.eq(v0), self.vt.eq(vt), self.v1.eq(v1), self.v2.eq(v2), self.vp.eq(vp), self.it.eq(it),
        ]
        a_next = Signal.like(a_n, name="a_next")
        m.d.comb += a_next.eq(a_n + self.load - load0)
        m.d.sync += [a_n.eq(a_next), va.eq(a_next != 0), a_full.eq(a_next == 2)]
        with m.If(self.load):
            m.d.sync += a_wp.eq(~a_wp)
        # is_med's next value is the kind's decoding now (`cfg` holds still while beats flow)
        m.d.comb += in_free_n.eq(Mux(cfg.kind == Kind.MEDIAN, a_next == 0, a_next != 2) & ~self.c_due_next)
        if self.checks:
            direct = Mux(is_med, ~va, ~a_full) & ~c_due
            m.d.sync += [Assert((in_free == direct) & (free_en == direct), "BeatPipe: in_free differs from the slot count"),
                         *(Assert(c == c_due, "BeatPipe: a copy of c_due differs") for c in c_wa2)]
        m.d.comb += a_rp_n.eq(a_rp ^ load0)
        m.d.sync += a_rp.eq(a_rp_n)
        with m.If(load0):
            m.d.sync += [v0.eq(1), d0.eq(head_d)]
            for r, val in zip(regs[:4] + regs[6:], src0[:2] + src12[:2] + (src0[2], src12[2])):
                m.d.sync += r.eq(val)
        with m.Elif(fin):
            m.d.sync += v0.eq(0)
        for r, v in ((regs[4], src12[0]), (regs[5], src12[1])):
            m.d.sync += r.eq(mux_sliced(c_slices, v, r))
        m.d.sync += last_it.eq(it == occ_m1)
        with m.If(fin):
            m.d.sync += [it.eq(0), vt.eq(1), dt.eq(d0), last_it.eq(occ_m1 == 0)]
        with m.Else():
            with m.If(step):
                m.d.sync += [it.eq(it + 1), last_it.eq(it + 1 == occ_m1)]
            with m.If(advt):
                m.d.sync += vt.eq(0)
        with m.If(advt):
            m.d.sync += [v1.eq(1), d1.eq(dt)] + [r.eq(getattr(alu, p)) for p, r in res.items()]
        with m.Elif(adv1):
            m.d.sync += v1.eq(0)
        with m.If(adv1):
            m.d.sync += [v2.eq(1), s2_lanes.eq(conv.out), d2.eq(d1)]
        with m.Elif(adv2):
            m.d.sync += v2.eq(0)
        d2_mask = thermometer(m, d2, n // 4, "dnib2_mask")   # its low d2 bits set
        # the packing's choices by lane and destination width under registered one-hot
        # selects (`cfg` holds still from PREP, cycles before a beat reaches P): decoded from
        # `cfg` beside the unpacker's and the ALU's constants (fan-out 245), `bcfg` -> the
        # output register was 17.42 ns in the placed `base` (session 45)
        lp = Lanes(m, n, cfg.lsel, "pk", cm=cm, widths=self.widths, registered=True, platform=platform)
        with m.If(adv2):
            m.d.sync += [vp.eq(1), o_data.eq(pack(lp, s2_lanes, cfg.bd)), o_cnt.eq(d2),
                         o_mask.eq(d2_mask)]
        with m.Elif(takep):
            m.d.sync += [vp.eq(0), o_data.eq(0), o_cnt.eq(0), o_mask.eq(0)]
        return m
