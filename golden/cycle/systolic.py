"""Cycle model of the weight-stationary systolic array (`xdsa.hw.systolic.SystolicArray`).

`SystolicModel(n)` holds the same registers as the RTL, updated by the same rules
at every clock edge, as numpy arrays:

* ``skew[r]``: row r's input chain, ``r + 1`` (activation, bank, valid) registers
  (an input register and the skew); PE(r, 0) takes the last of them, and the one
  before it (or the array's input, for row 0) is the vector it sees next cycle;
* per PE(r, c): ``a[r, c]``, ``bank[r, c]`` and ``valid[r, c]`` (the activation,
  its bank tag and valid bit, passed right), ``prod[r, c]`` (``a_in * wa[r, c]``),
  ``psum[r, c]`` (``psum[r-1, c] + prod[r, c]`` of the cycle before, wrapped to
  ``psum_bits`` two's complement), ``ws[r, c]`` (the shadow weight, written by
  ``w_we`` for column ``w_col``), ``wa[r, c]`` (the active
  weight), ``wtag[r, c]`` (its bank tag) and ``wok[r, c]`` (it holds a tile loaded
  since ``w_flush``). The swap: when the vector that reaches PE(r, c) next cycle
  is valid and its tag differs from ``wtag`` (or ``wok`` is 0), ``wa`` takes ``ws``,
  ``wtag`` the tag and ``wok`` 1 (``w_flush`` instead clears ``wok``);
* ``deskew[c]``: column c's ``n - 1 - c`` output registers; ``sums()`` is the
  deskewed output, the column sums of the vector that entered ``2n + 1`` cycles
  earlier.

The skewed wavefront: the vector entered at cycle t reaches PE(r, c) at cycle
``t + 1 + r + c`` (its ``a``/``prod`` registers hold its values from cycle
``t + 2 + r + c``, its ``psum`` from ``t + 3 + r + c``). `reference` computes what
the array must output for a sequence of inputs without modelling any register (an
independent check of the model).
"""

import numpy as np

__all__ = ["SystolicModel", "psum_bits", "reference"]

REGS = ("a", "bank", "valid", "prod", "psum", "ws", "wa", "wtag", "wok")


def psum_bits(n: int) -> int:
    """Bits of a column sum (as `xdsa.hw.systolic.psum_bits`)."""
    return 33 + max(1, (max(n, 2) - 1).bit_length())


def _wrap(v, bits):
    v = np.asarray(v, dtype=np.int64) & ((1 << bits) - 1)
    return np.where(v >> (bits - 1) & 1, v - (1 << bits), v)


class SystolicModel:
    """Register-transfer model of an ``n x n`` `SystolicArray`.

    Call `step` once per cycle with that cycle's inputs; it applies the clock edge.
    Read the registers (``a``, ``bank``, ``prod``, ``psum``, ``w``) and `sums` between steps:
    they are what the RTL's registers and ``sums`` output hold during the next cycle.
    """

    def __init__(self, n: int):
        self.n = n
        self.bits = psum_bits(n)
        for reg in REGS:
            setattr(self, reg, np.zeros((n, n), dtype=np.int64))
        self.skew = [[(0, 0, 0)] * (r + 1) for r in range(n)]
        self.deskew = [[0] * (n - 1 - c) for c in range(n)]

    @property
    def latency(self) -> int:
        return 2 * self.n + 1

    def sums(self) -> np.ndarray:
        n = self.n
        return np.array([self.deskew[c][-1] if self.deskew[c] else self.psum[n - 1, c]
                         for c in range(n)], dtype=np.int64)

    def step(self, x, x_bank=0, x_valid=1, w_we=0, w_col=0, w_data=None, w_flush=0):
        """One clock edge with inputs `x` (n operands), `x_bank`, `x_valid`, a write of
        `w_data` (n weights, one per row) into the shadows of column `w_col` if `w_we`,
        and `w_flush`."""
        n = self.n
        x = np.asarray(x, dtype=np.int64)
        # column 0's inputs: the last register of each row's chain; next cycle's: the one before
        last = [self.skew[r][-1] for r in range(n)]
        ahead = [(int(x_bank), int(x_valid)) if r == 0 else self.skew[r][-2][1:] for r in range(n)]
        a_in = _shift_in([v[0] for v in last], self.a)
        b_in = _shift_in([v[1] for v in last], self.bank)
        v_in = _shift_in([v[2] for v in last], self.valid)
        b_next = _shift_in([v[0] for v in ahead], b_in)
        v_next = _shift_in([v[1] for v in ahead], v_in)
        p_in = np.concatenate([np.zeros((1, n), dtype=np.int64), self.psum[:-1, :]], axis=0)
        new_prod = a_in * self.wa
        new_psum = _wrap(p_in + self.prod, self.bits)
        new_deskew = [([self.psum[n - 1, c]] + self.deskew[c][:-1]) if self.deskew[c] else []
                      for c in range(n)]
        if w_flush:
            self.wok = np.zeros((n, n), dtype=np.int64)
        else:
            swap = (v_next == 1) & ((self.wok == 0) | (b_next != self.wtag))
            self.wa = np.where(swap, self.ws, self.wa)
            self.wtag = np.where(swap, b_next, self.wtag)
            self.wok = np.where(swap, 1, self.wok)
        if w_we:
            self.ws[:, w_col] = np.asarray(w_data, dtype=np.int64)
        self.skew = [[(int(x[r]), int(x_bank), int(x_valid))] + self.skew[r][:-1] for r in range(n)]
        self.a, self.bank, self.valid, self.deskew = a_in, b_in, v_in, new_deskew
        self.prod, self.psum = new_prod, new_psum

    def state(self) -> dict:
        """Every PE register: {"a", "bank", "valid", "prod", "psum", "ws", "wa", "wtag", "wok"} -> (n, n)
        arrays."""
        return {k: getattr(self, k).copy() for k in REGS}


def _shift_in(column0, regs):
    """Each PE's input from the left: `column0` for column 0, else its left neighbour's `regs`."""
    return np.concatenate([np.array(column0, dtype=np.int64)[:, None], regs[:, :-1]], axis=1)


def reference(weights, xs, banks):
    """The column sums the array outputs for input vectors `xs[t]` tagged `banks[t]`,
    with ``weights[b]`` the (n, n) tile of the pass tagged b (row = reduction lane,
    column = kernel) at the time the vector passes: plain matrix-vector products."""
    return [np.asarray(x, dtype=np.int64) @ np.asarray(weights[b], dtype=np.int64)
            for x, b in zip(xs, banks)]
