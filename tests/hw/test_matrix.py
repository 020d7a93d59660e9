# amaranth: UnusedElaboratable=no
"""The matrix engine (hw/matrix.py) against the golden model: Matrix_Mul and CONV2D.

Every case is one instruction (tests/hw/matrix_cases.py lays out its operands):
the golden `Machine`, given the engine's capability (`refuses`), executes it on a
seeded random memory image; the engine executes the same operand table in pysim
(tests/hw/matrix_harness.py) on a behavioural memory that answers each read port
one cycle after the request and withholds ``req.ready`` of the three ports at
random (and ``done.ready``). The whole final memory, the fault code and the bytes
written are compared. The cases of a configuration run back to back in one
simulation; each case is still its own test.

Configurations: ``m4`` (N = 4, 32-byte rows, 16 KiB, banks of 32 positions, two
requantisers) and ``m2`` (N = 2, 16-byte rows, 8 KiB, banks of 4 positions: many
blocks and kernel groups from small shapes; one requantiser).

Waveforms: ``XDSA_VCD=1`` writes ``matrix_<config>.vcd`` in the current directory.
"""

import dataclasses
import random

import numpy as np
import pytest

from xdsa.golden.isa import Fault, by_mnemonic
from xdsa.golden.machine import Capability
from xdsa.hw.config import CoreConfig
from xdsa.hw.matrix import MatrixEngine, refuses


from matrix_cases import IMM, PER_CH, PER_ELEM, U, conv, gemm
from engine_harness import ranges
from matrix_harness import golden, run_rtl

CONFIGS = {     # (config, positions per accumulator bank, requantisers)
    "m4": (CoreConfig("m4", mem_bytes=16 << 10, row_bytes=32, array_n=4), None, 2),
    "m2": (CoreConfig("m2", mem_bytes=8 << 10, row_bytes=16, array_n=2), 4, 1),
    # the memory's read latency of 2 (requests registered in front of the block RAMs)
    "m4_l2": (CoreConfig("m4_l2", mem_bytes=16 << 10, row_bytes=32, array_n=4, mem_latency=2), None, 2),
}


def capability(cfg):
    return Capability(refuses=lambda op, fields: refuses(cfg, op, fields))


def requant_params(rng, K, n_out, lo=-50, hi=50):
    """Parameters that bring typical s8 sums near the int8 range (some saturate)."""
    return {
        "bias": (PER_CH, [rng.randint(-2000, 2000) for _ in range(K)]),
        "mul": (PER_CH, [rng.randint(1 << 10, 1 << 14) for _ in range(K)]),
        "shift": (PER_CH, [rng.randint(19, 24) for _ in range(K)]),
        "scale": (IMM, rng.randint(lo, hi)),
    }


