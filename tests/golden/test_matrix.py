"""Matrix_Mul and CONV2D on the golden model (docs/isa-decisions.md, D-MATMUL, D-CONV,
D-CONV-IMM, D-PRECEDENCE, D-OVERLAP).

Every expectation is computed here, independently of the model: the operands are
decoded from the memory image (bytes before the run) with the address formulas of
D-MATMUL, the convolution is evaluated with plain Python loops over output
positions and c, ky, kx (Python ints; Python floats accumulated one product at a
time), the requantisation with Python ints, and the results encoded with
int.to_bytes / struct (numpy's float16/float32 casts only for the final float
rounding). For the two large performance cases a numpy int64 reference with an
explicit loop over output positions is used instead. Each check compares the whole
data memory, so it also proves that nothing outside the destinations changed.
"""

import math
import random
import struct
import time

import numpy as np
import pytest

from xdsa.golden.asm import assemble
from xdsa.golden.isa import Fault
from xdsa.golden.machine import Machine

INT = {"u8": (8, False), "u16": (16, False), "u32": (32, False), "u64": (64, False),
       "s8": (8, True), "s16": (16, True), "s32": (32, True), "s64": (64, True)}
FLT = {"f16": (16, "<e", np.float16), "f32": (32, "<f", np.float32), "f64": (64, "<d", np.float64)}
CODES = {"u4": 0, "u8": 1, "u16": 2, "u32": 3, "u64": 4, "s4": 5, "s8": 6, "s16": 7, "s32": 8, "s64": 9,
         "f16": 10, "f32": 11, "f64": 12}
DATA = 0x8000
MEM = 1 << 17
QNAN32 = struct.pack("<I", 0x7FC00000)
MODES = {"imm": 0, "per_channel": 1, "per_element": 2}


def pc(k):
    return 32 + 16 * k


def esize(unit):
    """Bytes per element; int4 and raw unit codes (fault tests only) count as 1."""
    if unit in INT:
        return INT[unit][0] // 8
    return FLT[unit][0] // 8 if unit in FLT else 1


def irange(unit):
    b, s = INT[unit]
    return (-(1 << (b - 1)), (1 << (b - 1)) - 1) if s else (0, (1 << b) - 1)


def rd(mem, addr, unit):
    """One value of `unit` at `addr` of the byte image `mem`."""
    n = esize(unit)
    raw = bytes(mem[addr:addr + n])
    if unit in FLT:
        return struct.unpack(FLT[unit][1], raw)[0]
    return int.from_bytes(raw, "little", signed=INT[unit][1])


def enc(unit, v):
    if unit in FLT:
        return struct.pack(FLT[unit][1], v)
    return v.to_bytes(esize(unit), "little", signed=INT[unit][1])


