"""Golden semantics of the BASE elementwise instructions: Arithmetic, Logic, Shift,
Narrow/Extension, DIV/MOD, MUL, Compare, Roundup and DATA_CONVERT.

Each instruction reads `len` elements of each source (bytes for Logic), computes
exactly (integers) or in binary64 (any float unit involved), and converts once to
the destination unit. The decisions are D-CONVERT, D-FLOAT, D-ARITH, D-LOGIC,
D-SHIFT, D-NARROW, D-DIV, D-COMPARE, D-ROUNDUP and D-DATACONVERT in
docs/isa-decisions.md. Everything is vectorised with numpy; only POW (rare, and
exact over arbitrarily large powers) maps a Python function over its elements.
"""

import numpy as np

from .. import units as U
from ..dispatch import handler
from ..isa import DataUnit, Fault

# --- operand helpers ------------------------------------------------------------------


def _units(x, *names):
    """Validate unit fields (RESERVED_UNIT) in order; return their DataUnits."""
    return [x.unit(n) for n in names]


def _unsupported(x, cond, detail):
    x.require(not cond, Fault.UNSUPPORTED_UNIT, detail)


def _check_overlap(x, dst_unit, n, pairs, dst="dst"):
    """D-OVERLAP: the destination must never run ahead of an overlapping source."""
    if n <= 1:
        return
    d, b = 8 * x.f[dst], dst_unit.bits
    d_end = x.f[dst] + U.nbytes(dst_unit, n)
    for field, unit in pairs:
        src, a = x.f[field], unit.bits
        if src >= d_end or x.f[dst] >= src + U.nbytes(unit, n):
            continue
        s = 8 * src
        if not all(d + k * b <= s + k * a for k in (1, n - 1)):
            x.fault(Fault.ILLEGAL_OPERAND, f"{dst} {x.f[dst]:#x} overlaps {field} {src:#x} and would "
                    "overwrite source elements before they are read (D-OVERLAP)")


def _read_sources(x, pairs, n):
    """Read every (address field, unit) after checking all ranges; D-SNAPSHOT."""
    for field, unit in pairs:
        x.check_range(x.f[field], U.nbytes(unit, n), field)
    return [U.read(x.mem, x.f[field], unit, n) for field, unit in pairs]


def _int_exact(values, unit, wide=False):
    return U.exact(values, unit, wide)


def _wide(*units):
    """Do exact integer results of these units need Python ints (beyond int64)?"""
    return any(u.bits == 64 for u in units)


def _sign_extend(raw: int, bits: int) -> int:
    return raw - (1 << bits) if raw >> (bits - 1) else raw


def _imm16(raw: int, unit: DataUnit):
    """A 16-bit immediate as a value of `unit` (D-ARITH THRES, D-ROUNDUP CLIP)."""
    if unit.is_float:
        return float(np.frombuffer(int(raw).to_bytes(2, "little"), dtype="<f2")[0])
    return _sign_extend(raw, 16) if unit.signed else raw


def _finish(x, result, dst_unit, *, is_float, n_dst=None):
    """Convert `result` (binary64 or exact ints) to the destination and stage it."""
    sat, rnd = bool(x.f.get("sat", 0)), bool(x.f.get("rnd", 0))
    if is_float:
        with np.errstate(all="ignore"):
            out = U.from_f64(np.asarray(result, dtype=np.float64), dst_unit, sat, rnd)
    else:
        out = U.from_exact(result, dst_unit, sat)
    x.write(x.f["dst"], dst_unit, out, "dst")


# --- binary and unary elementwise skeletons --------------------------------------------