def directed(mem):
    c = []
    # --- GEMM (K_H = K_W = 1) ---------------------------------------------------------------
    c += [
        gemm("gemm_4x4x4", 4, 4, 4),
        gemm("gemm_odd_5x7x9", 5, 7, 9, seed=1),
        gemm("gemm_nchw_6x5x7", 6, 5, 7, fmt="nchw", seed=2),
        gemm("gemm_nchw_gaps", 3, 6, 11, fmt="nchw", gaps=(5, 3, 7, 0), align=(3, 1, 2, 0), seed=3),
        gemm("gemm_multi_block_9x5x40", 9, 5, 40, seed=4),
        gemm("gemm_u8_u8", 5, 6, 7, fm_unit="u8", w_unit="u8", seed=5),
        gemm("gemm_s8_u8_u32", 3, 9, 5, fm_unit="s8", w_unit="u8", result_unit="u32", seed=6),
        gemm("gemm_s8_edges", 4, 13, 6, dist="edge", seed=7),
        gemm("gemm_s16_wrap", 3, 6, 5, fm_unit="s16", w_unit="s16", dist="edge", seed=8),
        gemm("gemm_u16_wrap_u32", 3, 5, 4, fm_unit="u16", w_unit="u16", result_unit="u32", dist="edge", seed=9),
        gemm("gemm_s16_unaligned", 5, 5, 6, fm_unit="s16", w_unit="s8", align=(1, 3, 1, 0),
             gaps=(3, 0, 1, 0), seed=10),
        gemm("gemm_u16_nchw_odd", 3, 4, 17, fm_unit="u16", w_unit="s16", fmt="nchw", align=(1, 1, 3, 0),
             gaps=(1, 3, 1, 0), seed=11),
        gemm("gemm_one", 1, 1, 1, seed=12),
        gemm("gemm_as16", 3, 5, 6, as_bits=16, seed=13),
        gemm("gemm_as64", 3, 5, 6, as_bits=64, seed=14),
    ]
    # --- Matrix_Mul convolutions --------------------------------------------------------------
    mm = "matrix_mul"
    c += [
        conv("mm_pad1_nhwc", mm, C=3, H=4, W=5, K=5, seed=20),
        conv("mm_pad1_nchw", mm, fmt="nchw", C=3, H=5, W=4, K=5, seed=21),
        conv("mm_asym_pad_stride_nchw", mm, fmt="nchw", C=5, H=5, W=6, K=3, pads=(2, 0, 1, 3),
             strides=(2, 1), seed=22),
        conv("mm_stride2_nhwc", mm, C=4, H=7, W=6, K=4, strides=(2, 2), seed=23),
        conv("mm_stride3x2_nhwc", mm, C=2, H=8, W=7, K=3, KH=2, KW=3, pads=(0, 1, 2, 0), strides=(3, 2), seed=24),
        conv("mm_kernel_1x3", mm, C=5, H=3, W=6, K=2, KH=1, KW=3, pads=(0, 0, 1, 1), seed=25),
        conv("mm_kernel_fills_map", mm, C=2, H=2, W=3, K=3, KH=4, KW=5, pads=(1, 1, 1, 1), seed=26),
        conv("mm_no_pad_5x5", mm, C=2, H=6, W=6, K=3, KH=5, KW=5, pads=(0, 0, 0, 0), seed=27),
        conv("mm_pad_value_s8", mm, C=3, H=3, W=3, K=2, padding=("imm", -5), seed=28),
        conv("mm_pad_value_u8", mm, C=3, H=3, W=3, K=2, fm_unit="u8", padding=("imm", 200), seed=29),
        conv("mm_pad_value_s16_bits", mm, C=2, H=3, W=3, K=2, fm_unit="s16", padding=("imm", 0xABCD8001), seed=30),
        conv("mm_pad_per_channel_nhwc", mm, C=6, H=3, W=4, K=3, padding=("per_channel", None), seed=31),
        conv("mm_pad_per_channel_nchw", mm, fmt="nchw", C=5, H=4, W=3, K=3, pads=(2, 1, 0, 2),
             padding=("per_channel", None), seed=32),
        conv("mm_pad_per_channel_s16", mm, fmt="nchw", C=3, H=3, W=3, K=2, fm_unit="s16", w_unit="s16",
             padding=("per_channel", None), align=(1, 0, 0, 0), seed=33),
        conv("mm_gaps_unaligned_nhwc", mm, C=5, H=4, W=3, K=5, gaps=(3, 7, 5, 0), align=(5, 3, 1, 0), seed=34),
        conv("mm_u16_straddle", mm, fmt="nhwc", C=3, H=3, W=5, K=2, fm_unit="u16", w_unit="u16",
             gaps=(1, 0, 1, 0), align=(1, 1, 0, 0), seed=35),
        conv("mm_zero_pixel_stride", mm, C=3, H=3, W=4, K=2, fm_surface_stride=0, seed=36),
        conv("mm_zero_kernel_stride", mm, C=3, H=3, W=3, K=5, k_line_stride=0, seed=37),
        conv("mm_edges_s8", mm, C=7, H=3, W=3, K=5, dist="edge", seed=38),
        conv("mm_as64", mm, C=3, H=3, W=4, K=3, as_bits=64, seed=39),
    ]
    # --- CONV2D ---------------------------------------------------------------------------------
    rng = random.Random(99)
    c += [
        conv("cv_defaults_s8", C=3, H=4, W=4, K=3, dist="small", seed=40),
        conv("cv_saturate_s8", C=6, H=3, W=3, K=3, dist="edge", seed=41),
        conv("cv_saturate_u8", C=4, H=3, W=3, K=2, result_unit="u8", clip=(-32768, 32767), seed=42),
        conv("cv_requant_nhwc", C=5, H=4, W=5, K=6, params=requant_params(rng, 6, 0), seed=43),
        conv("cv_requant_nchw", fmt="nchw", C=5, H=4, W=5, K=6, params=requant_params(rng, 6, 0), seed=44),
        conv("cv_per_element_all", C=3, H=3, W=4, K=5, params={
            "bias": (PER_ELEM, None), "mul": (PER_ELEM, None), "shift": (PER_ELEM, None),
            "scale": (PER_ELEM, None)}, seed=45),
        conv("cv_per_element_nchw", fmt="nchw", C=3, H=3, W=4, K=5, params={
            "bias": (PER_ELEM, None), "mul": (PER_CH, None), "shift": (PER_ELEM, None),
            "scale": (PER_CH, None), "scale_unit": "u32"}, result_unit="s16", clip=(-30000, 30000), seed=46),
        conv("cv_units_u8_s16_u32", C=4, H=3, W=3, K=3, params={
            "bias": (PER_CH, None), "bias_unit": "u8", "mul": (PER_CH, None), "mul_unit": "s16",
            "scale": (PER_CH, None), "scale_unit": "u32", "shift": (IMM, 9)}, result_unit="s32",
            clip=(-32768, 32767), seed=47),
        conv("cv_imm_negative", C=3, H=3, W=3, K=2, params={
            "bias": (IMM, -1234 & 0xFFFFFFFF), "mul": (IMM, -77 & 0xFFFFFFFF), "shift": (IMM, 0x1F05),
            "scale": (IMM, 0xFFFF8003)}, clip=(-100, 90), seed=48),
        conv("cv_imm_8bit_units", C=3, H=3, W=3, K=2, params={
            "bias": (IMM, 0x12345680), "bias_unit": "s8", "mul": (IMM, 0xFFFFFF81), "mul_unit": "u8",
            "scale": (IMM, 0xAAAA00F0), "scale_unit": "s8", "shift": (IMM, 3)}, result_unit="s16",
            clip=(-32768, 32767), seed=49),
        conv("cv_shift_large", C=3, H=3, W=3, K=3, params={
            "mul": (PER_CH, [-(1 << 31), (1 << 31) - 1, 12345]), "shift": (PER_CH, [64, 86, 200]),
            "bias": (PER_CH, [(1 << 31) - 1, -(1 << 31), 7])}, dist="edge", seed=50),
        conv("cv_shift_exact_half", C=2, H=2, W=2, K=2, params={"shift": (IMM, 1), "mul": (IMM, 1)},
             dist="small", seed=51),
        conv("cv_clip_crossed", C=3, H=3, W=3, K=3, clip=(50, -50), seed=52),
        conv("cv_clip_zero", C=3, H=3, W=3, K=2, clip=(0, 0), seed=53),
        conv("cv_result_u16", C=3, H=3, W=3, K=3, result_unit="u16", clip=(-32768, 32767), seed=54),
        conv("cv_result_s64", C=3, H=3, W=3, K=3, result_unit="s64", clip=(-32768, 32767), seed=55),
        conv("cv_result_u64_nchw", fmt="nchw", C=3, H=3, W=3, K=3, result_unit="u64", clip=(-32768, 32767),
             seed=56),
        conv("cv_result_u32_unaligned", C=3, H=3, W=4, K=5, result_unit="u32", clip=(-32768, 32767),
             align=(0, 0, 3, 1), seed=57),
        conv("cv_s16_operands", C=3, H=3, W=3, K=2, fm_unit="s16", w_unit="s16", dist="edge",
             params={"shift": (IMM, 30)}, result_unit="s16", clip=(-32768, 32767), seed=58),
        conv("cv_u8_stride2_pad_pc", C=5, H=6, W=5, K=3, fm_unit="u8", w_unit="s8", strides=(2, 2),
             padding=("per_channel", None), params=requant_params(rng, 3, 0), seed=59),
        conv("cv_multi_block", C=2, H=8, W=6, K=6, KH=2, KW=2, pads=(0, 0, 0, 0),
             params={"scale": (PER_ELEM, None), "shift": (IMM, 4)}, seed=60),
        conv("cv_as16", C=3, H=3, W=3, K=2, as_bits=16, params={"bias": (PER_CH, None), "shift": (IMM, 2)},
             seed=61),
        conv("cv_as64", C=3, H=3, W=3, K=2, as_bits=64, params={"bias": (PER_CH, None), "mul": (IMM, 0x80000001)},
             seed=62),
    ]
    # --- faults ---------------------------------------------------------------------------------
    small = dict(C=2, H=3, W=3, K=2)

    def ov(name, op, **fields):
        base = conv(name, op, **small, seed=len(name))
        base.fields.update(fields)
        return base
    c += [
        # UNSUPPORTED_UNIT (the engine's refusals), before any other check
        ov("un_fm_f16", mm, fm_unit=int(U["f16"]), w_unit=int(U["f16"])),
        ov("un_w_f32_mixed", mm, w_unit=int(U["f32"])),
        ov("un_fm_s32", mm, fm_unit=int(U["s32"])),
        ov("un_w_u64", "conv2d", w_unit=int(U["u64"])),
        ov("un_mm_result_f32", mm, result_unit=int(U["f32"])),
        ov("un_cv_result_f16", "conv2d", result_unit=int(U["f16"])),
        ov("un_cv_bias_s64", "conv2d", bias_unit=int(U["s64"])),
        ov("un_cv_mul_f16", "conv2d", mul_unit=int(U["f16"])),
        ov("un_cv_scale_u64", "conv2d", scale_unit=int(U["u64"])),
        ov("un_beats_illegal", mm, fm_unit=int(U["u32"]), data_format=3),
        # ILLEGAL_OPERAND
        ov("il_format_2", mm, data_format=2),
        ov("il_format_3_conv", "conv2d", data_format=3),
        ov("il_padding_mode_2", mm, padding_mode=2),
        ov("il_bias_mode_3", "conv2d", bias_mode=3),
        ov("il_shift_mode_3", "conv2d", shift_mode=3),
        ov("il_fm_u4", mm, fm_unit=int(U["u4"])),
        ov("il_w_s4", "conv2d", w_unit=int(U["s4"])),
        ov("il_cv_result_u4", "conv2d", result_unit=int(U["u4"])),
        ov("il_cv_bias_s4", "conv2d", bias_unit=int(U["s4"])),
        ov("il_mm_result_s16", mm, result_unit=int(U["s16"])),
        ov("il_mm_result_s64", mm, result_unit=int(U["s64"])),
        ov("il_kernel_too_tall", mm, k_h=6),
        ov("il_kernel_too_wide", "conv2d", k_w=7),
        ov("il_beats_range", mm, data_format=2, fm=mem + 100),
    ]
    c += [
        conv("il_overlap_fm", mm, **small, seed=80),
        conv("il_overlap_kernel_end", mm, **small, seed=81),
        conv("il_overlap_pad_pc", mm, **small, padding=("per_channel", None), seed=82),
        conv("il_overlap_bias_pc", **small, params={"bias": (PER_CH, None)}, seed=83),
        conv("il_overlap_scale_pe", **small, params={"scale": (PER_ELEM, None)}, seed=84),
        conv("ok_imm_equals_dst", **small, seed=85),
        conv("ok_dst_touches_fm", mm, **small, seed=86),
    ]
    # ADDRESS_RANGE
    c += [
        ov("ar_fm_end", mm, fm=mem - 10),
        ov("ar_kernel_end", "conv2d", kernel=mem - 17),
        ov("ar_dst_end", mm, dst=mem - 20),
        ov("ar_fm_huge_as64", mm, fm=1 << 40),
        ov("ar_dst_huge_as64", "conv2d", dst=(1 << 64) - 8),
        conv("ar_pad_pc", mm, **small, padding=("per_channel", None), seed=90),
        conv("ar_mul_pc", **small, params={"mul": (PER_CH, None)}, seed=91),
        conv("ar_shift_pe", **small, params={"shift": (PER_ELEM, None)}, seed=92),
        ov("ok_dst_exact_fit", mm, dst=mem - 2 * 3 * 3 * 4),
    ]
    return c


