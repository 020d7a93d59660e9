"""Data units in memory and the conversions between them (vectorised with numpy).

Values travel in three representations:

* native: the unit's own numpy dtype (int4 as int8/uint8 holding one element each);
* exact integers: int64 arrays, or object arrays of Python ints when a value may
  not fit in 64 signed bits (64-bit units, wide products);
* binary64: float64 arrays, the compute format of every floating-point operation.

Conversions (docs/isa-decisions.md, D-CONVERT):

* integer -> integer: saturate to the destination range when `sat`, else wrap
  (keep the low bits, two's complement);
* integer or float -> float: round to nearest even, overflow to infinity;
* float -> integer: round toward zero, or to nearest even when `rnd`; always
  saturate to the destination range; NaN becomes 0.
"""

import numpy as np

from .isa import DataUnit

__all__ = [
    "nbytes", "read", "write", "exact", "to_f64", "from_exact", "from_f64", "convert",
    "int_range", "native_dtype",
]

_NATIVE = {
    DataUnit.U4: np.uint8, DataUnit.S4: np.int8,
    DataUnit.U8: np.uint8, DataUnit.S8: np.int8,
    DataUnit.U16: np.dtype("<u2"), DataUnit.S16: np.dtype("<i2"),
    DataUnit.U32: np.dtype("<u4"), DataUnit.S32: np.dtype("<i4"),
    DataUnit.U64: np.dtype("<u8"), DataUnit.S64: np.dtype("<i8"),
    DataUnit.FP16: np.dtype("<f2"), DataUnit.FP32: np.dtype("<f4"), DataUnit.FP64: np.dtype("<f8"),
}


def native_dtype(unit: DataUnit):
    return np.dtype(_NATIVE[unit])


def nbytes(unit: DataUnit, count: int) -> int:
    """Bytes spanned by `count` consecutive elements starting on a byte boundary."""
    return (count * unit.bits + 7) // 8


def int_range(unit: DataUnit):
    """(min, max) of an integer unit, as Python ints."""
    b = unit.bits
    return (-(1 << (b - 1)), (1 << (b - 1)) - 1) if unit.signed else (0, (1 << b) - 1)


def read(mem: np.ndarray, address: int, unit: DataUnit, count: int) -> np.ndarray:
    """`count` elements of `unit` starting at byte `address` (bounds already checked)."""
    n = nbytes(unit, count)
    raw = mem[address:address + n]
    if unit.bits == 4:
        nib = np.empty(2 * n, dtype=np.uint8)
        nib[0::2] = raw & 0xF
        nib[1::2] = raw >> 4
        nib = nib[:count]
        if unit.signed:
            return ((nib.astype(np.int8) ^ 8) - 8).astype(np.int8)
        return nib
    return np.frombuffer(raw.tobytes(), dtype=_NATIVE[unit], count=count).copy()


def write(mem: np.ndarray, address: int, unit: DataUnit, values: np.ndarray) -> int:
    """Store native `values` at `address`; returns the number of bytes touched. An odd
    int4 count leaves the high nibble of the last byte as it was."""
    count = len(values)
    n = nbytes(unit, count)
    if unit.bits == 4:
        nib = (np.asarray(values).astype(np.int16) & 0xF).astype(np.uint8)
        if count % 2:
            nib = np.append(nib, mem[address + n - 1] >> 4)
        mem[address:address + n] = nib[0::2] | (nib[1::2] << 4)
        return n
    mem[address:address + n] = np.frombuffer(np.ascontiguousarray(values, dtype=_NATIVE[unit]).tobytes(),
                                             dtype=np.uint8)
    return n


def exact(values: np.ndarray, unit: DataUnit, wide: bool = False) -> np.ndarray:
    """Native integer values as exact integers: int64, or Python ints (object) when
    `wide` or the unit is 64-bit."""
    if wide or unit.bits == 64:
        return np.array([int(v) for v in values.tolist()], dtype=object) if len(values) else \
            np.zeros(0, dtype=object)
    return values.astype(np.int64)