def _binary(x, int_fn, float_fn, *, ints_only=False, floats_only=False):
    u0, ud, u1 = _units(x, "src0_unit", "dst_unit", "src1_unit")
    units = (u0, u1, ud)
    name = x.op.mnemonic
    _unsupported(x, ints_only and any(u.is_float for u in units), f"{name} takes integer units only")
    _unsupported(x, floats_only and not all(u.is_float for u in units), f"{name} takes float units only")
    n = x.f["len"]
    _check_overlap(x, ud, n, [("src0", u0), ("src1", u1)])
    x.check_range(x.f["dst"], U.nbytes(ud, n), "dst")
    a, b = _read_sources(x, [("src0", u0), ("src1", u1)], n)
    if any(u.is_float for u in units):
        with np.errstate(all="ignore"):
            r = float_fn(a.astype(np.float64), b.astype(np.float64))
        _finish(x, r, ud, is_float=True)
        return
    wide = _wide(u0, u1, ud)
    r = int_fn(_int_exact(a, u0, wide), _int_exact(b, u1, wide), (u0, u1, ud))
    _finish(x, r, ud, is_float=False)


def _unary(x, int_fn, float_fn, *, src="src0", signed_or_float=False, floats_only=False):
    us, ud = _units(x, f"{src}_unit", "dst_unit")
    name = x.op.mnemonic
    _unsupported(x, signed_or_float and us.is_int and not us.signed, f"{name} takes signed or float units")
    _unsupported(x, floats_only and not (us.is_float and ud.is_float), f"{name} takes float units only")
    n = x.f["len"]
    _check_overlap(x, ud, n, [(src, us)])
    x.check_range(x.f["dst"], U.nbytes(ud, n), "dst")
    (a,) = _read_sources(x, [(src, us)], n)
    if us.is_float or ud.is_float:
        with np.errstate(all="ignore"):
            r = float_fn(a.astype(np.float64), us)
        _finish(x, r, ud, is_float=True)
        return
    r = int_fn(_int_exact(a, us, _wide(us, ud)), us)
    _finish(x, r, ud, is_float=False)


# --- Arithmetic (group 0) ----------------------------------------------------------------

@handler("add")
def add(x):
    _binary(x, lambda a, b, u: a + b, lambda a, b: a + b)


@handler("sub")
def sub(x):
    _binary(x, lambda a, b, u: a - b, lambda a, b: a - b)


@handler("mul")
def mul(x):
    def int_mul(a, b, units):
        u0, u1, _ = units
        if a.dtype != object and u0.bits + u1.bits > 62:
            a, b = a.astype(object), b.astype(object)
        return a * b
    _binary(x, int_mul, lambda a, b: a * b)


def _fmax(a, b):
    """IEEE 754-2019 maximum: NaN propagates, +0 > -0."""
    r = np.maximum(a, b)
    z = (a == 0) & (b == 0)
    return np.where(z, np.where(np.signbit(a) & np.signbit(b), -0.0, 0.0), r)


def _fmin(a, b):
    """IEEE 754-2019 minimum: NaN propagates, -0 < +0."""
    r = np.minimum(a, b)
    z = (a == 0) & (b == 0)
    return np.where(z, np.where(np.signbit(a) | np.signbit(b), -0.0, 0.0), r)


@handler("max")
def max_(x):
    _binary(x, lambda a, b, u: np.where(a >= b, a, b), _fmax)


@handler("min")
def min_(x):
    _binary(x, lambda a, b, u: np.where(a <= b, a, b), _fmin)


@handler("maxsi")
def maxsi(x):
    _binary(x, lambda a, b, u: (b > a).astype(np.int64), lambda a, b: (b > a).astype(np.float64))


@handler("minsi")
def minsi(x):
    _binary(x, lambda a, b, u: (b < a).astype(np.int64), lambda a, b: (b < a).astype(np.float64))