def _fixups(cases, mem):
    """Field edits that need the laid-out addresses (overlaps, ranges, AS64 placement)."""
    by = {c.name: c for c in cases}
    f = lambda n: by[n].fields
    f("il_overlap_fm")["dst"] = f("il_overlap_fm")["fm"] + 5
    k = f("il_overlap_kernel_end")
    k["dst"] = k["kernel"] + 2 * 9 * 2 - 1 - 8          # the last kernel's last bytes
    p = f("il_overlap_pad_pc")
    p["dst"] = p["padding_addr"] - 30
    b = f("il_overlap_bias_pc")
    b["dst"] = b["bias_addr"] + 4
    s = f("il_overlap_scale_pe")
    s["dst"] = s["scale_o_addr"] - 8
    e = f("ok_imm_equals_dst")
    e["bias_addr"] = e["mul_addr"] = e["dst"]
    t = f("ok_dst_touches_fm")
    t["dst"] = t["fm"] - 2 * 3 * 3 * 4
    f("ar_pad_pc")["padding_addr"] = mem - 1
    f("ar_mul_pc")["mul_addr"] = mem - 7
    f("ar_shift_pe")["shift_addr"] = mem - 17
    for n in ("ar_fm_huge_as64", "ar_dst_huge_as64"):
        by[n].as_bits = 64
    return cases


