"""The weight-stationary systolic array of the matrix engine (hw/matrix.py).

`SystolicArray(n)` is an ``n x n`` grid of processing elements ``pe_<r>_<c>``
(`ProcessingElement`). Row ``r`` is reduction lane ``r`` (one input channel of
the current tile), column ``c`` is kernel lane ``c`` (one output channel). Each
PE holds two weights (banks 0 and 1: the tile in use and the next one, loaded
while the array computes), multiplies the activation entering it by the weight
of the bank that activation is tagged with, adds the partial sum coming from the
PE above and registers the sum; it passes the activation (with its bank tag) to
the PE on its right.

Dataflow (all registers; cycle model in golden/cycle/systolic.py):

* input: one activation vector ``x`` (``n`` operands, one per row) and its
  weight-bank tag ``x_bank`` per cycle; a vector that carries no work is all
  zeros (it adds nothing). Row ``r`` enters through a skew chain of ``r``
  registers, so PE(r, c) sees the vector entered at cycle t at cycle
  ``t + r + c``;
* partial sums flow down the columns: PE(r, c) registers
  ``psum(r-1, c) + a * w[bank]`` (``psum(-1, c) = 0``);
* output: column ``c``'s sum leaves PE(n-1, c) at ``t + n + c`` and goes through a
  deskew chain of ``n - 1 - c`` registers, so ``sums`` holds all ``n`` column sums
  of the vector entered at cycle t at cycle ``t + LATENCY``, ``LATENCY = 2n - 1``;
* weights: ``w_we`` writes ``w_data`` (one weight per row) into column ``w_col``
  of bank ``w_bank`` at the clock edge. A bank may be written while vectors
  tagged with the other bank flow through the array; the caller must not write
  a bank that in-flight vectors still use (the engine counts them).

Operands are ``OP_BITS`` = 17-bit signed values, which holds every s8, u8, s16
and u16 element exactly (one 18 x 18 multiplier per PE, a MULT18X18 block on
ECP5). Products are below 2**32 in magnitude for those operand ranges, so a
column sum of ``n`` products fits ``psum_bits(n) = 33 + ceil(log2 n)`` bits
(wider values wrap, which the engine never produces).

Latency: ``2n - 1`` cycles from ``x`` to ``sums``. Throughput: one vector per cycle,
``n * n`` multiply-accumulates per cycle, with no bubble between vectors of
different banks (the bank switch travels with the data).
"""

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

__all__ = ["OP_BITS", "psum_bits", "ProcessingElement", "SystolicArray"]

OP_BITS = 17


def psum_bits(n: int) -> int:
    """Bits of a column sum of `n` products of operands from s8/u8/s16/u16."""
    return 33 + ceil_log2(max(n, 2))


class ProcessingElement(wiring.Component):
    """One multiply-accumulate cell: registers the activation, its bank tag and
    ``psum_in + a_in * w[bank_in]``; ``we`` (one bit per bank) loads ``w_data``.
    Latency 1 cycle, one MAC per cycle."""

    def __init__(self, psum_width: int):
        self.psum_width = psum_width
        super().__init__({
            "a_in": In(signed(OP_BITS)),
            "bank_in": In(1),
            "psum_in": In(signed(psum_width)),
            "we": In(2),
            "w_data": In(signed(OP_BITS)),
            "a": Out(signed(OP_BITS)),
            "bank": Out(1),
            "psum": Out(signed(psum_width)),
            "w0": Out(signed(OP_BITS)),
            "w1": Out(signed(OP_BITS)),
        })

    def elaborate(self, platform):
        m = Module()
        w = Mux(self.bank_in, self.w1, self.w0)
        m.d.sync += [
            self.a.eq(self.a_in),
            self.bank.eq(self.bank_in),
            self.psum.eq(self.psum_in + self.a_in * w),
        ]
        with m.If(self.we[0]):
            m.d.sync += self.w0.eq(self.w_data)
        with m.If(self.we[1]):
            m.d.sync += self.w1.eq(self.w_data)
        return m


class SystolicArray(wiring.Component):
    """An ``n x n`` weight-stationary array (see the module docstring).

    ``pes[r][c]`` is PE(r, c) (submodule ``pe_<r>_<c>``); tests read its ``a``,
    ``bank``, ``psum``, ``w0`` and ``w1`` registers."""

    def __init__(self, n: int):
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"the array size must be a positive integer, not {n!r}")
        self.n = n
        self.psum_width = psum_bits(n)
        self.pes = [[ProcessingElement(self.psum_width) for _ in range(n)] for _ in range(n)]
        super().__init__({
            "x": In(data.ArrayLayout(signed(OP_BITS), n)),
            "x_bank": In(1),
            "w_we": In(1),
            "w_bank": In(1),
            "w_col": In(range(n)),
            "w_data": In(data.ArrayLayout(signed(OP_BITS), n)),
            "sums": Out(data.ArrayLayout(signed(self.psum_width), n)),
        })

    @property
    def latency(self) -> int:
        return 2 * self.n - 1

    def elaborate(self, platform):
        m = Module()
        n = self.n
        for r in range(n):
            for c in range(n):
                m.submodules[f"pe_{r}_{c}"] = self.pes[r][c]

        # weight write enables, one pair per column
        we = []
        for c in range(n):
            col_we = Signal(2, name=f"we_col{c}")
            hit = self.w_we & (self.w_col == c)
            m.d.comb += col_we.eq(Mux(hit, Mux(self.w_bank, 0b10, 0b01), 0))
            we.append(col_we)

        for r in range(n):
            # skew: row r enters through r registers
            a, bank = self.x[r], self.x_bank
            for k in range(r):
                a_d = Signal(signed(OP_BITS), name=f"skew_{r}_{k}")
                b_d = Signal(name=f"skew_bank_{r}_{k}")
                m.d.sync += [a_d.eq(a), b_d.eq(bank)]
                a, bank = a_d, b_d
            for c in range(n):
                pe = self.pes[r][c]
                left = (a, bank) if c == 0 else (self.pes[r][c - 1].a, self.pes[r][c - 1].bank)
                m.d.comb += [
                    pe.a_in.eq(left[0]),
                    pe.bank_in.eq(left[1]),
                    pe.psum_in.eq(0 if r == 0 else self.pes[r - 1][c].psum),
                    pe.we.eq(we[c]),
                    pe.w_data.eq(self.w_data[r]),
                ]

        for c in range(n):
            # deskew: column c waits n - 1 - c cycles
            s = self.pes[n - 1][c].psum
            for k in range(n - 1 - c):
                s_d = Signal(signed(self.psum_width), name=f"deskew_{c}_{k}")
                m.d.sync += s_d.eq(s)
                s = s_d
            m.d.comb += self.sums[c].eq(s)
        return m