@handler("thres")
def thres(x):
    us, ud = _units(x, "src0_unit", "dst_unit")
    t = _imm16(x.f["thres"], us)
    lt = bool(x.f["lt"])
    n = x.f["len"]
    _check_overlap(x, ud, n, [("src0", us)])
    x.check_range(x.f["dst"], U.nbytes(ud, n), "dst")
    (a,) = _read_sources(x, [("src0", us)], n)
    if us.is_float or ud.is_float:
        v = a.astype(np.float64)
        with np.errstate(invalid="ignore"):
            keep = v < t if lt else v > t
        _finish(x, np.where(keep, v, 0.0), ud, is_float=True)
        return
    v = _int_exact(a, us, _wide(us, ud))
    keep = v < t if lt else v > t
    _finish(x, np.where(keep, v, 0), ud, is_float=False)


@handler("asum")
def asum(x):
    us, ud = _units(x, "src0_unit", "dst_unit")
    n = x.f["len"]
    if n == 0:
        return                                # D-LENGTH: a zero length writes nothing
    x.check_range(x.f["dst"], U.nbytes(ud, 1), "dst")
    (a,) = _read_sources(x, [("src0", us)], n)
    if us.is_float or ud.is_float:
        with np.errstate(all="ignore"):
            total = np.add.accumulate(a.astype(np.float64))[-1]   # sequential, element 0 first
        _finish(x, np.array([total]), ud, is_float=True)
        return
    v = _int_exact(a, us, us.bits == 64 or n >= (1 << 30))
    total = sum(v.tolist()) if v.dtype == object else int(v.sum())
    _finish(x, np.array([total], dtype=object), ud, is_float=False)


@handler("abs")
def abs_(x):
    _unary(x, lambda a, u: np.abs(a) if a.dtype != object else np.array([abs(v) for v in a], dtype=object),
           lambda a, u: np.abs(a), signed_or_float=True)


@handler("median")
def median(x):
    u0, ud, u1, u2 = _units(x, "src0_unit", "dst_unit", "src1_unit", "src2_unit")
    n = x.f["len"]
    _check_overlap(x, ud, n, [("src0", u0), ("src1", u1), ("src2", u2)])
    x.check_range(x.f["dst"], U.nbytes(ud, n), "dst")
    a, b, c = _read_sources(x, [("src0", u0), ("src1", u1), ("src2", u2)], n)
    if any(u.is_float for u in (u0, u1, u2, ud)):
        a, b, c = (v.astype(np.float64) for v in (a, b, c))
        r = np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))
        _finish(x, r, ud, is_float=True)
        return
    wide = _wide(u0, u1, u2, ud)
    a, b, c = _int_exact(a, u0, wide), _int_exact(b, u1, wide), _int_exact(c, u2, wide)
    lo, hi = np.where(a <= b, a, b), np.where(a >= b, a, b)
    r = np.where(lo >= np.where(hi <= c, hi, c), lo, np.where(hi <= c, hi, c))
    _finish(x, r, ud, is_float=False)


@handler("sign")
def sign(x):
    def f(a, u):
        with np.errstate(invalid="ignore"):
            return np.where(np.isnan(a), 0.0, np.where(a >= 0, 1.0, -1.0))
    _unary(x, lambda a, u: np.where(a >= 0, 1, -1).astype(np.int64), f)


def _pow_one(x, y, dbits, sat):
    """x**y for one element, exact or, when astronomically large, an equivalent value
    for the conversion that follows (D-ARITH POW)."""
    if y < 0:
        if x == 1:
            return 1
        if x == -1:
            return -1 if y % 2 else 1
        return 0
    if abs(x) < 2 or y * (abs(x).bit_length() - 1) <= 256:
        return x ** y
    if sat:                                   # beyond every range: saturates the same way
        return (-1 if x < 0 and y % 2 else 1) << 300
    return pow(x, y, 1 << dbits)              # congruent modulo 2**dbits: wraps the same way


_pow_vec = np.frompyfunc(_pow_one, 4, 1)


@handler("pow")
def pow_(x):
    def int_pow(a, b, units):
        ud = units[2]
        return _pow_vec(a.astype(object), b.astype(object), ud.bits, bool(x.f.get("sat", 0))).astype(object)
    _binary(x, int_pow, None, ints_only=True)