def to_f64(values: np.ndarray, unit: DataUnit) -> np.ndarray:
    """Any native values as binary64 (exact for every unit except 64-bit integers
    beyond 2**53, which round to nearest even)."""
    return values.astype(np.float64)


def from_exact(values: np.ndarray, unit: DataUnit, sat: bool) -> np.ndarray:
    """Exact integers (int64 or object) to `unit`: saturate or wrap for integer units,
    round once to nearest even for float units."""
    if unit.is_float:
        if values.dtype != object:
            if not (np.abs(values) >= (1 << 53)).any():
                return from_f64(values.astype(np.float64), unit)   # exact, then one rounding
            values = values.astype(object)
        return np.array([_round_int_to_float(int(v), unit) for v in values], dtype=_NATIVE[unit])
    lo, hi = int_range(unit)
    if values.dtype == object:
        if sat:
            out = [min(max(int(v), lo), hi) for v in values]
        else:
            m = 1 << unit.bits
            out = [((int(v) - lo) % m) + lo for v in values]
        return np.array(out, dtype=object).astype(_NATIVE[unit])
    if sat:
        return np.clip(values, max(lo, -(1 << 63)), min(hi, (1 << 63) - 1)).astype(_NATIVE[unit])
    if unit.bits == 64:                      # int64 -> 64-bit unit: reinterpret the bits
        return values.astype(np.int64).view(_NATIVE[unit])
    m = np.int64((1 << unit.bits) - 1)
    low = values & m
    if unit.signed:
        low = low - ((low >> (unit.bits - 1)) & 1) * (1 << unit.bits)
    return low.astype(_NATIVE[unit])


def _round_int_to_float(v: int, unit: DataUnit) -> float:
    """An exact integer rounded once (nearest even) to binary16/32/64."""
    if unit == DataUnit.FP64 or abs(v) < (1 << 53):
        f = float(v)                          # correctly rounded (exact below 2**53)
        return _f64_to_float(np.array([f]), unit)[0] if unit != DataUnit.FP64 else f
    sig = 24 if unit == DataUnit.FP32 else 11
    a = abs(v)
    shift = a.bit_length() - sig
    q, r = divmod(a, 1 << shift)
    half = 1 << (shift - 1)
    if r > half or (r == half and q & 1):
        q += 1
    f = float(q << shift)                     # exact: at most `sig` significant bits
    return _f64_to_float(np.array([f if v >= 0 else -f]), unit)[0]


def _f64_to_float(values: np.ndarray, unit: DataUnit) -> np.ndarray:
    """Round to the float unit; every NaN becomes the default quiet NaN (D-FLOAT)."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = values.astype(_NATIVE[unit])
    nan = np.isnan(out)
    if nan.any():
        out[nan] = np.nan
    return out


def from_f64(values: np.ndarray, unit: DataUnit, sat: bool = False, rnd: bool = False) -> np.ndarray:
    """binary64 values to `unit` (see the module docstring)."""
    if unit.is_float:
        return _f64_to_float(values, unit)
    with np.errstate(invalid="ignore"):
        r = np.rint(values) if rnd else np.trunc(values)
    lo, hi = int_range(unit)
    nan = np.isnan(r)
    r = np.where(nan, 0.0, r)
    if unit.bits < 64:
        return np.clip(r, lo, hi).astype(_NATIVE[unit])
    # 64-bit: compare in float space against exactly representable bounds
    over = r >= float(hi) + 1.0           # 2**63 or 2**64, exact in binary64
    under = r < float(lo)
    safe = np.where(over | under, 0.0, r)
    out = safe.astype(_NATIVE[unit])
    out[over] = hi
    out[under] = lo
    return out


def convert(values: np.ndarray, src: DataUnit, dst: DataUnit, sat: bool = False, rnd: bool = False):
    """Convert native values of `src` to native values of `dst` (DATA_CONVERT)."""
    if src.is_float:
        return from_f64(values.astype(np.float64), dst, sat, rnd)
    return from_exact(exact(values, src), dst, sat)
