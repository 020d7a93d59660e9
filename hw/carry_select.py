"""A wide adder as a carry-select adder: ``x + y`` in parts, each a carry chain of its
own, so the sum waits for no chain longer than a part.

A carry chain's delay grows with its length: the vector reducer's 165-bit shift-add
accumulator was 13.6 ns of cells in one cycle on the placed `base` (docs/boards.md,
session 41). `carry_select_add` splits the word into `parts` pieces;
the lowest adds as usual, every other computes both its sums (carry in 0, and carry in
1 as one chain with the carry set below its lowest bit) and the carry out of the part
below picks one: one multiplexer level per part above the lowest instead of the chain
through it. Cost: a second chain and a multiplexer per bit of every part but the lowest.

Combinational: no latency, no state.
"""

from amaranth.hdl import Cat, Const, Mux, Signal, Value

__all__ = ["carry_select_add"]


def carry_select_add(m, x, y, width, parts, name, carry_in=0):
    """A `width`-bit signal of ``(x + y + carry_in) mod 2**width`` (`x`, `y`: values,
    zero- or sign-extended to `width` as their shapes say; `carry_in`: 0, 1 or a 1-bit
    value), built as `parts` carry chains of about ``width / parts`` bits each (see the
    module docstring). ``x - y`` is ``carry_select_add(m, x, ~y, ..., carry_in=1)``
    with `y` `width` bits wide."""
    if not 1 <= parts <= width:
        raise ValueError(f"a {width}-bit carry-select adder has 1 to {width} parts, not {parts!r}")
    x, y = Value.cast(x), Value.cast(y)
    xs, ys = Signal(width, name=f"{name}_x"), Signal(width, name=f"{name}_y")
    m.d.comb += [xs.eq(x), ys.eq(y)]
    out = Signal(width, name=name)
    cuts = [width * k // parts for k in range(parts + 1)]
    carry = Const(0, 1)
    for k, (lo, hi) in enumerate(zip(cuts, cuts[1:])):
        w = hi - lo
        s0 = Signal(w + 1, name=f"{name}_p{k}")
        if k == 0:                                      # the carry in below the LSB, in both addends
            cin = Value.cast(carry_in)
            m.d.comb += [s0.eq((Cat(cin, xs[lo:hi]) + Cat(cin, ys[lo:hi]))[1:]), out[lo:hi].eq(s0[:w])]
            carry = s0[w]
            continue
        m.d.comb += s0.eq(xs[lo:hi] + ys[lo:hi])
        s1 = Signal(w + 1, name=f"{name}_p{k}_c")       # with carry in: 1 + 1 below the LSB
        m.d.comb += s1.eq((Cat(Const(1, 1), xs[lo:hi]) + Cat(Const(1, 1), ys[lo:hi]))[1:])
        m.d.comb += out[lo:hi].eq(Mux(carry, s1[:w], s0[:w]))
        c = Signal(name=f"{name}_c{k}")
        m.d.comb += c.eq(Mux(carry, s1[w], s0[w]))
        carry = c
    return out