@handler("sqrt")
def sqrt(x):
    _unary(x, None, lambda a, u: np.sqrt(a), src="src", floats_only=True)


@handler("rsqrt")
def rsqrt(x):
    _unary(x, None, lambda a, u: 1.0 / np.sqrt(a), src="src", floats_only=True)


@handler("reciprocal")
def reciprocal(x):
    _unary(x, None, lambda a, u: 1.0 / a, src="src", floats_only=True)


@handler("cos_sim")
def cos_sim(x):
    u0, ud, u1 = _units(x, "src0_unit", "dst_unit", "src1_unit")
    _unsupported(x, not all(u.is_float for u in (u0, u1, ud)), "cos_sim takes float units only")
    n = x.f["len"]
    if n == 0:
        return                                # D-LENGTH: a zero length writes nothing
    x.check_range(x.f["dst"], U.nbytes(ud, 1), "dst")
    a, b = (v.astype(np.float64) for v in _read_sources(x, [("src0", u0), ("src1", u1)], n))

    def seq_sum(v):
        return np.add.accumulate(v)[-1] if len(v) else 0.0
    with np.errstate(all="ignore"):
        r = seq_sum(a * b) / (np.sqrt(seq_sum(a * a)) * np.sqrt(seq_sum(b * b)))
    _finish(x, np.array([r]), ud, is_float=True)


# --- Logic (group 1): bytes -------------------------------------------------------------

def _logic(x, fn, unary=False):
    n = x.f["len"]
    fields = ["src0"] if unary else ["src0", "src1"]
    _check_overlap(x, DataUnit.U8, n, [(f, DataUnit.U8) for f in fields])
    x.check_range(x.f["dst"], n, "dst")
    for f in fields:
        x.check_range(x.f[f], n, f)
    srcs = [x.mem[x.f[f]:x.f[f] + n].copy() for f in fields]
    x.write_bytes(x.f["dst"], fn(*srcs).astype(np.uint8), "dst")


handler("and")(lambda x: _logic(x, np.bitwise_and))
handler("or")(lambda x: _logic(x, np.bitwise_or))
handler("xor")(lambda x: _logic(x, np.bitwise_xor))
handler("inv")(lambda x: _logic(x, np.invert, unary=True))
handler("bclr")(lambda x: _logic(x, lambda a, b: a & ~b))
handler("bset")(lambda x: _logic(x, np.bitwise_or))


# --- Shift (group 2) and Narrow/Extension (group 3) ----------------------------------

def _shift_operands(x, *, max_src_bits=64, check=None):
    u0, ud, u1 = _units(x, "src0_unit", "dst_unit", "src1_unit")
    name = x.op.mnemonic
    _unsupported(x, any(u.is_float for u in (u0, u1, ud)), f"{name} takes integer units only")
    _unsupported(x, u0.bits > max_src_bits, f"{name} supports sources of up to {max_src_bits} bits, not {u0.name}")
    if check is not None:
        check(u0, ud)
    n = x.f["len"]
    _check_overlap(x, ud, n, [("src0", u0), ("src1", u1)])
    x.check_range(x.f["dst"], U.nbytes(ud, n), "dst")
    a, b = _read_sources(x, [("src0", u0), ("src1", u1)], n)
    return u0, u1, ud, a, b


def _amounts(b, u1, cap):
    """Shift amounts: source 1 read as unsigned, capped at `cap` (results unchanged)."""
    s = U.exact(b, u1, True) if u1.bits == 64 else b.astype(np.int64)
    s = s & ((1 << u1.bits) - 1)
    return np.minimum(s, cap).astype(np.int64)


def _pattern(a, u0):
    """Source 0's bit pattern as an unsigned exact integer."""
    v = U.exact(a, u0)
    return v & ((1 << u0.bits) - 1)


def _as_signed(p, u0):
    if not u0.signed:
        return p
    return p - ((p >> (u0.bits - 1)) & 1) * (1 << u0.bits)