def random_cases(cfg, count, seed):
    rng = random.Random(seed)
    out = []
    int_units = ["s8", "u8", "s16", "u16"]
    for k in range(count):
        op = rng.choice(["matrix_mul", "conv2d"])
        fmt = rng.choice(["nhwc", "nchw"])
        C, H, W = rng.randint(1, 6), rng.randint(1, 5), rng.randint(1, 5)
        KH, KW = rng.randint(1, 3), rng.randint(1, 3)
        pads = tuple(rng.choice([0, 0, 1, 2]) for _ in range(4))
        if KH > H + pads[0] + pads[1]:
            KH = H + pads[0] + pads[1]
        if KW > W + pads[2] + pads[3]:
            KW = W + pads[2] + pads[3]
        K = rng.randint(1, 7)
        fm_u, w_u = rng.choice(int_units), rng.choice(int_units)
        kw = dict(fmt=fmt, C=C, H=H, W=W, K=K, KH=KH, KW=KW, pads=pads, fm_unit=fm_u, w_unit=w_u,
                  strides=(rng.choice([1, 1, 2, 3]), rng.choice([1, 1, 2])),
                  padding=rng.choice([("imm", None), ("per_channel", None)]),
                  gaps=tuple(rng.choice([0, 0, 1, 3, 8]) for _ in range(3)) + (0,),
                  align=tuple(rng.randint(0, 3) for _ in range(4)),
                  dist=rng.choice(["uniform", "edge", "small"]), as_bits=rng.choice([16, 32, 64]),
                  seed=seed * 100 + k)
        if op == "matrix_mul":
            kw["result_unit"] = rng.choice(["s32", "u32"])
        else:
            kw["result_unit"] = rng.choice(["s8", "u8", "s16", "u16", "s32", "u64"])
            punits = {"bias_unit": rng.choice(["s8", "u8", "s16", "s32", "u32"]),
                      "mul_unit": rng.choice(["s16", "s32", "u32"]),
                      "scale_unit": rng.choice(["s8", "s16", "s32"])}
            params = dict(punits)
            for p in ("bias", "mul", "shift", "scale"):
                mode = rng.choice([IMM, IMM, PER_CH, PER_ELEM])
                params[p] = (mode, None)
            kw["params"] = params
            lo, hi = sorted(rng.randint(-40000, 40000) for _ in range(2))
            kw["clip"] = (max(-32768, lo), min(32767, hi)) if rng.random() < 0.8 else (hi & 0x7FFF, lo)
        out.append(conv(f"random_{k}_{op}_{fmt}", op, **kw))
    return out


