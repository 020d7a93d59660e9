"""REDUCE_ALL .. REDUCE_VAR on the golden model (docs/isa-decisions.md, D-REDUCE).

Every expectation is computed here from the specification with Python ints,
fractions, Python floats (accumulated one element at a time in C, H, W order) and
numpy's float16/float32 casts for the final rounding; nothing from the model's
unit conversions is used. Each check compares the whole data memory, so it also
proves that nothing outside the destination changed.
"""

import math
import random
import struct
from fractions import Fraction

import numpy as np
import pytest

from xdsa.golden.asm import assemble
from xdsa.golden.isa import Fault
from xdsa.golden.machine import Machine

OPS = ("all", "any", "mean", "max", "min", "prod", "sum", "var")
INT_UNITS = {  # name: (bits, signed)
    "u4": (4, False), "u8": (8, False), "u16": (16, False), "u32": (32, False), "u64": (64, False),
    "s4": (4, True), "s8": (8, True), "s16": (16, True), "s32": (32, True), "s64": (64, True),
}
FLOAT_UNITS = {"f16": (16, "<e", np.float16), "f32": (32, "<f", np.float32), "f64": (64, "<d", np.float64)}
UNITS = tuple(INT_UNITS) + tuple(FLOAT_UNITS)
QNAN = {"f16": b"\x00\x7e", "f32": struct.pack("<I", 0x7FC00000), "f64": struct.pack("<Q", 0x7FF8 << 48)}
MASKS = (1, 2, 4, 3, 5, 6, 7)
MEM = 1 << 16
DATA = 0x8000


def pc(k):
    return 32 + 16 * k


# --- the specification, independently ----------------------------------------------------

def bits_of(unit):
    return INT_UNITS[unit][0] if unit in INT_UNITS else FLOAT_UNITS[unit][0]


def irange(unit):
    b, s = INT_UNITS[unit]
    return (-(1 << (b - 1)), (1 << (b - 1)) - 1) if s else (0, (1 << b) - 1)


def nbytes(unit, n):
    return (n * bits_of(unit) + 7) // 8


def groups(vals, dims, axis):
    """The reduction groups in output (C, H, W) order, each in C, H, W order."""
    c_, h_, w_ = (d or 1 for d in dims)
    rc, rh, rw = axis & 4, axis & 2, axis & 1
    out = []
    for c in range(1 if rc else c_):
        for h in range(1 if rh else h_):
            for w in range(1 if rw else w_):
                out.append([vals[(cc * h_ + hh) * w_ + ww]
                            for cc in (range(c_) if rc else [c])
                            for hh in (range(h_) if rh else [h])
                            for ww in (range(w_) if rw else [w])])
    return out


def ref_int(op, unit, g):
    lo, hi = irange(unit)
    sat = lambda v: min(max(v, lo), hi)  # noqa: E731
    k = len(g)
    if op == "all":
        return int(all(v != 0 for v in g))
    if op == "any":
        return int(any(v != 0 for v in g))
    if op == "max":
        return max(g)
    if op == "min":
        return min(g)
    if op == "sum":
        return sat(sum(g))
    if op == "prod":
        return sat(math.prod(g))
    if op == "mean":
        s = sum(g)
        q = abs(s) // k
        return -q if s < 0 else q
    mean = Fraction(sum(g), k)
    var = sum((v - mean) ** 2 for v in g) / k
    return sat(math.floor(var))


def seq(g, f):
    acc = g[0]
    for v in g[1:]:
        acc = f(acc, v)
    return acc


def ref_float(op, g):
    """The binary64 result (before the final rounding) as a Python float."""
    k = len(g)
    if op == "all":
        return float(all(v != 0 for v in g))
    if op == "any":
        return float(any(v != 0 for v in g))
    if op in ("max", "min"):
        if any(math.isnan(v) for v in g):
            return math.nan
        key = lambda v: (v, math.copysign(1.0, v))  # noqa: E731   -0.0 < +0.0
        return max(g, key=key) if op == "max" else min(g, key=key)
    if op == "sum":
        return seq(g, lambda a, b: a + b)
    if op == "prod":
        return seq(g, lambda a, b: a * b)
    mean = seq(g, lambda a, b: a + b) / k
    if op == "mean":
        return mean
    return seq([(v - mean) * (v - mean) for v in g], lambda a, b: a + b) / k


