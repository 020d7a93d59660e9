"""Matrix_Mul (BASE group 0b1011, code 0) and CONV2D (AI group 0b10, code 0):
docs/isa-decisions.md, D-MATMUL, D-CONV, D-CONV-IMM.

Both instructions convolve a C x FM_H x FM_W feature map (NCHW or NHWC, strided)
with K kernels of C x K_H x K_W weights, with padding and strides, and write the
K x H_out x W_out result densely at `dst`. Matrix_Mul writes the accumulator in a
32-bit `result_unit`; CONV2D requantises it (bias, multiplier, rounding shift,
output offset SCALE_O, clip) and saturates it to `result_unit`.

How it is computed (no per-output Python loop):

1. the feature map is gathered from memory into a (C, H, W) array with one fancy
   index, and placed in a (C, H + T + B, W + L + R) array filled with the padding
   values (one per layer or one per channel);
2. a strided sliding-window view of it gives the im2col matrix (H_out * W_out, R),
   R = C * K_H * K_W, the reduction index in c, ky, kx order; the kernels are
   gathered into a (K, R) matrix in the same order;
3. integers: the exact products are contracted with one matrix product, in binary64
   (BLAS) when every partial sum is an integer below 2**53 in magnitude (then every
   step is exact whatever the summation order), else in int64 when the sums stay
   below 2**63, else on Python ints (object arrays: 64-bit operands, huge values);
   the bounds come from the actual operand magnitudes;
4. floats (Matrix_Mul only): every product in binary64, then `np.add.accumulate`
   along R, which adds strictly sequentially in c, ky, kx order (product 0 first,
   no initial +0.0), in blocks of outputs and kernels to bound the temporary.

Operand elements may alias (zero strides read the same bytes again): that is legal.

Checks, in D-PRECEDENCE order (after the machine's RESERVED_UNIT check of every
unit field):

* UNSUPPORTED_UNIT: fm_unit and w_unit one integer, one float; CONV2D: a float
  fm/w, result or parameter unit (bias_unit, mul_unit, scale_unit);
* ILLEGAL_OPERAND: data_format 2/3, padding_mode 2/3, CONV2D parameter mode 3
  (bias, mul, shift, scale, in that order), an int4 unit in any unit field, a
  Matrix_Mul result_unit that is not 32 bits, a kernel larger than the padded map,
  then the overlap rule below;
* ADDRESS_RANGE, in this order: the feature map's exact pattern extent, the kernels'
  extent, the per-channel padding values, the bias, mul, shift and scale_o arrays
  (when their mode reads memory), the destination.

Project readings where D-MATMUL / D-CONV are silent (reported for the decisions
document):

* FM_H and FM_W of 0 mean 1, like FM_C, K_H, K_W, K_NUM and the strides;
* the feature map operand is the whole declared C x FM_H x FM_W pattern: its byte
  extent is `[fm, fm + (C-1)*c_stride + (FM_H-1)*FM_LINE_STRIDE + (FM_W-1)*x_stride
  + esize)` whether or not every element falls under a window; the kernels' extent
  is `[kernel, kernel + (K-1)*K_LINE_STRIDE + C*K_H*K_W*esize)`;
* per-channel padding values (C values of fm_unit at padding_addr) are read
  whenever padding_mode = 1, even if every pad is 0; parameter arrays are read
  whenever their mode is per channel (K values) or per element (K*H_out*W_out);
* an IMM value (padding per layer, CONV2D IMM parameters) is the unit's bit
  pattern taken from the field's low bits; a 64-bit unit in an M = 32-bit field is
  sign-extended from 32 bits for s64, zero-extended for u64 and f64; shift IMM is
  the field's low 8 bits;
* D-OVERLAP: the destination's byte range must not intersect the byte extent of
  anything the instruction reads (feature map, kernels, per-channel padding values,
  parameter arrays), else ILLEGAL_OPERAND: the engine streams its inputs while it
  writes, so no in-place operation is legal;
* Matrix_Mul: the result unit may be s32, u32 or f32 for integer and float
  operands alike; a float sum to s32/u32 converts by D-CONVERT (toward zero,
  saturating, NaN -> 0); an integer sum to f32 rounds the exact sum once;
* int4 is refused (ILLEGAL_OPERAND) in every unit field of both instructions,
  including CONV2D's result and parameter units;
* CONV2D: the rounding shift is exact, floor((v + 2**(s-1)) / 2**s) for s > 0, on
  the exact value (a shift of 64 or more therefore gives 0 whenever |v| < 2**63);
  clip is max(v, CLIP_MIN) then min(., CLIP_MAX), so CLIP_MAX wins when the bounds
  cross (as D-ROUNDUP's CLIP); CLIP_MIN = CLIP_MAX = 0 clips everything to 0.
"""

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .. import units as U
from ..dispatch import handler
from ..isa import DataUnit, Fault

