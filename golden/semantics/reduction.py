"""REDUCE_ALL .. REDUCE_VAR (BASE group 6): reductions of a C x H x W tensor
(docs/isa-decisions.md, D-REDUCE).

The source holds FC x FH x FW elements of `src_unit`, stored contiguously with W
fastest (a zero dimension is 1). `axis` is a mask of the reduced axes (bit 0 W,
bit 1 H, bit 2 C); 0 faults ILLEGAL_OPERAND. The result keeps every reduced axis
with size 1 and is written contiguously at `dst` in the same unit.

The tensor is viewed as (C, H, W), the kept axes are moved first and the reduced
ones last (both in C, H, W order), and it is flattened to (M, K): M results, each
over K elements in C, H, W order. Every reduction is then one numpy operation
along axis 1.

* ALL / ANY: 1 or 0 in the unit (x != 0; NaN counts as true, -0.0 as false).
* MAX / MIN: exact comparison; NaN propagates. For floats -0.0 < +0.0 (IEEE 754-2019
  maximum/minimum), so the result does not depend on the order of equal zeros.
* SUM / PROD: integers exact then saturated to the unit; floats accumulated
  sequentially in binary64 (C, H, W order) and rounded once.
* MEAN: integers the exact sum divided by K, rounded toward zero; floats the
  sequential binary64 sum divided by K in binary64, rounded once.
* VAR: population variance (divide by K). Integers: exact, rounded toward zero and
  saturated to the unit (a variance can exceed the unit's range). Floats: two
  passes in binary64, mean = sum(x)/K, then sum((x - mean)^2)/K, each sum
  sequential, rounded once.

A NaN result is the default quiet NaN of the unit (D-FLOAT).
"""

import numpy as np

from .. import units as U
from ..dispatch import handler
from ..isa import Fault

_OPS = ("reduce_all", "reduce_any", "reduce_mean", "reduce_max", "reduce_min",
        "reduce_prod", "reduce_sum", "reduce_var")

# int64 computations stay below this bound; beyond it, Python ints (object arrays).
_INT64_SAFE = 1 << 62


@handler(*_OPS)
def reduce_(x):
    kind = x.op.mnemonic
    unit = x.unit("src_unit")                                   # RESERVED_UNIT
    axis = x.f["axis"]
    x.require(axis != 0, Fault.ILLEGAL_OPERAND, "axis mask 0 reduces nothing")
    shape = tuple(x.f[k] or 1 for k in ("fc", "fh", "fw"))     # (C, H, W)
    reduced = tuple(i for i in range(3) if axis & (4 >> i))   # bit 2 C, bit 1 H, bit 0 W
    kept = tuple(i for i in range(3) if i not in reduced)
    n = shape[0] * shape[1] * shape[2]
    k = 1
    for i in reduced:
        k *= shape[i]
    m = n // k
    src, dst = x.f["src"], x.f["dst"]
    x.check_range(src, U.nbytes(unit, n), "source")             # ADDRESS_RANGE
    x.check_range(dst, U.nbytes(unit, m), "destination")
    data = x.read(src, unit, n).reshape(shape).transpose(kept + reduced).reshape(m, k)
    out = (_float if unit.is_float else _integer)[kind](data, unit)
    x.write(dst, unit, out)


# --- shared ---------------------------------------------------------------------------

def _truth(a, unit, fn):
    return U.from_exact(fn(a != 0, axis=1).astype(np.int64), unit, True)


def _extreme(a, unit, is_max):
    r = a.max(axis=1) if is_max else a.min(axis=1)              # NaN propagates
    if unit.is_float:
        zero = r == 0
        if zero.any():                                          # -0.0 < +0.0
            z = a == 0
            if is_max:                                          # -0.0 unless some +0.0
                neg = ~(z & ~np.signbit(a)).any(axis=1)
            else:                                               # -0.0 if any -0.0
                neg = (z & np.signbit(a)).any(axis=1)
            r = np.where(zero, np.where(neg, -0.0, 0.0).astype(r.dtype), r)
        r = _canon(r, unit)
    return r


# --- integers -------------------------------------------------------------------------

def _wide(a, unit):
    """(M, K) native integers as Python ints (object)."""
    return U.exact(a.ravel(), unit, wide=True).reshape(a.shape)


