"""Case generators of the vector engine tests (see test_vector_harness.py).

`sweep(cfg)`: every opcode x every integer unit (short random vectors with edge
values, random alignment, random sat/rnd), plus mixed units, shift amounts,
overlaps, faults, reduction axes and address spaces. Sources are placed in four
disjoint regions of the memory, each at a random byte offset.
"""

import random

import numpy as np

from xdsa.golden.isa import DataUnit, by_mnemonic
from xdsa.hw.vector_ops import OPS

from test_vector_harness import Case, INT_UNITS

REGION = {"s0": 0x300, "s1": 0x700, "s2": 0xB00, "d": 0xF00}
FIELD_OF = {"s0": ("src0", "src"), "s1": ("src1",), "s2": ("src2",), "d": ("dst",)}
UNIT_OF = {"s0": ("src0_unit", "src_unit"), "s1": ("src1_unit",), "s2": ("src2_unit",), "d": ("dst_unit",)}


def names(mnemonic):
    return {f.name for f in by_mnemonic(mnemonic).table.resolve(32).fields}


def edge_values(unit):
    b = unit.bits
    lo, hi = (-(1 << (b - 1)), (1 << (b - 1)) - 1) if unit.signed else (0, (1 << b) - 1)
    return sorted({lo, hi, 0, 1, lo + 1, hi - 1, -1 if unit.signed else 2, hi // 2, lo // 2 if unit.signed else 3})


def encode(unit, values):
    """Native little-endian bytes of integer `values` in `unit` (int4 packed)."""
    b = unit.bits
    mask = (1 << b) - 1
    if b == 4:
        nib = [v & 0xF for v in values]
        if len(nib) % 2:
            nib.append(0)
        return bytes(nib[i] | (nib[i + 1] << 4) for i in range(0, len(nib), 2))
    return b"".join(((v & mask).to_bytes(b // 8, "little")) for v in values)


def make(mnemonic, units, n, *, rng, seed, addr=None, as_bits=32, edges=True, name=None, values=None, **extra):
    """A case: `units` {role: DataUnit}, `n` elements, addresses in the regions at
    random offsets (or `addr` {role: address}); edge values patched over the first
    source elements; `values` {role: [ints]} patches explicit values."""
    nm = names(mnemonic)
    f = {}
    addr = dict(addr or {})
    for role in ("s0", "s1", "s2", "d"):
        for fld in FIELD_OF[role]:
            if fld in nm:
                f[fld] = addr.get(role, REGION[role] + rng.randrange(0, 64))
                addr[role] = f[fld]
        for fld in UNIT_OF[role]:
            if fld in nm and role in units:
                f[fld] = int(units[role])
    if "len" in nm:
        f["len"] = n
    for k in ("sat", "rnd", "lt"):
        if k in nm:
            f[k] = rng.randrange(2)
    if "thres" in nm:
        f["thres"] = rng.choice([0, 1, -1, 7, -8, 100, -100, 300, -300, 32767, -32768, rng.randrange(-32768, 32768)])
    if "clip_min" in nm:
        f["clip_min"] = rng.choice([-5, 0, 3, -200, 200, -30000, rng.randrange(-32768, 32768)])
        f["clip_max"] = rng.choice([5, 100, -3, 250, 3000, 30000, rng.randrange(-32768, 32768)])
    f.update({k: v for k, v in extra.items() if k in nm})
    patches = []
    for role, vals in (values or {}).items():
        patches.append((addr[role], encode(units[role], vals)))
    if edges and values is None:
        for role in ("s0", "s1", "s2"):
            if role in addr and role in units:
                ev = edge_values(units[role])
                rng.shuffle(ev)
                k = min(len(ev), n)
                patches.append((addr[role], encode(units[role], ev[:k])))
    return Case(name or f"{mnemonic}_{'_'.join(u.mnemonic for u in units.values())}_n{n}",
                mnemonic, f, as_bits, seed, patches)


def role_units(mnemonic, unit):
    info = OPS[mnemonic]
    if info.bytes_only:
        return {"s0": DataUnit.U8, "s1": DataUnit.U8, "d": DataUnit.U8}
    return {r: unit for r in info.units} | ({"d": unit} if "d" in info.units else {})


def sweep(cfg, seed=0):
    """Every opcode x every integer unit, one short random vector each."""
    rng = random.Random(seed)
    out = []
    k = 0
    for mn, info in OPS.items():
        for unit in INT_UNITS:
            if info.bytes_only and unit != DataUnit.U8:
                continue
            k += 1
            if info.reduction and mn != "asum":
                out.append(reduce_case(mn, unit, rng=rng, seed=seed * 10_000 + k))
                continue
            units = role_units(mn, unit)
            if mn in ("sxt", "uxt"):            # widen to the next legal width
                dst = {4: 8, 8: 16, 16: 32, 32: 64, 64: 64}[unit.bits]
                units["d"] = [u for u in INT_UNITS if u.bits == dst and u.signed == unit.signed][0]
            if mn == "nsr" and unit.bits >= 8:
                units["d"] = [u for u in INT_UNITS if u.bits == unit.bits // 2 and u.signed == unit.signed][0]
            if info.shift_amount:
                units["s1"] = rng.choice([DataUnit.U8, unit])
            n = rng.randrange(8, 49) if unit.bits < 64 else rng.randrange(4, 20)
            if mn in ("div", "mod", "pow") and unit.bits == 64:
                n = rng.randrange(3, 9)
            values = None
            if info.shift_amount:
                w = unit.bits
                amounts = [rng.choice([0, 1, w - 1, w, w + 1, w + 2, 2 * w, rng.randrange(0, w),
                                       rng.randrange(0, 256)]) % (1 << units["s1"].bits) for _ in range(n)]
                src = edge_values(unit) * 8
                rng.shuffle(src)
                values = {"s0": src[:n], "s1": amounts}
            if mn == "pow":
                b1 = units["s1"]
                ys = [rng.choice([0, 1, 2, 3, 5, 7, 15, 63, 64, -1, -2, -3, rng.randrange(0, 1 << min(b1.bits, 16))])
                      for _ in range(n)]
                ys = [y % (1 << b1.bits) if not b1.signed else max(min(y, (1 << (b1.bits - 1)) - 1),
                                                                  -(1 << (b1.bits - 1))) for y in ys]
                xs = edge_values(unit) * 8
                xs = [rng.choice([x, rng.choice([0, 1, -1, 2, -2, 3])]) for x in xs]
                if not unit.signed:
                    xs = [x % (1 << unit.bits) for x in xs]
                rng.shuffle(xs)
                values = {"s0": xs[:n], "s1": ys}
            out.append(make(mn, units, n, rng=rng, seed=seed * 10_000 + k, values=values))
    return out


def reduce_case(mn, unit, *, rng, seed, axis=None, dims=None, addr=None, as_bits=32, name=None):
    fw, fh, fc = dims or (rng.randrange(0, 7), rng.randrange(0, 5), rng.randrange(0, 4))
    ax = axis if axis is not None else rng.randrange(1, 8)
    f = {"src": addr[0] if addr else REGION["s0"] + rng.randrange(0, 64),
         "dst": addr[1] if addr else REGION["d"] + rng.randrange(0, 64),
         "fw": fw, "fh": fh, "fc": fc, "axis": ax, "src_unit": int(unit)}
    n = max(fw, 1) * max(fh, 1) * max(fc, 1)
    patches = [(f["src"], encode(unit, edge_values(unit)[:n]))] if rng.random() < 0.5 else []
    if mn == "reduce_prod" and rng.random() < 0.6:           # small factors so that products stay in range
        vals = [rng.choice([1, 1, 2, -1, 3]) if unit.signed else rng.choice([1, 1, 2, 3]) for _ in range(n)]
        patches = [(f["src"], encode(unit, vals))]
    return Case(name or f"{mn}_{unit.mnemonic}_ax{ax}_{fc}x{fh}x{fw}", mn, f, as_bits, seed, patches)


def mixed(cfg, seed=1):
    """Mixed units, narrowing with and without sat, wide products, shifts."""
    rng = random.Random(seed)
    S = {u.mnemonic: u for u in INT_UNITS}
    spec = [
        ("add", "s8", "u8", "s16", {}), ("add", "u8", "s8", "s16", {}), ("sub", "u8", "u8", "s8", {"sat": 1}),
        ("sub", "u8", "u8", "s8", {"sat": 0}), ("add", "s32", "s32", "s8", {"sat": 1}),
        ("add", "s32", "s32", "s8", {"sat": 0}), ("add", "u64", "s64", "s64", {"sat": 1}),
        ("add", "u64", "u64", "u64", {"sat": 1}), ("sub", "s64", "u64", "u32", {"sat": 1}),
        ("mul", "s32", "s32", "s64", {}), ("mul", "s32", "s32", "s32", {"sat": 1}),
        ("mul", "u64", "u64", "u64", {"sat": 1}), ("mul", "s64", "s64", "s64", {"sat": 0}),
        ("mul", "u8", "s64", "s16", {"sat": 1}), ("mul", "s4", "u4", "s8", {}), ("mul", "u16", "s8", "s32", {}),
        ("mul", "s64", "u64", "u64", {"sat": 1}), ("mul", "u32", "u64", "s64", {"sat": 1}),
        ("div", "s32", "s8", "s16", {"sat": 1}), ("div", "s8", "s8", "u8", {"sat": 0}),
        ("div", "u64", "s8", "s64", {"sat": 1}), ("mod", "s16", "u8", "s16", {}),
        ("max", "s8", "u8", "s16", {}), ("min", "u32", "s32", "s32", {"sat": 1}),
        ("slt", "s8", "u8", "u8", {}), ("seq", "s64", "u64", "s4", {}), ("sgt", "u4", "s4", "u8", {}),
        ("maxsi", "s16", "u16", "u8", {}), ("minsi", "u64", "s64", "s32", {}),
        ("pow", "s8", "u8", "s32", {"sat": 1}), ("pow", "s16", "s8", "s64", {"sat": 0}),
        ("pow", "u4", "u4", "u64", {"sat": 1}), ("pow", "s32", "u8", "s32", {"sat": 1}),
        ("asl", "s8", "u8", "s32", {"sat": 1}), ("asl", "s32", "u8", "s16", {"sat": 0}),
        ("asl", "s64", "u8", "s64", {"sat": 1}), ("asl", "u16", "u16", "u8", {"sat": 1}),
        ("lsl", "s8", "u8", "s32", {}), ("lsr", "s16", "u4", "s64", {}), ("ror", "s32", "u64", "s8", {}),
        ("ror", "u4", "u8", "u4", {}), ("asr", "s32", "u8", "s8", {"rnd": 1}), ("asr", "u16", "s8", "s32", {"rnd": 1}),
        ("nsr", "s16", "u8", "u8", {"sat": 1, "rnd": 1}), ("nsr", "u64", "u8", "s32", {"sat": 1, "rnd": 0}),
        ("nsr", "s8", "u8", "s4", {"sat": 0, "rnd": 1}),
        ("sxt", "u8", None, "s32", {}), ("uxt", "s8", None, "u64", {}), ("sxt", "u4", None, "u8", {}),
        ("data_convert", "s64", None, "u8", {"sat": 1}), ("data_convert", "s64", None, "u8", {"sat": 0}),
        ("data_convert", "u8", None, "s4", {"sat": 1}), ("data_convert", "s4", None, "u64", {"sat": 1}),
        ("data_convert", "u32", None, "s16", {"sat": 0}), ("abs", "s64", None, "s64", {"sat": 0}),
        ("abs", "s8", None, "s8", {"sat": 1}), ("abs", "s8", None, "u8", {}), ("sign", "s32", None, "s4", {}),
        ("thres", "s8", None, "s32", {"thres": -300, "lt": 1}), ("thres", "u8", None, "u8", {"thres": 300, "lt": 1}),
        ("thres", "s4", None, "s8", {"thres": -9, "lt": 0}), ("thres", "u16", None, "s8", {"thres": 65535, "lt": 1}),
        ("clip", "u8", None, "u8", {"clip_min": 300, "clip_max": 400, "sat": 0}),
        ("clip", "u8", None, "u8", {"clip_min": 300, "clip_max": 400, "sat": 1}),
        ("clip", "s8", None, "s16", {"clip_min": 50, "clip_max": -50}),
        ("clip", "s4", None, "s8", {"clip_min": -20, "clip_max": 3}),
        ("clip", "u4", None, "s8", {"clip_min": -2, "clip_max": 40}),
        ("clip", "s64", None, "s8", {"clip_min": -1000, "clip_max": 1000, "sat": 1}),
        ("round", "s16", None, "u8", {"sat": 1}), ("floor", "u64", None, "s8", {"sat": 0}),
        ("median", "s8", "u8", "s16", {"src2_unit": DataUnit.S32}), ("median", "u4", "s64", "u8", {"sat": 1,
                                                                                              "src2_unit": DataUnit.S4}),
        ("asum", "s8", None, "s64", {}), ("asum", "u8", None, "u8", {"sat": 1}), ("asum", "u8", None, "u8", {"sat": 0}),
        ("asum", "s64", None, "s64", {"sat": 1}), ("asum", "s64", None, "s4", {"sat": 0}),
        ("asum", "u4", None, "s4", {"sat": 1}),
    ]
    out = []
    for i, (mn, u0, u1, ud, extra) in enumerate(spec):
        units = {"s0": S[u0], "d": S[ud]}
        if u1:
            units["s1"] = S[u1]
        if "src2_unit" in extra:
            units["s2"] = extra.pop("src2_unit")
        n = rng.randrange(8, 40)
        out.append(make(mn, units, n, rng=rng, seed=100 + i, name=f"mixed_{i}_{mn}_{u0}_{u1}_{ud}", **extra))
    return out


def directed(cfg, seed=2):
    """Lengths, alignment, overlaps, faults, address spaces."""
    rng = random.Random(seed)
    mem = cfg.mem_bytes
    s8, u8, s16, u4, s4, s32, u32, s64 = (DataUnit.S8, DataUnit.U8, DataUnit.S16, DataUnit.U4, DataUnit.S4,
                                          DataUnit.S32, DataUnit.U32, DataUnit.S64)
    B = {"s0": s8, "s1": s8, "d": s8}
    out = []

    def add(name, mn, units, n, **kw):
        out.append(make(mn, units, n, rng=rng, seed=200 + len(out), name=name, **kw))

    add("len0_add", "add", B, 0)
    add("len0_out_of_range", "add", B, 0, addr={"s0": 1 << 30, "s1": 1 << 31, "d": 5 << 29})
    add("len0_asum_out_of_range", "asum", {"s0": s8, "d": s8}, 0, addr={"s0": 1 << 30, "d": 1 << 31})
    add("len0_abs_unsigned", "abs", {"s0": u8, "d": u8}, 0)
    add("len1_add", "add", B, 1)
    for n in (2, 3, 7, 9, 15, 17, 31, 33):
        add(f"int4_odd_{n}", "add", {"s0": u4, "s1": s4, "d": s4}, n, sat=1)
        add(f"int4_narrow_{n}", "nsr", {"s0": s8, "s1": u8, "d": s4}, n, sat=1, rnd=1)
    add("int4_from_s64", "data_convert", {"s0": s64, "d": s4}, 5, sat=1)
    add("int4_to_s64", "sxt", {"s0": s4, "d": s64}, 7)
    for a in range(8):
        add(f"align_{a}", "add", {"s0": s16, "s1": s8, "d": s32}, 21,
            addr={"s0": 0x400 + a, "s1": 0x800 + 7 - a, "d": 0xC00 + (3 * a) % 8})
    # D-OVERLAP
    add("inplace_legal", "add", B, 30, addr={"s0": 0x500, "s1": 0x900, "d": 0x500})
    add("dst_below_legal", "sub", B, 30, addr={"s0": 0x505, "s1": 0x900, "d": 0x500})
    add("dst_above_illegal", "sub", B, 30, addr={"s0": 0x500, "s1": 0x900, "d": 0x501})
    add("narrow_inplace_legal", "data_convert", {"s0": s32, "d": s8}, 20, addr={"s0": 0x500, "d": 0x500}, sat=1)
    add("narrow_inplace_ahead_illegal", "data_convert", {"s0": s32, "d": s8}, 20, addr={"s0": 0x500, "d": 0x540})
    add("narrow_inplace_shifted_legal", "data_convert", {"s0": s32, "d": s8}, 20, addr={"s0": 0x500, "d": 0x503})
    add("widen_inplace_illegal", "data_convert", {"s0": s8, "d": s32}, 20, addr={"s0": 0x500, "d": 0x500})
    add("widen_below_legal", "data_convert", {"s0": s8, "d": s16}, 20, addr={"s0": 0x520, "d": 0x500})
    add("src1_overlap_illegal", "mul", {"s0": s16, "s1": s16, "d": s16}, 12,
        addr={"s0": 0x400, "s1": 0x600, "d": 0x601})
    add("src1_inplace_legal", "mul", {"s0": s16, "s1": s16, "d": s16}, 12, addr={"s0": 0x400, "s1": 0x600, "d": 0x600})
    add("int4_inplace_legal", "add", {"s0": u4, "s1": u4, "d": u4}, 25, addr={"s0": 0x500, "s1": 0x900, "d": 0x500})
    add("int4_narrow_inplace", "nsr", {"s0": u8, "s1": u8, "d": u4}, 25, addr={"s0": 0x500, "s1": 0x900, "d": 0x500})
    add("median_src2_overlap", "median", {"s0": s8, "s1": s8, "s2": s8, "d": s8}, 16,
        addr={"s0": 0x400, "s1": 0x600, "s2": 0x800, "d": 0x801})
    add("median_inplace", "median", {"s0": s8, "s1": s8, "s2": s16, "d": s8}, 16,
        addr={"s0": 0x400, "s1": 0x600, "s2": 0x800, "d": 0x800})
    add("logic_overlap_illegal", "xor", {"s0": u8, "s1": u8, "d": u8}, 16, addr={"s0": 0x400, "s1": 0x600, "d": 0x602})
    add("inv_ignores_src1", "inv", {"s0": u8, "s1": u8, "d": u8}, 16, addr={"s0": 0x400, "s1": 1 << 30, "d": 0x600})
    add("asum_overlap_legal", "asum", {"s0": s8, "d": s32}, 16, addr={"s0": 0x400, "d": 0x402})
    add("sxt_ignores_src1", "sxt", {"s0": s8, "d": s16}, 16, addr={"s0": 0x400, "s1": 1 << 30, "d": 0x600})
    # faults
    for fu in (DataUnit.FP16, DataUnit.FP32, DataUnit.FP64):
        add(f"float_{fu.mnemonic}_dst", "add", {"s0": s8, "s1": s8, "d": fu}, 8)
        add(f"float_{fu.mnemonic}_src1", "mul", {"s0": s8, "s1": fu, "d": s8}, 8)
    add("float_beats_overlap", "sub", {"s0": s8, "s1": DataUnit.FP32, "d": s8}, 8,
        addr={"s0": 0x500, "s1": 0x900, "d": 0x501})
    add("float_beats_range", "abs", {"s0": DataUnit.FP16, "d": s8}, 8, addr={"s0": mem, "d": 0x900})
    add("float_len0", "sign", {"s0": DataUnit.FP64, "d": s8}, 0)
    add("float_asum_len0", "asum", {"s0": DataUnit.FP32, "d": s8}, 0)
    add("abs_unsigned", "abs", {"s0": u32, "d": s32}, 8)
    add("abs_unsigned_beats_overlap", "abs", {"s0": u8, "d": u8}, 8, addr={"s0": 0x500, "d": 0x501})
    add("asr_64", "asr", {"s0": s64, "s1": u8, "d": s64}, 8)
    add("nsr_not_half", "nsr", {"s0": s32, "s1": u8, "d": s8}, 8)
    add("nsr_4", "nsr", {"s0": s4, "s1": u8, "d": s4}, 8)
    add("sxt_same", "sxt", {"s0": s16, "d": s16}, 8)
    add("uxt_64", "uxt", {"s0": DataUnit.U64, "d": s64}, 8)
    add("uxt_to_4", "uxt", {"s0": u4, "d": u4}, 8)
    add("range_dst", "add", B, 10, addr={"s0": 0x400, "s1": 0x600, "d": mem - 9})
    add("range_dst_fits", "add", B, 10, addr={"s0": 0x400, "s1": 0x600, "d": mem - 10})
    add("range_src1", "add", {"s0": s8, "s1": s32, "d": s8}, 10, addr={"s0": 0x400, "s1": mem - 39, "d": 0x600})
    add("range_src1_fits", "add", {"s0": s8, "s1": s32, "d": s8}, 10, addr={"s0": 0x400, "s1": mem - 40, "d": 0x600})
    add("range_int4_odd_fits", "add", {"s0": u4, "s1": u4, "d": u4}, 9, addr={"s0": mem - 5, "s1": 0x600, "d": 0x800})
    add("range_int4_even", "add", {"s0": u4, "s1": u4, "d": u4}, 10, addr={"s0": mem - 4, "s1": 0x600, "d": 0x800})
    add("range_median_src2", "median", {"s0": s8, "s1": s8, "s2": s8, "d": s8}, 8,
        addr={"s0": 0x400, "s1": 0x500, "s2": mem - 7, "d": 0x600})
    add("range_as64_top", "add", B, 8, addr={"s0": (1 << 64) - 4, "s1": 0x500, "d": 0x600}, as_bits=64)
    add("range_as64_huge_len", "add", B, (1 << 64) - 1, addr={"s0": 0x500, "s1": 0x600, "d": 0x400}, as_bits=64)
    add("overlap_huge_len", "add", B, (1 << 63) + 5, addr={"s0": 0x400, "s1": 0x500, "d": 0x401}, as_bits=64)
    add("illegal_beats_range", "add", B, 10, addr={"s0": 0x400, "s1": mem - 2, "d": 0x401})
    add("range_as16", "add", B, 8, addr={"s0": 0xFFF0, "s1": 0x500, "d": 0x600}, as_bits=16)
    add("as16", "mul", {"s0": s16, "s1": s8, "d": s32}, 12, as_bits=16)
    add("as64", "sub", {"s0": s16, "s1": s8, "d": s32}, 12, as_bits=64)
    add("as64_median", "median", {"s0": s8, "s1": u8, "s2": s16, "d": s8}, 12, as_bits=64)
    # shift amounts: 0, width, beyond, huge
    for mn in ("lsl", "lsr", "ror", "asl", "asr", "nsr"):
        for w in (s8, DataUnit.U16, s32, s64):
            if mn == "asr" and w.bits == 64:
                continue
            d = w
            if mn == "nsr":
                d = [u for u in INT_UNITS if u.bits == w.bits // 2 and u.signed == w.signed][0]
            a_unit = DataUnit.U64 if w.bits == 64 else u32
            amounts = [0, w.bits, w.bits + 1, w.bits - 1, 1, 2 * w.bits, (1 << 64) - 1, 1 << 40, w.bits + 2,
                       w.bits // 2, 63, 64, 65]
            vals = [(-1) if w.signed else 1, 1, -5 if w.signed else 5, (1 << (w.bits - 1)) - 1,
                    -(1 << (w.bits - 1)) if w.signed else (1 << w.bits) - 1, 7, 3, 2, -3 if w.signed else 9,
                    100, 1, -1 if w.signed else 6, 5]
            add(f"amounts_{mn}_{w.mnemonic}", mn, {"s0": w, "s1": a_unit, "d": d}, len(vals),
                values={"s0": vals, "s1": amounts}, sat=1, rnd=1)
    # division edge values
    for u in (s8, s32, s64, DataUnit.U64):
        lo = -(1 << (u.bits - 1)) if u.signed else (1 << u.bits) - 1
        for mn in ("div", "mod"):
            add(f"{mn}_edges_{u.mnemonic}", mn, {"s0": u, "s1": u, "d": u}, 8,
                values={"s0": [lo, lo, 7, -7 if u.signed else 7, 0, 5, lo, 1],
                        "s1": [-1 if u.signed else 1, 0, 0, 2, 0, -3 if u.signed else 3, lo, lo]}, sat=0)
            add(f"{mn}_edges_sat_{u.mnemonic}", mn, {"s0": u, "s1": u, "d": u}, 8,
                values={"s0": [lo, lo, 7, -7 if u.signed else 7, 0, 5, lo, 1],
                        "s1": [-1 if u.signed else 1, 0, 0, 2, 0, -3 if u.signed else 3, lo, lo]}, sat=1)
    # reductions: every axis mask, faults
    for ax in range(8):
        for u in (s8, DataUnit.U16, s32):
            out.append(reduce_case(["reduce_sum", "reduce_max", "reduce_mean", "reduce_var"][ax % 4], u, rng=rng,
                                   seed=300 + len(out), axis=ax, dims=(5, 3, 2), name=f"axis{ax}_{u.mnemonic}"))
    out.append(reduce_case("reduce_min", s4, rng=rng, seed=400, axis=2, dims=(3, 3, 3), name="reduce_int4_odd"))
    out.append(reduce_case("reduce_sum", u4, rng=rng, seed=401, axis=7, dims=(0, 0, 0), name="reduce_single"))
    out.append(reduce_case("reduce_prod", s64, rng=rng, seed=402, axis=1, dims=(4, 2, 1), name="reduce_prod_s64"))
    out.append(reduce_case("reduce_var", s64, rng=rng, seed=403, axis=3, dims=(3, 2, 1), name="reduce_var_s64"))
    out.append(reduce_case("reduce_var", DataUnit.U64, rng=rng, seed=404, axis=6, dims=(2, 2, 2),
                           name="reduce_var_u64"))
    out.append(reduce_case("reduce_mean", s64, rng=rng, seed=405, axis=5, dims=(3, 2, 2), name="reduce_mean_s64"))
    out.append(reduce_case("reduce_sum", s8, rng=rng, seed=406, axis=1, dims=(7, 1, 1),
                           addr=(mem - 6, 0x600), name="reduce_src_range"))
    out.append(reduce_case("reduce_sum", s8, rng=rng, seed=407, axis=1, dims=(7, 2, 1),
                           addr=(0x400, mem - 1), name="reduce_dst_range"))
    out.append(reduce_case("reduce_sum", s8, rng=rng, seed=408, axis=1, dims=(7, 2, 1),
                           addr=(0x400, mem - 2), name="reduce_dst_fits"))
    out.append(reduce_case("reduce_any", DataUnit.FP32, rng=rng, seed=409, axis=1, dims=(7, 2, 1),
                           name="reduce_float"))
    out.append(reduce_case("reduce_all", s8, rng=rng, seed=410, axis=0, dims=(4095, 4095, 4095),
                           addr=(1 << 40, 1 << 41), as_bits=64, name="reduce_axis0_beats_range"))
    out.append(reduce_case("reduce_all", s8, rng=rng, seed=411, axis=7, dims=(4095, 4095, 4095),
                           name="reduce_huge_range"))
    out.append(reduce_case("reduce_max", s8, rng=rng, seed=412, axis=4, dims=(3, 2, 4), addr=(0x400, 0x401),
                           name="reduce_overlap_legal"))
    out.append(reduce_case("reduce_sum", DataUnit.U32, rng=rng, seed=413, axis=2, dims=(2, 3, 2), as_bits=16,
                           name="reduce_as16"))
    out.append(reduce_case("reduce_min", DataUnit.S16, rng=rng, seed=414, axis=6, dims=(2, 3, 2), as_bits=64,
                           name="reduce_as64"))
    return [c for c in out if c is not None]


def summary(cases):
    return {c.name for c in cases}


__all__ = ["sweep", "mixed", "directed", "reduce_case", "make", "encode", "edge_values", "np"]
