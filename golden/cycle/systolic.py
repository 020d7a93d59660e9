"""Cycle model of the weight-stationary systolic array (`xdsa.hw.systolic.SystolicArray`).

`SystolicModel(n)` holds the same registers as the RTL, updated by the same rules
at every clock edge, as numpy arrays:

* ``skew[r]``: row r's skew chain, ``r`` (activation, bank) registers; row r's
  input to PE(r, 0) is the last of them (row 0 takes ``x[0]`` directly);
* per PE(r, c): ``a[r, c]`` and ``bank[r, c]`` (the activation and its bank tag,
  passed right), ``psum[r, c]`` (``psum[r-1, c] + a_in * w[bank_in, r, c]``,
  wrapped to ``psum_bits`` two's complement), ``w[0, r, c]`` and ``w[1, r, c]``
  (the two weight banks);
* ``deskew[c]``: column c's ``n - 1 - c`` output registers; ``sums()`` is the
  deskewed output, the column sums of the vector that entered ``2n - 1`` cycles
  earlier.

The skewed wavefront: the vector entered at cycle t reaches PE(r, c) at cycle
``t + r + c`` (its ``a``/``psum`` registers hold its values from cycle
``t + r + c + 1``). `reference` computes what the array must output for a sequence
of inputs without modelling any register (an independent check of the model).
"""

import numpy as np

__all__ = ["SystolicModel", "psum_bits", "reference"]


def psum_bits(n: int) -> int:
    """Bits of a column sum (as `xdsa.hw.systolic.psum_bits`)."""
    return 33 + max(1, (max(n, 2) - 1).bit_length())


def _wrap(v, bits):
    v = np.asarray(v, dtype=np.int64) & ((1 << bits) - 1)
    return np.where(v >> (bits - 1) & 1, v - (1 << bits), v)


class SystolicModel:
    """Register-transfer model of an ``n x n`` `SystolicArray`.

    Call `step` once per cycle with that cycle's inputs; it applies the clock edge.
    Read the registers (``a``, ``bank``, ``psum``, ``w``) and `sums` between steps:
    they are what the RTL's registers and ``sums`` output hold during the next cycle.
    """

    def __init__(self, n: int):
        self.n = n
        self.bits = psum_bits(n)
        self.a = np.zeros((n, n), dtype=np.int64)
        self.bank = np.zeros((n, n), dtype=np.int64)
        self.psum = np.zeros((n, n), dtype=np.int64)
        self.w = np.zeros((2, n, n), dtype=np.int64)
        self.skew = [[(0, 0)] * r for r in range(n)]
        self.deskew = [[0] * (n - 1 - c) for c in range(n)]

    @property
    def latency(self) -> int:
        return 2 * self.n - 1

    def sums(self) -> np.ndarray:
        n = self.n
        return np.array([self.deskew[c][-1] if self.deskew[c] else self.psum[n - 1, c]
                         for c in range(n)], dtype=np.int64)

    def step(self, x, x_bank=0, w_we=0, w_bank=0, w_col=0, w_data=None):
        """One clock edge with inputs `x` (n operands), `x_bank`, and a weight write of
        `w_data` (n weights, one per row) into column `w_col` of bank `w_bank` if `w_we`."""
        n = self.n
        x = np.asarray(x, dtype=np.int64)
        # inputs of column 0: row 0 directly, row r from its skew chain
        a_in0 = np.array([x[0]] + [self.skew[r][-1][0] for r in range(1, n)], dtype=np.int64)
        b_in0 = np.array([x_bank] + [self.skew[r][-1][1] for r in range(1, n)], dtype=np.int64)
        a_in = np.concatenate([a_in0[:, None], self.a[:, :-1]], axis=1)
        b_in = np.concatenate([b_in0[:, None], self.bank[:, :-1]], axis=1)
        p_in = np.concatenate([np.zeros((1, n), dtype=np.int64), self.psum[:-1, :]], axis=0)
        w_sel = np.where(b_in == 1, self.w[1], self.w[0])
        new_psum = _wrap(p_in + a_in * w_sel, self.bits)
        new_deskew = [([self.psum[n - 1, c]] + self.deskew[c][:-1]) if self.deskew[c] else []
                      for c in range(n)]
        self.skew = [([(int(x[r]), int(x_bank))] + self.skew[r][:-1]) if r else []
                     for r in range(n)]
        self.a, self.bank, self.psum, self.deskew = a_in, b_in, new_psum, new_deskew
        if w_we:
            self.w[w_bank, :, w_col] = np.asarray(w_data, dtype=np.int64)

    def state(self) -> dict:
        """Every PE register: {"a", "bank", "psum", "w0", "w1"} -> (n, n) arrays."""
        return {"a": self.a.copy(), "bank": self.bank.copy(), "psum": self.psum.copy(),
                "w0": self.w[0].copy(), "w1": self.w[1].copy()}


def reference(weights, xs, banks):
    """The column sums the array outputs for input vectors `xs[t]` tagged `banks[t]`,
    with ``weights[b]`` the (n, n) bank contents (row = reduction lane, column = kernel)
    at the time the vector passes: plain matrix-vector products."""
    return [np.asarray(x, dtype=np.int64) @ np.asarray(weights[b], dtype=np.int64)
            for x, b in zip(xs, banks)]