def _isum(a, unit):
    """Exact row sums: int64 when they cannot overflow, else Python ints."""
    m, k = a.shape
    if unit.bits < 64 and (k << unit.bits) < _INT64_SAFE:
        return a.astype(np.int64).sum(axis=1)
    if k < (1 << 29):
        # split each 64-bit value into hi * 2**32 + lo; both halves sum exactly in int64
        v = a.astype(np.uint64 if not unit.signed else np.int64)
        hi = (v >> np.array(32, dtype=v.dtype)).astype(np.int64).sum(axis=1)
        lo = (v & np.array(0xFFFFFFFF, dtype=v.dtype)).astype(np.int64).sum(axis=1)
        return hi.astype(object) * (1 << 32) + lo.astype(object)
    return _wide(a, unit).sum(axis=1)


def _trunc_div(s, d):
    """s / d rounded toward zero (d > 0), for int64 or object arrays."""
    return np.where(s < 0, -((-s) // d), s // d)


def _iprod(a, unit):
    """Exact row products, with the magnitude capped at a value beyond the unit's
    range (which saturates identically); sign and zero tracked separately."""
    m, k = a.shape
    lo, hi = U.int_range(unit)
    cap = max(hi + 1, -lo)
    neg = (a < 0).sum(axis=1) % 2 == 1 if unit.signed else np.zeros(m, dtype=bool)
    if cap * cap < (1 << 63):
        mag = np.abs(a.astype(np.int64))
        one = np.ones((m, 1), dtype=np.int64)
    else:
        mag = np.abs(_wide(a, unit))
        one = np.ones((m, 1), dtype=object)
    while mag.shape[1] > 1:                                     # pairwise tree, log2(K) steps
        if mag.shape[1] % 2:
            mag = np.concatenate((mag, one), axis=1)
        mag = np.minimum(mag[:, 0::2] * mag[:, 1::2], cap)
    mag = mag[:, 0]
    return np.where(neg, -mag, mag)


def _ivar(a, unit):
    m, k = a.shape
    big = 1 << unit.bits
    if k * k * big * big < _INT64_SAFE:
        v = a.astype(np.int64)
    else:
        v = _wide(a, unit)
    s = v.sum(axis=1)
    sq = (v * v).sum(axis=1)
    num = k * sq - s * s                                        # K^2 * variance, >= 0
    return num // (k * k)


_integer = {
    "reduce_all": lambda a, u: _truth(a, u, np.all),
    "reduce_any": lambda a, u: _truth(a, u, np.any),
    "reduce_max": lambda a, u: _extreme(a, u, True),
    "reduce_min": lambda a, u: _extreme(a, u, False),
    "reduce_sum": lambda a, u: U.from_exact(_isum(a, u), u, True),
    "reduce_mean": lambda a, u: U.from_exact(_trunc_div(_isum(a, u), a.shape[1]), u, True),
    "reduce_prod": lambda a, u: U.from_exact(_iprod(a, u), u, True),
    "reduce_var": lambda a, u: U.from_exact(_ivar(a, u), u, True),
}


# --- floating point -------------------------------------------------------------------

def _canon(r, unit):
    """NaN results as the unit's default quiet NaN (D-FLOAT)."""
    nan = np.isnan(r)
    if nan.any():
        r = np.where(nan, np.array(np.nan, dtype=r.dtype), r)
    return r


def _seq(ufunc, f):
    """Strictly sequential row reduction in binary64 (element 0 first)."""
    with np.errstate(all="ignore"):
        return ufunc.accumulate(f, axis=1)[:, -1]


def _fsum(f):
    return _seq(np.add, f)


def _fmean(f):
    with np.errstate(all="ignore"):
        return _fsum(f) / f.shape[1]


def _fvar(f):
    with np.errstate(all="ignore"):
        d = f - _fmean(f)[:, None]
        return _fsum(d * d) / f.shape[1]


def _fround(fn):
    return lambda a, u: _canon(U.from_f64(fn(U.to_f64(a, u)), u), u)


_float = {
    "reduce_all": lambda a, u: _truth(a, u, np.all),
    "reduce_any": lambda a, u: _truth(a, u, np.any),
    "reduce_max": lambda a, u: _extreme(a, u, True),
    "reduce_min": lambda a, u: _extreme(a, u, False),
    "reduce_sum": _fround(_fsum),
    "reduce_mean": _fround(_fmean),
    "reduce_prod": _fround(lambda f: _seq(np.multiply, f)),
    "reduce_var": _fround(_fvar),
}
