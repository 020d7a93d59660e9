"""Independent specification tests for the BASE elementwise instructions of the golden model.

Every expectation below is computed from docs/isa-decisions.md with plain Python
integers, `fractions`, `struct` and numpy float64 followed by an explicit rounding
written here (`round_to_float`); nothing from `xdsa.golden.units` or the semantics
modules is used to compute an expected value. The clause that justifies each check
is named in the test (D-CONVERT, D-FLOAT, D-ARITH, ...).

Programs are assembled from text and run on `xdsa.golden.machine.Machine`; each test
checks the destination elements, that no other byte of memory changed (so the high
nibble after an odd int4 vector, guard bytes around the destination, the sources and
the operand table are all covered), and the retire trace's write ranges.
"""

import math
import random
import struct
import zlib
from fractions import Fraction
from typing import NamedTuple

import numpy as np
import pytest

from xdsa.golden.asm import assemble
from xdsa.golden.isa import Fault
from xdsa.golden.machine import Machine

PROLOGUE = ".tables 0x7000\n.text 0\n"
TABLE0 = 0x7000          # the first auto-placed operand table
DATA = 0x8000
PC0 = 32                 # PC of instruction 0 (D-PC)


# =============================================================================================
# Data units (docs/isa-reference.md, "Data units")
# =============================================================================================

class Unit(NamedTuple):
    name: str
    code: int
    bits: int
    signed: bool
    fl: bool

    @property
    def lo(self):
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def hi(self):
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    @property
    def mask(self):
        return (1 << self.bits) - 1

    def nbytes(self, n):
        return (n * self.bits + 7) // 8

    def __str__(self):
        return self.name


_UNIT_ROWS = [("u4", 0, 4, False, False), ("u8", 1, 8, False, False), ("u16", 2, 16, False, False),
              ("u32", 3, 32, False, False), ("u64", 4, 64, False, False), ("s4", 5, 4, True, False),
              ("s8", 6, 8, True, False), ("s16", 7, 16, True, False), ("s32", 8, 32, True, False),
              ("s64", 9, 64, True, False), ("f16", 10, 16, True, True), ("f32", 11, 32, True, True),
              ("f64", 12, 64, True, True)]
U = {r[0]: Unit(*r) for r in _UNIT_ROWS}
ALL = list(U)
INTS = [n for n in ALL if not U[n].fl]
SIGNED_INTS = [n for n in INTS if U[n].signed]
UNSIGNED_INTS = [n for n in INTS if not U[n].signed]
FLOATS = ["f16", "f32", "f64"]

# binary16/32/64: (precision p including the hidden bit, emin, emax, struct code)
FMT = {"f16": (11, -14, 15, "e"), "f32": (24, -126, 127, "f"), "f64": (53, -1022, 1023, "d")}
QNAN = {"f16": 0x7E00, "f32": 0x7FC00000, "f64": 0x7FF8000000000000}
INF = math.inf
NAN = math.nan


def float_bits(x, unit):
    """Bit pattern of a Python float that is exactly representable in `unit` (or inf/nan)."""
    u = U[unit] if isinstance(unit, str) else unit
    if math.isnan(x):
        return QNAN[u.name]
    code = FMT[u.name][3]
    return int.from_bytes(struct.pack("<" + code, x), "little")


