"""The vector engine's multiplier array (MUL, ASL, POW; serves D-ARITH, D-SHIFT).

Lane-parallel unsigned products of L-bit magnitudes: ``x * y`` for every lane of
an N-bit word (lane width ``4 << lsel``), as the low and high halves of the
2L-bit product (``pl``, ``ph``, both in lane positions).

The array is ``N / 64`` slices of eight 16 x 16 -> 32-bit multipliers (one DSP
block each: ``N / 8`` in all, 32 for W = 32). Per slice:

* L = 4: each multiplier takes two lanes, packed ten bits apart
  (``(x0 + x1 * 2**10) * (y0 + y1 * 2**10)`` keeps both 8-bit products apart);
* L = 8, 16: one lane per multiplier (L = 16 leaves four idle);
* L = 32: four digit products per lane, summed in a small adder tree;
* L = 64: the same two adder trees give ``x * y[32p+31:32p]`` for a *pass*
  ``p``; the full product takes two passes (``pass_ = 0`` then 1, the first
  stored by ``acc_load``), unless y < 2**32, when pass 0 alone is the product.

Latency: combinational (the caller registers the result); throughput one word
per cycle, or one per two cycles for 64 x 64-bit products. With `cuts` (the narrow
path of `hw.vector_alu_split`) the array has a register at each cut: ``mul_in`` the
multipliers' inputs, ``products`` their outputs, ``sums`` the slice's 96-bit sum of
the two 32 x 32-bit products, ``mul_out`` the outputs ``pl``/``ph`` (after the
second pass's accumulation and the choice by lane width). The registers load every
cycle; the outputs are correct ``len(cuts)`` cycles after the inputs (and ``pass_``)
stop changing, and ``acc_load`` may be raised only then (the narrow path holds its
inputs for ``CoreConfig.narrow_step_cycles`` cycles per step).
"""

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .vector_swar import LANE_BITS, cut_registers

__all__ = ["MulArray", "MUL_CUTS"]

MUL_CUTS = ("mul_in", "products", "sums", "mul_out")