def _obj_shift_left(v, s):
    return np.array([int(a) << int(k) for a, k in zip(v, s)], dtype=object)


def _obj_shift_right(v, s):
    return np.array([int(a) >> int(k) for a, k in zip(v, s)], dtype=object)


def _lshift(v, s):
    return _obj_shift_left(v, s) if v.dtype == object else v << s


def _rshift(v, s):
    return _obj_shift_right(v, s) if v.dtype == object else v >> s


@handler("lsl", "lsr", "ror")
def logical_shift(x):
    u0, u1, ud, a, b = _shift_operands(x)
    w = u0.bits
    raw = U.exact(b, u1, True) & ((1 << u1.bits) - 1) if u1.bits == 64 else b.astype(np.int64) & ((1 << u1.bits) - 1)
    s = _amounts(b, u1, w)
    p = _pattern(a, u0)
    if w == 64:
        p = p.astype(object)
    mask = (1 << w) - 1
    name = x.op.mnemonic
    if name == "lsl":
        r = np.where(s >= w, 0, _lshift(p, np.minimum(s, w - 1)) & mask)
    elif name == "lsr":
        r = np.where(s >= w, 0, _rshift(p, np.minimum(s, w - 1)))
    else:
        k = np.asarray(raw % w, dtype=np.int64)      # ROR rotates by s mod width, s uncapped
        r = (_rshift(p, k) | _lshift(p, (w - k) % w)) & mask
    r = np.asarray(r, dtype=object if w == 64 else np.int64)
    _finish(x, _as_signed(r, u0), ud, is_float=False)


@handler("asl")
def asl(x):
    u0, u1, ud, a, b = _shift_operands(x)
    s = _amounts(b, u1, 128)             # x * 2**128 is beyond every range: same conversion
    v = U.exact(a, u0, True)
    _finish(x, _obj_shift_left(v, s), ud, is_float=False)


def _asr_value(v, s, rnd, w):
    """floor(v / 2**s), or floor((v + 2**(s-1)) / 2**s) with rounding (s > 0)."""
    s = np.minimum(s, w + 1)            # larger shifts give the same results
    if rnd:
        half = np.where(s > 0, _lshift(np.ones_like(v), np.maximum(s - 1, 0)), 0)
        v = v + half
    return _rshift(v, s)


@handler("asr")
def asr(x):
    u0, u1, ud, a, b = _shift_operands(x, max_src_bits=32)
    s = _amounts(b, u1, u0.bits + 1)
    _finish(x, _asr_value(U.exact(a, u0), s, bool(x.f["rnd"]), u0.bits), ud, is_float=False)


@handler("nsr")
def nsr(x):
    def half_width(u0, ud):
        _unsupported(x, u0.bits not in (8, 16, 32, 64) or ud.bits * 2 != u0.bits,
                     f"nsr narrows to half the source width ({u0.mnemonic} -> {ud.mnemonic} is not)")
    u0, u1, ud, a, b = _shift_operands(x, check=half_width)
    s = _amounts(b, u1, u0.bits + 1)
    v = U.exact(a, u0)
    if v.dtype == object:
        s = s.astype(object)
    _finish(x, _asr_value(v, s, bool(x.f["rnd"]), u0.bits), ud, is_float=False)


def _extend(x, signed):
    u0, ud = _units(x, "src0_unit", "dst_unit")
    name = x.op.mnemonic
    _unsupported(x, u0.is_float or ud.is_float, f"{name} takes integer units only")
    _unsupported(x, u0.bits not in (4, 8, 16, 32) or ud.bits not in (8, 16, 32, 64) or ud.bits <= u0.bits,
                 f"{name} extends 4/8/16/32-bit sources to wider 8/16/32/64-bit destinations, "
                 f"not {u0.mnemonic} -> {ud.mnemonic}")
    n = x.f["len"]
    _check_overlap(x, ud, n, [("src0", u0)])
    x.check_range(x.f["dst"], U.nbytes(ud, n), "dst")
    (a,) = _read_sources(x, [("src0", u0)], n)
    p = _pattern(a, u0)
    v = p - ((p >> (u0.bits - 1)) & 1) * (1 << u0.bits) if signed else p
    out = U.from_exact(v, ud, sat=False)          # the destination's bit pattern
    x.write(x.f["dst"], ud, out, "dst")


