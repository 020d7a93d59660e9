"""The beat pipeline of the vector engine: unpack (S0), ALU front (S1), ALU tail (T),
convert and pack (S2). `golden/cycle/vector.py` models its timing register for register.

A *beat* is up to E = N / L elements (N = 8 W datapath bits, L = the widest unit
of the instruction), so every beat moves at most W bytes of its widest operand:
the datapath width, not the element width, sets the throughput.

Stages (each a register with a valid bit; a stage advances when the next one is
empty or advancing in the same cycle):

* **S0 (unpack)**: `load` captures the windows of sources 0 and 1, unpacked into
  lanes of L bits (sign- or zero-extended per source unit; `hw.vector_swar` sign
  words). MEDIAN's source 2 comes through the source-1 window one cycle later:
  ``c_due`` is high in the first ALU cycle of a MEDIAN beat (which uses only
  sources 0 and 1), the caller then shows source 2 on ``win1`` and it is captured
  at the end of that cycle. One unpacker serves sources 1 and 2.
* **S1 (ALU front)**: `hw.vector_alu` (or `hw.vector_alu_split`, with a narrow
  path) computes from the S0 register for ``occ`` cycles (1 for every single-cycle
  kind); the ALU's ``take`` registers its front words at the end of the last one
  (the T register, freeing S0).
* **T (ALU tail)**: the ALU's outputs, computed from the T register, are captured
  into the S1 result register.
* **S2 (convert/pack)**: `hw.vector_convert` applies D-CONVERT and packs the
  destination elements; the S2 register is the beat offered to the writer.

Latency: four cycles from `load` to `out_valid` for single-cycle kinds
(``occ + 3`` in general); throughput one beat per ``occ`` cycles.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .vector_alu import OCC_BITS, VectorAlu, beat_config_layout
from .vector_alu_split import SplitAlu
from .vector_convert import Converter
from .vector_ops import Kind
from .vector_swar import LANE_BITS, Lanes

__all__ = ["BeatPipe"]


class BeatPipe(wiring.Component):
    """The three stages for an `n`-bit datapath whose narrow kinds run on `nb` bits
    (`nb` = n: one full-width `VectorAlu`; less: `hw.vector_alu_split.SplitAlu`), with
    lanes of the `widths` only (``cfg.lsel`` selects no other)."""

    def __init__(self, n, nb=None, widths=LANE_BITS, narrow_stages=0):
        self.n = n
        self.nb = nb or n
        self.narrow_stages = narrow_stages
        self.widths = tuple(widths)
        cnt_w = n // 4 + 1
        super().__init__({
            "cfg": In(beat_config_layout()),
            "win0": In(n), "win1": In(n),        # win1: source 2 while c_due
            "load": In(1),
            "c_due": Out(1),
            "load_dnib": In(range(cnt_w)),       # destination nibbles of the beat
            "s0_free": Out(1),
            "out_valid": Out(1),
            "out_ready": In(1),
            "out_data": Out(n),
            "out_cnt": Out(range(cnt_w)),
            # pipeline state, for the cycle model
            "v0": Out(1), "vt": Out(1), "v1": Out(1), "v2": Out(1), "it": Out(OCC_BITS),
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

        v0, vt, v1, v2 = Signal(), Signal(), Signal(), Signal()
        it = Signal(OCC_BITS)
        # c_due = v0 & (it == 0) & MEDIAN, registered: a MEDIAN beat's first S1 cycle is the one
        # after its `load` (MEDIAN takes two or more cycles, so `it` leaves 0 after one), and
        # `cfg` holds still from before the first load (the kind's decoding registered too)
        c_due = Signal()
        is_med = Signal(name="is_median")
        m.d.sync += [is_med.eq(cfg.kind == Kind.MEDIAN), c_due.eq(self.load & is_med)]
        src0 = unpack(self.win0, cfg.b0, cfg.sg0, "u0")
        src12 = unpack(self.win1, Mux(c_due, cfg.b2, cfg.b1), Mux(c_due, cfg.sg2, cfg.sg1), "u1")
        # the operands, their sign words (flags at the lane MSBs) and for sources 0 and 1
        # lane-wide sign masks (straight from the window, beside the unpacking: the ALU
        # needs no broadcast of the sign flags in its paths)
        regs = [Signal(n, name=nm) for nm in ("a", "as_", "b", "bs", "c", "cs", "am", "bm")]
        d0 = Signal.like(self.load_dnib, name="dnib0")
        dt = Signal.like(self.load_dnib, name="dnib_t")
        d1 = Signal.like(self.load_dnib, name="dnib1")

        # --- S1 -------------------------------------------------------------------------------------
        m.submodules.alu = alu = (VectorAlu(n, widths=self.widths) if self.nb == n
                                    else SplitAlu(n, self.nb, self.widths, self.narrow_stages))
        m.d.comb += [alu.cfg.eq(cfg), alu.it.eq(it)]
        for port, r in zip((alu.a, alu.as_, alu.b, alu.bs, alu.c, alu.cs, alu.am, alu.bm), regs):
            m.d.comb += port.eq(r)
        # the S1 result; a `SplitAlu` delivers exact mode only (no `hi` word)
        res_ports = ("low", "hi", "neg", "fit") if self.nb == n else ("low", "neg", "fit")
        res = {p: Signal(n, name="r_" + p) for p in res_ports}

        # --- S2 -------------------------------------------------------------------------------------
        m.submodules.conv = conv = Converter(n, magnitude="hi" in res, widths=self.widths)
        m.d.comb += [conv.cfg.eq(cfg)] + [getattr(conv, p).eq(r) for p, r in res.items()]
        o_data = Signal(n)
        o_cnt = Signal.like(self.load_dnib, name="dnib2")

        # --- control -------------------------------------------------------------------------------
        take2 = v2 & self.out_ready
        adv1 = v1 & (~v2 | take2)
        advt = vt & (~v1 | adv1)
        last_it = it == cfg.occ - 1
        fin = v0 & last_it & (~vt | advt)
        step = v0 & ~last_it
        m.d.comb += [
            alu.step.eq(step), alu.take.eq(fin),
            self.s0_free.eq(~v0 | fin), self.c_due.eq(c_due),
            self.out_valid.eq(v2), self.out_data.eq(o_data), self.out_cnt.eq(o_cnt),
            self.v0.eq(v0), self.vt.eq(vt), self.v1.eq(v1), self.v2.eq(v2), self.it.eq(it),
        ]
        with m.If(self.load):
            m.d.sync += [v0.eq(1), d0.eq(self.load_dnib)]
            for r, val in zip(regs[:4] + regs[6:], src0[:2] + src12[:2] + (src0[2], src12[2])):
                m.d.sync += r.eq(val)
        with m.Elif(fin):
            m.d.sync += v0.eq(0)
        with m.If(c_due):
            m.d.sync += [regs[4].eq(src12[0]), regs[5].eq(src12[1])]
        with m.If(fin):
            m.d.sync += [it.eq(0), vt.eq(1), dt.eq(d0)]
        with m.Else():
            with m.If(step):
                m.d.sync += it.eq(it + 1)
            with m.If(advt):
                m.d.sync += vt.eq(0)
        with m.If(advt):
            m.d.sync += [v1.eq(1), d1.eq(dt)] + [r.eq(getattr(alu, p)) for p, r in res.items()]
        with m.Elif(adv1):
            m.d.sync += v1.eq(0)
        with m.If(adv1):
            m.d.sync += [v2.eq(1), o_data.eq(conv.out), o_cnt.eq(d1)]
        with m.Elif(take2):
            m.d.sync += v2.eq(0)
        return m
