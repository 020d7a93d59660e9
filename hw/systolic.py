"""The weight-stationary systolic array of the matrix engine (hw/matrix.py).

`SystolicArray(n)` is an ``n x n`` grid of processing elements ``pe_<r>_<c>``
(`ProcessingElement`). Row ``r`` is reduction lane ``r`` (one input channel of
the current tile), column ``c`` is kernel lane ``c`` (one output channel). Each
PE holds two weights: the *active* one (``wa``), which it multiplies the
activation entering it by, and the *shadow* (``ws``), which receives the next
tile while the array computes. It registers the product, adds the partial sum
coming from the PE above to it a cycle later, registers the sum and passes the
activation, its weight-bank tag and its valid bit to the PE on its right.

Dataflow (all registers; cycle model in golden/cycle/systolic.py):

* input: one activation vector ``x`` (``n`` operands, one per row) per cycle, with
  its weight-bank tag ``x_bank`` and ``x_valid``; a vector that carries no work is
  all zeros (it adds nothing) and not valid. Row ``r`` enters through ``r + 1``
  registers (an input register and the skew), so PE(r, c) sees the vector entered
  at cycle t at cycle ``t + 1 + r + c``;
* products: PE(r, c) registers ``a * wa`` (``prod``) in the cycle it sees the
  activation, so its product is there a cycle later, when the PE below sees the
  vector: the multiplier (an unregistered MULT18X18D on ECP5, 3.9 ns) and the sum's
  carry chain are in different cycles (together with the routing from the left
  neighbour's activation register they were a 15.7 ns path in the placed `base`);
* partial sums flow down the columns: PE(r, c) registers ``psum(r-1, c) + prod``
  (``psum(-1, c) = 0``) a cycle after it saw the activation;
* output: column ``c``'s sum leaves PE(n-1, c) at ``t + n + 2 + c`` and goes through
  a deskew chain of ``n - 1 - c`` registers, so ``sums`` holds all ``n`` column sums
  of the vector entered at cycle t at cycle ``t + LATENCY``, ``LATENCY = 2n + 1``;
* weights: ``w_we`` writes ``w_data`` (one weight per row) into the shadows of
  column ``w_col`` at the clock edge. A PE copies its shadow into its active
  weight (a *swap*) at the edge before a valid vector whose tag differs from the
  tag of its active weight reaches it (it sees that vector one register ahead:
  the input of its left neighbour), or before the first valid vector after
  ``w_flush`` (which marks every active weight stale). So a tile written into the
  shadows is swapped in by the first vector tagged with the next bank, PE by PE
  along the wavefront, with no bubble; the caller must not write the shadows again
  until that vector has passed the last PE (the engine waits for it to leave the
  array), and tags the passes of one instruction 0, 1, 0, ...

The two weights of a PE are registers that feed nothing but the multiplier and
each other (no bank multiplexer: on ECP5 that multiplexer was 17 LUT4s per PE).
Operands are ``OP_BITS`` = 17-bit signed values, which holds every s8, u8, s16
and u16 element exactly (one 18 x 18 multiplier per PE, a MULT18X18 block on
ECP5). Products are below 2**32 in magnitude for those operand ranges, so a
column sum of ``n`` products fits ``psum_bits(n) = 33 + ceil(log2 n)`` bits
(wider values wrap, which the engine never produces).

Latency: ``2n + 1`` cycles from ``x`` to ``sums``. Throughput: one vector per cycle,
``n * n`` multiply-accumulates per cycle, with no bubble between vectors of
different banks (the swap travels with the data).
"""

from amaranth.hdl import Module, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

__all__ = ["OP_BITS", "psum_bits", "ProcessingElement", "SystolicArray"]

OP_BITS = 17


def psum_bits(n: int) -> int:
    """Bits of a column sum of `n` products of operands from s8/u8/s16/u16."""
    return 33 + ceil_log2(max(n, 2))


