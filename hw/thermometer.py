"""Thermometer masks (``mask[i] = count > i``) built from gates, not comparators.

yosys turns every ``count > i`` into a subtraction on the FPGA's carry chain (on the
ECP5 a CCU2C, two logic cells, per two bits of `count`), so a mask of ``n`` such
compares costs about ``n * len(count)`` cells: the vector pipeline's 64-bit nibble
mask of a 7-bit count took 448. `thermometer` builds the same mask by halving: with
``b`` the top bit of a k-bit count and ``T`` the mask of the bits below it, the lower
half of the mask is ``T | b`` and the upper half ``T & b``: about two gates per bit,
which the LUT mapper packs into one LUT4 per bit or fewer.

Combinational: no latency, no state.
"""

from amaranth.hdl import Cat, Const, Signal, Value
from amaranth.utils import ceil_log2

__all__ = ["thermometer"]


def thermometer(m, count, n, name):
    """An `n`-bit signal whose bit ``i`` is ``count > i`` (every bit set once `count`
    reaches `n`, none for a negative `count`); `count` is a value of any width and
    signedness."""
    if n < 1:
        raise ValueError(f"a thermometer mask has at least one bit, not {n!r}")
    count = Value.cast(count)
    negative = count[-1] if count.shape().signed else Const(0, 1)
    if count.shape().signed:
        count = count[:-1]                      # the magnitude bits of a non-negative count
    k = ceil_log2(n)
    low, high = count[:k], count[k:]
    mask = Const(0, 1)                          # a 0-bit count: nothing is below it
    for b in range(min(k, len(low))):           # counts up to 2**(b + 1) - 1, bit b on top
        top = low[b]
        mask = Cat(mask | top.replicate(len(mask)), mask & top.replicate(len(mask)))
    out = Signal(n, name=name)
    full = high.any() if len(high) else Const(0, 1)
    m.d.comb += out.eq((mask[:n] | full.replicate(n)) & ~negative.replicate(n))
    return out