def float_bytes(unit, v):
    if math.isnan(v):
        return QNAN[unit]
    _, fmt, dt = FLOAT_UNITS[unit]
    with np.errstate(over="ignore"):
        r = float(dt(v))
    return struct.pack(fmt, r)


def encode(unit, vals, under=b""):
    """Bytes of `vals` in `unit`; an odd int4 count keeps the high nibble of the last
    byte of `under` (the memory being written over)."""
    if unit in FLOAT_UNITS:
        return b"".join(float_bytes(unit, v) for v in vals)
    b, s = INT_UNITS[unit]
    if b == 4:
        nib = [v & 0xF for v in vals]
        if len(nib) % 2:
            nib.append(under[len(nib) // 2] >> 4 if under else 0)
        return bytes(nib[i] | (nib[i + 1] << 4) for i in range(0, len(nib), 2))
    return b"".join(v.to_bytes(b // 8, "little", signed=s) for v in vals)


def expected_bytes(op, unit, vals, dims, axis, under):
    gs = groups(vals, dims, axis)
    if unit in FLOAT_UNITS:
        return encode(unit, [ref_float(op, g) for g in gs])
    return encode(unit, [ref_int(op, unit, g) for g in gs], under)


def out_count(dims, axis):
    c, h, w = (d or 1 for d in dims)
    return (1 if axis & 4 else c) * (1 if axis & 2 else h) * (1 if axis & 1 else w)


# --- running ------------------------------------------------------------------------------

def run(lines, init, mem_size=MEM):
    """Assemble `lines` + exit/end, fill the data area with a background pattern, place
    `init` {address: bytes}, run. Returns (machine, result, memory before)."""
    source = ".tables 0x7000\n.text 0\n" + "\n".join(lines) + "\n    exit\n    end\n"
    m = Machine(mem_size)
    m.load(assemble(source, "<test>"))
    bg = np.random.default_rng(7).integers(0, 256, mem_size - DATA, dtype=np.uint8)
    m.mem[DATA:] = bg
    for a, b in init.items():
        m.mem[a:a + len(b)] = np.frombuffer(b, dtype=np.uint8)
    before = m.mem.copy()
    return m, m.run(1000), before


def insn(op, unit, src, dst, dims, axis, extra=""):
    c, h, w = dims
    return f"    reduce_{op}.{unit} src={src:#x}, dst={dst:#x}, fc={c}, fh={h}, fw={w}, axis={axis}{extra}"


def check(cases, mem_size=MEM):
    """cases: [(op, unit, src, dst, dims, axis, vals)]; all run in one program, each
    with its source placed at `src` and its destination region distinct."""
    init = {}
    for op, unit, src, dst, dims, axis, vals in cases:
        init[src] = encode(unit, vals, b"")
        if bits_of(unit) == 4 and len(vals) % 2:       # keep the pattern in the last high nibble
            init[src] = init[src][:-1] + bytes([init[src][-1] | 0xA0])
    m, res, before = run([insn(op, u, s, d, dims, a) for op, u, s, d, dims, a, _ in cases], init, mem_size)
    assert res.status == "exit", res.detail
    want = before.copy()
    for op, unit, src, dst, dims, axis, vals in cases:
        n = nbytes(unit, out_count(dims, axis))
        exp = expected_bytes(op, unit, vals, dims, axis, bytes(want[dst:dst + n]))
        want[dst:dst + n] = np.frombuffer(exp, dtype=np.uint8)
    bad = np.nonzero(m.mem != want)[0]
    assert not len(bad), f"first mismatch at {int(bad[0]):#x}: got {m.mem[bad[0]]:#04x}, want {want[bad[0]]:#04x}"
    return m, res


# --- data ---------------------------------------------------------------------------------

def int_data(unit, n, rng, small=False):
    lo, hi = irange(unit)
    if small:
        pool = [-2, -1, 1, 2] if lo < 0 else [1, 2, 3]
        return [rng.choice(pool) for _ in range(n)]
    out = []
    for _ in range(n):
        r = rng.random()
        out.append(lo if r < 0.1 else hi if r < 0.2 else 0 if r < 0.25 else rng.randint(lo, hi))
    return out


def float_data(unit, n, rng, small=False):
    dt = FLOAT_UNITS[unit][2]
    tiny = float(np.finfo(dt).smallest_subnormal)
    out = []
    for _ in range(n):
        r = rng.random()
        if small:
            v = rng.choice([-2.0, -1.5, -1.0, 0.5, 1.0, 1.25, 3.0])
        elif r < 0.05:
            v = -0.0
        elif r < 0.1:
            v = tiny * rng.randint(-5, 5)
        else:
            v = rng.gauss(0, 1) * 10 ** rng.randint(-3, 3)
        out.append(float(dt(v)))
    return out


DATASETS = (  # (dims as encoded, masks, small values)
    ((3, 5, 7), MASKS, False),
    ((3, 0, 5), MASKS, True),           # FH = 0 means 1
    ((2, 3, 4), (1, 2, 4, 3, 5, 6, 7), True),
    ((0, 0, 0), (7, 1), False),         # a single element
)


@pytest.mark.parametrize("unit", UNITS)
@pytest.mark.parametrize("op", OPS)
def test_every_op_unit_and_mask(op, unit):
    rng = random.Random(f"{op}-{unit}")
    cases, src, dst = [], DATA + 3, 0xA000 + 1      # unaligned sources and destinations
    for dims, masks, small in DATASETS:
        n = math.prod(d or 1 for d in dims)
        vals = (float_data if unit in FLOAT_UNITS else int_data)(unit, n, rng, small)
        for axis in masks:
            cases.append((op, unit, src, dst, dims, axis, vals))
            dst += nbytes(unit, out_count(dims, axis)) + 5
        src += nbytes(unit, n) + 7
    check(cases)


# --- integer edge values --------------------------------------------------------------

def one(op, unit, vals, dims=None, axis=1, src=DATA + 1, dst=0x9003):
    dims = dims or (1, 1, len(vals))
    return check([(op, unit, src, dst, dims, axis, vals)])


def result_int(m, unit, dst, n):
    """Decode n results (independent decoding, for explicit literal checks)."""
    b, s = INT_UNITS[unit]
    raw = bytes(m.mem[dst:dst + nbytes(unit, n)])
    if b == 4:
        nib = [(raw[i // 2] >> (4 * (i % 2))) & 0xF for i in range(n)]
        return [v - 16 if s and v >= 8 else v for v in nib]
    w = b // 8
    return [int.from_bytes(raw[i * w:(i + 1) * w], "little", signed=s) for i in range(n)]


U64, S64 = (1 << 64) - 1, (1 << 63) - 1
INT_EDGES = [
    # op, unit, values, expected
    ("sum", "s8", [127, 127], 127),
    ("sum", "s8", [-128, -128], -128),
    ("sum", "s8", [127, 1, -1], 127),               # exact, saturated once at the end
    ("sum", "s8", [127, 127, -128, -128], -2),
    ("sum", "u8", [255, 255, 255], 255),
    ("sum", "u4", [15, 15, 1], 15),
    ("sum", "s4", [-8, -8, 7], -8),
    ("sum", "s4", [7, 7, -8], 6),
    ("sum", "u64", [U64, U64], U64),
    ("sum", "u64", [U64, 0, 0], U64),
    ("sum", "s64", [S64, S64], S64),
    ("sum", "s64", [-S64 - 1, -S64 - 1], -S64 - 1),
    ("sum", "s64", [S64, 1, -1], S64),
    ("sum", "s64", [S64, S64, -S64 - 1, -S64 - 1], -2),
    ("sum", "u32", [0xFFFFFFFF] * 3, 0xFFFFFFFF),
    ("sum", "s32", [-(1 << 31)] * 3 + [(1 << 31) - 1] * 3, -3),
    ("prod", "s64", [1 << 32, 1 << 32, -1], -S64 - 1),
    ("prod", "s64", [1 << 32, 1 << 32, 0], 0),
    ("prod", "s64", [1 << 31, 1 << 31, -2], -S64 - 1),  # exactly -2**63
    ("prod", "s64", [1 << 31, 1 << 31, 2], S64),
    ("prod", "s64", [-S64 - 1, -1], S64),
    ("prod", "s64", [-S64 - 1, 1], -S64 - 1),
    ("prod", "u64", [1 << 32, 1 << 32], U64),
    ("prod", "u64", [1 << 32, (1 << 32) - 1], U64 - (1 << 32) + 1),
    ("prod", "u64", [U64, U64, 0], 0),
    ("prod", "u32", [65536, 65536], 0xFFFFFFFF),
    ("prod", "u32", [65536, 65535], 0xFFFF0000),
    ("prod", "s32", [-(1 << 31), 1], -(1 << 31)),
    ("prod", "s32", [-(1 << 31), -1], (1 << 31) - 1),
    ("prod", "s32", [-65536, 32768], -(1 << 31)),
    ("prod", "s32", [65536, 32768], (1 << 31) - 1),
    ("prod", "s8", [-128, -1, -1], -128),
    ("prod", "s8", [-2] * 7, -128),
    ("prod", "s8", [-2] * 6 + [1], 64),
    ("prod", "u8", [16, 16], 255),
    ("prod", "s4", [-2, -2, -2], -8),
    ("prod", "s4", [-2, -2, -2, -1], 7),
    ("prod", "u4", [3, 5], 15),
    ("prod", "u4", [4, 4], 15),
    ("mean", "s8", [-1, -2], -1),                 # toward zero, not floor
    ("mean", "s8", [-7, 0, 0], -2),
    ("mean", "s8", [7, 0, 0], 2),
    ("mean", "s8", [-128, -128, -128], -128),
    ("mean", "u8", [255, 254], 254),
    ("mean", "s4", [-8, -7], -7),
    ("mean", "s64", [-S64 - 1, -S64 - 1], -S64 - 1),
    ("mean", "s64", [-S64 - 1, -1], -(1 << 62)),
    ("mean", "s64", [S64, S64, S64], S64),
    ("mean", "s64", [S64, S64 - 2], S64 - 1),       # beyond binary64 precision
    ("mean", "u64", [U64, U64 - 2], U64 - 1),
    ("mean", "u64", [U64, U64, U64 - 1], U64 - 1),
    ("var", "s8", [-128, 127], 127),              # 16256.25 saturates
    ("var", "u8", [0, 255], 255),
    ("var", "s8", [1, 2], 0),
    ("var", "s8", [1, 2, 3, 4], 1),
    ("var", "s8", [-100, 100], 127),
    ("var", "s16", [-100, 100, 0], 6666),
    ("var", "u4", [0, 3], 2),
    ("var", "s4", [-8, 7], 7),
    ("var", "s64", [-S64 - 1, S64], S64),
    ("var", "u64", [0, U64], U64),
    ("var", "u64", [U64, U64 - 2], 1),
    ("var", "u32", [0, 0xFFFFFFFF], 0xFFFFFFFF),
    ("var", "s32", [-3, 5, 7], 18),               # 18.666...
    ("max", "s64", [-S64 - 1, S64, 0], S64),
    ("min", "s64", [-S64 - 1, S64, 0], -S64 - 1),
    ("max", "u64", [U64, 0, 1], U64),
    ("min", "u64", [U64, 5, U64 - 1], 5),
    ("max", "s4", [-8, -1, -5], -1),
    ("min", "u4", [15, 9, 12], 9),
    ("all", "s8", [1, -1, 0], 0),
    ("all", "u64", [U64, 1], 1),
    ("any", "s4", [0, 0, -8], 1),
    ("any", "u32", [0, 0, 0], 0),
]


@pytest.mark.parametrize("op,unit,vals,want", INT_EDGES)
def test_integer_edges(op, unit, vals, want):
    assert ref_int(op, unit, vals) == want          # the reference agrees with the literal
    m, _ = one(op, unit, vals)
    assert result_int(m, unit, 0x9003, 1) == [want]


def test_int4_odd_counts_keep_the_high_nibble():
    # 3 x 5 s4 tensor (15 nibbles: the last byte's high nibble is not part of it);
    # reducing W leaves 3 results: 2 bytes, the second one's high nibble unchanged.
    vals = [-8, 7, 1, -1, 3, 0, 0, 0, 0, 0, 7, 7, 7, 7, 7]
    m, res = one("sum", "s4", vals, dims=(1, 3, 5), axis=1, src=0x8000, dst=0x9001)
    assert result_int(m, "s4", 0x9001, 3) == [2, 0, 7]
    assert res.trace[0].writes == ((0x9001, 2),)
    # u4: 5 elements reduced over C and H
    check([("max", "u4", 0x8000, 0x9000, (5, 1, 1), 6, [1, 2, 3, 4, 15]),
           ("min", "u4", 0x8010, 0x9010, (1, 3, 3), 2, [9, 8, 7, 6, 5, 4, 3, 2, 1])])


def test_64bit_long_sums_are_exact():
    rng = random.Random(3)
    n = 3 * 333
    u = [rng.choice([U64, U64 - 1, 0, rng.getrandbits(64)]) for _ in range(n)]
    s = [rng.choice([S64, -S64 - 1, -1, rng.getrandbits(64) - (1 << 63)]) for _ in range(n)]
    cases = []
    for i, op in enumerate(("sum", "mean", "var", "prod", "max")):
        cases.append((op, "u64", 0x8000, 0xE000 + 32 * i, (3, 1, 333), 1, u))
        cases.append((op, "s64", 0x8000 + 8 * n, 0xE800 + 32 * i, (3, 1, 333), 5, s))
    check(cases)


# --- floating point -----------------------------------------------------------------------

def result_float(m, unit, dst, n):
    _, fmt, _ = FLOAT_UNITS[unit]
    w = bits_of(unit) // 8
    return [struct.unpack(fmt, bytes(m.mem[dst + i * w:dst + (i + 1) * w]))[0] for i in range(n)]


INF, NAN = math.inf, math.nan
F16_TINY, F32_TINY, F64_TINY = 2.0 ** -24, 2.0 ** -149, 5e-324
F32_BIG = float(np.float32(3.4e38))
FLOAT_EDGES = [
    # op, unit, values, expected (None: NaN; compared bit-exactly incl. the sign of 0)
    ("sum", "f16", [2048.0, 1.0, 1.0], 2050.0),              # binary64 accumulation
    ("sum", "f16", [1.0, 2.0 ** -11, 2.0 ** -11], 1.0 + 2.0 ** -10),
    ("sum", "f16", [60000.0, 60000.0], INF),                 # overflow on the final rounding
    ("sum", "f16", [60000.0, 60000.0, -60000.0], 60000.0),   # no intermediate rounding
    ("sum", "f16", [65504.0, 15.0], 65504.0),                # rounds back to max
    ("sum", "f16", [65504.0, 16.0], INF),                    # the tie goes to even: inf
    ("sum", "f16", [F16_TINY, F16_TINY, F16_TINY], 3 * F16_TINY),
    ("sum", "f16", [-0.0, -0.0], -0.0),
    ("sum", "f16", [-0.0, 0.0], 0.0),
    ("sum", "f16", [INF, 1.0], INF),
    ("sum", "f16", [INF, -INF], None),
    ("sum", "f32", [NAN, 1.0], None),
    ("sum", "f32", [F32_TINY, F32_TINY], 2 * F32_TINY),
    ("sum", "f32", [F32_BIG, F32_BIG, -F32_BIG], F32_BIG),  # no intermediate overflow
    ("sum", "f32", [F32_BIG, F32_BIG], INF),
    ("sum", "f64", [1e308, 1e308, -1e308], INF),             # binary64 overflows
    ("sum", "f64", [1e16] + [1.0] * 100 + [-1e16], 0.0),     # strictly sequential
    ("sum", "f64", [F64_TINY, F64_TINY], 2 * F64_TINY),
    ("prod", "f16", [300.0, 300.0], INF),
    ("prod", "f16", [300.0, 300.0, 2.0 ** -10], float(np.float16(90000.0 / 1024))),
    ("prod", "f16", [0.0, INF], None),
    ("prod", "f16", [-1.0, 0.0], -0.0),
    ("prod", "f16", [2.0 ** -14, 2.0 ** -5], 2.0 ** -19),     # subnormal result
    ("prod", "f32", [F32_TINY, 0.5], 0.0),                    # ties to even: 0
    ("prod", "f64", [1e200, 1e200, 1e-200], INF),
    ("mean", "f16", [F16_TINY, 0.0], 0.0),                     # 2**-25 ties to even
    ("mean", "f16", [F16_TINY, F16_TINY, F16_TINY, 0.0], F16_TINY),
    ("mean", "f16", [65504.0, 65504.0], 65504.0),
    ("mean", "f16", [-3.0, 0.0, 0.0], float(np.float16(-1.0))),
    ("mean", "f32", [1.0, 2.0, 2.0], float(np.float32(5.0 / 3.0))),
    ("mean", "f64", [1e308, 1e308], INF),                     # the binary64 sum overflows
    ("mean", "f64", [INF, -INF], None),
    ("var", "f16", [60000.0, -60000.0], INF),
    ("var", "f16", [1.0, 2.0, 3.0, 4.0], 1.25),
    ("var", "f32", [1.0, 1.0], 0.0),
    ("var", "f32", [INF, 1.0], None),
    ("var", "f64", [1.0, 3.0], 1.0),
    ("var", "f64", [-0.5, -0.5, -0.5], 0.0),
    ("max", "f16", [1.0, NAN, 3.0], None),
    ("max", "f16", [-INF, -1.0], -1.0),
    ("max", "f16", [-0.0, 0.0], 0.0),
    ("max", "f16", [0.0, -0.0], 0.0),
    ("max", "f16", [-0.0, -1.0, -0.0], -0.0),
    ("min", "f16", [0.0, -0.0], -0.0),
    ("min", "f16", [0.0, 1.0, 0.0], 0.0),
    ("min", "f32", [INF, 2.0, F32_TINY], F32_TINY),
    ("min", "f64", [3.0, NAN], None),
    ("max", "f64", [-INF, -INF], -INF),
    ("all", "f16", [NAN, 1.0], 1.0),
    ("all", "f32", [1.0, -0.0], 0.0),
    ("any", "f16", [-0.0, 0.0], 0.0),
    ("any", "f64", [0.0, NAN], 1.0),
    ("any", "f32", [0.0, F32_TINY], 1.0),
]


@pytest.mark.parametrize("op,unit,vals,want", FLOAT_EDGES)
def test_float_edges(op, unit, vals, want):
    dt = FLOAT_UNITS[unit][2]
    assert all(math.isnan(v) or float(dt(v)) == v for v in vals)   # representable inputs
    m, _ = one(op, unit, vals)            # `check` compares against the reference bit-exactly
    got = result_float(m, unit, 0x9003, 1)[0]
    if want is None:
        assert math.isnan(got)
        assert bytes(m.mem[0x9003:0x9003 + bits_of(unit) // 8]) == QNAN[unit]
    else:
        assert got == want and math.copysign(1, got) == math.copysign(1, want)


@pytest.mark.parametrize("unit", FLOAT_UNITS)
def test_nan_inputs_give_the_default_nan(unit):
    w = bits_of(unit) // 8
    sign_payload = {"f16": 0xFE01, "f32": 0xFFC00001, "f64": 0xFFF8000000000001}[unit]
    one_ = {"f16": 0x3C00, "f32": 0x3F800000, "f64": 0x3FF0000000000000}[unit]
    raw = sign_payload.to_bytes(w, "little") + one_.to_bytes(w, "little")
    lines = [insn(op, unit, 0x8001, 0x9000 + 16 * i, (1, 1, 2), 1) for i, op in enumerate(OPS)]
    m, res, before = run(lines, {0x8001: raw})
    assert res.status == "exit"
    for i, op in enumerate(OPS):
        got = bytes(m.mem[0x9000 + 16 * i:0x9000 + 16 * i + w])
        if op in ("all", "any"):
            assert got == one_.to_bytes(w, "little")
        else:
            assert got == QNAN[unit], op


def test_float_large_sequential_sums():
    rng = np.random.default_rng(11)
    n = 64 * 200
    f32 = [float(v) for v in (rng.standard_normal(n) * 1000).astype(np.float32)]
    f16 = [float(v) for v in (rng.standard_normal(n) * 10).astype(np.float16)]
    check([("sum", "f32", 0x8000, 0x1F000, (1, 64, 200), 1, f32),
           ("var", "f32", 0x8000, 0x1F200, (1, 64, 200), 7, f32),
           ("mean", "f16", 0x18000, 0x1F400, (64, 1, 200), 4, f16),
           ("prod", "f16", 0x18000, 0x1F600, (64, 1, 200), 3, f16)], mem_size=1 << 17)


def test_large_integer_tensor():
    rng = random.Random(5)
    vals = [rng.randint(-(1 << 31), (1 << 31) - 1) for _ in range(32 * 256)]
    small = [rng.randint(-128, 127) for _ in range(32 * 256)]
    check([("sum", "s32", 0x8000, 0x1F000, (32, 1, 256), 4, vals),
           ("var", "s32", 0x8000, 0x1F800, (32, 1, 256), 7, vals),
           ("var", "s8", 0x10000, 0x1FA00, (32, 1, 256), 5, small),
           ("prod", "s8", 0x10000, 0x1FC00, (32, 1, 256), 1, small),
           ("mean", "s8", 0x10000, 0x1FE00, (32, 1, 256), 6, small)], mem_size=1 << 17)


# --- operand forms ------------------------------------------------------------------------

def test_address_spaces_and_zero_dims():
    vals = [1, -2, 3, -4, 5, -6]
    for as_ in (16, 64):
        m, res, _ = run([insn("sum", "s16", 0x8001, 0x9001, (0, 2, 3), 1, f", as={as_}")],
                        {0x8001: encode("s16", vals)})
        assert res.status == "exit"
        assert result_int(m, "s16", 0x9001, 2) == [2, -5]


def test_destination_overlapping_the_source():
    vals = [5, 1, 9, 2, 8, 3]
    m, res, _ = run([insn("max", "u8", 0x8000, 0x8001, (1, 2, 3), 1)], {0x8000: bytes(vals)})
    assert res.status == "exit"
    assert list(m.mem[0x8000:0x8006]) == [5, 9, 8, 2, 8, 3]


def test_result_reaches_the_end_of_memory():
    vals = [1, 2, 3, 4]
    m, res, _ = run([insn("sum", "u32", MEM - 16, MEM - 4, (1, 1, 4), 1)], {MEM - 16: encode("u32", vals)})
    assert res.status == "exit" and result_int(m, "u32", MEM - 4, 1) == [10]
    assert res.trace[0].writes == ((MEM - 4, 4),)


# --- faults -------------------------------------------------------------------------------

def expect_fault(lines, code, k, init=None, mem_size=MEM, first_writes=None):
    m, res, before = run(lines, init or {}, mem_size)
    assert res.status == "fault" and res.fault == code, res.detail
    assert res.fault_pc == pc(k)
    assert res.trace[k].writes == ()
    if first_writes is None:
        assert (m.mem == before).all()
    else:
        a, n = first_writes
        changed = np.nonzero(m.mem != before)[0]
        assert all(a <= i < a + n for i in changed)
    return m, res


@pytest.mark.parametrize("op", OPS)
def test_axis_zero_is_illegal(op):
    expect_fault([insn(op, "s8", 0x8000, 0x9000, (2, 2, 2), 0)], Fault.ILLEGAL_OPERAND, 0)


@pytest.mark.parametrize("code", (13, 14, 15))
def test_reserved_unit(code):
    line = f"    reduce_sum src=0x8000, dst=0x9000, fc=1, fh=1, fw=4, axis=1, src_unit={code}"
    expect_fault([line], Fault.RESERVED_UNIT, 0)
    # a reserved unit is checked before the axis and the addresses
    line = f"    reduce_var src=0xFFFFFF, dst=0x9000, fc=1, fh=1, fw=4, axis=0, src_unit={code}"
    expect_fault([line], Fault.RESERVED_UNIT, 0)


def test_axis_checked_before_addresses():
    expect_fault([insn("min", "f32", 0xFFFFF0, 0x9000, (1, 1, 8), 0)], Fault.ILLEGAL_OPERAND, 0)


ADDRESS_CASES = [
    # unit, src, dst, dims, axis
    ("u8", MEM - 4, 0x9000, (1, 1, 5), 1),            # source one byte past the end
    ("u8", MEM - 5, MEM, (1, 1, 5), 1),              # destination at the end
    ("s32", MEM - 19, 0x9000, (1, 1, 5), 1),
    ("f64", 0x9000, MEM - 15, (1, 2, 3), 1),          # 2 results: 16 bytes
    ("u4", MEM - 2, 0x9000, (1, 1, 5), 1),            # 5 nibbles need 3 bytes
    ("s4", 0x8000, MEM - 1, (1, 3, 1), 4),            # 3 nibbles need 2 bytes
    ("f16", 0x8000, 0x9000, (4095, 4095, 4095), 7),   # a 6.9e10-element source
    ("s64", 0x1_0000_0000, 0x9000, (1, 1, 1), 1),
    ("u16", 0x8000, 0xFFFF_FFFF, (1, 1, 1), 1),
]


@pytest.mark.parametrize("unit,src,dst,dims,axis", ADDRESS_CASES)
def test_address_range(unit, src, dst, dims, axis):
    expect_fault([insn("sum", unit, src, dst, dims, axis, ", as=64")], Fault.ADDRESS_RANGE, 0)


def test_fault_pc_of_a_later_instruction():
    vals = [3, 4, 5]
    lines = [insn("sum", "u8", 0x8000, 0x9000, (1, 1, 3), 1),
             insn("prod", "u8", 0x8000, 0x9010, (1, 1, 3), 1),
             insn("mean", "u8", 0x8000, MEM - 1, (1, 1, 3), 2)]    # 3 results need 3 bytes
    m, res = expect_fault(lines, Fault.ADDRESS_RANGE, 2, {0x8000: bytes(vals)},
                          first_writes=(0x9000, 0x11))
    assert m.mem[0x9000] == 12 and m.mem[0x9010] == 60
    lines[2] = insn("var", "u8", 0x8000, 0x9020, (1, 1, 3), 0)
    expect_fault(lines, Fault.ILLEGAL_OPERAND, 2, {0x8000: bytes(vals)}, first_writes=(0x9000, 0x11))