def cases_for(name):
    cfg = CONFIGS[name][0]
    if name == "m4":
        return _fixups(directed(cfg.mem_bytes), cfg.mem_bytes) + random_cases(cfg, 16, seed=5)
    if name == "m4_l2":
        return [gemm("l2_gemm_odd", 9, 6, 13, seed=4),
                conv("l2_conv_nhwc", fmt="nhwc", C=5, H=5, W=4, K=6, params={"bias": (PER_CH, None)}, seed=6),
                conv("l2_conv_nchw", "matrix_mul", fmt="nchw", C=3, H=4, W=5, K=3, seed=7)] \
            + random_cases(cfg, 8, seed=13)
    return [gemm("m2_gemm_odd", 5, 3, 11, seed=1),
            conv("m2_conv_nchw", "matrix_mul", fmt="nchw", C=3, H=4, W=5, K=3, seed=2),
            conv("m2_conv2d_pc", C=3, H=4, W=3, K=5, params={"bias": (PER_CH, None), "shift": (IMM, 3)},
                 padding=("per_channel", None), seed=3)] + random_cases(cfg, 8, seed=9)


CASES = {name: cases_for(name) for name in CONFIGS}
_RESULTS = {}


def results_for(name):
    if name not in _RESULTS:
        cfg, pb, rq = CONFIGS[name]
        exp = [golden(cfg, c, capability(cfg)) for c in CASES[name]]
        got = run_rtl(cfg, [(c, e[0]) for c, e in zip(CASES[name], exp)], pb=pb, rq_lanes=rq,
                      vcd_name=f"matrix_{name}")
        _RESULTS[name] = {c.name: (e, g) for c, e, g in zip(CASES[name], exp, got)}
    return _RESULTS[name]