class MulArray(wiring.Component):
    """See the module docstring; `widths`: the lane widths built (``lsel`` selects no other)."""

    def __init__(self, n, widths=LANE_BITS, cuts=()):
        if n % 64:
            raise ValueError(f"the multiplier array needs a multiple of 64 bits, not {n}")
        unknown = sorted(set(cuts) - set(MUL_CUTS))
        if unknown:
            raise ValueError(f"the multiplier array has no cut {unknown[0]!r}; its cuts are {MUL_CUTS}")
        self.n = n
        self.widths = tuple(widths)
        self.cuts = frozenset(cuts)
        super().__init__({
            "lsel": In(3),
            "x": In(n),
            "y": In(n),
            "pass_": In(1),            # L = 64: 0 = low half of y, 1 = high half (adds the stored pass 0)
            "acc_load": In(1),         # store this cycle's pass-0 product
            "pl": Out(n),
            "ph": Out(n),
        })

    def _built(self, sel):
        """`sel` as a case if its lane width is built, else no case (its logic is not built)."""
        return (sel,) if (4 << sel) in self.widths else ()

    def _cut(self, m, where, sig):
        """`sig`, or its register if the array has the cut `where`."""
        return cut_registers(m, where in self.cuts, sig)[0]

    def elaborate(self, platform):
        m = Module()
        x, y = self.x, self.y
        for s in range(self.n // 64):
            X = x[64 * s:64 * s + 64]
            Y = y[64 * s:64 * s + 64]
            xin = [Signal(16, name=f"s{s}_x{t}") for t in range(8)]
            yin = [Signal(16, name=f"s{s}_y{t}") for t in range(8)]
            pm = [Signal(32, name=f"s{s}_p{t}") for t in range(8)]
            for t in range(8):
                m.d.comb += pm[t].eq(self._cut(m, "mul_in", xin[t]) * self._cut(m, "mul_in", yin[t]))
            p = [self._cut(m, "products", pm[t]) for t in range(8)]
            with m.Switch(self.lsel):
                with m.Case(*self._built(0)):
                    for t in range(8):
                        m.d.comb += [xin[t].eq(Cat(X[8 * t:8 * t + 4], Const(0, 6), X[8 * t + 4:8 * t + 8])),
                                     yin[t].eq(Cat(Y[8 * t:8 * t + 4], Const(0, 6), Y[8 * t + 4:8 * t + 8]))]
                with m.Case(*self._built(1)):
                    for t in range(8):
                        m.d.comb += [xin[t].eq(X[8 * t:8 * t + 8]), yin[t].eq(Y[8 * t:8 * t + 8])]
                with m.Case(*self._built(2)):
                    for t in range(4):
                        m.d.comb += [xin[t].eq(X[16 * t:16 * t + 16]), yin[t].eq(Y[16 * t:16 * t + 16])]
                with m.Case(*self._built(3)):
                    for t in range(8):
                        j, q = divmod(t, 4)
                        ad, bd = q >> 1, q & 1
                        m.d.comb += [xin[t].eq(X[32 * j + 16 * ad:32 * j + 16 * ad + 16]),
                                     yin[t].eq(Y[32 * j + 16 * bd:32 * j + 16 * bd + 16])]
                with m.Case(*self._built(4)):
                    for t in range(8):
                        g, q = divmod(t, 4)
                        ad = 2 * g + (q >> 1)
                        m.d.comb += xin[t].eq(X[16 * ad:16 * ad + 16])
                        with m.If(self.pass_):
                            m.d.comb += yin[t].eq(Y[32 + 16 * (q & 1):48 + 16 * (q & 1)])
                        with m.Else():
                            m.d.comb += yin[t].eq(Y[16 * (q & 1):16 * (q & 1) + 16])

            # the two 4-product groups: a 32 x 32-bit product each
            grp = []
            for j in range(2):
                g = Signal(64, name=f"s{s}_g{j}")
                q = p[4 * j:4 * j + 4]
                m.d.comb += g.eq(q[0] + ((q[1] + q[2]) << 16) + (q[3] << 32))
                grp.append(g)
            psum = Signal(96, name=f"s{s}_part")
            m.d.comb += psum.eq(grp[0] + (grp[1] << 32))
            part = self._cut(m, "sums", psum)
            acc = Signal(96, name=f"s{s}_acc", reset_less=True)     # data: loaded (acc_load) before pass 1 reads it
            with m.If(self.acc_load):
                m.d.sync += acc.eq(part)
            full = Signal(128, name=f"s{s}_full")
            with m.If(self.pass_):
                m.d.comb += full.eq(acc + (part << 32))
            with m.Else():
                m.d.comb += full.eq(part)

            pl, ph = Signal(64, name=f"s{s}_pl"), Signal(64, name=f"s{s}_ph")
            m.d.comb += [self.pl[64 * s:64 * s + 64].eq(self._cut(m, "mul_out", pl)),
                         self.ph[64 * s:64 * s + 64].eq(self._cut(m, "mul_out", ph))]
            with m.Switch(self.lsel):
                with m.Case(*self._built(0)):
                    m.d.comb += [pl.eq(Cat(*(Cat(p[t][0:4], p[t][20:24]) for t in range(8)))),
                                 ph.eq(Cat(*(Cat(p[t][4:8], p[t][24:28]) for t in range(8))))]
                with m.Case(*self._built(1)):
                    m.d.comb += [pl.eq(Cat(*(p[t][0:8] for t in range(8)))),
                                 ph.eq(Cat(*(p[t][8:16] for t in range(8))))]
                with m.Case(*self._built(2)):
                    m.d.comb += [pl.eq(Cat(*(p[t][0:16] for t in range(4)))),
                                 ph.eq(Cat(*(p[t][16:32] for t in range(4))))]
                with m.Case(*self._built(3)):
                    m.d.comb += [pl.eq(Cat(grp[0][:32], grp[1][:32])),
                                 ph.eq(Cat(grp[0][32:], grp[1][32:]))]
                with m.Case(*self._built(4)):
                    m.d.comb += [pl.eq(full[:64]), ph.eq(full[64:])]
        return m
