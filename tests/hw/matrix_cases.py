"""Case builders for the matrix-engine tests: lay out a feature map, kernels,
padding values, CONV2D parameter arrays and a destination in memory and return
the instruction's operand fields as a `Case`.

`conv` places everything from ``at`` upwards in this order (each operand at a
chosen byte misalignment, with optional gaps in every stride), fills the data
regions with values drawn from the given distributions (``patches``; the rest of
memory is random) and lets a caller override any field afterwards (faults).
"""

import random

import numpy as np

from xdsa.golden.isa import DataUnit

from matrix_harness import Case, DATA_AT

U = {u.mnemonic: u for u in DataUnit}
IMM, PER_CH, PER_ELEM = 0, 1, 2


def irange(unit):
    u = U[unit]
    if u.signed:
        return -(1 << (u.bits - 1)), (1 << (u.bits - 1)) - 1
    return 0, (1 << u.bits) - 1


def values(rng, unit, n, dist="uniform", lo=None, hi=None):
    """n values of an integer unit: 'uniform' over the range (or [lo, hi]), 'edge'
    (mostly the extremes), 'small'."""
    a, b = irange(unit)
    if lo is not None:
        a, b = max(a, lo), min(b, hi)
    if dist == "edge":
        return [rng.choice([a, b, a, b, a + 1, b - 1, 0]) for _ in range(n)]
    if dist == "small":
        return [rng.randint(max(a, -3), min(b, 3)) for _ in range(n)]
    return [rng.randint(a, b) for _ in range(n)]


# typical requantisation parameters: results near the int8 range for typical sums
_TAME = {"bias": (-1000, 1000), "mul": (-4096, 4096), "shift": (8, 18), "scale": (-30, 30)}


def tame(rng, p, unit, n):
    lo, hi = _TAME[p]
    return values(rng, unit, n, lo=lo, hi=hi)