NHWC, NCHW = 0, 1
PER_LAYER, PER_CHANNEL = 0, 1
IMM, PER_CH, PER_ELEM = 0, 1, 2
_FORMATS = {NHWC: "nhwc", NCHW: "nchw"}
_PARAMS = (  # (name, mode field, address field, unit field or None for u8 shifts)
    ("bias", "bias_mode", "bias_addr", "bias_unit"),
    ("mul", "mul_mode", "mul_addr", "mul_unit"),
    ("shift", "shift_mode", "shift_addr", None),
    ("scale_o", "scale_mode", "scale_o_addr", "scale_unit"),
)
CHUNK = 1 << 22                     # elements of a temporary (products, im2col rows)
_F64_EXACT = 1 << 53
_I64_SAFE = 1 << 63


# --- memory helpers -----------------------------------------------------------------------

def _gather(mem, base, unit, offsets):
    """Native values of `unit` at byte addresses base + offsets (any shape)."""
    size = unit.bits // 8
    idx = (np.int64(base) + offsets)[..., None] + np.arange(size, dtype=np.int64)
    raw = np.ascontiguousarray(mem[idx])
    return raw.view(U.native_dtype(unit)).reshape(offsets.shape)


def _imm(raw, field_bits, unit):
    """A value of `unit` held in an IMM field (D-CONV-IMM): the unit's bit pattern in the
    field's low bits; a unit wider than the field takes the whole field, sign-extended
    for signed integer units and zero-extended otherwise."""
    bits = unit.bits
    if bits > field_bits and unit.is_int and unit.signed and raw >> (field_bits - 1) & 1:
        raw -= 1 << field_bits
    pattern = raw & ((1 << bits) - 1)
    return np.frombuffer(pattern.to_bytes(bits // 8, "little"), dtype=U.native_dtype(unit))[0]


def _maxabs(a):
    """max |a| as a Python int (0 for an empty array)."""
    if not a.size:
        return 0
    return max(abs(int(a.max())), abs(int(a.min())))


def _exact(a, unit):
    """Native integers as exact int64, or Python ints for 64-bit units."""
    return a.astype(object) if unit.bits == 64 else a.astype(np.int64)


# --- operand geometry --------------------------------------------------------------------

class _Geometry:
    def __init__(self, x):
        f = x.f
        self.fmt = f["data_format"]
        self.C = f["fm_c"] or 1
        self.H = f["fm_h"] or 1
        self.W = f["fm_w"] or 1
        self.K = f["k_num"] or 1
        self.KH = f["k_h"] or 1
        self.KW = f["k_w"] or 1
        self.V = f["v_stride"] or 1
        self.S = f["h_stride"] or 1
        self.T, self.B, self.L, self.R = f["t_pad"], f["b_pad"], f["l_pad"], f["r_pad"]
        self.Hp, self.Wp = self.H + self.T + self.B, self.W + self.L + self.R
        self.ss, self.ls, self.kls = f["fm_surface_stride"], f["fm_line_stride"], f["k_line_stride"]
        self.n_red = self.C * self.KH * self.KW

    def outputs(self):
        self.Ho = (self.Hp - self.KH) // self.V + 1
        self.Wo = (self.Wp - self.KW) // self.S + 1
        self.n_out = self.K * self.Ho * self.Wo

    def fm_strides(self, esize):
        """(channel, line, pixel) strides in bytes."""
        if self.fmt == NCHW:
            return self.ss, self.ls, esize
        return esize, self.ls, self.ss

    def fm_span(self, esize):
        cs, ls, xs = self.fm_strides(esize)
        return (self.C - 1) * cs + (self.H - 1) * ls + (self.W - 1) * xs + esize

    def kernel_span(self, esize):
        return (self.K - 1) * self.kls + self.n_red * esize


# --- the shared operand checks and reads --------------------------------------------------

def _prepare(x, conv):
    """Every check of both instructions, in D-PRECEDENCE order, then the reads.
    Returns (geometry, P padded map (C, Hp, Wp) native, Wt kernels (K, R) native,
    units, params)."""
    f = x.f
    name = x.op.mnemonic
    fm_u, w_u, res_u = x.unit("fm_unit"), x.unit("w_unit"), x.unit("result_unit")
    punits = {}
    if conv:
        for p, _, _, uf in _PARAMS:
            punits[p] = x.unit(uf) if uf else DataUnit.U8

    # UNSUPPORTED_UNIT
    x.require(fm_u.is_float == w_u.is_float, Fault.UNSUPPORTED_UNIT,
              f"fm_unit = {fm_u.mnemonic} and w_unit = {w_u.mnemonic} mix an integer and a float operand")
    if conv:
        x.require(fm_u.is_int, Fault.UNSUPPORTED_UNIT,
                  f"fm_unit = {fm_u.mnemonic}, w_unit = {w_u.mnemonic}: {name} takes integer operands only")
        x.require(res_u.is_int, Fault.UNSUPPORTED_UNIT,
                  f"result_unit = {res_u.mnemonic}: {name} writes integer units only")
        for p, _, _, uf in _PARAMS:
            if uf:
                x.require(punits[p].is_int, Fault.UNSUPPORTED_UNIT,
                          f"{uf} = {punits[p].mnemonic}: {name} parameters are integers")

    # ILLEGAL_OPERAND
    g = _Geometry(x)
    x.require(g.fmt in _FORMATS, Fault.ILLEGAL_OPERAND, f"data_format = {g.fmt} is reserved (0 nhwc, 1 nchw)")
    pmode = f["padding_mode"]
    x.require(pmode in (PER_LAYER, PER_CHANNEL), Fault.ILLEGAL_OPERAND,
              f"padding_mode = {pmode} is reserved (0 per_layer, 1 per_channel)")
    if conv:
        for p, mf, _, _ in _PARAMS:
            x.require(f[mf] != 3, Fault.ILLEGAL_OPERAND,
                      f"{mf} = 3 is reserved (0 imm, 1 per_channel, 2 per_element)")
    unit_fields = [("fm_unit", fm_u), ("w_unit", w_u), ("result_unit", res_u)]
    if conv:
        unit_fields += [(uf, punits[p]) for p, _, _, uf in _PARAMS if uf]
    for uf, u in unit_fields:
        x.require(u.bits != 4, Fault.ILLEGAL_OPERAND, f"{uf} = {u.mnemonic}: int4 is not allowed in {name}")
    if not conv:
        x.require(res_u.bits == 32, Fault.ILLEGAL_OPERAND,
                  f"result_unit = {res_u.mnemonic}: the Matrix_Mul output is always 32 bits (s32, u32 or f32)")
    x.require(g.KH <= g.Hp and g.KW <= g.Wp, Fault.ILLEGAL_OPERAND,
              f"the {g.KH} x {g.KW} kernel (k_h = {f['k_h']}, k_w = {f['k_w']}) is larger than the padded "
              f"{g.Hp} x {g.Wp} map (fm_h = {f['fm_h']}, t_pad = {g.T}, b_pad = {g.B}; "
              f"fm_w = {f['fm_w']}, l_pad = {g.L}, r_pad = {g.R})")
    g.outputs()

    fe, we, re = fm_u.bits // 8, w_u.bits // 8, res_u.bits // 8
    reads = [("fm", f["fm"], g.fm_span(fe),
              f"{_FORMATS[g.fmt]} {g.C} x {g.H} x {g.W} {fm_u.mnemonic}, fm_surface_stride {g.ss}, "
              f"fm_line_stride {g.ls}"),
             ("kernel", f["kernel"], g.kernel_span(we),
              f"{g.K} x {g.C} x {g.KH} x {g.KW} {w_u.mnemonic}, k_line_stride {g.kls}")]
    if pmode == PER_CHANNEL:
        reads.append(("padding_addr", f["padding_addr"], g.C * fe, f"{g.C} per-channel padding values"))
    if conv:
        for p, mf, af, _ in _PARAMS:
            mode = f[mf]
            if mode != IMM:
                n = g.K if mode == PER_CH else g.n_out
                kind = "per-channel" if mode == PER_CH else "per-element"
                reads.append((af, f[af], n * (punits[p].bits // 8), f"{n} {kind} {p} values"))
    dst, dst_n = f["dst"], g.n_out * re
    for what, a, n, desc in reads:               # D-OVERLAP
        x.require(not (a < dst + dst_n and dst < a + n), Fault.ILLEGAL_OPERAND,
                  f"the destination {dst:#x}..{dst + dst_n:#x} overlaps {what} {a:#x}..{a + n:#x} "
                  f"({desc}); the destination may not overlap anything the instruction reads (D-OVERLAP)")

    # ADDRESS_RANGE
    for what, a, n, desc in reads:
        x.check_range(a, n, f"{what} ({desc})")
    x.check_range(dst, dst_n, f"destination ({g.K} x {g.Ho} x {g.Wo} {res_u.mnemonic})")

    # reads (D-SNAPSHOT: everything is read before anything is written)
    mem = x.mem
    cs, ls, xs = g.fm_strides(fe)
    offs = (np.arange(g.C, dtype=np.int64)[:, None, None] * cs
            + np.arange(g.H, dtype=np.int64)[None, :, None] * ls
            + np.arange(g.W, dtype=np.int64)[None, None, :] * xs)
    fmap = _gather(mem, f["fm"], fm_u, offs)
    field_bits = max(32, x.as_bits)
    if pmode == PER_LAYER:
        pad = np.full((g.C, 1, 1), _imm(f["padding_addr"], field_bits, fm_u), dtype=fmap.dtype)
    else:
        pad = U.read(mem, f["padding_addr"], fm_u, g.C).reshape(g.C, 1, 1)
    P = np.empty((g.C, g.Hp, g.Wp), dtype=fmap.dtype)
    P[...] = pad
    P[:, g.T:g.T + g.H, g.L:g.L + g.W] = fmap

    c = np.arange(g.C, dtype=np.int64)[:, None, None]
    ky = np.arange(g.KH, dtype=np.int64)[None, :, None]
    kx = np.arange(g.KW, dtype=np.int64)[None, None, :]
    inner = ((c * g.KH + ky) * g.KW + kx) if g.fmt == NCHW else ((ky * g.KW + kx) * g.C + c)
    koffs = np.arange(g.K, dtype=np.int64)[:, None] * g.kls + (inner * we).reshape(1, g.n_red)
    Wt = _gather(mem, f["kernel"], w_u, koffs)           # (K, R) in c, ky, kx order

    params = {}
    if conv:
        for p, mf, af, _ in _PARAMS:
            u, mode, a = punits[p], f[mf], f[af]
            if mode == IMM:
                raw = a & 0xFF if p == "shift" else a
                v = _imm(raw, field_bits, u)
                params[p] = np.array([int(v)], dtype=object if u.bits == 64 else np.int64).reshape(1, 1, 1)
            elif mode == PER_CH:
                params[p] = _exact(U.read(mem, a, u, g.K), u).reshape(g.K, 1, 1)
            else:
                v = _exact(U.read(mem, a, u, g.n_out), u)
                params[p] = _to_khw(v, g)
    return g, P, Wt, (fm_u, w_u, res_u), params


def _to_khw(v, g):
    """Values in output order as a (K, H_out, W_out) array."""
    if g.fmt == NCHW:
        return v.reshape(g.K, g.Ho, g.Wo)
    return v.reshape(g.Ho, g.Wo, g.K).transpose(2, 0, 1)


def _from_khw(v, g):
    """A (K, H_out, W_out) array flattened in output order."""
    if g.fmt == NCHW:
        return v.reshape(-1)
    return v.transpose(1, 2, 0).reshape(-1)


# --- the contraction ---------------------------------------------------------------------

def _im2col(P, g):
    """(H_out * W_out, R) view-based im2col matrix, columns in c, ky, kx order."""
    win = sliding_window_view(P, (g.KH, g.KW), axis=(1, 2))[:, ::g.V, ::g.S]   # (C, Ho, Wo, KH, KW)
    return win.transpose(1, 2, 0, 3, 4).reshape(g.Ho * g.Wo, g.n_red)


def _accumulate(P, Wt, g, is_float):
    """The accumulators as a (K, H_out, W_out) array: exact integers (int64 or
    object) or binary64 sequential sums. Temporaries are bounded by CHUNK elements
    (per block of output positions, and of kernels for the float products)."""
    cols = _im2col(P, g)
    n, r = cols.shape[0], g.n_red
    if is_float:
        Wf = Wt.astype(np.float64)
        acc = np.empty((n, g.K), dtype=np.float64)
        kstep = max(1, min(g.K, CHUNK // r))
        step = max(1, CHUNK // (kstep * r))
        with np.errstate(all="ignore"):
            for i in range(0, n, step):
                cf = cols[i:i + step].astype(np.float64)
                for k in range(0, g.K, kstep):
                    prod = cf[:, None, :] * Wf[None, k:k + kstep, :]          # (n, K, R)
                    acc[i:i + step, k:k + kstep] = np.add.accumulate(prod, axis=2)[:, :, -1]
        return acc.T.reshape(g.K, g.Ho, g.Wo)
    bound = _maxabs(P) * _maxabs(Wt) * r
    if bound < _F64_EXACT:          # every partial sum is an integer below 2**53: exact
        dtype, cdt, Wc = np.int64, np.float64, Wt.astype(np.float64).T
    elif bound < _I64_SAFE:
        dtype, cdt, Wc = np.int64, np.int64, Wt.astype(np.int64).T
    else:
        dtype, cdt, Wc = object, object, Wt.astype(object).T
    acc = np.empty((n, g.K), dtype=dtype)
    step = max(1, CHUNK // r)
    for i in range(0, n, step):
        acc[i:i + step] = (cols[i:i + step].astype(cdt) @ Wc).astype(dtype, copy=False)
    return acc.T.reshape(g.K, g.Ho, g.Wo)


# --- Matrix_Mul ----------------------------------------------------------------------------

@handler("matrix_mul")
def matrix_mul(x):
    g, P, Wt, (fm_u, w_u, res_u), _ = _prepare(x, conv=False)
    acc = _from_khw(_accumulate(P, Wt, g, fm_u.is_float), g)
    if fm_u.is_float:
        out = U.from_f64(acc, res_u)
    else:
        out = U.from_exact(acc, res_u, sat=False)          # s32/u32 wrap, f32 rounds once
    x.write(x.f["dst"], res_u, out)


# --- CONV2D --------------------------------------------------------------------------------

def _sext16(v):
    return v - (1 << 16) if v & 0x8000 else v


def _rshift_round(v, s):
    """floor((v + 2**(s-1)) / 2**s) for s > 0, v for s = 0 (Python ints)."""
    return (v + (1 << (s - 1))) >> s if s > 0 else v


_rshift_obj = np.frompyfunc(lambda v, s: _rshift_round(int(v), int(s)), 2, 1)


def _requantise(acc, params, clip_min, clip_max):
    """D-CONV on (K, H_out, W_out) exact accumulators; returns clipped int64 values."""
    bias, mul, shift, scale = (params[p] for p in ("bias", "mul", "shift", "scale_o"))
    vb = (_maxabs(acc) + _maxabs(bias)) * _maxabs(mul)
    if vb < (1 << 61) and _maxabs(scale) < (1 << 61) and all(
            a.dtype != object for a in (acc, bias, mul, scale)):
        v = (acc.astype(np.int64) + bias) * mul
        s = np.minimum(shift, 62)             # |v| < 2**61: any shift >= 62 rounds to 0
        half = np.where(s > 0, np.left_shift(np.int64(1), np.maximum(s - 1, 0)), 0)
        v = (v + half) >> s
        v = v + scale
    else:
        v = (acc.astype(object) + bias.astype(object)) * mul.astype(object)
        v = _rshift_obj(v, shift.astype(object))
        v = v + scale.astype(object)
    v = np.minimum(np.maximum(v, clip_min), clip_max)
    return np.asarray(v).astype(np.int64)


@handler("conv2d")
def conv2d(x):
    g, P, Wt, (fm_u, w_u, res_u), params = _prepare(x, conv=True)
    acc = _accumulate(P, Wt, g, False)
    clip_min, clip_max = _sext16(x.f["clip_min"]), _sext16(x.f["clip_max"])
    v = _requantise(acc, params, clip_min, clip_max)
    x.write(x.f["dst"], res_u, U.from_exact(_from_khw(v, g), res_u, sat=True))