@pytest.mark.parametrize("cfg_name, case", [(k, c) for k, cs in CASES.items() for c in cs],
                         ids=[f"{k}-{c.name}" for k, cs in CASES.items() for c in cs])
def test_instruction(cfg_name, case):
    (before, want, want_fault, want_touched, detail), (fault, got, touched, cycles) = \
        results_for(cfg_name)[case.name]
    assert fault == want_fault, f"fault {Fault(fault).name}, golden {Fault(want_fault).name} ({detail})"
    diff = np.flatnonzero(got != want)
    assert not len(diff), (f"{len(diff)} bytes differ, first at {diff[0]:#x}: RTL {got[diff[0]]:#04x}, "
                           f"golden {want[diff[0]]:#04x}, before {before[diff[0]]:#04x}")
    assert ranges(touched) == ranges(want_touched), "the bytes written differ from the golden model's"


def test_case_mix():
    """The cases exercise every fault the engine raises, both instructions, both data
    formats, every operand unit, every parameter mode and both padding modes."""
    res = results_for("m4")
    faults = {r[0][2] for r in res.values()}
    assert {0, Fault.UNSUPPORTED_UNIT, Fault.ILLEGAL_OPERAND, Fault.ADDRESS_RANGE} <= faults
    ok = [c for c in CASES["m4"] if res[c.name][0][2] == 0]
    assert {c.op for c in ok} == {"matrix_mul", "conv2d"}
    assert {c.fields["data_format"] for c in ok} == {0, 1}
    assert {c.fields["fm_unit"] for c in ok} >= {int(U[u]) for u in ("s8", "u8", "s16", "u16")}
    assert {c.fields["padding_mode"] for c in ok} == {0, 1}
    for mf in ("bias_mode", "mul_mode", "shift_mode", "scale_mode"):
        assert {c.fields.get(mf) for c in ok if c.op == "conv2d"} == {0, 1, 2}
    assert {c.as_bits for c in ok} == {16, 32, 64}