class ProcessingElement(wiring.Component):
    """One multiply-accumulate cell: registers the activation, its bank tag and valid
    bit and the product ``a_in * wa``, and a cycle later ``psum_in + prod``; ``we``
    loads the shadow ``ws`` from ``w_data``; ``next_valid``/``next_bank`` describe the
    vector that enters next cycle (the swap rule of the module docstring); ``flush``
    marks ``wa`` stale. Latency 1 cycle for the activation, 2 for the sum; one MAC per
    cycle."""

    def __init__(self, psum_width: int):
        self.psum_width = psum_width
        super().__init__({
            "a_in": In(signed(OP_BITS)),
            "bank_in": In(1),
            "valid_in": In(1),
            "next_bank": In(1),
            "next_valid": In(1),
            "psum_in": In(signed(psum_width)),
            "we": In(1),
            "w_data": In(signed(OP_BITS)),
            "flush": In(1),
            "a": Out(signed(OP_BITS)),
            "bank": Out(1),
            "valid": Out(1),
            "prod": Out(signed(2 * OP_BITS)),
            "psum": Out(signed(psum_width)),
            "ws": Out(signed(OP_BITS)),
            "wa": Out(signed(OP_BITS)),
            "wtag": Out(1),                 # the bank tag of wa
            "wok": Out(1),                  # wa holds a tile of this instruction
        })

    def elaborate(self, platform):
        m = Module()
        # data: the activation, its bank tag, the product and the sum count only under `valid`
        # (reset; the engine's bookkeeping beside the array qualifies the sums); the shadow is written
        # before a tile is swapped in, and the active weight is loaded by the swap, which
        # `wok` (reset) forces after a reset. The ports are driven from these registers.
        a = Signal(signed(OP_BITS), name="a_r", reset_less=True)
        bank = Signal(name="bank_r", reset_less=True)
        prod = Signal(signed(2 * OP_BITS), name="prod_r", reset_less=True)
        psum = Signal(signed(self.psum_width), name="psum_r", reset_less=True)
        ws = Signal(signed(OP_BITS), name="ws_r", reset_less=True)
        wa = Signal(signed(OP_BITS), name="wa_r", reset_less=True)
        m.d.comb += [self.a.eq(a), self.bank.eq(bank), self.prod.eq(prod), self.psum.eq(psum),
                     self.ws.eq(ws), self.wa.eq(wa)]
        m.d.sync += [
            a.eq(self.a_in),
            bank.eq(self.bank_in),
            self.valid.eq(self.valid_in),
            prod.eq(self.a_in * wa),
            psum.eq(self.psum_in + prod),
        ]
        with m.If(self.we):
            m.d.sync += ws.eq(self.w_data)
        with m.If(self.flush):
            m.d.sync += self.wok.eq(0)
        with m.Elif(self.next_valid & (~self.wok | (self.next_bank != self.wtag))):
            m.d.sync += [wa.eq(ws), self.wtag.eq(self.next_bank), self.wok.eq(1)]
        return m


class SystolicArray(wiring.Component):
    """An ``n x n`` weight-stationary array (see the module docstring).

    ``pes[r][c]`` is PE(r, c) (submodule ``pe_<r>_<c>``); tests read its ``a``,
    ``bank``, ``valid``, ``prod``, ``psum``, ``ws``, ``wa``, ``wtag`` and ``wok`` registers."""

    def __init__(self, n: int):
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"the array size must be a positive integer, not {n!r}")
        self.n = n
        self.psum_width = psum_bits(n)
        self.pes = [[ProcessingElement(self.psum_width) for _ in range(n)] for _ in range(n)]
        super().__init__({
            "x": In(data.ArrayLayout(signed(OP_BITS), n)),
            "x_bank": In(1),
            "x_valid": In(1),
            "w_we": In(1),
            "w_col": In(range(n)),
            "w_data": In(data.ArrayLayout(signed(OP_BITS), n)),
            "w_flush": In(1),
            "sums": Out(data.ArrayLayout(signed(self.psum_width), n)),
        })

    @property
    def latency(self) -> int:
        return 2 * self.n + 1

    def elaborate(self, platform):
        m = Module()
        n = self.n
        for r in range(n):
            for c in range(n):
                m.submodules[f"pe_{r}_{c}"] = self.pes[r][c]

        for r in range(n):
            # row r enters through r + 1 registers (input register, then the skew); `nxt` is
            # what the last of them takes in: the vector PE(r, 0) sees next cycle
            a, bank, valid = self.x[r], self.x_bank, self.x_valid
            nxt = (bank, valid)
            for k in range(r + 1):
                nxt = (bank, valid)
                # data: the operand and its tag count only under the valid bit (reset)
                a_d = Signal(signed(OP_BITS), name=f"skew_{r}_{k}", reset_less=True)
                b_d = Signal(name=f"skew_bank_{r}_{k}", reset_less=True)
                v_d = Signal(name=f"skew_valid_{r}_{k}")
                m.d.sync += [a_d.eq(a), b_d.eq(bank), v_d.eq(valid)]
                a, bank, valid = a_d, b_d, v_d
            for c in range(n):
                pe = self.pes[r][c]
                if c == 0:
                    left, ahead = (a, bank, valid), nxt
                else:
                    lp = self.pes[r][c - 1]
                    left, ahead = (lp.a, lp.bank, lp.valid), (lp.bank_in, lp.valid_in)
                m.d.comb += [
                    pe.a_in.eq(left[0]), pe.bank_in.eq(left[1]), pe.valid_in.eq(left[2]),
                    pe.next_bank.eq(ahead[0]), pe.next_valid.eq(ahead[1]),
                    pe.psum_in.eq(0 if r == 0 else self.pes[r - 1][c].psum),
                    pe.we.eq(self.w_we & (self.w_col == c)),
                    pe.w_data.eq(self.w_data[r]),
                    pe.flush.eq(self.w_flush),
                ]

        for c in range(n):
            # deskew: column c waits n - 1 - c cycles
            s = self.pes[n - 1][c].psum
            for k in range(n - 1 - c):
                s_d = Signal(signed(self.psum_width), name=f"deskew_{c}_{k}",
                             reset_less=True)     # data: the engine's bookkeeping qualifies it
                m.d.sync += s_d.eq(s)
                s = s_d
            m.d.comb += self.sums[c].eq(s)
        return m