def enc(unit, vals):
    u = U[unit]
    return b"".join(int(v).to_bytes(u.bits // 8, "little", signed=u.signed) for v in vals)


def conv(name, op="conv2d", *, fmt="nhwc", C=3, H=4, W=4, K=3, KH=3, KW=3, fm_unit="s8", w_unit="s8",
         result_unit=None, pads=(1, 1, 1, 1), strides=(1, 1), padding=("imm", 0), params=None,
         clip=(-128, 127), gaps=(0, 0, 0, 0), align=(0, 0, 0, 0), dist="uniform", wdist=None,
         as_bits=32, seed=0, at=DATA_AT, **override):
    """A CONV2D (op='conv2d') or Matrix_Mul (op='matrix_mul') case.

    pads = (t, b, l, r); strides = (h_stride, v_stride); padding = ("imm", value) or
    ("per_channel", [values] or None for random); params = {name: (mode, value or
    None)} for bias/mul/shift/scale (CONV2D), units in params as p_unit=...;
    gaps = extra bytes per (pixel/channel-plane, line, kernel, 0); align = byte
    offsets of (fm, kernel, dst, params)."""
    rng = random.Random(seed * 7919 + 17)
    fe, we = U[fm_unit].bits // 8 if U[fm_unit].bits >= 8 else 1, U[w_unit].bits // 8 if U[w_unit].bits >= 8 else 1
    result_unit = result_unit or ("s32" if op == "matrix_mul" else "s8")
    re = max(1, U[result_unit].bits // 8)
    t, b, l, r = pads
    hs, vs = strides
    Hp, Wp = H + t + b, W + l + r
    Ho = max(1, (Hp - KH) // vs + 1) if KH <= Hp else 1
    Wo = max(1, (Wp - KW) // hs + 1) if KW <= Wp else 1
    if fmt == "nhwc":
        ss = C * fe + gaps[0]
        ls = W * ss + gaps[1]
        fm_span = (H - 1) * ls + (W - 1) * ss + C * fe
        cs, xs = fe, ss
    else:
        ls = W * fe + gaps[1]
        ss = H * ls + gaps[0]
        fm_span = (C - 1) * ss + (H - 1) * ls + W * fe
        cs, xs = ss, fe
    kls = C * KH * KW * we + gaps[2]
    patches = []
    pos = at

    def place(nbytes, off):
        nonlocal pos
        a = pos + off
        pos = a + nbytes + 8
        pos = (pos + 31) & ~31
        return a

    fm = place(fm_span, align[0])
    fm_vals = np.zeros(fm_span, dtype=np.uint8)
    for c in range(C):
        for y in range(H):
            for x in range(W):
                a = c * cs + y * ls + x * xs
                fm_vals[a:a + fe] = np.frombuffer(enc(fm_unit, values(rng, fm_unit, 1, dist)), dtype=np.uint8)
    patches.append((fm, bytes(fm_vals)))     # the gaps take zeros, which the engine must not read
    kernel = place((K - 1) * kls + C * KH * KW * we, align[1])
    for k in range(K):
        patches.append((kernel + k * kls, enc(w_unit, values(rng, w_unit, C * KH * KW, wdist or dist))))
    f = {"fm": fm, "kernel": kernel, "fm_unit": int(U[fm_unit]), "w_unit": int(U[w_unit]),
         "result_unit": int(U[result_unit]), "data_format": 0 if fmt == "nhwc" else 1,
         "t_pad": t, "b_pad": b, "l_pad": l, "r_pad": r, "h_stride": hs, "v_stride": vs,
         "fm_surface_stride": ss, "fm_line_stride": ls, "fm_c": C, "fm_h": H, "fm_w": W,
         "k_h": KH, "k_w": KW, "k_line_stride": kls, "k_num": K}
    kind, pv = padding
    if kind == "imm":
        f["padding_mode"] = 0
        f["padding_addr"] = pv & 0xFFFFFFFF if pv is not None else rng.getrandbits(32)
    else:
        f["padding_mode"] = 1
        pa = place(C * fe, 0)
        pvals = pv if pv is not None else values(rng, fm_unit, C)
        patches.append((pa, enc(fm_unit, pvals)))
        f["padding_addr"] = pa
    if op == "conv2d":
        params = dict(params or {})
        units = {"bias": params.pop("bias_unit", "s32"), "mul": params.pop("mul_unit", "s32"),
                 "shift": "u8", "scale": params.pop("scale_unit", "s16")}
        defaults = {"bias": (IMM, 0), "mul": (IMM, 1), "shift": (IMM, 0), "scale": (IMM, 0)}
        n_out = K * Ho * Wo
        for p in ("bias", "mul", "shift", "scale"):
            mode, v = params.get(p, defaults[p])
            mf = {"bias": "bias_mode", "mul": "mul_mode", "shift": "shift_mode", "scale": "scale_mode"}[p]
            af = {"bias": "bias_addr", "mul": "mul_addr", "shift": "shift_addr", "scale": "scale_o_addr"}[p]
            f[mf] = mode
            if p != "shift":
                f[f"{p}_unit" if p != "scale" else "scale_unit"] = int(U[units[p]])
            if mode == IMM:
                f[af] = (v if v is not None else tame(rng, p, units[p], 1)[0]) & 0xFFFFFFFF
            elif mode in (PER_CH, PER_ELEM):
                cnt = K if mode == PER_CH else n_out
                vals = v(rng, cnt) if callable(v) else (v if v is not None else tame(rng, p, units[p], cnt))
                a = place(cnt * (U[units[p]].bits // 8), align[3])
                patches.append((a, enc(units[p], vals)))
                f[af] = a
            else:
                f[af] = rng.getrandbits(16)
        f["clip_min"], f["clip_max"] = clip[0] & 0xFFFF, clip[1] & 0xFFFF
    dst = place(K * Ho * Wo * re, align[2])
    f["dst"] = dst
    f.update(override)
    return Case(name, op, f, as_bits, seed, patches)


def gemm(name, M, Kd, Nn, *, fmt="nhwc", **kw):
    """Matrix_Mul as a GEMM (K_H = K_W = 1): Nn positions of Kd channels times M kernels."""
    return conv(name, "matrix_mul", fmt=fmt, C=Kd, H=1, W=Nn, K=M, KH=1, KW=1, pads=(0, 0, 0, 0), **kw)