def bits_float(b, unit):
    u = U[unit] if isinstance(unit, str) else unit
    return struct.unpack("<" + FMT[u.name][3], b.to_bytes(u.bits // 8, "little"))[0]


def is_nan_bits(b, u):
    p = FMT[u.name][0]
    expmask = ((1 << (u.bits - p)) - 1) << (p - 1)
    return (b & expmask) == expmask and (b & ((1 << (p - 1)) - 1)) != 0


def round_to_float(q, unit):
    """Exact rational `q` rounded once to nearest-even in binary16/32/64; overflow gives
    infinity; subnormals are kept. Returns a Python float (exact for every format)."""
    p, emin, emax, _ = FMT[unit]
    q = Fraction(q)
    if q == 0:
        return 0.0
    s = -1.0 if q < 0 else 1.0
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    if Fraction(2) ** (e + 1) <= a:
        e += 1
    qe = max(e, emin) - (p - 1)
    scaled = a / Fraction(2) ** qe
    n = scaled.numerator // scaled.denominator
    r = scaled - n
    if r > Fraction(1, 2) or (r == Fraction(1, 2) and n % 2 == 1):
        n += 1
    val = n * Fraction(2) ** qe
    if val >= Fraction(2) ** (emax + 1):
        return s * INF
    return s * float(val)


class _AllOnes:
    """DIV by zero: the destination's all-ones pattern (D-DIV)."""


ALL_ONES = _AllOnes()


def to_bits(r, unit, sat=False, rnd=False):
    """The bit pattern that D-CONVERT gives for the result `r` in `unit`.

    `r` is an exact Python int, a binary64 value (float / np.float64) or ALL_ONES."""
    u = U[unit] if isinstance(unit, str) else unit
    if r is ALL_ONES:
        return u.mask
    if isinstance(r, (bool, np.bool_)):
        r = int(r)
    if isinstance(r, (np.integer,)):
        r = int(r)
    if isinstance(r, int):
        if u.fl:                                   # exact integer rounded once
            return float_bits(round_to_float(r, u.name), u)
        if sat:
            r = min(max(r, u.lo), u.hi)
        return r & u.mask                          # wrap: keep the low bits
    r = float(r)
    if u.fl:
        if math.isnan(r):
            return QNAN[u.name]
        if math.isinf(r):
            return float_bits(r, u)
        if r == 0:
            return float_bits(r, u)                # keeps the sign of zero
        return float_bits(round_to_float(Fraction(r), u.name), u)
    # float -> integer: NaN -> 0, toward zero (or nearest even with rnd), always saturate
    if math.isnan(r):
        return 0
    if math.isinf(r):
        v = u.hi if r > 0 else u.lo
    else:
        v = round(r) if rnd else math.trunc(r)     # round() on a float is half-to-even
        v = min(max(v, u.lo), u.hi)
    return v & u.mask


def value_of_bits(b, u):
    """Python value (int or float) of a bit pattern in unit u."""
    if u.fl:
        return bits_float(b, u)
    if u.signed and b >> (u.bits - 1):
        return b - (1 << u.bits)
    return b


def f64(v):
    """A source value converted to binary64 (D-FLOAT): exact, or nearest even for big ints."""
    return np.float64(float(v))


# =============================================================================================
# Encoding data and running one instruction
# =============================================================================================

def encode(values, u, pad_nibble=0):
    """Bytes of a vector of Python values (ints, floats, or raw patterns via Raw)."""
    pats = [v.bits if isinstance(v, Raw) else
            (float_bits(v, u) if u.fl else (int(v) & u.mask)) for v in values]
    if u.bits == 4:
        if len(pats) % 2:
            pats = pats + [pad_nibble]
        return bytes(pats[i] | (pats[i + 1] << 4) for i in range(0, len(pats), 2))
    return b"".join(p.to_bytes(u.bits // 8, "little") for p in pats)


class Raw(NamedTuple):
    """A raw bit pattern given as a source element (NaN payloads, signalling NaNs)."""
    bits: int


def read_elems(mem, addr, u, n):
    """Bit patterns of n elements of unit u at addr."""
    raw = bytes(mem[addr:addr + u.nbytes(n)])
    if u.bits == 4:
        return [(raw[k // 2] >> (4 * (k % 2))) & 0xF for k in range(n)]
    w = u.bits // 8
    return [int.from_bytes(raw[k * w:(k + 1) * w], "little") for k in range(n)]


def _seed(*parts):
    return zlib.crc32(repr(parts).encode())


def _byte_lines(addr, data):
    out = []
    for i in range(0, len(data), 64):
        chunk = data[i:i + 64]
        out.append(f".data {addr + i:#x}\n.byte " + ", ".join(str(b) for b in chunk) + "\n")
    return "".join(out)


def execute(lines, regions=(), mem_size=1 << 16, patches=()):
    """Assemble `lines` (instruction text) + exit/end and the data `regions`
    [(address, bytes)], load, apply byte `patches`, run. Returns (machine, result, before)."""
    if isinstance(lines, str):
        lines = [lines]
    src = PROLOGUE + "".join("    " + ln.strip() + "\n" for ln in lines) + "    exit\n    end\n"
    src += "".join(_byte_lines(a, b) for a, b in regions if len(b))
    image = assemble(src, "<test>")
    m = Machine(mem_size)
    m.load(image)
    for a, b in patches:
        m.mem[a:a + len(b)] = np.frombuffer(bytes(b), dtype=np.uint8)
    before = m.mem.copy()
    res = m.run(100)
    return m, res, before


def insn(mnemonic, **fields):
    return mnemonic + " " + ", ".join(f"{k}={v}" for k, v in fields.items())


class Op(NamedTuple):
    """One instruction to run: sources [(addr_field, unit_field, unit, values)], the
    destination, and the other fields."""
    mnemonic: str
    sources: list
    dst_unit: str
    dst_count: int
    length: int
    fields: dict
    dst_field: str = "dst"
    dst_unit_field: str = "dst_unit"


def run_op(op: Op, misalign=(0, 0, 0, 0), dst_at=None, seed=0):
    """Lay out the sources and a garbage-filled destination, run, and check that nothing
    but the destination changed and that the trace reports the destination range.
    Returns (dst bit patterns, source addresses, dst address)."""
    rng = random.Random(seed)
    a = DATA
    regions, fields, addrs = [], {}, []
    for k, (af, uf, un, vals) in enumerate(op.sources):
        u = U[un]
        a += misalign[k % len(misalign)]
        data = encode(vals, u, pad_nibble=rng.randrange(16))
        regions.append((a, data))
        fields[af] = a
        if uf:
            fields[uf] = un
        addrs.append(a)
        a = (a + len(data) + 16 + 15) // 16 * 16
    du = U[op.dst_unit]
    nb = du.nbytes(op.dst_count)
    if dst_at is None:
        a += 4 + misalign[-1]
        dst = a
        regions.append((dst - 4, bytes(rng.randrange(256) for _ in range(nb + 8))))
    else:
        dst = dst_at
    fields[op.dst_field] = dst
    fields[op.dst_unit_field] = op.dst_unit
    fields["len"] = op.length
    fields.update(op.fields)
    line = insn(op.mnemonic, **fields)
    m, res, before = execute(line, regions)
    assert res.status == "exit", f"{line}: {res.status} {res.fault!r} {res.detail}"
    got = read_elems(m.mem, dst, du, op.dst_count)
    # nothing outside the destination changed (this includes the high nibble after an odd
    # int4 vector, D-INT4), and the trace reports exactly the destination bytes
    after = m.mem.copy()
    exp_mem = before.copy()
    exp_mem[dst:dst + nb] = after[dst:dst + nb]
    if du.bits == 4 and op.dst_count % 2:
        exp_mem[dst + nb - 1] = (after[dst + nb - 1] & 0x0F) | (before[dst + nb - 1] & 0xF0)
    diff = np.nonzero(exp_mem != after)[0]
    assert not len(diff), f"{line}: bytes outside the destination changed at {[hex(int(d)) for d in diff[:8]]}"
    assert res.trace[0].writes == (((dst, nb),) if nb else ()), f"{line}: trace writes {res.trace[0].writes}"
    return got, addrs, dst, line


def check(line, du, got, expected, inputs=None):
    """Compare destination bit patterns with expected ones, bit for bit. Every expected
    NaN is the default quiet NaN of the destination format, numpy's np.nan: positive,
    quiet bit only (D-FLOAT)."""
    du = U[du] if isinstance(du, str) else du
    bad = []
    for k, (g, e) in enumerate(zip(got, expected)):
        if du.fl and is_nan_bits(e, du):
            ok = g == QNAN[du.name]
        else:
            ok = g == e
        if not ok:
            ins = tuple(src[k] for src in inputs) if inputs else ()
            bad.append(f"[{k}] inputs={ins} expected={value_of_bits(e, du)!r} ({e:#x}) "
                       f"got={value_of_bits(g, du)!r} ({g:#x})")
    assert len(got) == len(expected)
    if bad:
        pytest.fail(f"{line}: {len(bad)} wrong element(s):\n  " + "\n  ".join(bad[:8]), pytrace=False)


# =============================================================================================
# Test data
# =============================================================================================

def int_edges(un):
    u = U[un]
    e = [u.lo, u.hi, 0, 1, u.hi - 1, u.lo + 1]
    if u.signed:
        e.append(-1)
    return list(dict.fromkeys(e))


FLOAT_EDGES = {
    "f16": [0.0, -0.0, 1.0, -1.5, INF, -INF, NAN, 65504.0, 2.0 ** -24, -(2.0 ** -14), 2.5],
    "f32": [0.0, -0.0, 1.0, -1.5, INF, -INF, NAN, float(np.finfo(np.float32).max), 2.0 ** -149,
            -(2.0 ** -126), 2.5],
    "f64": [0.0, -0.0, 1.0, -1.5, INF, -INF, NAN, float(np.finfo(np.float64).max), 5e-324,
            -2.2250738585072014e-308, 2.5],
}


def edges(un):
    return list(FLOAT_EDGES[un]) if U[un].fl else int_edges(un)


def rand_float(rng, un, wide=False):
    p, emin, emax, _ = FMT[un]
    k = rng.random()
    if k < 0.3:
        return rng.randint(-40, 40) / rng.choice([1, 2, 4, 8])
    if k < 0.85 or not wide:
        e = rng.randint(max(emin, -12), min(emax, 12))
        mant = rng.getrandbits(p - 1)
        v = math.ldexp((1 << (p - 1)) + mant, e - (p - 1))
        return -v if rng.random() < 0.5 else v
    while True:                                  # any finite pattern, subnormals included
        b = rng.getrandbits(U[un].bits)
        v = bits_float(b, un)
        if math.isfinite(v):
            return v


def rand_int(rng, un):
    u = U[un]
    if rng.random() < 0.4:
        return min(max(rng.randint(-12, 12), u.lo), u.hi)
    return rng.randint(u.lo, u.hi)


def rand_val(rng, un, wide=True):
    return rand_float(rng, un, wide) if U[un].fl else rand_int(rng, un)


def rand_vec(rng, un, n, wide=True):
    return [rand_val(rng, un, wide) for _ in range(n)]


def no_neg_zero(vals):
    return [0.0 if (isinstance(v, float) and v == 0) else v for v in vals]


def pair_vectors(rng, u0, u1, extra=16):
    """Every pair of edge values of two units, then random pairs."""
    e0, e1 = edges(u0), edges(u1)
    a = [x for x in e0 for _ in e1] + rand_vec(rng, u0, extra)
    b = [y for _ in e0 for y in e1] + rand_vec(rng, u1, extra)
    return a, b


# =============================================================================================
# Reference semantics (docs/isa-decisions.md)
# =============================================================================================

def tdiv(a, b):
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


def ipow(x, y, du, sat):
    """POW on integers (D-ARITH), returned as an exact int that to_bits converts."""
    if y < 0:
        if x == 1:
            return 1
        if x == -1:
            return -1 if (-y) % 2 else 1
        return 0                                 # |x| > 1 and 0^negative
    if y == 0:
        return 1
    if x in (0, 1):
        return x
    if x == -1:
        return -1 if y % 2 else 1
    if y <= 140:
        return x ** y
    if sat:                                      # |x|^y >= 2^141: saturates
        return (-1 if (x < 0 and y % 2) else 1) << 200
    return pow(x, y, 1 << U[du].bits)            # the low bits are all that wrap keeps


INT_BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "max": lambda a, b: a if a >= b else b,
    "min": lambda a, b: a if a <= b else b,
    "maxsi": lambda a, b: 1 if b > a else 0,
    "minsi": lambda a, b: 1 if b < a else 0,
    "div": lambda a, b: ALL_ONES if b == 0 else tdiv(a, b),
    "mod": lambda a, b: a if b == 0 else a - b * tdiv(a, b),
    "seq": lambda a, b: int(a == b),
    "sne": lambda a, b: int(a != b),
    "sle": lambda a, b: int(a <= b),
    "slt": lambda a, b: int(a < b),
    "sge": lambda a, b: int(a >= b),
    "sgt": lambda a, b: int(a > b),
}


def _nan(*xs):
    return any(math.isnan(x) for x in xs)


FLOAT_BINARY = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "max": lambda x, y: np.float64(NAN) if _nan(x, y) else (x if x >= y else y),
    "min": lambda x, y: np.float64(NAN) if _nan(x, y) else (x if x <= y else y),
    "maxsi": lambda x, y: 0 if _nan(x, y) else (1 if y > x else 0),
    "minsi": lambda x, y: 0 if _nan(x, y) else (1 if y < x else 0),
    "div": lambda x, y: x / y,
    "mod": lambda x, y: np.fmod(x, y),
    "seq": lambda x, y: int(x == y),
    "sne": lambda x, y: int(x != y),
    "sle": lambda x, y: int(x <= y),
    "slt": lambda x, y: int(x < y),
    "sge": lambda x, y: int(x >= y),
    "sgt": lambda x, y: int(x > y),
}


def expect_binary(mn, a, b, u0, u1, ud, sat):
    """D-ARITH / D-DIV / D-COMPARE with D-FLOAT (any float unit: binary64) or exact ints."""
    if U[u0].fl or U[u1].fl or U[ud].fl:
        with np.errstate(all="ignore"):
            r = FLOAT_BINARY[mn](f64(a), f64(b))
    elif mn == "pow":
        r = ipow(a, b, ud, sat)
    else:
        r = INT_BINARY[mn](a, b)
    return to_bits(r, ud, sat)


# =============================================================================================
# Binary arithmetic, DIV/MOD, MUL, compares: every unit, sat on and off, and mixed units
# =============================================================================================

BINARY = ["add", "sub", "mul", "max", "min", "maxsi", "minsi", "div", "mod",
          "seq", "sne", "sle", "slt", "sge", "sgt"]
NO_NEG_ZERO = {"max", "min"}          # max(-0.0, +0.0) is not specified: keep zeros positive

MIXED = [
    ("s8", "u8", "s16", 0), ("s8", "u8", "s8", 1), ("s8", "u8", "u8", 1), ("s32", "s32", "s64", 0),
    ("u16", "s4", "s32", 0), ("u4", "s4", "u8", 0), ("u4", "s4", "s4", 1), ("u32", "u8", "u4", 0),
    ("u64", "s64", "s64", 1), ("s64", "u64", "u64", 0), ("u64", "u64", "s8", 1), ("s16", "u32", "s64", 0),
    ("f16", "s8", "f32", 0), ("f32", "f16", "f64", 0), ("f64", "f32", "f16", 0), ("f32", "f32", "s16", 0),
    ("f64", "f64", "u8", 0), ("s16", "f32", "u8", 1), ("f16", "f16", "s32", 1), ("u8", "f16", "f16", 0),
]


def _binary_case(mn, u0, u1, ud, sat, seed):
    rng = random.Random(seed)
    a, b = pair_vectors(rng, u0, u1)
    if mn in NO_NEG_ZERO:
        a, b = no_neg_zero(a), no_neg_zero(b)
    n = len(a)
    op = Op(mn, [("src0", "src0_unit", u0, a), ("src1", "src1_unit", u1, b)], ud, n, n, {"sat": sat})
    got, _, _, line = run_op(op, seed=seed)
    exp = [expect_binary(mn, x, y, u0, u1, ud, sat) for x, y in zip(a, b)]
    check(line, ud, got, exp, (a, b))


@pytest.mark.parametrize("unit,sat", [(u, s) for u in ALL for s in (0, 1) if not (U[u].fl and s)])
@pytest.mark.parametrize("mn", BINARY)
def test_binary_same_unit(mn, unit, sat):
    # sat has no effect on a float destination: floats run once, with sat = 0
    _binary_case(mn, unit, unit, unit, sat, _seed(mn, unit, sat))


@pytest.mark.parametrize("u0,u1,ud,sat", [c for c in MIXED if not ({c[0], c[1]} & {"u64", "s64"} and U[c[2]].fl)],
                         ids=lambda v: str(v))
@pytest.mark.parametrize("mn", BINARY)
def test_binary_mixed_units(mn, u0, u1, ud, sat):
    # 64-bit integer sources with a float destination are covered by test_dfloat_*
    _binary_case(mn, u0, u1, ud, sat, _seed(mn, u0, u1, ud, sat))


def _one(mn, u0, a, u1, b, ud, sat=0, **extra):
    """Run a binary instruction on explicit vectors and return the destination patterns."""
    n = len(a)
    op = Op(mn, [("src0", "src0_unit", u0, a), ("src1", "src1_unit", u1, b)], ud, n, n,
            dict({"sat": sat} if sat is not None else {}, **extra))
    got, _, _, line = run_op(op, seed=_seed(mn, u0, u1, ud, tuple(a)))
    return got, line


@pytest.mark.parametrize("mn,u0,a,u1,b,ud,sat,expected", [
    # D-CONVERT: wrap keeps the low bits; sat clamps
    ("add", "s8", [100, -100, 127, -128], "s8", [100, -100, 1, -1], "s8", 0, [-56, 56, -128, 127]),
    ("add", "s8", [100, -100, 127, -128], "s8", [100, -100, 1, -1], "s8", 1, [127, -128, 127, -128]),
    ("sub", "u8", [0, 5, 255], "u8", [1, 10, 0], "u8", 0, [255, 251, 255]),
    ("sub", "u8", [0, 5, 255], "u8", [1, 10, 0], "u8", 1, [0, 0, 255]),
    ("sub", "u8", [0, 5], "u8", [1, 10], "s16", 0, [-1, -5]),          # exact before conversion
    ("add", "s8", [-128, 127], "u8", [255, 255], "s16", 0, [127, 382]),
    ("add", "u64", [2**64 - 1], "u64", [1], "u64", 0, [0]),
    ("add", "u64", [2**64 - 1], "u64", [1], "u64", 1, [2**64 - 1]),
    ("sub", "s64", [-2**63], "s64", [1], "s64", 0, [2**63 - 1]),
    ("sub", "s64", [-2**63], "s64", [1], "s64", 1, [-2**63]),
    ("add", "s64", [2**63 - 1], "u64", [2**64 - 1], "u64", 1, [2**64 - 1]),
    ("sub", "s64", [-2**63], "u64", [2**64 - 1], "s64", 1, [-2**63]),
    # D-ARITH MUL: exact product, double-width destination, any destination
    ("mul", "s32", [-2**31, -2**31, 2**31 - 1], "s32", [-2**31, 2**31 - 1, 2**31 - 1], "s64", 0,
     [2**62, -2**62 + 2**31, 2**62 - 2**32 + 1]),
    ("mul", "u32", [2**32 - 1], "u32", [2**32 - 1], "u64", 0, [2**64 - 2**33 + 1]),
    ("mul", "s64", [2**62], "s64", [4], "s64", 0, [0]),
    ("mul", "s64", [2**62, -2**62], "s64", [4, 4], "s64", 1, [2**63 - 1, -2**63]),
    ("mul", "s8", [-128], "s8", [-1], "s8", 0, [-128]),
    ("mul", "s8", [-128], "s8", [-1], "s8", 1, [127]),
    ("mul", "s4", [-8, 7, -3], "s4", [-8, 7, 5], "s8", 0, [64, 49, -15]),
    ("mul", "u4", [15, 15, 3], "u4", [15, 2, 5], "u4", 0, [1, 14, 15]),
    ("mul", "u4", [15, 15, 3], "u4", [15, 2, 5], "u4", 1, [15, 15, 15]),
    # mixed signedness compares values, not bit patterns (D-ARITH MAX/MIN, D-COMPARE)
    ("max", "u8", [200, 0], "s8", [-1, -128], "s16", 0, [200, 0]),
    ("min", "u8", [200, 0], "s8", [-1, -128], "s16", 0, [-1, -128]),
    ("seq", "u64", [2**64 - 1], "s64", [-1], "u8", 0, [0]),
    ("slt", "s64", [-1], "u64", [0], "u8", 0, [1]),
    ("sgt", "u32", [2**32 - 1], "s32", [-1], "s4", 0, [1]),
    ("maxsi", "s8", [5, 5, -1], "u8", [5, 6, 255], "u8", 0, [0, 1, 1]),
    ("minsi", "s8", [5, 5, -1], "u8", [5, 6, 255], "u8", 0, [0, 0, 0]),
    # D-DIV: toward zero, remainder with the dividend's sign, RISC-V division by zero
    ("div", "s8", [7, -7, 7, -7], "s8", [2, 2, -2, -2], "s8", 0, [3, -3, -3, 3]),
    ("mod", "s8", [7, -7, 7, -7], "s8", [2, 2, -2, -2], "s8", 0, [1, -1, 1, -1]),
    ("div", "s32", [-2**31, -2**31], "s32", [-1, 1], "s32", 0, [-2**31, -2**31]),
    ("div", "s32", [-2**31], "s32", [-1], "s32", 1, [2**31 - 1]),
    ("div", "s32", [-2**31], "s32", [-1], "s64", 0, [2**31]),
    ("mod", "s32", [-2**31], "s32", [-1], "s32", 0, [0]),
    ("div", "s64", [-2**63], "s64", [-1], "s64", 0, [-2**63]),
    ("div", "s64", [-2**63], "s64", [-1], "s64", 1, [2**63 - 1]),
    ("div", "s16", [5, -5, 0], "s16", [0, 0, 0], "s16", 0, [-1, -1, -1]),
    ("div", "s16", [5, -5, 0], "s16", [0, 0, 0], "s16", 1, [-1, -1, -1]),
    ("div", "s16", [5, -5, 0], "s16", [0, 0, 0], "u8", 0, [255, 255, 255]),
    ("div", "u32", [5], "u32", [0], "u32", 1, [2**32 - 1]),
    ("div", "u8", [9], "s8", [0], "s4", 0, [-1]),
    ("div", "u8", [9], "s8", [0], "u4", 0, [15]),
    ("mod", "s16", [5, -5, 0, 300], "s16", [0, 0, 0, 0], "s16", 0, [5, -5, 0, 300]),
    ("mod", "s16", [300, -300], "s16", [0, 0], "s8", 0, [44, -44]),
    ("mod", "s16", [300, -300], "s16", [0, 0], "s8", 1, [127, -128]),
    ("div", "u8", [200], "s8", [-3], "s16", 0, [-66]),
    ("mod", "u8", [200], "s8", [-3], "s16", 0, [2]),
    ("div", "s8", [-100], "u8", [200], "s8", 0, [0]),
    ("mod", "s8", [-100], "u8", [200], "s8", 0, [-100]),
])
def test_binary_int_examples(mn, u0, a, u1, b, ud, sat, expected):
    got, line = _one(mn, u0, a, u1, b, ud, sat)
    check(line, ud, got, [to_bits(e, ud, True) for e in expected], (a, b))


@pytest.mark.parametrize("mn,u0,a,u1,b,ud,expected", [
    # D-CONVERT: float -> int saturates whatever sat says, NaN -> 0, toward zero
    ("add", "f32", [300.5, -300.5, NAN, INF, -INF, 2.9, -2.9], "f32", [0.0] * 7, "s8",
     [127, -128, 0, 127, -128, 2, -2]),
    ("mul", "f64", [1e30, -1e30, 0.5], "f64", [1.0, 1.0, 1.0], "u16", [65535, 0, 0]),
    ("sub", "f16", [-1.0], "f16", [0.0], "u8", [0]),
    ("add", "f64", [2.0**63, -2.0**63, 2.0**64, 1.5e19], "f64", [0.0] * 4, "s64",
     [2**63 - 1, -2**63, 2**63 - 1, 2**63 - 1]),
    ("add", "f64", [2.0**64, 2.0**64 - 2048, -1.0], "f64", [0.0] * 3, "u64", [2**64 - 1, 2**64 - 2048, 0]),
    # D-FLOAT: binary64 then one rounding; overflow to infinity; subnormals kept
    ("add", "f16", [65504.0, 65504.0], "f16", [16.0, 15.0], "f16", [INF, 65504.0]),
    ("mul", "f16", [2.0 ** -14], "f16", [0.5], "f16", [2.0 ** -15]),
    ("mul", "f16", [2.0 ** -24], "f16", [0.5], "f16", [0.0]),          # tie to even: 0
    ("mul", "f16", [2.0 ** -24], "f16", [0.75], "f16", [2.0 ** -24]),
    ("mul", "f32", [2.0 ** -149], "f32", [-0.25], "f32", [-0.0]),
    ("add", "f16", [1.0], "f16", [2.0 ** -11], "f16", [1.0]),          # tie -> even
    ("add", "f16", [1.0 + 2.0 ** -10], "f16", [2.0 ** -11], "f16", [1.0 + 2.0 ** -9]),
    ("add", "f32", [1.0], "f32", [2.0 ** -24], "f16", [1.0]),
    ("add", "f64", [1.0], "f64", [2.0 ** -11 + 2.0 ** -40], "f16", [1.0 + 2.0 ** -10]),  # one rounding
    ("add", "f16", [1.0], "s8", [-3], "f32", [-2.0]),
    ("add", "s8", [100], "f16", [0.25], "f32", [100.25]),
    ("sub", "f32", [INF, 0.0], "f32", [INF, 0.0], "f32", [NAN, 0.0]),
    ("sub", "f32", [-0.0], "f32", [0.0], "f32", [-0.0]),
    ("mul", "f32", [0.0, -2.0], "f32", [INF, 0.0], "f32", [NAN, -0.0]),
    ("div", "f32", [1.0, -1.0, 0.0, 1.0, -1.0], "f32", [0.0, 0.0, 0.0, -0.0, INF], "f32", [INF, -INF, NAN, -INF, -0.0]),
    ("div", "f32", [1.0, 0.0], "f32", [0.0, 0.0], "s16", [32767, 0]),
    ("div", "f16", [1.0], "f16", [3.0], "f64", [1.0 / 3.0]),
    ("mod", "f64", [5.5, -5.5, 5.5, INF, 1.0, 0.0], "f64", [2.0, 2.0, -2.0, 1.0, 0.0, 1.0], "f64",
     [1.5, -1.5, 1.5, NAN, NAN, 0.0]),
    ("mod", "f64", [3.0, -0.0], "f64", [INF, 1.0], "f64", [3.0, -0.0]),
    ("mod", "f64", [1e300], "f64", [3.0], "f64", [float(np.fmod(1e300, 3.0))]),  # exact fmod
    ("max", "f32", [NAN, 1.0, -INF], "f32", [1.0, NAN, -1.0], "f32", [NAN, NAN, -1.0]),
    ("min", "f32", [NAN, 1.0, INF], "f32", [1.0, NAN, 1.0], "f32", [NAN, NAN, 1.0]),
    ("max", "f32", [NAN], "f32", [1.0], "s8", [0]),
    ("maxsi", "f32", [NAN, 1.0, 2.0, 1.0], "f32", [1.0, NAN, 2.0, 3.0], "u8", [0, 0, 0, 1]),
    ("minsi", "f32", [NAN, 1.0, 2.0, 3.0], "f32", [1.0, NAN, 2.0, 1.0], "u8", [0, 0, 0, 1]),
    ("maxsi", "f32", [-0.0], "f32", [0.0], "u8", [0]),                 # equal: tie
    ("maxsi", "s8", [-1], "f16", [0.5], "f32", [1.0]),
    # D-COMPARE: NaN compares false, except SNE
    ("seq", "f32", [NAN, 0.0, 1.0], "f32", [NAN, -0.0, 1.0], "u8", [0, 1, 1]),
    ("sne", "f32", [NAN, 0.0, 1.0], "f32", [NAN, -0.0, 1.0], "u8", [1, 0, 0]),
    ("sle", "f32", [NAN, 1.0, -INF], "f32", [1.0, NAN, -INF], "u8", [0, 0, 1]),
    ("slt", "f32", [NAN, 1.0], "f32", [1.0, NAN], "u8", [0, 0]),
    ("sge", "f32", [NAN, 1.0, INF], "f32", [1.0, NAN, INF], "u8", [0, 0, 1]),
    ("sgt", "f32", [NAN, 1.0], "f32", [1.0, NAN], "u8", [0, 0]),
    ("seq", "f16", [1.0, 2.0], "f16", [1.0, 3.0], "f16", [1.0, 0.0]),
    ("sgt", "s8", [3, -3], "f16", [2.5, -2.5], "f64", [1.0, 0.0]),
    ("seq", "u16", [65504], "f16", [65504.0], "u4", [1]),
])
def test_binary_float_examples(mn, u0, a, u1, b, ud, expected):
    got, line = _one(mn, u0, a, u1, b, ud, 0)
    check(line, ud, got, [to_bits(e if isinstance(e, float) else int(e), ud, True) for e in expected], (a, b))


def test_dfloat_int_sources_float_destination_is_binary64():
    """D-FLOAT: with a float destination every source is converted to binary64 (64-bit
    integers rounding to nearest even), the operation is done in binary64 and rounded
    once to the destination. 2^60+2^36 + 1 in binary64 is 2^60+2^36 (the 1 is lost);
    rounding that to binary32 is a tie that goes to even, 2^60."""
    got, line = _one("add", "s64", [2**60 + 2**36], "s64", [1], "f32", 0)
    check(line, "f32", got, [float_bits(2.0 ** 60, "f32")])
    # integer division with a float destination is a binary64 division, not toward zero
    got, line = _one("div", "s16", [7, -7, 1, 0], "s16", [2, 2, 0, 0], "f32", 0)
    check(line, "f32", got, [to_bits(v, "f32") for v in (3.5, -3.5, INF, NAN)])
    got, line = _one("mod", "s16", [7, -7], "s16", [2, 0], "f64", 0)
    check(line, "f64", got, [to_bits(v, "f64") for v in (1.0, NAN)])


@pytest.mark.parametrize("mn,expected", [("seq", 1), ("sne", 0), ("slt", 0), ("sge", 1), ("max", 2.0**53),
                                         ("maxsi", 0), ("sub", 0.0)])
def test_dfloat_64bit_integer_meets_float(mn, expected):
    """D-FLOAT / D-COMPARE: with a float operand, a 64-bit integer beyond 2^53 is
    converted to binary64 (nearest even) first: s64 2^53+1 becomes 2^53 and equals f64 2^53."""
    ud = "f64" if isinstance(expected, float) else "u8"
    got, line = _one(mn, "s64", [2**53 + 1], "f64", [2.0**53], ud, 0)
    check(line, ud, got, [to_bits(expected, ud)])


def test_float_nan_results_are_the_default_quiet_nan():
    """D-FLOAT: NaN results are the default quiet NaN, whatever NaN payload came in."""
    a = [Raw(0x7F800001), Raw(0xFFC12345), Raw(0x7FBFFFFF), 1.0]
    b = [1.0, 2.0, Raw(0x7FC00001), Raw(0xFF800010)]
    for mn in ("add", "mul", "max", "min"):
        got, line = _one(mn, "f32", a, "f32", b, "f32", 0)
        check(line, "f32", got, [QNAN["f32"]] * 4)
    got, line = _one("add", "f32", a, "f32", b, "f16", 0)
    check(line, "f16", got, [QNAN["f16"]] * 4)


# =============================================================================================
# POW (integers only)
# =============================================================================================

def _pow_vectors(rng, u0, u1, n=40):
    e0 = [v for v in edges(u0)] + [2, 3, -2, -3]
    e0 = [v for v in dict.fromkeys(e0) if U[u0].lo <= v <= U[u0].hi]
    e1 = [v for v in dict.fromkeys(edges(u1) + [2, 3, 7, -2, -3]) if U[u1].lo <= v <= U[u1].hi]
    a = [x for x in e0 for _ in e1]
    b = [y for _ in e0 for y in e1]
    for _ in range(n):
        a.append(rand_int(rng, u0))
        b.append(min(max(rng.randint(-3, 20), U[u1].lo), U[u1].hi))
    return a, b


def _pow_case(u0, u1, ud, sat):
    seed = _seed("pow", u0, u1, ud, sat)
    rng = random.Random(seed)
    a, b = _pow_vectors(rng, u0, u1)
    n = len(a)
    op = Op("pow", [("src0", "src0_unit", u0, a), ("src1", "src1_unit", u1, b)], ud, n, n, {"sat": sat})
    got, _, _, line = run_op(op, seed=seed)
    check(line, ud, got, [to_bits(ipow(x, y, ud, sat), ud, sat) for x, y in zip(a, b)], (a, b))


@pytest.mark.parametrize("sat", [0, 1])
@pytest.mark.parametrize("unit", INTS)
def test_pow_same_unit(unit, sat):
    _pow_case(unit, unit, unit, sat)


@pytest.mark.parametrize("u0,u1,ud,sat", [
    ("s8", "u8", "s32", 0), ("s8", "u8", "s32", 1), ("s16", "s4", "s64", 1), ("u32", "s8", "u64", 0),
    ("s64", "u64", "s64", 1), ("s64", "u64", "s64", 0), ("u4", "s64", "u8", 1), ("s32", "s32", "s8", 0),
])
def test_pow_mixed_units(u0, u1, ud, sat):
    _pow_case(u0, u1, ud, sat)


@pytest.mark.parametrize("x,y,ud,sat,expected", [
    (2, 7, "s8", 0, -128), (2, 7, "s8", 1, 127), (-2, 7, "s8", 0, -128), (-2, 7, "s8", 1, -128),
    (-2, 9, "s8", 1, -128), (-3, 4, "s8", 0, 81), (3, 5, "s8", 0, 243 - 256), (3, 5, "s8", 1, 127),
    (1, -5, "s8", 0, 1), (-1, -5, "s8", 0, -1), (-1, -4, "s8", 0, 1), (2, -1, "s8", 0, 0),
    (-2, -1, "s8", 0, 0), (0, -3, "s8", 0, 0), (0, 5, "s8", 0, 0), (5, 0, "s8", 0, 1),
    (-128, 0, "s8", 0, 1), (-1, -128, "s8", 0, 1), (2, 127, "s8", 0, 0), (2, 127, "s8", 1, 127),
    (-2, 127, "s8", 1, -128), (3, 127, "s8", 0, pow(3, 127, 256) - 256 if pow(3, 127, 256) > 127 else pow(3, 127, 256)),
])
def test_pow_examples(x, y, ud, sat, expected):
    got, line = _one("pow", "s8", [x], "s8", [y], ud, sat)
    check(line, ud, got, [to_bits(expected, ud)], ([x], [y]))


def test_pow_huge_exponent_wraps_and_saturates():
    """x^y is exact before conversion even for a u64 exponent (D-ARITH, D-CONVERT)."""
    y = 2**64 - 1
    a, b = [3, -3, 2, -1, 1, 0, 7], [y] * 7
    got, line = _one("pow", "s64", a, "u64", b, "s64", 0)
    check(line, "s64", got, [to_bits(ipow(x, y, "s64", 0), "s64") for x in a], (a, b))
    got, line = _one("pow", "s64", a, "u64", b, "s64", 1)
    check(line, "s64", got, [to_bits(ipow(x, y, "s64", 1), "s64", True) for x in a], (a, b))


# =============================================================================================
# MEDIAN (three sources, each with its own unit)
# =============================================================================================

def _median(vals, fl):
    if fl and any(math.isnan(v) for v in vals):
        return np.float64(NAN)
    return sorted(vals)[1]


@pytest.mark.parametrize("u0,u1,u2,ud,sat", [(u, u, u, u, s) for u in ALL for s in ((0, 1) if not U[u].fl else (0,))] + [
    ("s8", "u8", "s16", "s16", 0), ("u4", "s4", "u8", "s8", 1), ("s64", "u64", "s8", "s64", 1),
    ("f16", "s8", "f32", "f64", 0), ("f32", "f64", "f16", "f16", 0), ("f32", "f32", "f32", "s8", 0),
    ("u32", "s32", "s16", "u8", 1),
])
def test_median(u0, u1, u2, ud, sat):
    seed = _seed("median", u0, u1, u2, ud, sat)
    rng = random.Random(seed)
    a = edges(u0) + rand_vec(rng, u0, 30)
    b = rand_vec(rng, u1, len(edges(u0))) + rand_vec(rng, u1, 30)
    c = list(reversed(edges(u2)))[:len(a)] + rand_vec(rng, u2, len(a) - len(edges(u2)))
    c = c[:len(a)]
    a, b, c = no_neg_zero(a), no_neg_zero(b), no_neg_zero(c)
    n = len(a)
    op = Op("median", [("src0", "src0_unit", u0, a), ("src1", "src1_unit", u1, b),
                       ("src2", "src2_unit", u2, c)], ud, n, n, {"sat": sat})
    got, _, _, line = run_op(op, seed=seed)
    fl = any(U[u].fl for u in (u0, u1, u2, ud))
    with np.errstate(all="ignore"):
        exp = [to_bits(_median([f64(x), f64(y), f64(z)] if fl else [x, y, z], fl), ud, sat)
               for x, y, z in zip(a, b, c)]
    check(line, ud, got, exp, (a, b, c))


def test_median_examples():
    a, b, c = [1, 9, 5, -128, 3], [5, 1, 9, 127, 3], [9, 5, 1, 0, 4]
    op = Op("median", [("src0", "src0_unit", "s8", a), ("src1", "src1_unit", "s8", b),
                       ("src2", "src2_unit", "s8", c)], "s8", 5, 5, {"sat": 0})
    got, _, _, line = run_op(op)
    check(line, "s8", got, [to_bits(v, "s8") for v in (5, 5, 5, 0, 3)])
    a, b, c = [NAN, 1.0, 1.0], [1.0, NAN, 2.0], [2.0, 3.0, NAN]
    op = Op("median", [("src0", "src0_unit", "f32", a), ("src1", "src1_unit", "f32", b),
                       ("src2", "src2_unit", "f32", c)], "f32", 3, 3, {"sat": 0})
    got, _, _, line = run_op(op)
    check(line, "f32", got, [QNAN["f32"]] * 3)


# =============================================================================================
# Unary arithmetic: ABS, SIGN, THRES, ROUND/CEIL/FLOOR, CLIP, SQRT/RSQRT/RECIPROCAL
# =============================================================================================

def _unary(mn, su, sv, du, n=None, fields=None, src="src0", seed=0, **kw):
    n = len(sv) if n is None else n
    op = Op(mn, [(src, src + "_unit", su, sv)], du, n, n, fields or {})
    got, _, _, line = run_op(op, seed=seed, **kw)
    return got, line


def _unary_data(un, seed, n=40, neg_zero=True):
    rng = random.Random(seed)
    v = edges(un) + rand_vec(rng, un, n)
    return v if neg_zero else no_neg_zero(v)


def ref_abs(x, fl):
    return np.abs(x) if fl else abs(x)


def ref_sign(x, fl):
    """D-ARITH SIGN. With a float unit involved the result is a binary64 value (D-FLOAT),
    so -1.0 converted to an unsigned unit saturates to 0 (D-CONVERT: float -> integer
    always saturates)."""
    if fl:
        x = f64(x)
        return np.float64(0.0 if math.isnan(x) else (1.0 if x >= 0 else -1.0))
    return 1 if x >= 0 else -1


ABS_UNITS = SIGNED_INTS + FLOATS


@pytest.mark.parametrize("unit,sat", [(u, s) for u in ABS_UNITS for s in (0, 1) if not (U[u].fl and s)])
def test_abs_same_unit(unit, sat):
    """D-ARITH ABS: |min| exact before conversion (s8 -128 -> 128 -> 127 or -128)."""
    seed = _seed("abs", unit, sat)
    v = _unary_data(unit, seed)
    got, line = _unary("abs", unit, v, unit, fields={"sat": sat}, seed=seed)
    fl = U[unit].fl
    with np.errstate(all="ignore"):
        check(line, unit, got, [to_bits(ref_abs(f64(x) if fl else x, fl), unit, sat) for x in v], (v,))


@pytest.mark.parametrize("su,du,sat", [("s8", "s16", 0), ("s4", "s8", 0), ("s64", "s64", 1), ("s32", "s16", 0),
                                       ("f16", "f32", 0), ("f64", "f16", 0), ("f32", "s8", 0), ("s16", "f16", 0)])
def test_abs_mixed_units(su, du, sat):
    seed = _seed("abs", su, du, sat)
    v = _unary_data(su, seed)
    got, line = _unary("abs", su, v, du, fields={"sat": sat}, seed=seed)
    fl = U[su].fl or U[du].fl
    with np.errstate(all="ignore"):
        check(line, du, got, [to_bits(ref_abs(f64(x) if fl else x, fl), du, sat) for x in v], (v,))


def test_abs_examples():
    got, line = _unary("abs", "s8", [-128, -127, 0, 5], "s8", fields={"sat": 0})
    check(line, "s8", got, [to_bits(v, "s8") for v in (-128, 127, 0, 5)])
    got, line = _unary("abs", "s8", [-128, -127, 0, 5], "s8", fields={"sat": 1})
    check(line, "s8", got, [to_bits(v, "s8") for v in (127, 127, 0, 5)])
    got, line = _unary("abs", "s4", [-8, -7, 7], "s4", fields={"sat": 1})
    check(line, "s4", got, [to_bits(v, "s4") for v in (7, 7, 7)])
    got, line = _unary("abs", "s64", [-2**63], "s64", fields={"sat": 0})
    check(line, "s64", got, [to_bits(-2**63, "s64")])
    got, line = _unary("abs", "f32", [-0.0, -INF, NAN, -2.0 ** -149], "f32", fields={"sat": 0})
    check(line, "f32", got, [to_bits(v, "f32") for v in (0.0, INF, NAN, 2.0 ** -149)])


SIGN_PAIRS = [(u, u) for u in ALL] + [
    ("u8", "s8"), ("s8", "u8"), ("s16", "u4"), ("f32", "s8"), ("f16", "u8"), ("s32", "f16"), ("f64", "f32"),
    ("u64", "s4"), ("s64", "f64")]


@pytest.mark.parametrize("su,du,sat", [(a, b, s) for a, b in SIGN_PAIRS for s in (0, 1) if not (U[b].fl and s)])
def test_sign(su, du, sat):
    """D-ARITH SIGN: 1 for x >= 0 (including -0.0), -1 for x < 0, 0 for NaN."""
    seed = _seed("sign", su, du, sat)
    v = _unary_data(su, seed)
    got, line = _unary("sign", su, v, du, fields={"sat": sat}, seed=seed)
    check(line, du, got, [to_bits(ref_sign(x, U[su].fl or U[du].fl), du, sat) for x in v], (v,))


def thres_value(bits16, su):
    """D-ARITH THRES: sign-extended (signed), zero-extended (unsigned), binary16 (float)."""
    u = U[su]
    if u.fl:
        return bits_float(bits16, "f16")
    if u.signed and bits16 & 0x8000:
        return bits16 - 0x10000
    return bits16


def ref_thres(x, t, lt, fl):
    if fl:
        x, t = f64(x), f64(t)
        keep = (x < t) if lt else (x > t)          # NaN: false
    else:
        keep = (x < t) if lt else (x > t)
    return x if keep else 0


THRES_BITS = {
    "int": [0x0000, 0x0005, 0xFFFD, 0x8000, 0x7FFF, 0x0009],
    "float": [float_bits(1.5, "f16"), float_bits(-0.5, "f16"), 0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00,
              0x0001, float_bits(65504.0, "f16")],
}


@pytest.mark.parametrize("lt", [0, 1])
@pytest.mark.parametrize("su,du,sat", [(u, u, 0) for u in ALL] + [(u, u, 1) for u in INTS] + [
    ("s16", "s8", 0), ("s16", "s8", 1), ("u8", "s8", 0), ("f32", "s16", 0), ("s8", "f16", 0),
    ("f16", "f64", 0), ("f64", "f16", 0), ("u4", "u8", 0), ("s4", "s16", 0)])
def test_thres(su, du, sat, lt):
    seed = _seed("thres", su, du, sat, lt)
    v = _unary_data(su, seed, n=24)
    for tb in THRES_BITS["float" if U[su].fl else "int"]:
        got, line = _unary("thres", su, v, du, fields={"sat": sat, "lt": lt, "thres": tb}, seed=seed)
        t = thres_value(tb, su)
        with np.errstate(all="ignore"):
            exp = [to_bits(ref_thres(x, t, lt, U[su].fl or U[du].fl), du, sat) for x in v]
        check(line + f"  (threshold {t!r})", du, got, exp, (v,))


def test_thres_examples():
    got, line = _unary("thres", "s8", [-5, -4, -3, -2, 0, 100], "s8", fields={"thres": 0xFFFD})   # -3
    check(line, "s8", got, [to_bits(v, "s8") for v in (0, 0, 0, -2, 0, 100)])
    got, line = _unary("thres", "s8", [-5, -4, -3, -2, 0, 100], "s8", fields={"thres": 0xFFFD, "lt": 1})
    check(line, "s8", got, [to_bits(v, "s8") for v in (-5, -4, 0, 0, 0, 0)])
    got, line = _unary("thres", "u8", [0, 200, 255], "u8", fields={"thres": 0xFFFD, "lt": 1})   # 65533
    check(line, "u8", got, [0, 200, 255])
    got, line = _unary("thres", "u8", [0, 200, 255], "u8", fields={"thres": 0xFFFD})
    check(line, "u8", got, [0, 0, 0])
    got, line = _unary("thres", "s4", [-8, -1, 0, 7], "s4", fields={"thres": 0x0009, "lt": 1})   # 9
    check(line, "s4", got, [to_bits(v, "s4") for v in (-8, -1, 0, 7)])
    got, line = _unary("thres", "u4", [0, 3, 15], "u4", fields={"thres": 0xFFFF})   # 65535, zero-extended
    check(line, "u4", got, [0, 0, 0])
    got, line = _unary("thres", "f32", [1.5, 1.25, 1.75, NAN, INF], "f32",
                       fields={"thres": float_bits(1.5, "f16")})
    check(line, "f32", got, [to_bits(v, "f32") for v in (0.0, 0.0, 1.75, 0.0, INF)])
    # the f16 threshold 0.1 is 0.0999755859375: a binary64 0.09998 is above it
    got, line = _unary("thres", "f64", [0.09998, 0.0999], "f64", fields={"thres": float_bits(0.1, "f16")})
    check(line, "f64", got, [to_bits(v, "f64") for v in (0.09998, 0.0)])
    got, line = _unary("thres", "f16", [1.0, -1.0], "f16", fields={"thres": 0x7E00, "lt": 1})   # NaN threshold
    check(line, "f16", got, [0, 0])


# --- ROUND, CEIL, FLOOR (D-ROUNDUP) -----------------------------------------------------------

ROUNDERS = {"round": np.rint, "ceil": np.ceil, "floor": np.floor}


def ref_roundup(mn, x, su):
    if U[su].fl:
        return ROUNDERS[mn](np.float64(x))
    return x                                                     # identity on integers


ROUNDUP_PAIRS = [(u, u) for u in ALL] + [
    ("f32", "s8"), ("f64", "s32"), ("f16", "u8"), ("f64", "u64"), ("f64", "s64"), ("f32", "f16"), ("f64", "f16"),
    ("f16", "f64"), ("s16", "s8"), ("u16", "s8"), ("s8", "u4"), ("s16", "f16"), ("u8", "f32"), ("s4", "s64")]

ROUNDUP_EXTRA = {
    "f16": [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.25, -0.25, 1023.5, 2.0 ** -24, -(2.0 ** -24), 0.75, -0.75],
    "f32": [0.5, 1.5, 2.5, -0.5, -2.5, 8388607.5, -8388607.5, 126.5, 127.5, 128.5, -128.5, -129.5, 1e10,
            -0.75, 0.49999997],
    "f64": [0.5, 1.5, 2.5, -0.5, -2.5, 4503599627370495.5, 0.49999999999999994, 2.0 ** 63, 2.0 ** 64,
            -(2.0 ** 63), -(2.0 ** 63) - 2048, 255.5, -0.75, 2147483647.5, -2147483648.5],
}


def _roundup_data(su, seed):
    v = _unary_data(su, seed)
    if U[su].fl:
        v += [x for x in ROUNDUP_EXTRA[su] if round_to_float(Fraction(x), su) == x]
    return v


@pytest.mark.parametrize("su,du,sat", [(a, b, s) for a, b in ROUNDUP_PAIRS for s in (0, 1)
                                        if not (U[b].fl and s)])
@pytest.mark.parametrize("mn", ["round", "ceil", "floor"])
def test_roundup(mn, su, du, sat):
    seed = _seed(mn, su, du, sat)
    v = _roundup_data(su, seed)
    got, line = _unary(mn, su, v, du, fields={"sat": sat}, src="src", seed=seed)
    # D-FLOAT: with a float destination the instruction computes in binary64, so a
    # 64-bit integer source is first rounded to binary64, then to the destination.
    via_f64 = not U[su].fl and U[du].fl
    with np.errstate(all="ignore"):
        exp = [to_bits(float(ref_roundup(mn, x, su)) if via_f64 else ref_roundup(mn, x, su), du, sat)
               for x in v]
    check(line, du, got, exp, (v,))


def test_roundup_examples():
    v = [2.5, 3.5, -2.5, -0.4, 0.4, -1.5, 1.0000001, -0.0]
    got, line = _unary("round", "f32", v, "f32", src="src")
    check(line, "f32", got, [to_bits(x, "f32") for x in (2.0, 4.0, -2.0, -0.0, 0.0, -2.0, 1.0, -0.0)])
    got, line = _unary("ceil", "f32", v, "f32", src="src")
    check(line, "f32", got, [to_bits(x, "f32") for x in (3.0, 4.0, -2.0, -0.0, 1.0, -1.0, 2.0, -0.0)])
    got, line = _unary("floor", "f32", v, "f32", src="src")
    check(line, "f32", got, [to_bits(x, "f32") for x in (2.0, 3.0, -3.0, -1.0, 0.0, -2.0, 1.0, -0.0)])
    got, line = _unary("round", "f32", [300.5, -300.5, NAN, INF], "s8", src="src", fields={"sat": 0})
    check(line, "s8", got, [to_bits(x, "s8") for x in (127, -128, 0, 127)])
    got, line = _unary("floor", "f64", [65504.0 + 15.9], "f16", src="src")        # 65519 -> 65504
    check(line, "f16", got, [float_bits(65504.0, "f16")])
    got, line = _unary("ceil", "f64", [65519.1], "f16", src="src")                # 65520 -> inf
    check(line, "f16", got, [float_bits(INF, "f16")])
    got, line = _unary("round", "s16", [300, -300, 5], "s8", src="src", fields={"sat": 0})
    check(line, "s8", got, [to_bits(x, "s8") for x in (44, -44, 5)])
    got, line = _unary("round", "s16", [300, -300, 5], "s8", src="src", fields={"sat": 1})
    check(line, "s8", got, [to_bits(x, "s8") for x in (127, -128, 5)])


# --- CLIP (D-ROUNDUP) ---------------------------------------------------------------------------

def ref_clip(x, lo, hi, fl):
    if fl:
        x, lo, hi = f64(x), f64(lo), f64(hi)
    y = x if x >= lo else lo          # max first
    return y if y <= hi else hi       # then min: CLIP_MAX wins when the bounds cross


CLIP_BOUNDS = {
    "int": [(0xFFFD, 0x0005), (0x0000, 0x0003), (0x0005, 0xFFFD), (0x8000, 0x7FFF), (0x0064, 0xFF9C),
            (0x0002, 0x0002), (0x0000, 0xFFFF)],
    "float": [(float_bits(-1.5, "f16"), float_bits(2.25, "f16")), (0xFC00, 0x7C00),
              (float_bits(3.0, "f16"), float_bits(-3.0, "f16")), (0x0001, float_bits(65504.0, "f16")),
              (float_bits(-0.5, "f16"), float_bits(-0.5, "f16"))],
}


@pytest.mark.parametrize("su,du,sat", [(u, u, 0) for u in ALL] + [(u, u, 1) for u in INTS] + [
    ("s16", "s8", 0), ("s16", "s8", 1), ("u16", "u4", 0), ("s8", "f16", 0), ("f32", "s8", 0),
    ("f64", "f16", 0), ("f16", "f64", 0), ("u8", "s4", 1), ("s4", "s32", 0)])
def test_clip(su, du, sat):
    seed = _seed("clip", su, du, sat)
    v = no_neg_zero([x for x in _unary_data(su, seed, n=24) if not (isinstance(x, float) and math.isnan(x))])
    for lob, hib in CLIP_BOUNDS["float" if U[su].fl else "int"]:
        lo, hi = thres_value(lob, su), thres_value(hib, su)
        got, line = _unary("clip", su, v, du, src="src", fields={"sat": sat, "clip_min": lob, "clip_max": hib},
                           seed=seed)
        with np.errstate(all="ignore"):
            exp = [to_bits(ref_clip(x, lo, hi, U[su].fl or U[du].fl), du, sat) for x in v]
        check(line + f"  (bounds {lo!r}..{hi!r})", du, got, exp, (v,))


def test_clip_examples():
    got, line = _unary("clip", "s8", [-100, -3, 0, 5, 100], "s8", src="src", fields={"clip_min": -3, "clip_max": 5})
    check(line, "s8", got, [to_bits(v, "s8") for v in (-3, -3, 0, 5, 5)])
    # crossed bounds: CLIP_MAX wins
    got, line = _unary("clip", "s8", [-100, 0, 100], "s8", src="src", fields={"clip_min": 5, "clip_max": -3})
    check(line, "s8", got, [to_bits(v, "s8") for v in (-3, -3, -3)])
    # unsigned source: 0xFFFD is 65533 (zero-extended), not -3
    got, line = _unary("clip", "u8", [0, 100, 255], "u8", src="src", fields={"clip_min": 0xFFFD, "clip_max": 0xFFFF})
    check(line, "u8", got, [to_bits(v, "u8") for v in (65533, 65533, 65533)])        # sat=0: wraps
    got, line = _unary("clip", "u8", [0, 100, 255], "u16", src="src", fields={"clip_min": 0xFFFD, "clip_max": 0xFFFF})
    check(line, "u16", got, [65533] * 3)
    got, line = _unary("clip", "f32", [-INF, -2.0, 0.5, 3.0, INF], "f32", src="src",
                       fields={"clip_min": float_bits(-1.5, "f16"), "clip_max": float_bits(2.25, "f16")})
    check(line, "f32", got, [to_bits(v, "f32") for v in (-1.5, -1.5, 0.5, 2.25, 2.25)])
    got, line = _unary("clip", "s16", [1000, -1000], "s8", src="src",
                       fields={"clip_min": -500, "clip_max": 500, "sat": 0})
    check(line, "s8", got, [to_bits(v, "s8") for v in (500, -500)])


# --- SQRT, RSQRT, RECIPROCAL (floats only) -------------------------------------------------------

FLOAT_UNARY = {
    "sqrt": lambda x: np.sqrt(x),
    "rsqrt": lambda x: np.float64(1.0) / np.sqrt(x),        # two binary64 roundings
    "reciprocal": lambda x: np.float64(1.0) / x,
}


@pytest.mark.parametrize("su,du", [(a, b) for a in FLOATS for b in FLOATS])
@pytest.mark.parametrize("mn", list(FLOAT_UNARY))
def test_float_unary(mn, su, du):
    seed = _seed(mn, su, du)
    rng = random.Random(seed)
    v = edges(su) + [-4.0, 4.0, 2.0, 0.25, 3.0] + [abs(rand_float(rng, su, True)) for _ in range(40)] + \
        rand_vec(rng, su, 8)
    got, line = _unary(mn, su, v, du, src="src", seed=seed)
    with np.errstate(all="ignore"):
        exp = [to_bits(FLOAT_UNARY[mn](np.float64(x)), du) for x in v]
    check(line, du, got, exp, (v,))


def test_float_unary_examples():
    got, line = _unary("sqrt", "f32", [-0.0, -1.0, INF, 4.0, 2.0], "f32", src="src")
    check(line, "f32", got, [to_bits(x, "f32") for x in (-0.0, NAN, INF, 2.0, float(np.float32(math.sqrt(2.0))))])
    got, line = _unary("rsqrt", "f32", [0.0, -0.0, INF, 4.0, -4.0], "f32", src="src")
    check(line, "f32", got, [to_bits(x, "f32") for x in (INF, -INF, 0.0, 0.5, NAN)])
    got, line = _unary("reciprocal", "f16", [0.0, -0.0, INF, -INF, 4.0, 2.0 ** -24], "f16", src="src")
    check(line, "f16", got, [to_bits(x, "f16") for x in (INF, -INF, 0.0, -0.0, 0.25, INF)])
    got, line = _unary("reciprocal", "f64", [3.0], "f16", src="src")
    check(line, "f16", got, [to_bits(round_to_float(Fraction(1.0 / 3.0), "f16"), "f16")])


# =============================================================================================
# ASUM and COS_SIM (one destination element)
# =============================================================================================

def ref_asum(v, su, du):
    if U[su].fl or U[du].fl:
        s = f64(v[0])
        with np.errstate(all="ignore"):
            for x in v[1:]:
                s = s + f64(x)
        return s
    return sum(v)


@pytest.mark.parametrize("su,du,sat", [(u, u, s) for u in INTS for s in (0, 1)] + [(u, u, 0) for u in FLOATS] + [
    ("s8", "s32", 0), ("u8", "u16", 1), ("u4", "u8", 0), ("s4", "s4", 1), ("s64", "s64", 1), ("u64", "u64", 0),
    ("u64", "s64", 1), ("s16", "f32", 0), ("f16", "f32", 0), ("f32", "f16", 0), ("f64", "s32", 0),
    ("f16", "s8", 0)])
def test_asum(su, du, sat):
    """D-ARITH ASUM: one destination element; integers exact; floats sequential binary64."""
    seed = _seed("asum", su, du, sat)
    rng = random.Random(seed)
    for n in (1, 7, 33):
        v = [x for x in rand_vec(rng, su, n, wide=False)]
        if U[su].fl:
            v = no_neg_zero(v)
            if rng.random() < 0.5:
                v[n // 2] = FLOAT_EDGES[su][7]        # the largest finite value
        else:
            v[0] = U[su].hi if n % 2 else U[su].lo
        op = Op("asum", [("src0", "src0_unit", su, v)], du, 1, n, {"sat": sat})
        got, _, _, line = run_op(op, seed=seed + n)
        check(line, du, got, [to_bits(ref_asum(v, su, du), du, sat)], ([tuple(v)],))


def test_asum_examples():
    op = Op("asum", [("src0", "src0_unit", "s8", [100, 100, -50])], "s8", 1, 3, {"sat": 0})
    got, _, _, line = run_op(op)
    check(line, "s8", got, [to_bits(150, "s8")])
    op = Op("asum", [("src0", "src0_unit", "s8", [100, 100, -50])], "s8", 1, 3, {"sat": 1})
    got, _, _, line = run_op(op)
    check(line, "s8", got, [127])
    # sequential binary64: (1 + 2^-53) + 2^-53 = 1, whereas a pairwise sum gives 1 + 2^-52
    v = [1.0, 2.0 ** -53, 2.0 ** -53, 0.0]
    op = Op("asum", [("src0", "src0_unit", "f64", v)], "f64", 1, 4, {"sat": 0})
    got, _, _, line = run_op(op)
    check(line, "f64", got, [float_bits(1.0, "f64")])
    v = [float(np.finfo(np.float32).max), float(np.finfo(np.float32).max), -float(np.finfo(np.float32).max)]
    op = Op("asum", [("src0", "src0_unit", "f32", v)], "f32", 1, 3, {"sat": 0})   # binary64: no overflow
    got, _, _, line = run_op(op)
    check(line, "f32", got, [float_bits(v[0], "f32")])
    op = Op("asum", [("src0", "src0_unit", "f32", [INF, -INF])], "f32", 1, 2, {"sat": 0})
    got, _, _, line = run_op(op)
    check(line, "f32", got, [QNAN["f32"]])
    op = Op("asum", [("src0", "src0_unit", "u64", [2**64 - 1] * 3)], "u64", 1, 3, {"sat": 0})
    got, _, _, line = run_op(op)
    check(line, "u64", got, [(3 * (2**64 - 1)) & (2**64 - 1)])
    op = Op("asum", [("src0", "src0_unit", "u4", [15, 15, 15])], "u8", 1, 3, {"sat": 0})
    got, _, _, line = run_op(op)
    check(line, "u8", got, [45])


def ref_cos_sim(a, b):
    sxy = sxx = syy = np.float64(0.0)
    with np.errstate(all="ignore"):
        for x, y in zip(a, b):
            x, y = np.float64(x), np.float64(y)
            sxy = sxy + x * y
            sxx = sxx + x * x
            syy = syy + y * y
        return sxy / (np.sqrt(sxx) * np.sqrt(syy))


@pytest.mark.parametrize("u0,u1,ud", [(u, u, u) for u in FLOATS] + [
    ("f16", "f32", "f64"), ("f64", "f16", "f16"), ("f32", "f32", "f16"), ("f16", "f16", "f32")])
def test_cos_sim(u0, u1, ud):
    seed = _seed("cos_sim", u0, u1, ud)
    rng = random.Random(seed)
    for n in (1, 5, 48):
        a, b = rand_vec(rng, u0, n, wide=False), rand_vec(rng, u1, n, wide=False)
        op = Op("cos_sim", [("src0", "src0_unit", u0, a), ("src1", "src1_unit", u1, b)], ud, 1, n, {"sat": 0})
        got, _, _, line = run_op(op, seed=seed + n)
        check(line, ud, got, [to_bits(ref_cos_sim(a, b), ud)], ([tuple(a)], [tuple(b)]))


def test_cos_sim_examples():
    op = Op("cos_sim", [("src0", "src0_unit", "f32", [1.0, 0.0]), ("src1", "src1_unit", "f32", [0.0, 1.0])],
            "f32", 1, 2, {"sat": 0})
    got, _, _, line = run_op(op)
    check(line, "f32", got, [0])
    op = Op("cos_sim", [("src0", "src0_unit", "f32", [3.0, 4.0]), ("src1", "src1_unit", "f32", [6.0, 8.0])],
            "f32", 1, 2, {"sat": 0})
    got, _, _, line = run_op(op)
    check(line, "f32", got, [float_bits(1.0, "f32")])
    op = Op("cos_sim", [("src0", "src0_unit", "f32", [0.0, 0.0]), ("src1", "src1_unit", "f32", [1.0, 1.0])],
            "f32", 1, 2, {"sat": 0})
    got, _, _, line = run_op(op)
    check(line, "f32", got, [QNAN["f32"]])


# =============================================================================================
# Logic (bytes)
# =============================================================================================

LOGIC = {
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "inv": lambda a, b: ~a & 0xFF,
    "bclr": lambda a, b: a & ~b & 0xFF,      # D-LOGIC: the names win over the seed's operators
    "bset": lambda a, b: a | b,
}


@pytest.mark.parametrize("n,mis", [(0, 0), (1, 0), (37, 0), (64, 0), (13, 3)])
@pytest.mark.parametrize("mn", list(LOGIC))
def test_logic(mn, n, mis):
    seed = _seed(mn, n, mis)
    rng = random.Random(seed)
    a = [rng.randrange(256) for _ in range(n)]
    b = [rng.randrange(256) for _ in range(n)]
    if n >= 4:
        a[:4], b[:4] = [0x00, 0xFF, 0xF0, 0xAA], [0xFF, 0xFF, 0x3C, 0x55]
    got, line = _run_logic(mn, a, b, mis, seed)
    check(line, "u8", got, [LOGIC[mn](x, y) for x, y in zip(a, b)], (a, b))


def _run_logic(mn, a, b, mis, seed, src1_addr=None):
    rng = random.Random(seed)
    n = len(a)
    s0 = DATA + mis
    s1 = DATA + 0x100 + 2 * mis if src1_addr is None else src1_addr
    d = DATA + 0x200 + mis
    regions = [(s0, bytes(a)), (d - 4, bytes(rng.randrange(256) for _ in range(n + 8)))]
    if src1_addr is None:
        regions.append((s1, bytes(b)))
    line = insn(mn, src0=s0, src1=s1, dst=d, len=n)
    m, res, before = execute(line, regions)
    assert res.status == "exit", f"{line}: {res.status} {res.fault!r} {res.detail}"
    after = m.mem.copy()
    exp_mem = before.copy()
    exp_mem[d:d + n] = after[d:d + n]
    assert (exp_mem == after).all(), f"{line}: bytes outside the destination changed"
    assert res.trace[0].writes == (((d, n),) if n else ())
    return [int(x) for x in after[d:d + n]], line


def test_inv_does_not_read_source1():
    """D-LOGIC: INV's source 1 is ignored and not read, so it may lie outside memory."""
    a = [0x00, 0xFF, 0x5A]
    got, line = _run_logic("inv", a, None, 0, 1, src1_addr=0xFFFFFFF0)
    check(line, "u8", got, [0xFF, 0x00, 0xA5])


# =============================================================================================
# Shifts (D-SHIFT)
# =============================================================================================

def shift_amounts(u0, u1):
    """Amounts 0, 1, w-1, w, w+1, 2w, big, as values of the shift unit u1 (a value that does
    not fit the signed range is stored as the negative number with the same bits)."""
    w = U[u0].bits
    s = U[u1]
    wanted = [0, 1, 2, w - 1, w, w + 1, 2 * w, w + 3, 255, 65535, 2**32 - 1, 2**64 - 1]
    out = []
    for amt in wanted:
        if amt <= s.mask:
            out.append(amt - (1 << s.bits) if (s.signed and amt > s.hi) else amt)
    if s.signed:
        out += [-1, s.lo]
    return list(dict.fromkeys(out))


def ref_shift(mn, x, s_val, u0, u1, rnd=False):
    """Exact result of a shift (before D-CONVERT), with the amount read unsigned."""
    uu0 = U[u0]
    s = s_val & U[u1].mask
    w = uu0.bits
    if mn in ("lsl", "lsr", "ror"):
        pat = x & uu0.mask
        if mn == "lsl":
            r = (pat << s) & uu0.mask if s < w else 0
        elif mn == "lsr":
            r = pat >> s if s < w else 0
        else:
            k = s % w
            r = ((pat >> k) | (pat << (w - k))) & uu0.mask
        return value_of_bits(r, uu0)
    se = min(s, 300)
    if mn == "asl":
        return x << se if x else 0
    # asr / nsr: floor(x / 2^s); with rnd floor((x + 2^(s-1)) / 2^s) for s > 0
    if rnd and se > 0:
        return (x + (1 << (se - 1))) >> se
    return x >> se


def _shift_case(mn, u0, u1, ud, flags, seed):
    rng = random.Random(seed)
    am = shift_amounts(u0, u1)
    xs = int_edges(u0) + [rand_int(rng, u0) for _ in range(4)]
    a = [x for x in xs for _ in am] + [rand_int(rng, u0) for _ in range(16)]
    b = [s for _ in xs for s in am] + [rng.choice(am) for _ in range(16)]
    n = len(a)
    op = Op(mn, [("src0", "src0_unit", u0, a), ("src1", "src1_unit", u1, b)], ud, n, n, flags)
    got, _, _, line = run_op(op, seed=seed)
    sat, rnd = flags.get("sat", 0), flags.get("rnd", 0)
    exp = [to_bits(ref_shift(mn, x, s, u0, u1, rnd), ud, sat) for x, s in zip(a, b)]
    check(line, ud, got, exp, (a, b))


SHIFT_FLAGS = {"asl": [{"sat": 0}, {"sat": 1}], "asr": [{"rnd": 0}, {"rnd": 1}],
               "lsl": [{}], "lsr": [{}], "ror": [{}]}


def _shift_params():
    out = []
    for mn, flags in SHIFT_FLAGS.items():
        for u in INTS:
            if mn == "asr" and U[u].bits == 64:
                continue
            for f in flags:
                out.append((mn, u, u, u, f))
        mixed = [("s8", "s8", "s16"), ("u8", "s4", "u8"), ("s16", "u4", "s32"), ("u32", "s8", "s8"),
                 ("s4", "u8", "s8"), ("u4", "s16", "u4"), ("u16", "s32", "s16"), ("s32", "u16", "s64")]
        if mn != "asr":     # ASR: 64-bit sources fault (D-SHIFT)
            mixed += [("s64", "s8", "s64"), ("u64", "u4", "s32"), ("s32", "u64", "s64")]
        for u0, u1, ud in mixed:
            for f in flags:
                out.append((mn, u0, u1, ud, f))
    return out


@pytest.mark.parametrize("mn,u0,u1,ud,flags", _shift_params(), ids=lambda v: str(v))
def test_shift(mn, u0, u1, ud, flags):
    _shift_case(mn, u0, u1, ud, flags, _seed(mn, u0, u1, ud, tuple(sorted(flags.items()))))


@pytest.mark.parametrize("mn,u0,a,u1,b,ud,flags,expected", [
    ("lsl", "u8", [0x81, 0x81, 0x81, 0x81], "u8", [0, 1, 7, 8], "u8", {}, [0x81, 0x02, 0x80, 0]),
    ("lsr", "u8", [0x81, 0x81, 0x81, 0x81], "u8", [0, 1, 7, 8], "u8", {}, [0x81, 0x40, 0x01, 0]),
    ("lsr", "s8", [-128, -1], "s8", [1, 4], "s8", {}, [0x40, 0x0F]),                    # logical
    ("lsr", "s8", [-1], "s8", [-1], "s8", {}, [0]),                                     # 255 >= width
    ("lsl", "s8", [0x40], "u8", [1], "s16", {}, [-128]),                                # pattern read as s8
    ("ror", "u8", [0x81, 0x81, 0x81, 0x81], "u8", [1, 8, 9, 255], "u8", {}, [0xC0, 0x81, 0xC0, 0x03]),
    ("ror", "u4", [0b0001, 0b0110], "u4", [1, 15], "u4", {}, [0b1000, 0b1100]),
    ("ror", "s8", [1], "s8", [-1], "s16", {}, [2]),                                     # 255 mod 8 = 7
    ("asl", "s8", [3, -3, 64, -65], "s8", [2, 2, 1, 1], "s8", {"sat": 0}, [12, -12, -128, 126]),
    ("asl", "s8", [3, -3, 64, -65], "s8", [2, 2, 1, 1], "s8", {"sat": 1}, [12, -12, 127, -128]),
    ("asl", "s8", [1, -1, 0], "u8", [200, 200, 200], "s8", {"sat": 1}, [127, -128, 0]),
    ("asl", "s8", [1, -1], "u8", [200, 200], "s8", {"sat": 0}, [0, 0]),
    ("asl", "s8", [1], "s8", [-1], "s8", {"sat": 1}, [127]),                              # amount 255
    ("asl", "u8", [255], "u8", [4], "u16", {"sat": 0}, [4080]),
    ("asr", "s8", [-7, -7, -8, 7, -1], "s8", [1, 2, 1, 1, 100], "s8", {"rnd": 0}, [-4, -2, -4, 3, -1]),
    ("asr", "s8", [-7, -7, -6, 7, -1, 5], "s8", [1, 2, 2, 1, 100, 0], "s8", {"rnd": 1}, [-3, -2, -1, 4, 0, 5]),
    ("asr", "s8", [-128, -128, -128, -128], "u8", [7, 8, 9, 255], "s8", {"rnd": 0}, [-1, -1, -1, -1]),
    ("asr", "s8", [-128, -128, -128, -64, 127], "u8", [7, 8, 9, 7, 8], "s8", {"rnd": 1}, [-1, 0, 0, 0, 0]),
    ("asr", "s8", [-128], "s8", [-1], "s8", {"rnd": 0}, [-1]),                          # amount 255
    ("asr", "u8", [255, 255], "u8", [1, 8], "u8", {"rnd": 0}, [127, 0]),                # value, not pattern
    ("asr", "u8", [255], "u8", [1], "u8", {"rnd": 1}, [128]),
    ("asr", "s32", [-2**31], "s32", [31], "s8", {"rnd": 0}, [-1]),
    ("asr", "s32", [-2**31, 2**31 - 1], "s32", [0, 0], "s8", {"rnd": 0}, [0, -1]),      # wraps
])
def test_shift_examples(mn, u0, a, u1, b, ud, flags, expected):
    n = len(a)
    op = Op(mn, [("src0", "src0_unit", u0, a), ("src1", "src1_unit", u1, b)], ud, n, n, flags)
    got, _, _, line = run_op(op)
    check(line, ud, got, [to_bits(e, ud) for e in expected], (a, b))


# =============================================================================================
# NSR, SXT, UXT (D-NARROW)
# =============================================================================================

NSR_PAIRS = [("s64", "s32"), ("u64", "u32"), ("s64", "u32"), ("u64", "s32"), ("s32", "s16"), ("u32", "s16"),
             ("s16", "s8"), ("u16", "u8"), ("s16", "u8"), ("s8", "s4"), ("u8", "u4"), ("s8", "u4"), ("u8", "s4")]


@pytest.mark.parametrize("sat,rnd", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("u0,ud", NSR_PAIRS)
def test_nsr(u0, ud, sat, rnd):
    u1 = "u8" if U[u0].bits > 8 else "s4"
    _shift_case_nsr(u0, u1, ud, sat, rnd)


def _shift_case_nsr(u0, u1, ud, sat, rnd):
    seed = _seed("nsr", u0, u1, ud, sat, rnd)
    rng = random.Random(seed)
    w = U[u0].bits
    am = [v for v in dict.fromkeys([0, 1, 2, w // 2, w // 2 + 1, w - 1, w, w + 1, 3 * w]) if v <= U[u1].mask]
    am = [v - (1 << U[u1].bits) if (U[u1].signed and v > U[u1].hi) else v for v in am]
    xs = int_edges(u0) + [rand_int(rng, u0) for _ in range(6)]
    a = [x for x in xs for _ in am]
    b = [s for _ in xs for s in am]
    n = len(a)
    op = Op("nsr", [("src0", "src0_unit", u0, a), ("src1", "src1_unit", u1, b)], ud, n, n, {"sat": sat, "rnd": rnd})
    got, _, _, line = run_op(op, seed=seed)
    exp = [to_bits(ref_shift("asr", x, s, u0, u1, rnd), ud, sat) for x, s in zip(a, b)]
    check(line, ud, got, exp, (a, b))


def test_nsr_examples():
    a, b = [1000, -1000, 0x7FFF, -0x8000, 0x1234, -3], [2, 2, 0, 0, 8, 1]
    op = Op("nsr", [("src0", "src0_unit", "s16", a), ("src1", "src1_unit", "u8", b)], "s8", 6, 6, {"sat": 1, "rnd": 1})
    got, _, _, line = run_op(op)
    check(line, "s8", got, [to_bits(v, "s8") for v in (127, -128, 127, -128, 0x12, -1)])
    op = Op("nsr", [("src0", "src0_unit", "s16", a), ("src1", "src1_unit", "u8", b)], "s8", 6, 6, {"sat": 0, "rnd": 0})
    got, _, _, line = run_op(op)
    check(line, "s8", got, [to_bits(v, "s8") for v in (250, -250, 0x7FFF, -0x8000, 0x12, -2)])


SXT_SRC = ["u4", "s4", "u8", "s8", "u16", "s16", "u32", "s32"]
SXT_DST = ["u8", "s8", "u16", "s16", "u32", "s32", "u64", "s64"]
SXT_PAIRS = [(s, d) for s in SXT_SRC for d in SXT_DST if U[d].bits > U[s].bits]


@pytest.mark.parametrize("u0,ud", SXT_PAIRS)
@pytest.mark.parametrize("mn", ["sxt", "uxt"])
def test_extend(mn, u0, ud):
    """D-NARROW: the source bit pattern read as signed (SXT) / unsigned (UXT), written as a
    bit pattern of the destination width; source 1 is not read (its address is outside
    memory here)."""
    seed = _seed(mn, u0, ud)
    rng = random.Random(seed)
    a = int_edges(u0) + [rand_int(rng, u0) for _ in range(20)]
    n = len(a)
    su, du = U[u0], U[ud]
    op = Op(mn, [("src0", "src0_unit", u0, a)], ud, n, n, {"src1": 0xFFFFFF00})
    got, _, _, line = run_op(op, seed=seed)
    exp = []
    for x in a:
        p = x & su.mask
        v = p - (1 << su.bits) if (mn == "sxt" and p >> (su.bits - 1)) else p
        exp.append(v & du.mask)
    check(line, ud, got, exp, (a,))


# =============================================================================================
# DATA_CONVERT (D-CONVERT, D-DATACONVERT)
# =============================================================================================

CONVERT_EXTRA = [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, 0.49999997, 7.5, -8.5, 15.5, 16.0, 127.5, -128.5, 128.0,
                 255.5, 256.0, -129.0, 32767.5, -32768.5, 65535.5, 65536.0, 2147483647.5, -2147483648.5,
                 2.0 ** 31, 2.0 ** 32, 4294967295.5, 2.0 ** 63, -(2.0 ** 63), 2.0 ** 64, 2.0 ** 64 - 2048,
                 -(2.0 ** 63) - 2048, 1e20, -1e20, 65504.0, 65520.0, 65519.99, 2.0 ** -25, 2.0 ** -24 * 1.5,
                 3e38, 3.5e38, 1e-45, 1e-40, 1.0000000596046448, 1.0 + 2.0 ** -11]


def _convert_data(su, seed):
    rng = random.Random(seed)
    if U[su].fl:
        v = edges(su) + [x for x in CONVERT_EXTRA + [-x for x in CONVERT_EXTRA]
                         if round_to_float(Fraction(x), su) == x]
        v += rand_vec(rng, su, 24, wide=True)
    else:
        v = int_edges(su) + [rand_int(rng, su) for _ in range(24)]
        if U[su].bits == 64:
            # integers that need one rounding to f16/f32 (2^60 + 2^36 + 1 is above the f32
            # halfway point, but rounding through binary64 would make it a tie)
            v += [2**60 + 2**36 + 1, 2**53 + 1, 2**24 + 1, 2**62 + 2**38 + 2**37 - 1]
            if U[su].signed:
                v += [-(2**60 + 2**36 + 1)]
        if U[su].bits >= 32:
            v += [65519, 65520, 16777217, 16777219]
    return v


def _convert_flags(su):
    return [(0, 0), (1, 0)] if not U[su].fl else [(0, 0), (0, 1), (1, 1)]


@pytest.mark.parametrize("su,du,sat,rnd", [(s, d, sa, r) for s in ALL for d in ALL for sa, r in _convert_flags(s)])
def test_data_convert(su, du, sat, rnd):
    seed = _seed("data_convert", su, du, sat, rnd)
    v = _convert_data(su, seed)
    got, line = _unary("data_convert", su, v, du, src="src", fields={"sat": sat, "rnd": rnd}, seed=seed)
    check(line, du, got, [to_bits(x, du, sat, rnd) for x in v], (v,))


@pytest.mark.parametrize("su,v,du,sat,rnd,expected", [
    ("s16", [300, -300, 127, -129], "s8", 0, 0, [44, -44, 127, 127]),
    ("s16", [300, -300, 127, -129], "s8", 1, 0, [127, -128, 127, -128]),
    ("s8", [-1, -128], "u8", 0, 0, [255, 128]),
    ("s8", [-1, -128], "u8", 1, 0, [0, 0]),
    ("u8", [255, 7, 8], "s4", 0, 0, [-1, 7, -8]),
    ("u8", [255, 7, 8], "s4", 1, 0, [7, 7, 7]),
    ("s64", [-1], "u64", 1, 0, [0]),
    ("u64", [2**64 - 1], "s64", 0, 0, [-1]),
    ("u64", [2**64 - 1], "s64", 1, 0, [2**63 - 1]),
    ("f32", [2.5, 3.5, -2.5, -0.5, 0.5, 1.5], "s8", 0, 1, [2, 4, -2, 0, 0, 2]),
    ("f32", [2.5, 3.5, -2.5, -0.5, 0.5, 1.9], "s8", 0, 0, [2, 3, -2, 0, 0, 1]),
    ("f32", [NAN, INF, -INF, 1e10, -1e10], "s32", 0, 0, [0, 2**31 - 1, -2**31, 2**31 - 1, -2**31]),
    ("f32", [NAN, INF, -INF, -1.0, 255.9], "u8", 0, 0, [0, 255, 0, 0, 255]),
    ("f64", [2.0**63, -(2.0**63), 9.2e18], "s64", 0, 1, [2**63 - 1, -2**63, 9200000000000000000]),
    ("f64", [2.0**64, 2.0**64 - 2048, -0.9], "u64", 0, 0, [2**64 - 1, 2**64 - 2048, 0]),
    ("f16", [7.5, 8.5, -8.5, -9.0], "s4", 0, 1, [7, 7, -8, -8]),
])
def test_data_convert_examples(su, v, du, sat, rnd, expected):
    got, line = _unary("data_convert", su, v, du, src="src", fields={"sat": sat, "rnd": rnd})
    check(line, du, got, [to_bits(e, du) for e in expected], (v,))


@pytest.mark.parametrize("su,v,du,expected", [
    ("u64", [2**60 + 2**36 + 1], "f32", [2.0**60 + 2.0**37]),           # one rounding, not two
    ("u64", [2**64 - 1], "f16", [INF]),
    ("u64", [2**64 - 1], "f32", [2.0**64]),
    ("s32", [65519, 65520, -65520], "f16", [65504.0, INF, -INF]),
    ("s32", [16777217, 16777219], "f32", [16777216.0, 16777220.0]),
    ("f64", [1.0 + 2.0**-11 + 2.0**-40], "f16", [1.0 + 2.0**-10]),
    ("f64", [1.0 + 2.0**-11], "f16", [1.0]),
    ("f32", [1.0 + 2.0**-11 + 2.0**-23], "f16", [1.0 + 2.0**-10]),
    ("f64", [1e-310, -1e-310, 2.0**-25, 2.0**-25 * 1.5, 2.0**-24 * 1.5], "f16", [0.0, -0.0, 0.0, 2.0**-24, 2.0**-23]),
    ("f64", [3.5e38, 1e-46, 2.0**-149], "f32", [INF, 0.0, 2.0**-149]),
    ("f16", [2.0**-24, -0.0, 65504.0], "f64", [2.0**-24, -0.0, 65504.0]),
])
def test_data_convert_float_examples(su, v, du, expected):
    got, line = _unary("data_convert", su, v, du, src="src", fields={"sat": 0, "rnd": 0})
    check(line, du, got, [float_bits(e, du) for e in expected], (v,))


# =============================================================================================
# Lengths, int4 packing, unaligned addresses, overlap (D-LENGTH, D-INT4, D-SNAPSHOT)
# =============================================================================================

ZERO_LEN = [
    ("add", {"src0": DATA, "src1": DATA + 16, "src0_unit": "s8", "src1_unit": "s8", "dst_unit": "s8"}),
    ("thres", {"src0": DATA, "src0_unit": "s8", "dst_unit": "s8", "thres": 1}),
    ("asum", {"src0": DATA, "src0_unit": "s8", "dst_unit": "s32"}),
    ("cos_sim", {"src0": DATA, "src1": DATA + 16, "src0_unit": "f32", "src1_unit": "f32", "dst_unit": "f32"}),
    ("median", {"src0": DATA, "src1": DATA, "src2": DATA, "src0_unit": "u8", "src1_unit": "u8",
                "src2_unit": "u8", "dst_unit": "u8"}),
    ("sqrt", {"src": DATA, "src_unit": "f32", "dst_unit": "f32"}),
    ("data_convert", {"src": DATA, "src_unit": "u4", "dst_unit": "f64"}),
    ("nsr", {"src0": DATA, "src1": DATA, "src0_unit": "s16", "src1_unit": "u8", "dst_unit": "s8"}),
    ("sxt", {"src0": DATA, "src1": DATA, "src0_unit": "s4", "dst_unit": "s8"}),
    ("xor", {"src0": DATA, "src1": DATA}),
    ("clip", {"src": DATA, "src_unit": "s8", "dst_unit": "s8", "clip_max": 1}),
]


@pytest.mark.parametrize("mn,fields", ZERO_LEN, ids=[z[0] for z in ZERO_LEN])
def test_zero_length_writes_nothing(mn, fields):
    """D-LENGTH: a length of zero is legal and writes nothing (ASUM and COS_SIM too)."""
    regions = [(DATA, bytes(range(1, 65))), (DATA + 0x100, bytes(range(200, 232)))]
    m, res, before = execute(insn(mn, dst=DATA + 0x100, len=0, **fields), regions)
    assert res.status == "exit", (res.fault, res.detail)
    assert res.trace[0].writes == ()
    assert (m.mem == before).all()


def test_zero_length_touches_no_address():
    """D-ADDR: only bytes that are read or written must be in memory; len=0 touches none."""
    m, res, before = execute(insn("add.s32", src0=0xFFFFFFF0, src1=0xFFFFFFF0, dst=0xFFFFFFF0, len=0))
    assert res.status == "exit", (res.fault, res.detail)
    assert (m.mem == before).all()


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 15])
@pytest.mark.parametrize("su,du", [("s4", "s4"), ("u4", "u4"), ("s8", "s4"), ("u4", "s16"), ("s4", "u4")])
def test_int4_lengths_and_nibbles(su, du, n):
    """D-INT4: element k in byte addr + k/2, nibble k%2; an odd count leaves the high
    nibble of the last byte unchanged (run_op checks the whole memory)."""
    seed = _seed("int4", su, du, n)
    rng = random.Random(seed)
    a = [rand_int(rng, su) for _ in range(n)]
    b = [rand_int(rng, su) for _ in range(n)]
    op = Op("add", [("src0", "src0_unit", su, a), ("src1", "src1_unit", su, b)], du, n, n, {"sat": 0})
    got, _, _, line = run_op(op, seed=seed)
    check(line, du, got, [to_bits(x + y, du) for x, y in zip(a, b)], (a, b))


def test_int4_nibble_order_in_memory():
    """D-INT4: elements 1, 2, 3 are bytes 0x21, 0x?3; the high nibble of byte 1 stays."""
    regions = [(DATA, bytes([0x21, 0xF3])), (DATA + 16, bytes([0x00, 0x00])), (DATA + 32, bytes([0xAB, 0xCD]))]
    m, res, _ = execute(insn("add.u4", src0=DATA, src1=DATA + 16, dst=DATA + 32, len=3), regions)
    assert res.status == "exit"
    assert list(m.mem[DATA + 32:DATA + 34]) == [0x21, 0xC3]
    assert res.trace[0].writes == ((DATA + 32, 2),)


@pytest.mark.parametrize("unit", ["u8", "s16", "u32", "s64", "f16", "f32", "f64", "s4"])
@pytest.mark.parametrize("mn", ["add", "mul", "max", "div", "sgt"])
def test_unaligned_addresses(mn, unit):
    """D-TABLE-ORDER/D-ADDR: operands may start at any byte address."""
    seed = _seed("unaligned", mn, unit)
    rng = random.Random(seed)
    a, b = rand_vec(rng, unit, 21, wide=False), rand_vec(rng, unit, 21, wide=False)
    if mn == "max":
        a, b = no_neg_zero(a), no_neg_zero(b)
    op = Op(mn, [("src0", "src0_unit", unit, a), ("src1", "src1_unit", unit, b)], unit, 21, 21, {"sat": 1})
    got, addrs, dst, line = run_op(op, misalign=(1, 3, 7), seed=seed)
    assert all(x % 2 for x in addrs) and dst % 2
    exp = [expect_binary(mn, x, y, unit, unit, unit, 1) for x, y in zip(a, b)]
    check(line, unit, got, exp, (a, b))


def _overlap_run(line, regions, dst, du, n):
    m, res, before = execute(line, regions)
    assert res.status == "exit", (line, res.fault, res.detail)
    return read_elems(m.mem, dst, U[du], n), m, before


def overlap_legal(src, a_bits, dst, b_bits, n):
    """D-OVERLAP for one source: legal when the byte ranges do not intersect, n <= 1, or
    d + k*b <= s + k*a for k = 1 and k = n - 1 (bit addresses s = 8*src, d = 8*dst)."""
    s_end, d_end = src + (n * a_bits + 7) // 8, dst + (n * b_bits + 7) // 8
    if n <= 1 or src >= d_end or dst >= s_end:
        return True
    s, d = 8 * src, 8 * dst
    return all(d + k * b_bits <= s + k * a_bits for k in (1, n - 1))


@pytest.mark.parametrize("shift", [1, -1, 2, 0, -3])
@pytest.mark.parametrize("unit", ["u8", "s16", "f32", "s4", "u64"])
def test_overlap_destination_shifted_from_source(unit, shift):
    """D-SNAPSHOT / D-OVERLAP: a destination at or below an overlapping source of the same
    size (dst = src0 - k elements, or in place) computes from the old source values; a
    destination that starts above it (dst = src0 + k elements) faults ILLEGAL_OPERAND."""
    u = U[unit]
    rng = random.Random(_seed("overlap", unit, shift))
    n = 16
    a = rand_vec(rng, unit, n + 4, wide=False)
    b = rand_vec(rng, unit, n, wide=False)
    base = DATA + 0x40
    # int4: shift by whole bytes (2 elements)
    dst = base + shift * (u.nbytes(1) if u.bits != 4 else 1)
    line = insn(f"add.{unit}", src0=base, src1=DATA + 0x200, dst=dst, len=n, sat=0)
    assert overlap_legal(base, u.bits, dst, u.bits, n) == (shift <= 0)
    if shift > 0:
        _fault_case(line, Fault.ILLEGAL_OPERAND)
        return
    regions = [(base - 0x40, bytes(0x40)), (base, encode(a, u)), (DATA + 0x200, encode(b, u))]
    got, m, before = _overlap_run(line, regions, dst, unit, n)
    exp = [expect_binary("add", x, y, unit, unit, unit, 0) for x, y in zip(a[:n], b)]
    check(line, unit, got, exp, (a[:n], b))


OVERLAP_CASES = [
    # (line, legal) -- sources live in DATA .. DATA + 0x100 (see _fault_case)
    (insn("add.u8", src0=DATA + 0x10, src1=DATA + 0x80, dst=DATA + 0x10, len=16), True),      # in place
    (insn("add.u8", src0=DATA + 0x80, src1=DATA + 0x10, dst=DATA + 0x10, len=16), True),      # in place on src1
    (insn("add.u8", src0=DATA + 0x10, src1=DATA + 0x80, dst=DATA + 0x11, len=16), False),
    (insn("add.u8", src0=DATA + 0x80, src1=DATA + 0x10, dst=DATA + 0x11, len=16), False),     # src1 overlaps
    (insn("add.u8", src0=DATA + 0x10, src1=DATA + 0x80, dst=DATA + 0x0F, len=16), True),
    (insn("add.u8", src0=DATA + 0x10, src1=DATA + 0x80, dst=DATA + 0x20, len=16), True),      # just after
    (insn("add.u8", src0=DATA + 0x10, src1=DATA + 0x80, dst=DATA + 0x1F, len=16), False),     # last byte
    (insn("add", src0=DATA + 0x10, src1=DATA + 0x80, dst=DATA + 0x10, len=8,                  # widening in place
          src0_unit="s8", src1_unit="s8", dst_unit="s16"), False),
    (insn("add", src0=DATA + 0x10, src1=DATA + 0x80, dst=DATA + 0x10, len=1,                  # n = 1
          src0_unit="s8", src1_unit="s8", dst_unit="s64"), True),
    (insn("add", src0=DATA + 0x10, src1=DATA + 0x80, dst=DATA + 0x09, len=8,                  # k = n-1 boundary
          src0_unit="s8", src1_unit="s8", dst_unit="s16"), True),
    (insn("add", src0=DATA + 0x10, src1=DATA + 0x80, dst=DATA + 0x0A, len=8,
          src0_unit="s8", src1_unit="s8", dst_unit="s16"), False),
    (insn("data_convert", src=DATA + 0x10, dst=DATA + 0x11, len=8, src_unit="s16", dst_unit="s8"), True),
    (insn("data_convert", src=DATA + 0x10, dst=DATA + 0x12, len=8, src_unit="s16", dst_unit="s8"), False),
    (insn("data_convert", src=DATA + 0x10, dst=DATA + 0x10, len=6, src_unit="u8", dst_unit="u4"), True),
    (insn("data_convert", src=DATA + 0x10, dst=DATA + 0x10, len=6, src_unit="u4", dst_unit="u8"), False),
    (insn("data_convert", src=DATA + 0x10, dst=DATA + 0x10, len=1, src_unit="u4", dst_unit="u8"), True),
    (insn("median.u8", src0=DATA + 0x14, src1=DATA + 0x40, src2=DATA + 0x60, dst=DATA + 0x12, len=4), True),
    (insn("median.u8", src0=DATA + 0x40, src1=DATA + 0x50, src2=DATA + 0x10, dst=DATA + 0x12, len=4), False),
    (insn("thres.s16", src0=DATA + 0x10, dst=DATA + 0x12, len=4, thres=0), False),
    (insn("sqrt.f32", src=DATA + 0x10, dst=DATA + 0x0C, len=4), True),
    (insn("sqrt.f32", src=DATA + 0x10, dst=DATA + 0x14, len=4), False),
    (insn("lsl", src0=DATA + 0x10, src1=DATA + 0x40, dst=DATA + 0x11, len=4, src0_unit="u8", src1_unit="u8",
          dst_unit="u8"), False),
    (insn("lsl", src0=DATA + 0x40, src1=DATA + 0x10, dst=DATA + 0x10, len=4, src0_unit="u8", src1_unit="u8",
          dst_unit="u8"), True),
    (insn("nsr", src0=DATA + 0x10, src1=DATA + 0x40, dst=DATA + 0x10, len=4, src0_unit="s16", src1_unit="u8",
          dst_unit="s8"), True),
    (insn("sxt", src0=DATA + 0x10, src1=DATA + 0x80, dst=DATA + 0x10, len=4, src0_unit="s8", dst_unit="s16"),
     False),
    (insn("div.s32", src0=DATA + 0x10, src1=DATA + 0x40, dst=DATA + 0x44, len=4), False),
    (insn("seq", src0=DATA + 0x10, src1=DATA + 0x40, dst=DATA + 0x10, len=4, src0_unit="u32", src1_unit="u32",
          dst_unit="u8"), True),
    (insn("and", src0=DATA + 0x10, src1=DATA + 0x40, dst=DATA + 0x11, len=8), False),
    (insn("xor", src0=DATA + 0x10, src1=DATA + 0x40, dst=DATA + 0x41, len=8), False),      # runs ahead of src1
    (insn("xor", src0=DATA + 0x10, src1=DATA + 0x40, dst=DATA + 0x3F, len=8), True),
    (insn("bset", src0=DATA + 0x10, src1=DATA + 0x40, dst=DATA + 0x0F, len=8), True),
    # ASUM and COS_SIM read everything before writing: any overlap is legal
    (insn("asum", src0=DATA + 0x10, dst=DATA + 0x13, len=16, src0_unit="u8", dst_unit="u32"), True),
    (insn("asum", src0=DATA + 0x10, dst=DATA + 0x1E, len=16, src0_unit="u8", dst_unit="u64"), True),
    (insn("cos_sim.f32", src0=DATA + 0x10, src1=DATA + 0x20, dst=DATA + 0x24, len=4), True),
]


@pytest.mark.parametrize("line,legal", OVERLAP_CASES, ids=[f"{c[0].split()[0]}-{i}" for i, c in enumerate(OVERLAP_CASES)])
def test_overlap_legality(line, legal):
    """D-OVERLAP: illegal overlaps fault ILLEGAL_OPERAND with nothing written."""
    if legal:
        m, res, _ = execute(line, [(DATA, bytes((7 * i + 3) & 0xFF for i in range(0x100)))])
        assert res.status == "exit", (line, res.fault, res.detail)
    else:
        _fault_case(line, Fault.ILLEGAL_OPERAND)


def test_overlap_checker_agrees_with_cases():
    """Self-check of the test's own D-OVERLAP formula on the table above."""
    assert overlap_legal(0, 8, 1, 8, 16) is False and overlap_legal(1, 8, 0, 8, 16) is True
    assert overlap_legal(16, 8, 9, 16, 8) is True and overlap_legal(16, 8, 10, 16, 8) is False
    assert overlap_legal(16, 16, 17, 8, 8) is True and overlap_legal(16, 16, 18, 8, 8) is False


def test_overlap_legal_results_use_old_source_values():
    """D-SNAPSHOT on the legal overlaps: narrowing in place, dst below the source,
    ASUM on its own source, COS_SIM into its source, MEDIAN below src0, DIV below src1."""
    v = [300, -300, 5, 6, 7, -7, 100, 200]
    line = insn("data_convert", src=DATA + 0x100, dst=DATA + 0x101, len=8, src_unit="s16", dst_unit="s8", sat=1)
    got, _, _ = _overlap_run(line, [(DATA + 0x100, encode(v, U["s16"]))], DATA + 0x101, "s8", 8)
    check(line, "s8", got, [to_bits(x, "s8", True) for x in v])
    line = insn("data_convert", src=DATA + 0x100, dst=DATA + 0x100, len=8, src_unit="s16", dst_unit="s8", sat=0)
    got, _, _ = _overlap_run(line, [(DATA + 0x100, encode(v, U["s16"]))], DATA + 0x100, "s8", 8)
    check(line, "s8", got, [to_bits(x, "s8") for x in v])
    line = insn("data_convert", src=DATA + 0x100, dst=DATA + 0x100, len=7, src_unit="u8", dst_unit="u4", sat=1)
    got, _, _ = _overlap_run(line, [(DATA + 0x100, bytes([1, 20, 3, 40, 5, 15, 16]))], DATA + 0x100, "u4", 7)
    assert got == [1, 15, 3, 15, 5, 15, 15]
    a = [1, -2, 3, -4, 5, -6, 7, -8]
    regions = [(DATA, bytes(8)), (DATA + 8, encode(a, U["s8"])), (DATA + 0x100, encode([10] * 8, U["s8"]))]
    line = insn("add", src0=DATA + 8, src1=DATA + 0x100, dst=DATA + 1, len=8, src0_unit="s8", src1_unit="s8",
                dst_unit="s16", sat=0)
    got, _, _ = _overlap_run(line, regions, DATA + 1, "s16", 8)
    check(line, "s16", got, [to_bits(x + 10, "s16") for x in a])
    v = [5, 6, 7, 8]
    line = insn("asum.u16", src0=DATA, dst=DATA, len=4)
    got, _, _ = _overlap_run(line, [(DATA, encode(v, U["u16"]))], DATA, "u16", 4)
    assert got == [26, 6, 7, 8]
    line = insn("asum", src0=DATA, dst=DATA + 1, len=4, src0_unit="u8", dst_unit="u32")
    got, _, _ = _overlap_run(line, [(DATA, bytes([200, 201, 202, 203, 0xEE]))], DATA, "u8", 6)
    assert got == [200, 806 & 0xFF, 806 >> 8, 0, 0, 0]
    a = [1.0, 2.0, 3.0]
    line = insn("cos_sim.f32", src0=DATA, src1=DATA, dst=DATA + 4, len=3)
    got, _, _ = _overlap_run(line, [(DATA, encode(a, U["f32"]))], DATA, "f32", 3)
    check(line, "f32", got, [float_bits(1.0, "f32"), to_bits(ref_cos_sim(a, a), "f32"), float_bits(3.0, "f32")])
    a, b, c = [1, 9, 5, 4], [5, 1, 9, 4], [9, 5, 1, 4]
    regions = [(DATA + 4, bytes(a)), (DATA + 8, bytes(b)), (DATA + 12, bytes(c))]
    line = insn("median.u8", src0=DATA + 4, src1=DATA + 8, src2=DATA + 12, dst=DATA + 2, len=4)
    got, _, _ = _overlap_run(line, regions, DATA + 2, "u8", 4)
    assert got == [5, 5, 5, 4]
    a, b = [100, -100, 7, 9], [3, 7, 0, -2]
    regions = [(DATA, encode(a, U["s32"])), (DATA + 0x44, encode(b, U["s32"]))]
    line = insn("div.s32", src0=DATA, src1=DATA + 0x44, dst=DATA + 0x40, len=4)
    got, _, _ = _overlap_run(line, regions, DATA + 0x40, "s32", 4)
    check(line, "s32", got, [to_bits(r, "s32") for r in (33, -14, -1, -4)])
    regions = [(DATA, bytes([0xEE, 1, 2, 4, 8, 16, 32, 64, 128])), (DATA + 0x100, bytes([0xFF] * 8))]
    m, res, _ = execute(insn("and", src0=DATA + 1, src1=DATA + 0x100, dst=DATA, len=8), regions)
    assert res.status == "exit", (res.fault, res.detail)
    assert list(m.mem[DATA:DATA + 9]) == [1, 2, 4, 8, 16, 32, 64, 128, 128]


@pytest.mark.parametrize("as_bits", [16, 32, 64])
def test_address_spaces(as_bits):
    a, b = [1, 2, 3, -4], [10, 20, 30, 40]
    regions = [(DATA, encode(a, U["s16"])), (DATA + 0x20, encode(b, U["s16"]))]
    line = insn("sub.s16", src0=DATA, src1=DATA + 0x20, dst=DATA + 0x40, len=4, **{"as": as_bits})
    got, _, _ = _overlap_run(line, regions, DATA + 0x40, "s16", 4)
    check(line, "s16", got, [to_bits(x - y, "s16") for x, y in zip(a, b)])


def test_reserved_op_mode_bits_are_ignored():
    """D-OPMODE: an opcode has only the sub-fields it uses; D-RSVD: reserved bits inside
    operand tables are ignored. ADD has no rnd/lt/thres: setting those bits (OP Mode [9],
    [10], [31:16] at table bytes 17..19 in AS 32) changes nothing (f32 -> s32 still
    truncates)."""
    a, b = [2.5, -2.5, 3.7], [0.0, 0.0, 0.0]
    regions = [(DATA, encode(a, U["f32"])), (DATA + 0x20, encode(b, U["f32"]))]
    line = insn("add", src0=DATA, src1=DATA + 0x20, dst=DATA + 0x40, len=3, src0_unit="f32", src1_unit="f32",
                dst_unit="s32", sat=0, table=TABLE0)
    m, res, _ = execute(line, regions)
    base = bytes(m.mem[TABLE0:TABLE0 + 20])
    patched = bytearray(base)
    patched[17] |= 0x06 | 0x08          # rnd, lt and reserved bit 11
    patched[18], patched[19] = 0xFF, 0xFF
    m, res, _ = execute(line, regions, patches=[(TABLE0, bytes(patched))])
    assert res.status == "exit", (res.fault, res.detail)
    check(line, "s32", read_elems(m.mem, DATA + 0x40, U["s32"], 3), [to_bits(v, "s32") for v in (2, -2, 3)])
    # LSL has no sat: setting OP Mode bit 8 must not saturate
    regions = [(DATA, encode([0x41], U["s8"])), (DATA + 0x20, encode([1], U["u8"]))]
    line = insn("lsl", src0=DATA, src1=DATA + 0x20, dst=DATA + 0x40, len=1, src0_unit="s8", src1_unit="u8",
                dst_unit="u8", table=TABLE0)
    m, res, _ = execute(line, regions, patches=[(TABLE0 + 17, b"\x17")])   # src1_unit u8 (1) kept
    assert res.status == "exit", (res.fault, res.detail)
    assert read_elems(m.mem, DATA + 0x40, U["u8"], 1) == [0x82]              # -126 wrapped, not 0


# =============================================================================================
# Faults (D-PRECEDENCE, D-ADDR): code, PC, and memory unchanged
# =============================================================================================

BIN_FIELDS = dict(src0=DATA, src1=DATA + 0x40, dst=DATA + 0x80, len=4)
UN0_FIELDS = dict(src0=DATA, dst=DATA + 0x80, len=4)
UN_FIELDS = dict(src=DATA, dst=DATA + 0x80, len=4)
MED_FIELDS = dict(src0=DATA, src1=DATA + 0x40, src2=DATA + 0x60, dst=DATA + 0x80, len=4)


def units(u0, u1=None, ud=None, src="src0"):
    out = {f"{src}_unit": u0, "dst_unit": ud or u0}
    if u1 is not None:
        out["src1_unit"] = u1
    return out


UNSUPPORTED = [
    *[("abs", dict(UN0_FIELDS, **units(u, ud="s16"))) for u in UNSIGNED_INTS],
    *[("pow", dict(BIN_FIELDS, **units(*c))) for c in [("f32", "s8", "s32"), ("s8", "f16", "s8"),
                                                        ("s8", "s8", "f32"), ("f64", "f64", "f64")]],
    *[(mn, dict(BIN_FIELDS, **units(*c))) for mn in ("asr", "asl", "lsr", "lsl", "ror")
      for c in [("f32", "u8", "f32"), ("f16", "u8", "s16"), ("s16", "f16", "s16"), ("s16", "u8", "f32")]],
    *[(mn, dict(UN_FIELDS, **units(*c, src="src"))) for mn in ("sqrt", "rsqrt", "reciprocal")
      for c in [("s8", None, "f32"), ("u16", None, "u16"), ("f32", None, "s32"), ("s32", None, "s32")]],
    *[("cos_sim", dict(BIN_FIELDS, **units(*c))) for c in [("s8", "s8", "f32"), ("f32", "u8", "f32"),
                                                           ("f32", "f32", "s32")]],
    ("asr", dict(BIN_FIELDS, **units("s64", "u8", "s64"))),
    ("asr", dict(BIN_FIELDS, **units("u64", "u8", "u32"))),
    *[("nsr", dict(BIN_FIELDS, **units(a, "u8", d))) for a, d in [("s32", "s32"), ("s32", "s8"), ("s16", "s4"),
                                                                   ("s8", "s16"), ("s4", "s4"), ("u64", "u16"),
                                                                   ("s16", "f16"), ("f32", "f16")]],
    *[(mn, dict(BIN_FIELDS, **units(a, None, d))) for mn in ("sxt", "uxt")
      for a, d in [("s16", "s8"), ("s16", "s16"), ("u16", "s16"), ("s8", "s4"), ("u4", "s4"), ("u4", "u4"),
                   ("s64", "s64"), ("u64", "u64"), ("s32", "s16"), ("u8", "u4")]],
]


def _fault_case(line, expected, regions=(), mem_size=1 << 16, index=0):
    """Run `line` as instruction `index` (after `index` one-byte ADDs writing elsewhere)
    and check the fault code, the PC, an empty write list, and that no byte of memory
    changed during the faulting instruction."""
    pre = [insn("add.u8", src0=DATA + 0x300, src1=DATA + 0x300, dst=DATA + 0x310 + k, len=1) for k in range(index)]
    src = PROLOGUE + "".join("    " + ln + "\n" for ln in pre + [line]) + "    exit\n    end\n"
    src += "".join(_byte_lines(a, b) for a, b in regions if len(b))
    src += _byte_lines(DATA, bytes((7 * i + 3) & 0xFF for i in range(0x100)))
    image = assemble(src, "<test>")
    m = Machine(mem_size)
    m.load(image)
    for _ in range(index):
        r = m.step()
        assert r.fault == Fault.NONE, r
    before = m.mem.copy()
    r = m.step()
    assert r.fault == expected, f"{line}: expected {expected!r}, got {r.fault!r} ({r.detail})"
    assert m.status == "fault" and m.fault == expected
    assert r.pc == PC0 + 16 * index and m.fault_pc == PC0 + 16 * index
    assert r.writes == ()
    diff = np.nonzero(m.mem != before)[0]
    assert not len(diff), f"{line}: memory changed at {[hex(int(d)) for d in diff[:8]]}"


@pytest.mark.parametrize("mn,fields", UNSUPPORTED, ids=lambda v: v if isinstance(v, str) else
                         "-".join(str(v[k]) for k in ("src0_unit", "src_unit", "src1_unit", "dst_unit") if k in v))
def test_unsupported_unit(mn, fields):
    _fault_case(insn(mn, **fields), Fault.UNSUPPORTED_UNIT)


RESERVED = [
    ("add", dict(BIN_FIELDS, **units("s8", "s8")), "src0_unit"),
    ("add", dict(BIN_FIELDS, **units("s8", "s8")), "src1_unit"),
    ("add", dict(BIN_FIELDS, **units("s8", "s8")), "dst_unit"),
    ("mul", dict(BIN_FIELDS, **units("s8", "s8")), "src1_unit"),
    ("div", dict(BIN_FIELDS, **units("f32", "f32")), "dst_unit"),
    ("sgt", dict(BIN_FIELDS, **units("u8", "u8")), "src0_unit"),
    ("median", dict(MED_FIELDS, src2_unit="s8", **units("s8", "s8")), "src2_unit"),
    ("thres", dict(UN0_FIELDS, **units("s8")), "dst_unit"),
    ("asum", dict(UN0_FIELDS, **units("s8")), "src0_unit"),
    ("abs", dict(UN0_FIELDS, **units("s8")), "src0_unit"),
    ("sign", dict(UN0_FIELDS, **units("s8")), "dst_unit"),
    ("sqrt", dict(UN_FIELDS, **units("f32", src="src")), "src_unit"),
    ("clip", dict(UN_FIELDS, **units("s8", src="src")), "dst_unit"),
    ("round", dict(UN_FIELDS, **units("f32", src="src")), "src_unit"),
    ("data_convert", dict(UN_FIELDS, **units("f32", src="src")), "src_unit"),
    ("data_convert", dict(UN_FIELDS, **units("f32", src="src")), "dst_unit"),
    ("asr", dict(BIN_FIELDS, **units("s8", "u8")), "src1_unit"),
    ("lsl", dict(BIN_FIELDS, **units("s8", "u8")), "dst_unit"),
    ("nsr", dict(BIN_FIELDS, **units("s16", "u8", "s8")), "src0_unit"),
    ("sxt", dict(BIN_FIELDS, **units("s8", None, "s16")), "dst_unit"),
    ("uxt", dict(BIN_FIELDS, **units("s8", None, "s16")), "src0_unit"),
    ("pow", dict(BIN_FIELDS, **units("s8", "s8")), "src1_unit"),
    ("cos_sim", dict(BIN_FIELDS, **units("f32", "f32")), "src0_unit"),
]


@pytest.mark.parametrize("code", [13, 14, 15])
@pytest.mark.parametrize("mn,fields,field", RESERVED, ids=lambda v: v if isinstance(v, str) else "")
def test_reserved_unit(mn, fields, field, code):
    _fault_case(insn(mn, **dict(fields, **{field: code})), Fault.RESERVED_UNIT)


M = 1 << 16


ADDRESS = [
    # (mnemonic, fields, mem_size)
    ("add", dict(src0=DATA, src1=DATA + 0x40, dst=M - 3, len=4, **units("u8", "u8")), M),
    ("add", dict(src0=DATA, src1=DATA + 0x40, dst=M - 7, len=4, **units("u8", "u8", "u16")), M),
    ("add", dict(src0=M - 2, src1=DATA + 0x40, dst=DATA + 0x80, len=4, **units("u8", "u8")), M),
    ("add", dict(src0=DATA, src1=M - 15, dst=DATA + 0x80, len=4, **units("u8", "u32", "u8")), M),
    ("add", dict(src0=DATA, src1=DATA, dst=0xFFFFFFFF, len=1, **units("u8", "u8")), M),
    ("add", dict(src0=DATA, src1=DATA, dst=0x9000 - 1, len=3, **units("u4", "u4")), 0x9000),
    ("add", dict(src0=0x9000 - 1, src1=DATA, dst=DATA + 0x80, len=3, **units("u4", "u4")), 0x9000),
    ("mul", dict(src0=DATA, src1=DATA, dst=0x9000 - 8, len=2, **units("s32", "s32", "s64")), 0x9000),
    ("median", dict(MED_FIELDS, src2=M - 1, src2_unit="u16", **units("u8", "u8")), M),
    ("asum", dict(src0=DATA, dst=DATA, len=0x9000, **units("u8")), M),
    ("asum", dict(src0=DATA, dst=M - 3, len=4, **units("u8", ud="u32")), M),
    ("cos_sim", dict(src0=DATA, src1=M - 12, dst=DATA + 0x80, len=4, **units("f32", "f32")), M),
    ("thres", dict(src0=DATA, dst=M - 1, len=2, thres=0, **units("u8")), M),
    ("data_convert", dict(src=DATA, dst=M - 7, len=4, **units("u8", ud="u16", src="src")), M),
    ("sqrt", dict(src=M - 4, dst=DATA + 0x80, len=2, **units("f32", src="src")), M),
    ("and", dict(src0=DATA, src1=DATA, dst=M - 4, len=5), M),
    ("inv", dict(src0=M - 4, src1=DATA, dst=DATA + 0x80, len=5), M),
    ("xor", dict(src0=DATA, src1=0x7FFFFFFF, dst=DATA + 0x80, len=5), M),
    ("lsl", dict(src0=DATA, src1=M - 1, dst=DATA + 0x80, len=2, **units("u8", "u8")), M),
    ("sxt", dict(src0=DATA, src1=DATA, dst=M - 7, len=2, **units("s16", None, "s32")), M),
    ("nsr", dict(src0=DATA, src1=DATA, dst=M - 1, len=2, rnd=1, **units("s16", "u8", "s8")), M),
    ("add", dict(src0=DATA, src1=DATA, dst=0xFFFFFFFFFFFFFFF0, len=32, **units("u8", "u8"), **{"as": 64}), M),
]


@pytest.mark.parametrize("mn,fields,mem_size", ADDRESS, ids=[f"{a[0]}{i}" for i, a in enumerate(ADDRESS)])
def test_address_range(mn, fields, mem_size):
    _fault_case(insn(mn, **fields), Fault.ADDRESS_RANGE, mem_size=mem_size)


def test_address_range_exact_fit_is_legal():
    """The last byte of memory may be written: u4 x 3 needs 2 bytes, u16 x 4 needs 8."""
    for line, dst, nb in [
        (insn("add.u4", src0=DATA, src1=DATA, dst=M - 2, len=3), M - 2, 2),
        (insn("add.u16", src0=DATA, src1=DATA, dst=M - 8, len=4), M - 8, 8),
        (insn("asum", src0=DATA, dst=M - 4, len=64, src0_unit="u8", dst_unit="u32"), M - 4, 4),
    ]:
        m, res, _ = execute(line, [(DATA, bytes(range(64)))])
        assert res.status == "exit", (line, res.fault, res.detail)
        assert res.trace[0].writes == ((dst, nb),)


@pytest.mark.parametrize("line,expected", [
    # RESERVED_UNIT before UNSUPPORTED_UNIT before ADDRESS_RANGE
    (insn("abs", src0=DATA, dst=M - 1, len=4, src0_unit="u8", dst_unit=13), Fault.RESERVED_UNIT),
    (insn("abs", src0=DATA, dst=M - 1, len=4, src0_unit="u8", dst_unit="u8"), Fault.UNSUPPORTED_UNIT),
    (insn("abs", src0=DATA, dst=DATA, len=0, src0_unit="u8", dst_unit="u8"), Fault.UNSUPPORTED_UNIT),
    (insn("sqrt", src=DATA, dst=DATA, len=0, src_unit="s8", dst_unit="f32"), Fault.UNSUPPORTED_UNIT),
    (insn("add", src0=DATA, src1=DATA, dst=DATA, len=0, src0_unit=14, src1_unit="u8", dst_unit="u8"),
     Fault.RESERVED_UNIT),
    (insn("sqrt", src=M - 1, dst=DATA, len=4, src_unit="s8", dst_unit=15), Fault.RESERVED_UNIT),
    (insn("lsl", src0=M - 1, src1=DATA, dst=DATA, len=4, src0_unit="f32", src1_unit="u8", dst_unit="u8"),
     Fault.UNSUPPORTED_UNIT),
    (insn("asr", src0=DATA, src1=DATA, dst=M - 1, len=4, src0_unit="s64", src1_unit="u8", dst_unit="s64"),
     Fault.UNSUPPORTED_UNIT),
    (insn("nsr", src0=DATA, src1=DATA, dst=M - 1, len=4, src0_unit="s32", src1_unit="u8", dst_unit="s32"),
     Fault.UNSUPPORTED_UNIT),
    (insn("sxt", src0=DATA, src1=DATA, dst=M - 1, len=4, src0_unit="s32", dst_unit="s16"), Fault.UNSUPPORTED_UNIT),
    # ILLEGAL_OPERAND (D-OVERLAP) before ADDRESS_RANGE, after UNSUPPORTED_UNIT
    (insn("add.u8", src0=M - 4, src1=DATA, dst=M - 3, len=4), Fault.ILLEGAL_OPERAND),
    (insn("abs", src0=DATA, dst=DATA + 1, len=4, src0_unit="u8", dst_unit="u8"), Fault.UNSUPPORTED_UNIT),
    (insn("abs", src0=M - 4, dst=M - 3, len=4, src0_unit="s8", dst_unit="s8"), Fault.ILLEGAL_OPERAND),
    (insn("and", src0=M - 4, src1=DATA, dst=M - 3, len=4), Fault.ILLEGAL_OPERAND),
])
def test_fault_precedence(line, expected):
    _fault_case(line, expected)


@pytest.mark.parametrize("index", [1, 3])
def test_fault_pc_of_a_later_instruction(index):
    """D-PC: instruction k has PC 32 + 16k; earlier instructions' writes stay."""
    _fault_case(insn("abs", src0=DATA, dst=DATA + 0x80, len=4, src0_unit="u16", dst_unit="s32"),
                Fault.UNSUPPORTED_UNIT, index=index)
    _fault_case(insn("add.u8", src0=DATA, src1=DATA, dst=M - 1, len=2), Fault.ADDRESS_RANGE, index=index)


def test_extend_and_inv_source1_unread_even_out_of_range():
    """SXT/UXT (D-NARROW) and INV (D-LOGIC) do not read source 1."""
    for line in [insn("sxt", src0=DATA, src1=0xFFFFFFFF, dst=DATA + 0x80, len=4, src0_unit="s8", dst_unit="s16"),
                 insn("uxt", src0=DATA, src1=0xFFFFFFFF, dst=DATA + 0x80, len=4, src0_unit="s8", dst_unit="s16"),
                 insn("inv", src0=DATA, src1=0xFFFFFFFF, dst=DATA + 0x80, len=4)]:
        m, res, _ = execute(line, [(DATA, bytes([0x80, 0x7F, 0xFF, 0x01]))])
        assert res.status == "exit", (line, res.fault, res.detail)
