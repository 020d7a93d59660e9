"""The vector engine's D-OVERLAP check (docs/isa-decisions.md), one source per cycle,
as a two-stage pipeline.

`OverlapCheck` answers whether an elementwise instruction of ``length`` elements
whose destination (address ``dst``, units of 4 << ``bd`` bits) and one source
(address ``src``, units of 4 << ``bs`` bits) must fault ILLEGAL_OPERAND: the
destination runs ahead of the overlapping source. Exact for 64-bit addresses and
lengths (``bs`` and ``bd`` 0 .. 4: int4 .. 64-bit units).

With a = 4 << bs, b = 4 << bd bits, n = ``length`` and X = 8 * (src - dst), the
golden rule (the ranges intersect and d + k*b > s + k*a for k = 1 or n - 1) reduces,
for n > 1, to

    -n*a < X < min(b - a, 0)    or    b > a and 0 <= X < (n - 1)*(b - a)

(below the destination's start only a source that still overlaps it; above it, a
widening destination that catches up with its source).

Timing: ``length`` and ``bd``, the instruction's, are registered (n - 1, the
destination's extent Q = (n - 1)*b, n > 1, bd) and must be stable from the cycle
before the first check on. A check presented in cycle t (``valid``, ``src``,
``dst``, ``bs``) is split over two register stages so that no two long carry
chains are in series:

* stage 1 (cycle t): delta = src - dst, n*a (a shift), Q - (n - 1)*a (a shift and
  one subtraction), min(b - a, 0) and b > a, registered;
* stage 2 (cycle t + 1): the three comparisons of X with those bounds, in parallel,
  and the verdict, registered:

``bad`` is high in cycle t + 2 when the check of cycle t faults (0 for a cycle
without ``valid``). Latency 2 cycles, one check per cycle.
"""

from amaranth.hdl import Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["OverlapCheck"]


class OverlapCheck(wiring.Component):
    """D-OVERLAP for one source per cycle (see the module docstring)."""

    valid: In(1)
    src: In(64)
    dst: In(64)
    bs: In(3)
    length: In(64)
    bd: In(3)
    bad: Out(1)

    def elaborate(self, platform):
        m = Module()

        # the instruction's terms, registered (stable from the cycle before the first check;
        # reset-less: loaded in every cycle)
        nm1 = Signal(64, reset_less=True)           # n - 1
        q = Signal(70, reset_less=True)             # (n - 1) * b, bits
        gt1 = Signal(reset_less=True)               # n > 1
        bd = Signal(3, reset_less=True)
        m.d.sync += [nm1.eq(self.length - 1), q.eq((self.length - 1) << self.bd << 2),
                     gt1.eq(self.length > 1), bd.eq(self.bd)]

        # stage 1: the difference of the addresses and the bounds of the source's slot
        # (reset-less data: read only under v1, which is reset)
        bs = self.bs
        d1 = Signal(signed(65), reset_less=True)    # delta = src - dst, bytes
        na1 = Signal(70, reset_less=True)           # n * a, bits
        hi1 = Signal(signed(71), reset_less=True)   # Q - (n - 1) * a
        lim1 = Signal(signed(6), reset_less=True)   # min(b - a, 0) / 4
        up1 = Signal(reset_less=True)               # b > a
        v1 = Signal()
        m.d.sync += [
            d1.eq(self.src - self.dst),
            na1.eq(self.length << bs << 2),
            hi1.eq(q - (nm1 << bs << 2)),
            lim1.eq(Mux(bd < bs, (Const(1, 6) << bd) - (Const(1, 6) << bs), 0)),
            up1.eq(bd > bs),
            v1.eq(self.valid & gt1),
        ]

        # stage 2: X = 8 * delta against the bounds
        x = d1 << 3
        below = Signal()                            # X < min(b - a, 0)
        near = Signal()                             # -n*a < X
        ahead = Signal()                            # b > a and 0 <= X < (n - 1)*(b - a)
        m.d.comb += [
            below.eq((d1 << 1) < lim1),
            near.eq(x + na1 > 0),
            ahead.eq(up1 & (d1 >= 0) & (x < hi1)),
        ]
        m.d.sync += self.bad.eq(v1 & ((below & near) | ahead))
        return m