def imm_value(raw, unit, field_bits):
    """D-CONV-IMM: the unit's value in the low bits of an IMM field."""
    if unit in FLT:
        b = FLT[unit][0]
        return struct.unpack(FLT[unit][1], (raw & ((1 << b) - 1)).to_bytes(b // 8, "little"))[0]
    b, signed = INT[unit]
    if b > field_bits:                                   # 64-bit unit in a 32-bit field
        return raw - (1 << field_bits) if signed and raw >> (field_bits - 1) else raw
    p = raw & ((1 << b) - 1)
    return p - (1 << b) if signed and p >> (b - 1) else p


def f32_of_int(v):
    """An exact integer rounded once to binary32 (nearest even), as a float."""
    a = abs(v)
    if a < (1 << 24):
        return float(v)
    shift = a.bit_length() - 24
    q, r = divmod(a, 1 << shift)
    half = 1 << (shift - 1)
    if r > half or (r == half and q & 1):
        q += 1
    return math.copysign(float(q << shift), v) if q << shift < 2 ** 128 else math.copysign(math.inf, v)


def f32_bytes(x):
    if math.isnan(x):
        return QNAN32
    with np.errstate(over="ignore"):
        return struct.pack("<f", float(np.float32(x)))


# --- one instruction under test ------------------------------------------------------------

class Op:
    """Field values of one matrix_mul/conv2d plus the values to place in memory.

    Dimensions are the *encoded* field values (0 means 1). Value arguments: `fm`
    nested [C][H][W], `w` [K][C][KH][KW], `pad` [C] (per channel), params as
    (mode, raw IMM field or list of values)."""

    def __init__(self, op="matrix_mul", fmt=1, fm_unit="s8", w_unit="s8", result_unit="s32",
                 C=1, H=1, W=1, K=1, KH=1, KW=1, V=0, S=0, T=0, B=0, L=0, R=0,
                 ss=None, ls=None, kls=None, padding_mode=0, padding_addr=0, pad=None,
                 bias=("imm", 0), mul=("imm", 1), shift=("imm", 0), scale=("imm", 0),
                 bias_unit="s32", mul_unit="s32", scale_unit="s32", clip=(-32768, 32767),
                 as_bits=32, fm=None, w=None, small=False, big_params=False, fm_at=None, kernel_at=None,
                 dst_at=None, filled=True):
        self.__dict__.update(locals())
        del self.__dict__["self"]
        self.c, self.h, self.w_, self.k = C or 1, H or 1, W or 1, K or 1
        self.kh, self.kw, self.v, self.s = KH or 1, KW or 1, V or 1, S or 1
        self.ho = (self.h + T + B - self.kh) // self.v + 1
        self.wo = (self.w_ + L + R - self.kw) // self.s + 1
        fe, we = esize(fm_unit), esize(w_unit)
        if fmt == 1:
            self.ls = ls if ls is not None else self.w_ * fe
            self.ss = ss if ss is not None else self.h * self.ls
        else:
            self.ss = ss if ss is not None else self.c * fe
            self.ls = ls if ls is not None else self.w_ * self.ss
        self.kls = kls if kls is not None else self.c * self.kh * self.kw * we
        self.params = {"bias": (bias, bias_unit), "mul": (mul, mul_unit), "shift": (shift, "u8"),
                       "scale": (scale, scale_unit)}
        self.addr = {}

    # addresses (D-MATMUL)
    def fm_addr(self, c, y, x):
        e = esize(self.fm_unit)
        if self.fmt == 1:
            return self.fm_at + c * self.ss + y * self.ls + x * e
        return self.fm_at + y * self.ls + x * self.ss + c * e

    def w_addr(self, k, c, ky, kx):
        e = esize(self.w_unit)
        i = ((c * self.kh + ky) * self.kw + kx) if self.fmt == 1 else ((ky * self.kw + kx) * self.c + c)
        return self.kernel_at + k * self.kls + i * e

    def out_index(self, k, oy, ox):
        if self.fmt == 1:
            return (k * self.ho + oy) * self.wo + ox
        return (oy * self.wo + ox) * self.k + k

    @property
    def n_out(self):
        return self.k * self.ho * self.wo

    def fm_span(self):
        e = esize(self.fm_unit)
        cs, xs = (self.ss, e) if self.fmt == 1 else (e, self.ss)
        return (self.c - 1) * cs + (self.h - 1) * self.ls + (self.w_ - 1) * xs + e

    def kernel_span(self):
        return (self.k - 1) * self.kls + self.c * self.kh * self.kw * esize(self.w_unit)

    def dst_bytes(self):
        return self.n_out * esize(self.result_unit)

    def param_count(self, p):
        (mode, _), _ = self.params[p]
        return 0 if mode == "imm" else self.k if mode == "per_channel" else self.n_out

    # placing
    def layout(self, alloc):
        """Allocate every region not fixed by the caller."""
        if self.fm_at is None:
            self.fm_at = alloc.take(self.fm_span())
        if self.kernel_at is None:
            self.kernel_at = alloc.take(self.kernel_span())
        if self.padding_mode == 1 and self.padding_addr == 0:
            self.padding_addr = alloc.take(self.c * esize(self.fm_unit))
        if self.op == "conv2d":
            for p, ((mode, val), unit) in self.params.items():
                if mode != "imm" and p not in self.addr:
                    self.addr[p] = alloc.take(self.param_count(p) * esize(unit))
        if self.dst_at is None:
            self.dst_at = alloc.take(self.dst_bytes())

    def fill(self, buf, rng):
        """Write the operand values (given or random) into the bytearray `buf`."""
        if not self.filled:                             # shares another op's operands
            return
        for c in range(self.c):
            for y in range(self.h):
                for x in range(self.w_):
                    v = self.fm[c][y][x] if self.fm is not None else gen(self.fm_unit, rng, self.small)
                    put(buf, self.fm_addr(c, y, x), enc(self.fm_unit, v))
        for k in range(self.k):
            for c in range(self.c):
                for ky in range(self.kh):
                    for kx in range(self.kw):
                        v = self.w[k][c][ky][kx] if self.w is not None else gen(self.w_unit, rng, self.small)
                        put(buf, self.w_addr(k, c, ky, kx), enc(self.w_unit, v))
        if self.padding_mode == 1:
            for c in range(self.c):
                v = self.pad[c] if self.pad is not None else gen(self.fm_unit, rng, self.small)
                put(buf, self.padding_addr + c * esize(self.fm_unit), enc(self.fm_unit, v))
        if self.op == "conv2d":
            for p, ((mode, val), unit) in self.params.items():
                if mode in ("per_channel", "per_element"):
                    for i in range(self.param_count(p)):
                        v = val[i] if isinstance(val, (list, tuple)) else \
                            gen(unit, rng, not self.big_params, p)
                        put(buf, self.addr[p] + i * esize(unit), enc(unit, v))

    def text(self):
        f = [f"fm={self.fm_at:#x}", f"kernel={self.kernel_at:#x}", f"dst={self.dst_at:#x}",
             f"fm_unit={self.fm_unit}", f"w_unit={self.w_unit}", f"result_unit={self.result_unit}",
             f"data_format={self.fmt}", f"t_pad={self.T}", f"b_pad={self.B}", f"l_pad={self.L}",
             f"r_pad={self.R}", f"h_stride={self.S}", f"v_stride={self.V}",
             f"padding_mode={self.padding_mode}", f"padding_addr={self.padding_addr:#x}",
             f"fm_surface_stride={self.ss}", f"fm_line_stride={self.ls}", f"fm_c={self.C}",
             f"fm_h={self.H}", f"fm_w={self.W}", f"k_h={self.KH}", f"k_w={self.KW}",
             f"k_line_stride={self.kls}", f"k_num={self.K}", f"as={self.as_bits}"]
        if self.op == "conv2d":
            f += [f"bias_unit={self.bias_unit}", f"mul_unit={self.mul_unit}", f"scale_unit={self.scale_unit}",
                  f"clip_min={self.clip[0]}", f"clip_max={self.clip[1]}"]
            for p, name in (("bias", "bias"), ("mul", "mul"), ("shift", "shift"), ("scale", "scale_o")):
                (mode, val), _ = self.params[p]
                mf = "scale_mode" if p == "scale" else f"{p}_mode"
                f += [f"{mf}={mode if isinstance(mode, int) else MODES[mode]}",
                      f"{name}_addr={val if mode == 'imm' else self.addr[p]:#x}"]
        return f"    {self.op} " + ", ".join(f)


def put(buf, addr, b):
    """Write bytes `b` at `addr` of a bytearray or a numpy byte array."""
    if isinstance(buf, np.ndarray):
        buf[addr:addr + len(b)] = np.frombuffer(b, dtype=np.uint8)
    else:
        buf[addr:addr + len(b)] = b


def gen(unit, rng, small=False, param=None):
    if param == "shift":
        return rng.choice([0, 0, 1, 2, 3, 5, 7, 8, 13])
    if unit in FLT:
        dt = FLT[unit][2]
        if small:
            return float(dt(rng.choice([-2.0, -1.5, -1.0, -0.0, 0.5, 1.0, 1.25, 3.0])))
        return float(dt(rng.gauss(0, 1) * 10 ** rng.randint(-3, 3)))
    lo, hi = irange(unit)
    if small:
        return rng.randint(max(lo, -9), min(hi, 9))
    r = rng.random()
    return lo if r < 0.1 else hi if r < 0.2 else 0 if r < 0.25 else rng.randint(lo, hi)


class Alloc:
    def __init__(self, start, rng, gap=9, min_gap=0):
        self.at, self.rng, self.gap, self.min_gap = start, rng, gap, min_gap

    def take(self, n):
        a = self.at + self.min_gap + self.rng.randint(0, self.gap)      # mostly unaligned
        self.at = a + n
        return a


# --- the reference --------------------------------------------------------------------------

def ref_acc(op, mem):
    """{(k, oy, ox): accumulator}: exact ints, or binary64 sums in c, ky, kx order."""
    fl = op.fm_unit in FLT
    fm = [[[rd(mem, op.fm_addr(c, y, x), op.fm_unit) for x in range(op.w_)] for y in range(op.h)]
          for c in range(op.c)]
    if op.padding_mode == 1:
        pad = [rd(mem, op.padding_addr + c * esize(op.fm_unit), op.fm_unit) for c in range(op.c)]
    else:
        pad = [imm_value(op.padding_addr, op.fm_unit, max(32, op.as_bits))] * op.c
    w = [[[[rd(mem, op.w_addr(k, c, ky, kx), op.w_unit) for kx in range(op.kw)] for ky in range(op.kh)]
          for c in range(op.c)] for k in range(op.k)]
    out = {}
    for k in range(op.k):
        for oy in range(op.ho):
            for ox in range(op.wo):
                acc = None if fl else 0
                for c in range(op.c):
                    for ky in range(op.kh):
                        for kx in range(op.kw):
                            iy, ix = oy * op.v + ky - op.T, ox * op.s + kx - op.L
                            v = fm[c][iy][ix] if 0 <= iy < op.h and 0 <= ix < op.w_ else pad[c]
                            if fl:
                                p = float(w[k][c][ky][kx]) * float(v)
                                acc = p if acc is None else acc + p
                            else:
                                acc += w[k][c][ky][kx] * v
                out[(k, oy, ox)] = acc
    return out


def ref_acc_np(op, mem):
    """The same for small integer operands: numpy int64, one loop over output positions."""
    fm = np.array([[[rd(mem, op.fm_addr(c, y, x), op.fm_unit) for x in range(op.w_)] for y in range(op.h)]
                   for c in range(op.c)], dtype=np.int64)
    assert op.padding_mode == 0
    padded = np.full((op.c, op.h + op.T + op.B, op.w_ + op.L + op.R),
                     imm_value(op.padding_addr, op.fm_unit, 32), dtype=np.int64)
    padded[:, op.T:op.T + op.h, op.L:op.L + op.w_] = fm
    w = np.array([[[[rd(mem, op.w_addr(k, c, ky, kx), op.w_unit) for kx in range(op.kw)]
                    for ky in range(op.kh)] for c in range(op.c)] for k in range(op.k)],
                 dtype=np.int64).reshape(op.k, -1)
    out = {}
    for oy in range(op.ho):
        for ox in range(op.wo):
            win = padded[:, oy * op.v:oy * op.v + op.kh, ox * op.s:ox * op.s + op.kw].reshape(-1)
            acc = w @ win
            for k in range(op.k):
                out[(k, oy, ox)] = int(acc[k])
    return out


def param_value(op, mem, p, k, idx):
    (mode, val), unit = op.params[p]
    if mode == "imm":
        return imm_value(val & 0xFF if p == "shift" else val, unit, max(32, op.as_bits))
    i = k if mode == "per_channel" else idx
    return rd(mem, op.addr[p] + i * esize(unit), unit)


def ref_bytes(op, mem, fast=False):
    """The expected destination bytes."""
    mem = bytes(mem)
    acc = (ref_acc_np if fast else ref_acc)(op, mem)
    vals = [None] * op.n_out
    for (k, oy, ox), a in acc.items():
        vals[op.out_index(k, oy, ox)] = (k, a)
    ru = op.result_unit
    out = b""
    for idx, (k, a) in enumerate(vals):
        if op.op == "matrix_mul":
            if ru == "f32":
                out += f32_bytes(a if isinstance(a, float) else f32_of_int(a))
            elif isinstance(a, float):                   # float sum to s32/u32
                lo, hi = irange(ru)
                v = 0 if math.isnan(a) else lo if a < lo else hi if a > hi else math.trunc(a)
                out += enc(ru, v)
            else:
                m = 1 << 32
                v = a % m
                if ru == "s32" and v >= 1 << 31:
                    v -= m
                out += enc(ru, v)
        else:
            v = a + param_value(op, mem, "bias", k, idx)
            v *= param_value(op, mem, "mul", k, idx)
            s = param_value(op, mem, "shift", k, idx)
            if s:
                v = (v + 2 ** (s - 1)) // 2 ** s
            v += param_value(op, mem, "scale", k, idx)
            v = min(max(v, op.clip[0]), op.clip[1])
            lo, hi = irange(ru)
            out += enc(ru, min(max(v, lo), hi))
    return out


# --- running --------------------------------------------------------------------------------

def run(lines, mem, mem_size):
    source = ".tables 0x4000\n.text 0\n" + "\n".join(lines) + "\n    exit\n    end\n"
    m = Machine(mem_size)
    m.load(assemble(source, "<test>"))
    m.mem[DATA:] = mem[DATA:]
    before = m.mem.copy()
    t = time.perf_counter()
    res = m.run(10_000)
    return m, res, before, time.perf_counter() - t


def setup(ops, seed, mem_size=MEM, start=DATA, gap=9, layout=True):
    """Random memory with every op's operands laid out (unless done) and written."""
    rng = random.Random(seed)
    buf = bytearray(random.Random(f"bg{seed}").randbytes(mem_size))
    alloc = Alloc(start, rng, gap)
    for op in ops:
        if layout:
            op.layout(alloc)
        op.fill(buf, rng)
    assert alloc.at <= mem_size
    return np.frombuffer(bytes(buf[:mem_size]), dtype=np.uint8).copy()


def check(ops, seed=0, mem_size=MEM, fast=False, gap=9):
    """Place every op's operands (disjoint regions), run them in one program and
    compare the whole memory and the retire trace."""
    mem = setup(ops, seed, mem_size, gap=gap)
    m, res, before, dt = run([op.text() for op in ops], mem, mem_size)
    assert res.status == "exit", res.detail
    want = before.copy()
    for i, op in enumerate(ops):
        exp = ref_bytes(op, before, fast)
        assert len(exp) == op.dst_bytes()
        put(want, op.dst_at, exp)
        assert res.trace[i].writes == ((op.dst_at, len(exp)),)
        assert res.trace[i].fault == Fault.NONE
    bad = np.nonzero(m.mem != want)[0]
    assert not len(bad), (f"first mismatch at {int(bad[0]):#x}: got {m.mem[bad[0]]:#04x}, "
                          f"want {want[bad[0]]:#04x}")
    return m, res, dt


def gemm(M, Kd, N, fm_unit="s8", w_unit="s8", result_unit="s32", **kw):
    """An M x Kd weight matrix times a Kd x N matrix (D-MATMUL's GEMM)."""
    return Op(fm_unit=fm_unit, w_unit=w_unit, result_unit=result_unit, C=Kd, H=1, W=N, K=M, **kw)


# --- reference sanity ----------------------------------------------------------------------------

def test_reference_agrees_with_literals():
    mem = bytearray(0x200)
    op = Op(C=1, H=2, W=3, K=1, KH=2, KW=2, fm=[[[1, 2, 3], [4, 5, 6]]], w=[[[[1, 0], [0, -1]]]],
            fm_at=0x10, kernel_at=0x40, dst_at=0x80)
    op.fill(mem, random.Random(0))
    assert ref_acc(op, bytes(mem)) == {(0, 0, 0): 1 - 5, (0, 0, 1): 2 - 6}
    assert imm_value(0xFFFFFFFF, "s64", 32) == -1 and imm_value(0xFFFFFFFF, "u64", 32) == 0xFFFFFFFF
    assert imm_value(0x1FF, "s8", 32) == -1 and imm_value(0x3C00, "f16", 32) == 1.0
    assert f32_of_int((1 << 24) + 1) == float(1 << 24) and f32_of_int((1 << 24) + 3) == float((1 << 24) + 4)


# --- GEMM -----------------------------------------------------------------------------------------

def test_gemm_4x4_literal():
    a = [[1, 2, 3, 4], [-1, -2, -3, -4], [5, 0, 0, 5], [127, -128, 1, 0]]     # weights M x Kd
    b = [[1, 0, 0, 1], [0, 1, 0, 1], [0, 0, 1, 1], [2, 2, 2, -128]]           # Kd x N
    op = gemm(4, 4, 4, w=[[[[a[m][c]]] for c in range(4)] for m in range(4)],
              fm=[[b[c]] for c in range(4)])
    m, res, _ = check([op])
    got = np.frombuffer(bytes(m.mem[op.dst_at:op.dst_at + 64]), dtype="<i4").reshape(4, 4)
    assert (got == np.array(a) @ np.array(b)).all()


GEMM_UNITS = [("s8", "s8", "s32"), ("u8", "s8", "s32"), ("s8", "u8", "u32"), ("u8", "u8", "f32"),
              ("s16", "s8", "s32"), ("u16", "s16", "s32"), ("s16", "s16", "f32"), ("u8", "s16", "u32"),
              ("s32", "s16", "s32"), ("u32", "u32", "u32"), ("s64", "s8", "s32"), ("u64", "s64", "f32"),
              ("s32", "s32", "f32")]


@pytest.mark.parametrize("fu,wu,ru", GEMM_UNITS)
def test_gemm_17x9_by_9x5(fu, wu, ru):
    ops = [gemm(17, 9, 5, fu, wu, ru),
           gemm(17, 9, 5, fu, wu, ru, fmt=0),                          # NHWC: fm rows are pixels
           gemm(3, 9, 5, fu, wu, ru, ss=5 * esize(fu) + 3, kls=9 * esize(wu) + 5)]   # padded rows
    check(ops, seed=f"{fu}{wu}{ru}")


def test_gemm_64_cubed_s8_is_fast():
    op = gemm(64, 64, 64)
    _, _, dt = check([op], seed=1, fast=True)
    assert dt < 0.5, dt


def test_gemm_u8_s16_combinations():
    ops = [gemm(8, 16, 8, "u8", "s16", "s32"), gemm(8, 16, 8, "s16", "u8", "s32"),
           gemm(8, 16, 8, "u16", "u16", "u32"), gemm(5, 7, 3, "u8", "u8", "s32", fmt=0)]
    check(ops, seed=11)


def test_s8_sums_wrap_in_s32():
    # 4095 channels x 6 x 6 of (-128)*(-128) = 147420 * 16384 = 2415329280 > 2**31;
    # the feature map reuses the same 36 bytes for every channel (surface stride 0),
    # the two kernels the same weights (k_line_stride 0)
    # (the u32 and f32 instructions read the same operands)
    C, n = 4095, 4095 * 36
    first = Op(C=C, H=6, W=6, K=2, KH=6, KW=6, ss=0, kls=0, fm=[[[-128] * 6] * 6] * C, w=[[[[-128] * 6] * 6] * C] * 2)
    alloc = Alloc(DATA, random.Random(0))
    first.layout(alloc)
    ops = [first] + [Op(C=C, H=6, W=6, K=2, KH=6, KW=6, ss=0, kls=0, result_unit=ru, fm_at=first.fm_at,
                        kernel_at=first.kernel_at, filled=False) for ru in ("u32", "f32")]
    for op in ops[1:]:
        op.layout(alloc)
    m, res, _ = check(ops, seed=2, mem_size=1 << 18, fast=True, gap=0)
    want = n * 16384
    assert rd(m.mem, ops[0].dst_at, "s32") == want - (1 << 32)
    assert rd(m.mem, ops[1].dst_at, "u32") == want
    assert rd(m.mem, ops[2].dst_at + 4, "f32") == float(want)


def test_wide_products_use_exact_arithmetic():
    big = [
        # u32 x u32: each product up to 2**64 (beyond int64): low 32 bits of the exact sum
        gemm(3, 7, 4, "u32", "u32", "u32", fm=[[[0xFFFFFFFF] * 4]] * 7, w=[[[[0xFFFFFFFF]]] * 7] * 3),
        gemm(2, 3, 2, "s64", "s64", "s32",
             fm=[[[-(1 << 63), (1 << 63) - 1]], [[12345, -1]], [[3, 3]]],
             w=[[[[-(1 << 63)]], [[(1 << 63) - 1]], [[7]]], [[[1]], [[2]], [[-1]]]]),
        gemm(2, 2, 2, "u64", "u64", "f32", fm=[[[(1 << 64) - 1, 1 << 40]]] * 2, w=[[[[(1 << 64) - 1]]] * 2] * 2),
        gemm(2, 300, 3, "s32", "s16", "s32"),                        # int64 path (|sum| < 2**63)
        gemm(2, 20, 3, "u16", "u16", "f32"),                         # f32 rounding of exact sums
    ]
    check(big, seed=3)


# --- float Matrix_Mul --------------------------------------------------------------------------

@pytest.mark.parametrize("fu,wu,ru", [("f16", "f16", "f32"), ("f32", "f32", "f32"), ("f64", "f64", "f32"),
                                      ("f16", "f32", "f32"), ("f32", "f64", "s32"), ("f64", "f16", "u32")])
def test_float_matmul(fu, wu, ru):
    ops = [gemm(6, 9, 5, fu, wu, ru),
           Op(fm_unit=fu, w_unit=wu, result_unit=ru, C=3, H=5, W=4, K=3, KH=3, KW=2, T=1, L=1, R=1,
              padding_addr={"f16": 0x3E00, "f32": 0x3FC00000, "f64": 0}[fu], fmt=0),
           Op(fm_unit=fu, w_unit=wu, result_unit=ru, C=2, H=4, W=4, K=2, KH=2, KW=2, S=2, B=1,
              padding_mode=1, small=True)]
    check(ops, seed=f"f{fu}{wu}{ru}")


def test_float_accumulation_is_sequential_in_c_ky_kx_order():
    # c0: [1e16, 1], c1: [-1e16, 1] with weights 1: c, ky, kx order gives
    # ((1e16 + 1) - 1e16) + 1 = 1; a kx-major order would give 2, an exact sum 2.
    op = Op(fm_unit="f64", w_unit="f64", result_unit="f32", C=2, H=1, W=2, KW=2,
            fm=[[[1e16, 1.0]], [[-1e16, 1.0]]], w=[[[[1.0, 1.0]], [[1.0, 1.0]]]])
    nhwc = Op(fm_unit="f64", w_unit="f64", result_unit="f32", C=2, H=1, W=2, KW=2, fmt=0,
              fm=[[[1e16, 1.0]], [[-1e16, 1.0]]], w=[[[[1.0, 1.0]], [[1.0, 1.0]]]])
    zeros = Op(fm_unit="f32", w_unit="f32", result_unit="f32", C=2, fm=[[[-0.0]], [[0.0]]],
               w=[[[[1.0]], [[-1.0]]]])                            # -0 + -0 = -0 (no initial +0)
    m, _, _ = check([op, nhwc, zeros])
    assert rd(m.mem, op.dst_at, "f32") == 1.0 and rd(m.mem, nhwc.dst_at, "f32") == 1.0
    assert bytes(m.mem[zeros.dst_at:zeros.dst_at + 4]) == struct.pack("<f", -0.0)


def test_float_specials():
    inf, nan = math.inf, math.nan
    ops = [gemm(1, 2, 3, "f32", "f32", "f32", fm=[[[inf, nan, 3e38]], [[-inf, 1.0, 3e38]]], w=[[[[1.0]], [[1.0]]]]),
           gemm(1, 2, 4, "f64", "f64", "s32", fm=[[[nan, 1e10, -1e10, -2.75]], [[1.0, 1.0, 1.0, 0.5]]],
                w=[[[[1.0]], [[1.0]]]]),
           gemm(1, 1, 2, "f64", "f64", "u32", fm=[[[-5.0, 4294967295.9]]], w=[[[[1.0]]]]),
           gemm(1, 2, 1, "f16", "f16", "f32", fm=[[[65504.0]], [[65504.0]]], w=[[[[65504.0]], [[1.0]]]])]
    m, _, _ = check(ops, seed=4)
    assert bytes(m.mem[ops[0].dst_at:ops[0].dst_at + 12]) == QNAN32 * 2 + struct.pack("<f", math.inf)
    assert [rd(m.mem, ops[1].dst_at + 4 * i, "s32") for i in range(4)] == [0, (1 << 31) - 1, -(1 << 31), -2]
    assert [rd(m.mem, ops[2].dst_at + 4 * i, "u32") for i in range(2)] == [0, 0xFFFFFFFF]


# --- convolutions ------------------------------------------------------------------------------

def random_conv(rng, op, units, fmt):
    kh, kw = rng.randint(1, 5), rng.randint(1, 5)
    v, s = rng.randint(1, 3), rng.randint(1, 3)
    T, B, L, R = (rng.choice([0, 0, 1, 2, 3]) for _ in range(4))
    H = max(1, kh - T - B + rng.randint(0, 5))
    W = max(1, kw - L - R + rng.randint(0, 5))
    fu, wu, ru = units
    kw_ = dict(op=op, fmt=fmt, fm_unit=fu, w_unit=wu, result_unit=ru, C=rng.randint(1, 3), H=H, W=W,
               K=rng.randint(1, 3), KH=kh, KW=kw, V=v if v > 1 or rng.random() < 0.5 else 0,
               S=s if s > 1 or rng.random() < 0.5 else 0, T=T, B=B, L=L, R=R)
    if rng.random() < 0.5:
        kw_["padding_mode"] = 1
    else:
        kw_["padding_addr"] = rng.getrandbits(32)
    if rng.random() < 0.3:                                       # gaps between lines/surfaces
        e = esize(fu)
        if fmt == 1:
            kw_["ls"] = W * e + rng.randint(1, 5)
            kw_["ss"] = H * kw_["ls"] + rng.randint(0, 7)
        else:
            kw_["ss"] = kw_["C"] * e + rng.randint(0, 3)
            kw_["ls"] = W * kw_["ss"] + rng.randint(1, 5)
        kw_["kls"] = kw_["C"] * kh * kw * esize(wu) + rng.randint(1, 9)
    if op == "conv2d":
        for p, u in (("bias", "bias_unit"), ("mul", "mul_unit"), ("scale", "scale_unit")):
            kw_[u] = rng.choice(["s8", "s16", "s32", "u8", "u16", "s64"])
        for p in ("bias", "mul", "shift", "scale"):
            mode = rng.choice(["imm", "per_channel", "per_element"])
            if mode != "imm":
                kw_[p] = (mode, None)
            elif p == "shift":
                kw_[p] = (mode, rng.getrandbits(32) if rng.random() < 0.2 else rng.randint(0, 13))
            else:
                kw_[p] = (mode, rng.getrandbits(32) if rng.random() < 0.5 else rng.randint(-20, 20) & 0xFFFFFFFF)
        lo, hi = sorted(rng.randint(-32768, 32767) for _ in range(2))
        kw_["clip"] = (lo, hi) if rng.random() < 0.7 else (-32768, 32767)
        kw_["small"] = rng.random() < 0.5
    return Op(**kw_)


@pytest.mark.parametrize("fmt", [0, 1])
@pytest.mark.parametrize("units", [("s8", "s8", "s32"), ("u8", "s8", "s32"), ("s16", "s16", "f32"),
                                   ("u16", "u8", "u32")])
def test_random_matmul_convolutions(units, fmt):
    rng = random.Random(f"{units}{fmt}")
    check([random_conv(rng, "matrix_mul", units, fmt) for _ in range(12)], seed=f"{units}{fmt}")


@pytest.mark.parametrize("fmt", [0, 1])
@pytest.mark.parametrize("units", [("s8", "s8", "s8"), ("u8", "s8", "u8"), ("s16", "s8", "s16"),
                                   ("s8", "u8", "s32"), ("u16", "u16", "u64"), ("s32", "s8", "s64")])
def test_random_conv2d(units, fmt):
    rng = random.Random(f"c{units}{fmt}")
    check([random_conv(rng, "conv2d", units, fmt) for _ in range(12)], seed=f"c{units}{fmt}")


def test_every_kernel_size_and_stride():
    ops = []
    for kh in range(1, 6):
        for kw in range(1, 6):
            for st in (1, 2, 3):
                ops.append(Op(C=2, H=7, W=6, K=2, KH=kh, KW=kw, V=st, S=4 - st, T=kh // 2, B=(kh - 1) // 2,
                              L=kw // 2, R=1, padding_addr=0xFFFFFF80, fmt=(kh + kw + st) % 2))
    check(ops, seed=5, mem_size=1 << 18)


def test_resnet_3x3_pad1_32x32x16_to_16_is_fast():
    quant = dict(op="conv2d", result_unit="s8", bias=("per_channel", None), mul=("imm", 0x4000),
                 shift=("imm", 20), scale=("imm", (-3) & 0xFFFFFFFF))
    ops = [Op(C=16, H=32, W=32, K=16, KH=3, KW=3, T=1, B=1, L=1, R=1, fmt=fmt, **q)
           for fmt in (1, 0) for q in ({}, quant)]
    m, res, dt = check(ops, seed=6, mem_size=1 << 19, fast=True)
    assert dt < 2.0, dt                                      # four instructions


def test_odd_shapes():
    ops = [Op(C=0, H=0, W=0, K=0, KH=0, KW=0),                  # every zero dimension means 1
           Op(C=1, H=1, W=1, K=1, KH=1, KW=1, T=2, B=1, L=1, R=3, padding_addr=7),
           Op(C=1, H=5, W=9, K=1, KH=5, KW=9),                  # H_out = W_out = 1
           Op(C=3, H=2, W=11, K=4, KH=2, KW=3, S=3),            # W_out = 3, non-square
           Op(C=5, H=9, W=1, K=1, KH=4, KW=1, V=2, fmt=0),      # W_out = 1
           Op(C=1, H=3, W=3, K=1, KH=3, KW=3, T=15, B=15, L=15, R=15, V=15, S=15),
           Op(C=2, H=4, W=4, K=3, KH=2, KW=2, ls=0, ss=0),     # broadcast reads (zero strides)
           Op(C=2, H=2, W=3, K=2, fmt=0, ss=0, ls=2)]           # NHWC zero pixel stride
    check(ops, seed=7)


def test_per_channel_padding_values():
    ops = [Op(C=3, H=2, W=2, K=2, KH=3, KW=3, T=1, B=1, L=1, R=1, padding_mode=1, pad=[-128, 127, 0], fmt=fmt)
           for fmt in (0, 1)]
    ops.append(Op(fm_unit="s16", w_unit="s16", C=2, H=1, W=1, K=1, KH=3, KW=3, T=1, B=1, L=1, R=1,
                  padding_mode=1, pad=[-32768, 32767], fm=[[[0]], [[0]]], w=[[[[1] * 3] * 3] * 2]))
    m, _, _ = check(ops, seed=8)
    assert rd(m.mem, ops[2].dst_at, "s32") == 8 * (-32768 + 32767)


def test_per_layer_padding_immediates():
    ops = [Op(C=1, H=1, W=1, KW=3, L=1, R=1, fm_unit=u, w_unit="s8", padding_addr=raw, fm=[[[1]]], w=[[[[1, 1, 1]]]],
              result_unit="s32")
           for u, raw in (("s8", 0xFFFFFF80), ("s8", 0x17F), ("u8", 0xFF), ("s16", 0x8000), ("u16", 0x12345),
                          ("s32", 0xFFFFFFFE))]
    ops += [Op(C=1, H=1, W=1, KW=3, L=1, R=1, fm_unit="s64", w_unit="s64", padding_addr=0xFFFFFFFF,
               fm=[[[5]]], w=[[[[1, 1, 1]]]], as_bits=a) for a in (16, 32)]       # M = 32: sign-extended
    ops += [Op(C=1, H=1, W=1, KW=3, L=1, R=1, fm_unit="u64", w_unit="u64", padding_addr=0xFFFFFFFF,
               fm=[[[5]]], w=[[[[1, 1, 1]]]]),                                   # zero-extended
            Op(C=1, H=1, W=1, KW=3, L=1, R=1, fm_unit="s64", w_unit="s64", padding_addr=(1 << 64) - 3,
               fm=[[[5]]], w=[[[[1, 1, 1]]]], as_bits=64),                         # M = 64
            Op(C=1, H=1, W=1, KW=3, L=1, R=1, fm_unit="f16", w_unit="f16", result_unit="f32",
               padding_addr=0xABCD3C00, fm=[[[2.0]]], w=[[[[1.0, 1.0, 1.0]]]])]   # f16 1.0 in the low bits
    m, _, _ = check(ops, seed=9)
    got = [rd(m.mem, op.dst_at, "s32") for op in ops[:-1]]
    assert got == [-255, 255, 511, -65535, 2 * 0x2345 + 1, -3, 3, 3, 3, -1]
    assert rd(m.mem, ops[-1].dst_at, "f32") == 4.0


def test_address_spaces_16_and_64():
    ops = [Op(op=o, C=2, H=3, W=4, K=2, KH=2, KW=2, T=1, padding_addr=0x1234, as_bits=a, bias=("per_channel", None))
           for o in ("matrix_mul", "conv2d") for a in (16, 64)]
    check(ops, seed=10, mem_size=1 << 16)


# --- CONV2D requantisation -------------------------------------------------------------------

def conv_q(**kw):
    base = dict(op="conv2d", C=2, H=3, W=3, K=3, KH=2, KW=2, T=1, L=1, result_unit="s32", small=True)
    base.update(kw)
    return Op(**base)


def test_parameter_modes():
    ops = []
    for p in ("bias", "mul", "shift", "scale"):
        for mode in ("imm", "per_channel", "per_element"):
            for fmt in (0, 1):
                raw = {"bias": (-7) & 0xFFFFFFFF, "mul": 3, "shift": 2, "scale": 0xFFFFFFFB}[p]
                kw = {p: (mode, raw if mode == "imm" else None), "fmt": fmt}
                if p != "mul":
                    kw["mul"] = ("imm", 5)
                ops.append(conv_q(**kw))
    check(ops, seed=12)


@pytest.mark.parametrize("unit", ["s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64"])
def test_parameter_units(unit):
    ops = [conv_q(bias_unit=unit, mul_unit=unit, scale_unit=unit, bias=(m, None), mul=(m, None),
                  scale=(m, None), shift=(m, None), clip=(-32768, 32767), fmt=f, small=False, big_params=True,
                  fm_unit="s8", w_unit="s8", result_unit="s64")
           for m in ("per_channel", "per_element") for f in (0, 1)]
    raw = (-2) & 0xFFFFFFFF
    ops += [conv_q(bias_unit=unit, mul_unit=unit, scale_unit=unit, bias=("imm", raw), mul=("imm", raw),
                   scale=("imm", raw), shift=("imm", 0x103), result_unit="s64", as_bits=a) for a in (32, 64)]
    check(ops, seed=f"u{unit}")


def test_shift_rounding_half_up():
    # one output per value: acc = x (1x1 conv, weight 1), v = x >> 2 rounded half up
    xs = [-10, -9, -7, -6, -5, -3, -2, -1, 0, 1, 2, 3, 5, 6, 7, 9, 10, 127, -128]
    want = [math.floor(x / 4 + 0.5) for x in xs]
    op = Op(op="conv2d", C=1, H=1, W=len(xs), fm=[[xs]], w=[[[[1]]]], shift=("imm", 2))
    big = Op(op="conv2d", fm_unit="s32", w_unit="s32", result_unit="s32", C=1, H=1, W=4,
             fm=[[[(1 << 31) - 1, -(1 << 31), 3, -3]]], w=[[[[(1 << 31) - 1]]]],
             mul=("imm", (1 << 31) - 1), mul_unit="s32", shift=("per_element", [64, 64, 0, 200]),
             bias=("imm", 0))                                     # exact beyond 64 bits
    zero_out = Op(op="conv2d", C=1, H=1, W=3, fm=[[[127, -128, 5]]], w=[[[[127]]]], shift=("imm", 255))
    m, _, _ = check([op, big, zero_out])
    assert [rd(m.mem, op.dst_at + 4 * i, "s32") for i in range(len(xs))] == want
    assert want[:5] == [-2, -2, -2, -1, -1] and want[9:13] == [0, 1, 1, 1]
    assert [rd(m.mem, zero_out.dst_at + 4 * i, "s32") for i in range(3)] == [0, 0, 0]


def test_requantisation_beyond_64_bits():
    # acc = 4 * (-32768)**2 = 2**32, times mul 2**31 - 1 exceeds int64 before the shift
    xs = [[[-32768, -32768, 100]]] * 4
    ops = [Op(op="conv2d", fm_unit="s16", w_unit="s16", result_unit="s32", C=4, H=1, W=3, fm=xs,
              w=[[[[-32768]]] * 4], bias=("imm", b), mul=("imm", (1 << 31) - 1), shift=("imm", s),
              scale=("imm", (-7) & 0xFFFFFFFF))
           for b, s in ((0, 48), (0x80000000, 50), (5, 63), (0, 64))]
    m, _, _ = check(ops)
    want = ((1 << 32) * ((1 << 31) - 1) + (1 << 47)) >> 48
    assert want == 32768 and rd(m.mem, ops[0].dst_at, "s32") == want - 7


def test_clip_and_result_saturation():
    xs = [-300, -129, -128, -5, 0, 5, 127, 128, 300, 32767, -32768]
    ops = [Op(op="conv2d", fm_unit="s16", w_unit="s8", result_unit=ru, C=1, H=1, W=len(xs), fm=[[xs]],
              w=[[[[1]]]], clip=clip)
           for ru, clip in (("s8", (-32768, 32767)), ("u8", (-32768, 32767)), ("s16", (-200, 100)),
                            ("s8", (-5, 5)), ("s32", (0, 0)), ("s32", (10, -10)), ("u16", (-1, 200)))]
    m, _, _ = check(ops, seed=13)
    assert [rd(m.mem, ops[0].dst_at + i, "s8") for i in range(len(xs))] == \
        [-128, -128, -128, -5, 0, 5, 127, 127, 127, 127, -128]
    assert [rd(m.mem, ops[5].dst_at + 4 * i, "s32") for i in range(len(xs))] == [-10] * len(xs)  # crossed
    # s8 accumulators beyond the 16-bit clip range: 4 products of 127 * 127 ...
    wide = Op(op="conv2d", result_unit="s32", C=4, fm=[[[127]]] * 4, w=[[[[127]]] * 4], clip=(-32768, 32767))
    m, _, _ = check([wide])
    assert rd(m.mem, wide.dst_at, "s32") == 32767


def test_requantisation_pipeline_order():
    # ((acc + bias) * mul >> shift) + scale_o: acc = 10, bias = 3, mul = -3, shift 1 -> -39 / 2 = -19.5
    # rounds half up to -19, + scale_o 4 = -15
    op = Op(op="conv2d", C=1, fm=[[[10]]], w=[[[[1]]]], bias=("imm", 3), mul=("imm", (-3) & 0xFFFFFFFF),
            shift=("imm", 1), scale=("imm", 4))
    m, _, _ = check([op])
    assert rd(m.mem, op.dst_at, "s32") == -15


# --- faults --------------------------------------------------------------------------------

def fault_case(op, code, words=(), mem_size=MEM, index=1, fill=True, prefix=True):
    """Run a good instruction, then `op` (expected to fault with `code`): check the
    code, the PC, the detail words, that memory did not change and the trace."""
    rng = random.Random(0)
    good = Op(C=1, H=2, W=2, K=1)
    good.layout(Alloc(DATA, rng))
    op.layout(Alloc(0xA000, rng, min_gap=40))
    mem = setup([good, op] if fill else [good], 5, mem_size, layout=False)
    m, res, before, _ = run([good.text(), op.text()] if prefix else [op.text()], mem, mem_size)
    assert res.status == "fault", res
    assert res.fault == code, res.detail
    assert res.fault_pc == pc(index)
    for w in words:
        assert w in res.detail, (w, res.detail)
    want = before.copy()
    if prefix:
        put(want, good.dst_at, ref_bytes(good, before))
    assert (m.mem == want).all()
    assert res.trace[-1].writes == () and res.trace[-1].fault == code
    assert len(res.trace) == index + 1
    return res


def test_reserved_unit_codes():
    for field in ("fm_unit", "w_unit", "result_unit"):
        fault_case(Op(**{field: 13}), Fault.RESERVED_UNIT, [f"{field} = 13"], fill=False)
    for field in ("bias_unit", "mul_unit", "scale_unit"):
        fault_case(Op(op="conv2d", **{field: 15}), Fault.RESERVED_UNIT, [f"{field} = 15"])
    # a reserved unit code comes before a reserved data format
    fault_case(Op(op="conv2d", bias_unit=14, fmt=3, fm_unit="s4"), Fault.RESERVED_UNIT, ["bias_unit"], fill=False)


def test_unsupported_units():
    fault_case(Op(fm_unit="s8", w_unit="f32", result_unit="s32"), Fault.UNSUPPORTED_UNIT,
               ["fm_unit = s8", "w_unit = f32"])
    fault_case(Op(fm_unit="f16", w_unit="u8", result_unit="f32"), Fault.UNSUPPORTED_UNIT, ["f16", "u8"])
    fault_case(Op(op="conv2d", fm_unit="f32", w_unit="f32"), Fault.UNSUPPORTED_UNIT, ["fm_unit = f32"])
    fault_case(Op(op="conv2d", result_unit="f32"), Fault.UNSUPPORTED_UNIT, ["result_unit = f32"])
    for u in ("bias_unit", "mul_unit", "scale_unit"):
        fault_case(Op(op="conv2d", **{u: "f16"}), Fault.UNSUPPORTED_UNIT, [f"{u} = f16"])
    # UNSUPPORTED_UNIT comes before ILLEGAL_OPERAND (int4, reserved format)
    fault_case(Op(fm_unit="s4", w_unit="f16", fmt=3), Fault.UNSUPPORTED_UNIT, ["s4"], fill=False)


def test_reserved_field_values():
    for fmt in (2, 3):
        fault_case(Op(op="matrix_mul", fmt=fmt), Fault.ILLEGAL_OPERAND, [f"data_format = {fmt}"], fill=False)
        fault_case(Op(op="conv2d", fmt=fmt), Fault.ILLEGAL_OPERAND, [f"data_format = {fmt}"], fill=False)
    for pm in (2, 3):
        for o in ("matrix_mul", "conv2d"):
            fault_case(Op(op=o, padding_mode=pm, padding_addr=0x10), Fault.ILLEGAL_OPERAND,
                       [f"padding_mode = {pm}"])
    for p, field in (("bias", "bias_mode"), ("mul", "mul_mode"), ("shift", "shift_mode"), ("scale", "scale_mode")):
        fault_case(Op(op="conv2d", **{p: (3, 0x100)}), Fault.ILLEGAL_OPERAND, [f"{field} = 3"])


def test_int4_and_result_units():
    for field in ("fm_unit", "w_unit"):
        for u in ("s4", "u4"):
            fault_case(Op(**{field: u}), Fault.ILLEGAL_OPERAND, [f"{field} = {u}", "int4"], fill=False)
    for field in ("result_unit", "bias_unit", "mul_unit", "scale_unit"):
        fault_case(Op(op="conv2d", **{field: "s4"}), Fault.ILLEGAL_OPERAND, [f"{field} = s4"])
    for ru in ("s8", "u16", "s64", "f16", "f64", "u4"):
        fault_case(Op(result_unit=ru), Fault.ILLEGAL_OPERAND, [f"result_unit = {ru}"])


def test_kernel_larger_than_padded_map():
    fault_case(Op(H=3, W=5, KH=4, KW=2), Fault.ILLEGAL_OPERAND, ["k_h = 4", "fm_h = 3"], fill=False)
    fault_case(Op(op="conv2d", H=3, W=5, KH=3, KW=8, L=1, R=1), Fault.ILLEGAL_OPERAND, ["k_w = 8", "r_pad = 1"],
               fill=False)
    fault_case(Op(H=0, W=0, KH=2), Fault.ILLEGAL_OPERAND, ["2 x 1 kernel"], fill=False)
    # exactly the padded size is legal
    check([Op(H=3, W=5, KH=4, KW=7, T=1, L=1, R=1)])


@pytest.mark.parametrize("what", ["fm", "kernel", "padding_addr", "bias_addr", "mul_addr", "shift_addr",
                                  "scale_o_addr"])
def test_overlap_faults(what):
    def make():
        return Op(op="conv2d", C=2, H=3, W=3, K=2, KH=2, KW=2, padding_mode=1, bias=("per_channel", None),
                  mul=("per_element", None), shift=("per_channel", None), scale=("per_element", None))
    op = make()
    op.layout(Alloc(0xA000, random.Random(1), min_gap=40))
    regions = {"fm": (op.fm_at, op.fm_span()), "kernel": (op.kernel_at, op.kernel_span()),
               "padding_addr": (op.padding_addr, 2),
               "bias_addr": (op.addr["bias"], 2 * 4), "mul_addr": (op.addr["mul"], 8 * 4),
               "shift_addr": (op.addr["shift"], 2), "scale_o_addr": (op.addr["scale"], 8 * 4)}
    a, n = regions[what]
    assert op.dst_bytes() == 32
    for dst in (a + n - 1, a - 31):                  # sharing the last / the first byte
        o = make()
        o.layout(Alloc(0xA000, random.Random(1), min_gap=40))
        o.dst_at = dst
        fault_case(o, Fault.ILLEGAL_OPERAND, [what, "D-OVERLAP"])
    for dst in (a + n, a - 32):                      # touching is legal
        o = make()
        o.layout(Alloc(0xA000, random.Random(1), min_gap=40))
        o.dst_at = dst
        check([o], seed=what)


def test_overlap_rules_for_matmul_and_legal_neighbours():
    op = Op(C=2, H=3, W=3, K=2, KH=2, KW=2, fm_at=0xA000, kernel_at=0xA100, dst_at=0xA000 + 17)
    fault_case(op, Fault.ILLEGAL_OPERAND, ["fm"])
    op = Op(C=2, H=3, W=3, K=2, KH=2, KW=2, fm_at=0xA000, kernel_at=0xA100, dst_at=0xA100 + 15)
    fault_case(op, Fault.ILLEGAL_OPERAND, ["kernel"])
    op = Op(C=2, H=3, W=3, K=2, KH=2, KW=2, fm_at=0xA000, kernel_at=0xA100, padding_mode=1,
            padding_addr=0xA200, dst_at=0xA200 - 31)               # 32-byte destination ends on it
    fault_case(op, Fault.ILLEGAL_OPERAND, ["padding_addr"])
    # adjacent regions (dst right after / right before each operand) are legal
    ops = [Op(C=2, H=3, W=3, K=2, KH=2, KW=2, fm_at=0xA000, kernel_at=0xA100, dst_at=0xA000 + 18),
           Op(C=2, H=3, W=3, K=2, KH=2, KW=2, fm_at=0xB020, kernel_at=0xB100, dst_at=0xB000),
           Op(C=2, H=3, W=3, K=2, KH=2, KW=2, fm_at=0xC000, kernel_at=0xC100, dst_at=0xC100 + 16),
           Op(op="conv2d", C=2, H=3, W=3, K=2, KH=2, KW=2, fm_at=0xD000, kernel_at=0xD100, dst_at=0xD200,
              bias=("per_channel", None))]
    check(ops, seed=14, mem_size=1 << 16)
    # the IMM "addresses" are values, not operands: no overlap with them
    check([Op(op="conv2d", C=1, H=2, W=2, fm_at=0xA000, kernel_at=0xA100, dst_at=0xA200,
              bias=("imm", 0xA200), padding_addr=0xA200)], mem_size=1 << 16)


def exact_extent_case(make, region, mem_size=1 << 16):
    """Place `region` so that it ends exactly at the end of memory: legal; one byte
    later: ADDRESS_RANGE naming the operand."""
    for shift, ok in ((0, True), (1, False)):
        o = make()
        o.layout(Alloc(0xA000, random.Random(2)))
        span = {"fm": o.fm_span(), "kernel": o.kernel_span(), "padding_addr": o.c * esize(o.fm_unit),
                "dst": o.dst_bytes()}
        for p in ("bias", "mul", "shift", "scale"):
            span[p] = o.param_count(p) * esize(o.params[p][1])
        at = mem_size - span[region] + shift
        if region == "fm":
            o.fm_at = at
        elif region == "kernel":
            o.kernel_at = at
        elif region == "padding_addr":
            o.padding_addr = at
        elif region == "dst":
            o.dst_at = at
        else:
            o.addr[region] = at
        if ok:
            check([o], mem_size=mem_size)
        else:
            name = {"scale": "scale_o_addr", "bias": "bias_addr", "mul": "mul_addr",
                    "shift": "shift_addr", "dst": "destination"}.get(region, region)
            fault_case(o, Fault.ADDRESS_RANGE, [name], mem_size=mem_size, fill=False, prefix=False, index=0)


@pytest.mark.parametrize("fmt", [0, 1])
@pytest.mark.parametrize("region", ["fm", "kernel", "padding_addr", "dst"])
def test_address_range_exact_extent(region, fmt):
    def op():                       # strided: gaps between lines, surfaces and kernels
        e = 2
        if fmt == 1:
            ls, ss = 3 * e + 5, 2 * (3 * e + 5) + 3
        else:
            ss, ls = 2 * e + 1, 3 * (2 * e + 1) + 7
        return Op(fm_unit="s16", w_unit="s8", C=2, H=2, W=3, K=3, KH=2, KW=2, ss=ss, ls=ls, kls=11,
                  padding_mode=1, fmt=fmt, T=1)
    exact_extent_case(op, region)


@pytest.mark.parametrize("mode", ["per_channel", "per_element"])
@pytest.mark.parametrize("param", ["bias", "mul", "shift", "scale"])
def test_address_range_parameter_arrays(param, mode):
    def op():
        return Op(op="conv2d", C=2, H=3, W=4, K=3, KH=2, KW=2, bias_unit="s16", mul_unit="s32",
                  scale_unit="s8", **{param: (mode, None)})
    exact_extent_case(op, param)


def test_fault_precedence_overlap_before_address_range():
    # the destination overlaps the fm and also runs past the end of memory
    op = Op(C=1, H=2, W=2, K=4, fm_at=MEM - 4, kernel_at=0xA000, dst_at=MEM - 8)
    fault_case(op, Fault.ILLEGAL_OPERAND, ["D-OVERLAP"])
    # a reserved mode is reported before an out-of-range operand
    op = Op(op="conv2d", C=1, H=2, W=2, fm_at=MEM - 1, kernel_at=0xA000, dst_at=0xA100, bias=(3, 0))
    fault_case(op, Fault.ILLEGAL_OPERAND, ["bias_mode = 3"], fill=False)
    # fm is checked before the destination
    op = Op(C=1, H=2, W=2, fm_at=MEM - 1, kernel_at=0xA000, dst_at=MEM + 100)
    fault_case(op, Fault.ADDRESS_RANGE, ["fm"], fill=False)
