"""Core co-simulation of the matrix unit: Matrix_Mul and CONV2D programs on the RTL
core (Verilator, `tests.helpers.engines_config()`: N = 4, 32-byte rows, 16 KiB)
against the golden model, compared on the retire trace (PC, opcode, fault, bytes
written), the final memory and the key tables (`sim.cosim`).

Each program holds several matrix instructions (tests/hw/matrix_cases.py lays out
their operands, one after the other in the data memory, on a random background so a
stray write shows); the fault programs run a good instruction, then the faulting
one: the core must stop there with the golden model's fault code and PC and leave
the memory as the first instruction left it.
"""

import random

import numpy as np
import pytest

from xdsa.golden.builder import ProgramBuilder
from xdsa.golden.isa import DataUnit, Fault
from xdsa.sim.cosim import cosim


from helpers import engines_config
from matrix_cases import IMM, PER_CH, PER_ELEM, U, conv, gemm

CFG = engines_config()
TABLES, DATA = 0x400, 0x800


def _extent(case):
    """End of everything `case` placed (operands and destination)."""
    f = case.fields
    ends = [a + len(d) for a, d in case.patches]
    t, b, l, r = f["t_pad"], f["b_pad"], f["l_pad"], f["r_pad"]
    ho = max(1, (f["fm_h"] + t + b - f["k_h"]) // f["v_stride"] + 1)
    wo = max(1, (f["fm_w"] + l + r - f["k_w"]) // f["h_stride"] + 1)
    re = max(1, DataUnit(f["result_unit"]).bits // 8)
    ends.append(f["dst"] + f["k_num"] * ho * wo * re)
    return max(ends)


class Layout:
    """Places cases one after the other from DATA upwards."""

    def __init__(self):
        self.pos = DATA

    def __call__(self, make, *args, **kw):
        case = make(*args, at=self.pos, **kw)
        self.pos = (_extent(case) + 64) & ~31
        assert self.pos <= CFG.mem_bytes, f"{case.name} does not fit the {CFG.mem_bytes}-byte memory"
        return case


def program(cases, seed=0, extra=()):
    """An image: the cases' instructions (each with its own AS), exit, end; a random
    background over the data region with every case's operands on top."""
    b = ProgramBuilder(32)
    b.tables(TABLES)
    b.text(0)
    for c in cases:
        b.insn(c.op, as_bits=c.as_bits, **c.fields)
    b.exit()
    b.end()
    rng = np.random.default_rng(seed)
    hi = max([_extent(c) for c in cases] + [DATA + 64])
    hi = min(CFG.mem_bytes, (hi + 64) & ~31)
    region = rng.integers(0, 256, hi - DATA, dtype=np.uint8)
    for c in cases:
        for a, d in c.patches:
            region[a - DATA:a - DATA + len(d)] = np.frombuffer(bytes(d), dtype=np.uint8)
    b.data(DATA)
    b.bytes(region.tobytes())
    return b.build()


def check(image, expect_fault=Fault.NONE, n_insns=None):
    report = cosim(image, CFG, "verilator")
    assert report.ok, "RTL core and golden model differ:\n" + "\n".join(report.differences)
    assert report.golden.fault == expect_fault, (report.golden.fault, report.golden.fault_pc)
    if n_insns is not None:
        assert len(report.golden.trace) == n_insns
    return report


def requant(rng, K):
    return {"bias": (PER_CH, [rng.randint(-2000, 2000) for _ in range(K)]),
            "mul": (PER_CH, [rng.randint(1 << 10, 1 << 14) for _ in range(K)]),
            "shift": (PER_CH, [rng.randint(19, 24) for _ in range(K)]),
            "scale": (IMM, rng.randint(-50, 50))}


def gemm_program():
    L = Layout()
    return [
        L(gemm, "gemm_odd_5x7x9", 5, 7, 9, seed=1),
        L(gemm, "gemm_nchw_6x5x7", 6, 5, 7, fmt="nchw", seed=2),
        L(gemm, "gemm_multi_block_9x5x40", 9, 5, 40, seed=4),       # 40 positions > Pb = 32
        L(gemm, "gemm_s8_edges", 4, 13, 6, dist="edge", seed=7),
        L(gemm, "gemm_u8_u32", 5, 6, 7, fm_unit="u8", w_unit="u8", result_unit="u32", seed=5),
        L(gemm, "gemm_s16_wrap", 3, 6, 5, fm_unit="s16", w_unit="s16", dist="edge", seed=8),
        L(gemm, "gemm_unaligned_gaps", 5, 5, 6, fm_unit="s16", w_unit="s8", align=(1, 3, 1, 0),
          gaps=(3, 0, 1, 0), seed=10),
        L(gemm, "gemm_as16", 3, 5, 6, as_bits=16, seed=13),
        L(gemm, "gemm_as64", 3, 5, 6, as_bits=64, seed=14),
    ]


def mm_conv_program():
    mm = "matrix_mul"
    L = Layout()
    return [
        L(conv, "mm_pad1_nhwc", mm, C=3, H=4, W=5, K=5, seed=20),
        L(conv, "mm_pad1_nchw", mm, fmt="nchw", C=3, H=5, W=4, K=5, seed=21),
        L(conv, "mm_asym_pad_stride_nchw", mm, fmt="nchw", C=5, H=5, W=6, K=3, pads=(2, 0, 1, 3),
          strides=(2, 1), seed=22),
        L(conv, "mm_stride2_nhwc", mm, C=6, H=7, W=6, K=5, strides=(2, 2), seed=23),
        L(conv, "mm_stride3x2", mm, C=2, H=8, W=7, K=3, KH=2, KW=3, pads=(0, 1, 2, 0), strides=(3, 2), seed=24),
        L(conv, "mm_pad_value_s8", mm, C=3, H=3, W=3, K=2, padding=("imm", -5), seed=28),
        L(conv, "mm_pad_per_channel_nhwc", mm, C=6, H=3, W=4, K=3, padding=("per_channel", None), seed=31),
        L(conv, "mm_pad_per_channel_nchw", mm, fmt="nchw", C=5, H=4, W=3, K=3, pads=(2, 1, 0, 2),
          padding=("per_channel", None), seed=32),
        L(conv, "mm_edges_5x5", mm, C=7, H=6, W=6, K=5, KH=5, KW=5, pads=(2, 2, 2, 2), dist="edge", seed=38),
        L(conv, "mm_as16", mm, C=3, H=3, W=4, K=3, as_bits=16, seed=39),
    ]


def conv2d_program():
    rng = random.Random(7)
    L = Layout()
    return [
        L(conv, "cv_requant_nhwc", C=5, H=4, W=5, K=6, params=requant(rng, 6), seed=43),
        L(conv, "cv_requant_nchw", fmt="nchw", C=5, H=4, W=5, K=6, params=requant(rng, 6), seed=44),
        L(conv, "cv_saturate_s8", C=6, H=3, W=3, K=3, dist="edge", seed=41),
        L(conv, "cv_saturate_u8", C=4, H=3, W=3, K=2, result_unit="u8", clip=(-32768, 32767), seed=42),
        L(conv, "cv_per_element_all", C=3, H=3, W=4, K=5, params={
            "bias": (PER_ELEM, None), "mul": (PER_ELEM, None), "shift": (PER_ELEM, None),
            "scale": (PER_ELEM, None)}, seed=45),
        L(conv, "cv_mixed_modes_nchw", fmt="nchw", C=3, H=3, W=4, K=5, params={
            "bias": (PER_ELEM, None), "mul": (PER_CH, None), "shift": (PER_ELEM, None),
            "scale": (PER_CH, None), "scale_unit": "u32"}, result_unit="s16", clip=(-30000, 30000), seed=46),
        L(conv, "cv_imm_negative", C=3, H=3, W=3, K=2, params={
            "bias": (IMM, -1234 & 0xFFFFFFFF), "mul": (IMM, -77 & 0xFFFFFFFF), "shift": (IMM, 0x1F05),
            "scale": (IMM, 0xFFFF8003)}, clip=(-100, 90), seed=48),
        L(conv, "cv_stride2_pad_pc", C=5, H=6, W=5, K=3, fm_unit="u8", strides=(2, 2),
          padding=("per_channel", None), params=requant(rng, 3), seed=59),
        L(conv, "cv_shift_large", C=3, H=3, W=3, K=3, params={
            "mul": (PER_CH, [-(1 << 31), (1 << 31) - 1, 12345]), "shift": (PER_CH, [64, 86, 200]),
            "bias": (PER_CH, [(1 << 31) - 1, -(1 << 31), 7])}, dist="edge", seed=50),
        L(conv, "cv_as16", C=3, H=3, W=3, K=2, as_bits=16, params={"bias": (PER_CH, None), "shift": (IMM, 2)},
          seed=61),
        L(conv, "cv_as64", C=3, H=3, W=3, K=2, as_bits=64, params={"bias": (PER_CH, None),
                                                                  "mul": (IMM, 0x80000001)}, seed=62),
        L(conv, "cv_s16_operands", C=3, H=3, W=3, K=2, fm_unit="s16", w_unit="s16", dist="edge",
          params={"shift": (IMM, 30)}, result_unit="s16", clip=(-32768, 32767), seed=58),
    ]


def random_program(seed, count=8):
    rng = random.Random(seed)
    L = Layout()
    out = []
    for k in range(count):
        op = rng.choice(["matrix_mul", "conv2d"])
        C, H, W = rng.randint(1, 9), rng.randint(1, 6), rng.randint(1, 6)
        pads = tuple(rng.choice([0, 0, 1, 2]) for _ in range(4))
        KH = min(rng.randint(1, 3), H + pads[0] + pads[1])
        KW = min(rng.randint(1, 3), W + pads[2] + pads[3])
        kw = dict(fmt=rng.choice(["nhwc", "nchw"]), C=C, H=H, W=W, K=rng.randint(1, 9), KH=KH, KW=KW,
                  pads=pads, fm_unit=rng.choice(["s8", "u8", "s16"]), w_unit=rng.choice(["s8", "u8"]),
                  strides=(rng.choice([1, 1, 2, 3]), rng.choice([1, 1, 2])),
                  padding=rng.choice([("imm", None), ("per_channel", None)]),
                  align=tuple(rng.randint(0, 3) for _ in range(4)),
                  dist=rng.choice(["uniform", "edge"]), as_bits=rng.choice([16, 32, 64]), seed=seed * 100 + k)
        if op == "conv2d":
            kw["params"] = {p: (rng.choice([IMM, PER_CH, PER_ELEM]), None) for p in ("bias", "mul", "shift", "scale")}
            kw["result_unit"] = rng.choice(["s8", "u8", "s16", "s32"])
        out.append(L(conv, f"random_{k}_{op}", op, **kw))
    return out


PROGRAMS = {"gemm": gemm_program, "matrix_mul_conv": mm_conv_program, "conv2d": conv2d_program,
            "random_a": lambda: random_program(1), "random_b": lambda: random_program(2)}


@pytest.mark.parametrize("name", PROGRAMS)
def test_program(name):
    cases = PROGRAMS[name]()
    r = check(program(cases, seed=len(name)), n_insns=len(cases) + 1)
    # every instruction wrote its result (nothing was refused or faulted)
    assert all(e.fault == Fault.NONE and e.writes for e in r.golden.trace[:-1])


# --- faults: a good instruction, then the faulting one -----------------------------------------

def _fault_cases():
    small = dict(C=2, H=3, W=3, K=2)
    mm = "matrix_mul"
    mem = CFG.mem_bytes

    def case(name, op="matrix_mul", fault=Fault.NONE, fix=None, **kw):
        return name, op, fault, fix, {**small, **kw}

    return [
        # refused units (the engine's capability): UNSUPPORTED_UNIT before any other check
        case("un_fm_f16", mm, Fault.UNSUPPORTED_UNIT, lambda f, c: f.update(fm_unit=int(U["f16"]),
                                                                              w_unit=int(U["f16"]))),
        case("un_fm_s32", mm, Fault.UNSUPPORTED_UNIT, lambda f, c: f.update(fm_unit=int(U["s32"]))),
        case("un_cv_bias_s64", "conv2d", Fault.UNSUPPORTED_UNIT,
             lambda f, c: f.update(bias_unit=int(U["s64"]), data_format=3)),
        case("un_cv_result_f16", "conv2d", Fault.UNSUPPORTED_UNIT, lambda f, c: f.update(result_unit=int(U["f16"]))),
        # ILLEGAL_OPERAND
        case("il_format_2", mm, Fault.ILLEGAL_OPERAND, lambda f, c: f.update(data_format=2)),
        case("il_shift_mode_3", "conv2d", Fault.ILLEGAL_OPERAND, lambda f, c: f.update(shift_mode=3)),
        case("il_fm_u4", mm, Fault.ILLEGAL_OPERAND, lambda f, c: f.update(fm_unit=int(U["u4"]))),
        case("il_kernel_too_wide", "conv2d", Fault.ILLEGAL_OPERAND, lambda f, c: f.update(k_w=7)),
        case("il_overlap_fm", mm, Fault.ILLEGAL_OPERAND, lambda f, c: f.update(dst=f["fm"] + 5)),
        case("il_overlap_bias_pc", "conv2d", Fault.ILLEGAL_OPERAND,
             lambda f, c: f.update(dst=f["bias_addr"] + 4), params={"bias": (PER_CH, None)}),
        # ADDRESS_RANGE
        case("ar_fm_end", mm, Fault.ADDRESS_RANGE, lambda f, c: f.update(fm=mem - 10)),
        case("ar_dst_end", "conv2d", Fault.ADDRESS_RANGE, lambda f, c: f.update(dst=mem - 5)),
        case("ar_pad_pc", mm, Fault.ADDRESS_RANGE, lambda f, c: f.update(padding_addr=mem - 1),
             padding=("per_channel", None)),
        case("ar_shift_pe", "conv2d", Fault.ADDRESS_RANGE, lambda f, c: f.update(shift_addr=mem - 17),
             params={"shift": (PER_ELEM, None)}),
        case("ar_fm_huge_as64", mm, Fault.ADDRESS_RANGE, lambda f, c: f.update(fm=1 << 40), as_bits=64),
    ]


FAULTS = _fault_cases()


@pytest.mark.parametrize("name, op, fault, fix, kw", FAULTS, ids=[f[0] for f in FAULTS])
def test_fault(name, op, fault, fix, kw):
    L = Layout()
    good = L(conv, "good_first", "conv2d", C=3, H=3, W=3, K=3, seed=3)
    bad = L(conv, name, op, seed=len(name), **kw)
    fix(bad.fields, bad)
    r = check(program([good, bad], seed=len(name)), expect_fault=fault)
    g = r.golden
    assert r.rtl.status == "fault" and r.rtl.fault == fault
    assert r.rtl.fault_pc == g.trace[1].pc and len(g.trace) == 2
    assert g.trace[0].writes and not g.trace[1].writes       # the good result is there, nothing after it