def test_refuses():
    cfg = CONFIGS["m4"][0]
    mm, cv = by_mnemonic("matrix_mul"), by_mnemonic("conv2d")
    ok = {"fm_unit": int(U["s8"]), "w_unit": int(U["u16"]), "result_unit": int(U["s32"])}
    assert refuses(cfg, mm, ok) is None
    assert refuses(cfg, mm, {**ok, "fm_unit": int(U["u4"])}) is None          # ILLEGAL_OPERAND, not refused
    for bad in ("f16", "f32", "f64", "s32", "u32", "s64", "u64"):
        assert refuses(cfg, mm, {**ok, "w_unit": int(U[bad])})
    assert refuses(cfg, mm, {**ok, "result_unit": int(U["f32"])})
    conv_ok = {**ok, "result_unit": int(U["u64"]), "bias_unit": int(U["s32"]), "mul_unit": int(U["u8"]),
               "scale_unit": int(U["s16"])}
    assert refuses(cfg, cv, conv_ok) is None
    assert refuses(cfg, cv, {**conv_ok, "mul_unit": int(U["s64"])})
    assert refuses(cfg, cv, {**conv_ok, "scale_unit": int(U["f16"])})


def test_tap_packing_fills_the_rows():
    """C < N in NHWC with a per-layer padding value: a tile packs N consecutive (ky, kx, c)
    indices (hw/matrix_agu.py), so a 3 x 3 convolution of C = 2 channels on N = 4 takes
    ceil(18 / 4) = 5 passes per block, not the 9 of one kernel tap per pass (which would
    leave half the rows idle). Checked against the golden model and on the cycle count
    (no stalls): 64 positions x 9 passes would be at least 576 cycles."""
    cfg, pb, _ = CONFIGS["m4"]
    case = conv("packed_c2_8x8", "matrix_mul", C=2, H=8, W=8, K=4, seed=3)
    before, want, want_fault, _, _ = golden(cfg, case, capability(cfg))
    (fault, got, _, cycles), = run_rtl(cfg, [(case, before)], stall=0, pb=pb)
    assert fault == want_fault == 0
    assert (got == want).all()
    assert cycles < 64 * 9, f"{cycles} cycles: the taps are not packed into the rows"
    assert cycles >= 64 * 5


def test_requantiser_count_configuration():
    """`CoreConfig.matrix_rq_lanes` sets the engine's requantisers unless the caller
    overrides it; anything but 1 or 2 is refused, naming the value."""
    cfg = CONFIGS["m4"][0]
    assert MatrixEngine(cfg).rq_lanes == 2
    one = dataclasses.replace(cfg, matrix_rq_lanes=1)
    assert MatrixEngine(one).rq_lanes == 1
    assert MatrixEngine(one, rq_lanes=2).rq_lanes == 2
    with pytest.raises(ValueError, match="matrix_rq_lanes must be 1 or 2, not 3"):
        dataclasses.replace(cfg, matrix_rq_lanes=3)
    with pytest.raises(ValueError, match="rq_lanes must be 1 or 2, not 0"):
        MatrixEngine(cfg, rq_lanes=0)