handler("sxt")(lambda x: _extend(x, True))
handler("uxt")(lambda x: _extend(x, False))


# --- DIV/MOD (group 4) ---------------------------------------------------------------

def _trunc_divmod(a, b):
    """C division: quotient toward zero, remainder with the dividend's sign (b != 0)."""
    if a.dtype == object:
        q = np.array([abs(p) // abs(d) * (1 if (p >= 0) == (d >= 0) else -1) for p, d in zip(a, b)],
                     dtype=object)
        return q, a - q * b
    q = np.abs(a) // np.abs(b)
    q = np.where((a >= 0) == (b >= 0), q, -q)
    return q, a - q * b


def _divmod_handler(x, want_quotient):
    def int_fn(a, b, units):
        ud = units[2]
        zero = b == 0
        q, r = _trunc_divmod(a, np.where(zero, 1, b))
        if want_quotient:
            # D-DIV: x / 0 is the destination's all-ones pattern (-1 or the maximum),
            # which both saturation and wrapping leave unchanged
            return np.where(zero, -1 if ud.signed else (1 << ud.bits) - 1, q)
        return np.where(zero, a, r)                   # x MOD 0 is x

    def float_fn(a, b):
        return a / b if want_quotient else np.fmod(a, b)
    _binary(x, int_fn, float_fn)


@handler("div")
def div(x):
    _divmod_handler(x, True)


@handler("mod")
def mod(x):
    _divmod_handler(x, False)


# --- Compare (group 15) ----------------------------------------------------------------

def _compare(fn):
    def h(x):
        _binary(x, lambda a, b, u: fn(a, b).astype(np.int64),
                lambda a, b: fn(a, b).astype(np.float64))
    return h


handler("seq")(_compare(lambda a, b: a == b))
handler("sne")(_compare(lambda a, b: a != b))
handler("sle")(_compare(lambda a, b: a <= b))
handler("slt")(_compare(lambda a, b: a < b))
handler("sge")(_compare(lambda a, b: a >= b))
handler("sgt")(_compare(lambda a, b: a > b))


# --- Roundup (group 9) and DATA_CONVERT (group 10) --------------------------------------

handler("round")(lambda x: _unary(x, lambda a, u: a, lambda a, u: np.rint(a), src="src"))
handler("ceil")(lambda x: _unary(x, lambda a, u: a, lambda a, u: np.ceil(a), src="src"))
handler("floor")(lambda x: _unary(x, lambda a, u: a, lambda a, u: np.floor(a), src="src"))


@handler("clip")
def clip(x):
    us = x.unit("src_unit")
    lo, hi = _imm16(x.f["clip_min"], us), _imm16(x.f["clip_max"], us)

    def int_fn(a, u):
        return np.where(np.where(a >= lo, a, lo) <= hi, np.where(a >= lo, a, lo), hi)

    def float_fn(a, u):
        return np.minimum(np.maximum(a, lo), hi)
    _unary(x, int_fn, float_fn, src="src")


@handler("data_convert")
def data_convert(x):
    us, ud = _units(x, "src_unit", "dst_unit")
    n = x.f["len"]
    _check_overlap(x, ud, n, [("src", us)])
    x.check_range(x.f["dst"], U.nbytes(ud, n), "dst")
    (a,) = _read_sources(x, [("src", us)], n)
    x.write(x.f["dst"], ud, U.convert(a, us, ud, bool(x.f["sat"]), bool(x.f["rnd"])), "dst")
