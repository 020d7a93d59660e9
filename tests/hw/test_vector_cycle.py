# amaranth: UnusedElaboratable=no
"""The vector engine's pipeline (hw/vector*.py) against its cycle model
(golden/cycle/vector.py), every cycle.

One testbench plays the memory (a response exactly one cycle after a request
transferred; a write at the transferring edge), withholds ``req.ready`` of both
read ports and of the write port and ``done.ready`` at random, issues the
instructions back to back, and steps `VectorModel` in lockstep: in every cycle
each signal the model predicts (requests with their rows and byte enables,
``cmd.ready``, ``done`` and its fault, the control state, the beat pipeline's
valid bits and the ALU iteration counter) must equal the RTL's. A mismatch names
the cycle, the signal and both values. The final memory of each instruction is
also compared with the golden model.
"""

import dataclasses
import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from xdsa.golden.cycle.vector import SIGNALS, VectorModel
from xdsa.golden.isa import DataUnit as DU, Section
from xdsa.hw.config import CoreConfig
from xdsa.hw.vector import VectorEngine
from xdsa.hw.vector_alu_split import CUT_RANK, NARROW_CUTS, narrow_step_cycles

from test_vector_cases import make
from engine_harness import AS_CODE
from test_vector_harness import compare, golden, table_bytes

CFG8 = CoreConfig("r8", mem_bytes=8192, row_bytes=8, vector_bytes=8)
CFG32 = CoreConfig("r32", mem_bytes=8192, row_bytes=32, vector_bytes=32)
CFG32N = CoreConfig("r32n", mem_bytes=8192, row_bytes=32, vector_bytes=32, vector_narrow_bits=64,
                   vector_min_lane=8)   # as `base`
CFG16N = CoreConfig("r16n", mem_bytes=8192, row_bytes=16, vector_bytes=16, vector_narrow_bits=64)
CFG16NS = CoreConfig("r16ns", mem_bytes=8192, row_bytes=16, vector_bytes=16, vector_narrow_bits=64,
                     vector_narrow_stages=13)   # every register of the narrow path, in steps of
                                                # `narrow_step_cycles` (fewer than 1 + 13)
CFG32N_L2 = dataclasses.replace(CFG32N, name="r32n_l2", mem_latency=2)    # memory requests registered
CFG8_L2 = dataclasses.replace(CFG8, name="r8_l2", mem_latency=2)
CFG32N_L3 = dataclasses.replace(CFG32N, name="r32n_l3", mem_latency=3)    # read data registered too (`base`)


def cases(seed):
    rng = random.Random(seed)
    B = {"s0": DU.S8, "s1": DU.S8, "d": DU.S8}

    def mk(name, mn, units, n, **kw):
        return make(mn, units, n, rng=rng, seed=seed * 100 + len(out), name=name, **kw)
    out = []
    out.append(mk("add_s8_long", "add", B, 150))
    out.append(mk("add_widen", "add", {"s0": DU.S16, "s1": DU.U8, "d": DU.S32}, 37))
    out.append(mk("sub_narrow_int4", "sub", {"s0": DU.S16, "s1": DU.S8, "d": DU.S4}, 29, sat=1))
    out.append(mk("mul_s64", "mul", {"s0": DU.S64, "s1": DU.S64, "d": DU.S64}, 9))
    out.append(mk("mul_s32", "mul", {"s0": DU.S32, "s1": DU.S32, "d": DU.S64}, 11))
    out.append(mk("div_s16", "div", {"s0": DU.S16, "s1": DU.S16, "d": DU.S16}, 10))
    out.append(mk("pow_u4", "pow", {"s0": DU.U4, "s1": DU.U4, "d": DU.U8}, 9))
    out.append(mk("asl_s64", "asl", {"s0": DU.S64, "s1": DU.U8, "d": DU.S64}, 5))
    out.append(mk("median", "median", {"s0": DU.S8, "s1": DU.U8, "s2": DU.S16, "d": DU.S8}, 45))
    # long enough for source 2's smaller buffer (`source2_slots`) to show in the request timing
    out.append(mk("median_long", "median", {"s0": DU.S32, "s1": DU.S32, "s2": DU.S32, "d": DU.S32}, 70))
    out.append(mk("xor", "xor", {"s0": DU.U8, "s1": DU.U8, "d": DU.U8}, 61))
    out.append(mk("inv", "inv", {"s0": DU.U8, "s1": DU.U8, "d": DU.U8}, 23))
    out.append(mk("nsr", "nsr", {"s0": DU.S32, "s1": DU.U8, "d": DU.S16}, 19, rnd=1, sat=1))
    out.append(mk("sxt_int4", "sxt", {"s0": DU.S4, "d": DU.S64}, 13))
    out.append(mk("len0", "add", B, 0))
    out.append(mk("len1_int4_odd", "data_convert", {"s0": DU.U8, "d": DU.U4}, 1, sat=1))
    out.append(mk("overlap_illegal", "add", B, 20, addr={"s0": 0x400, "s1": 0x800, "d": 0x401}))
    out.append(mk("range_src1", "add", B, 20, addr={"s0": 0x400, "s1": 8190, "d": 0x900}))
    # the checks' verdicts arrive one (range) or two (D-OVERLAP) cycles after their checks: a fault
    # of the last source's D-OVERLAP check and one of the destination's range (in the same
    # cycle: D-OVERLAP first), a destination out of range, MEDIAN's first and third sources
    out.append(mk("overlap_src1_dst_range", "add", B, 20, addr={"s0": 0x400, "s1": 8170, "d": 8171}))
    out.append(mk("range_dst", "add", B, 20, addr={"s0": 0x400, "s1": 0x800, "d": 8180}))
    M8 = {"s0": DU.S8, "s1": DU.S8, "s2": DU.S8, "d": DU.S8}
    out.append(mk("overlap_median_s0", "median", M8, 30, addr={"s0": 0x7FF, "s1": 0x400, "s2": 0x500, "d": 0x800}))
    out.append(mk("overlap_median_s2", "median", M8, 30, addr={"s0": 0x300, "s1": 0x400, "s2": 0x7FF, "d": 0x800}))
    out.append(mk("float", "max", {"s0": DU.S8, "s1": DU.FP16, "d": DU.S8}, 20))
    out.append(mk("abs_unsigned", "abs", {"s0": DU.U16, "d": DU.U16}, 20))
    out.append(mk("inplace", "add", B, 40, addr={"s0": 0x500, "s1": 0x900, "d": 0x500}))
    out.append(mk("add_s4_only", "add", {"s0": DU.S4, "s1": DU.S4, "d": DU.S4}, 101, sat=1))   # 4-bit lanes, or 8
    return out


def narrow_cases(seed):
    """The narrow kinds `cases` leaves out (for the configuration with a staged narrow path)."""
    rng = random.Random(seed)
    out = []

    def mk(name, mn, units, n, **kw):
        out.append(make(mn, units, n, rng=rng, seed=seed * 100 + 50 + len(out), name=name, **kw))
    mk("clip_s8", "clip", {"s0": DU.S8, "d": DU.S8}, 40)
    mk("lsl_u16", "lsl", {"s0": DU.U16, "s1": DU.U8, "d": DU.U16}, 21)
    mk("lsr_s8", "lsr", {"s0": DU.S8, "s1": DU.U8, "d": DU.S8}, 33)
    mk("ror_u32", "ror", {"s0": DU.U32, "s1": DU.U8, "d": DU.U32}, 17)
    mk("ror_u64", "ror", {"s0": DU.U64, "s1": DU.U8, "d": DU.U64}, 6)
    mk("asr_s16", "asr", {"s0": DU.S16, "s1": DU.U8, "d": DU.S16}, 19, rnd=1)
    mk("mod_s32", "mod", {"s0": DU.S32, "s1": DU.S32, "d": DU.S32}, 7)
    mk("pow_s8", "pow", {"s0": DU.S8, "s1": DU.S8, "d": DU.S16}, 10)
    return out


def lockstep(cfg, jobs, *, seed, p_ready=0.7, max_cycles=60_000):
    """Run the engine and the model side by side; returns the final memory and fault
    of every job."""
    dut = VectorEngine(cfg, checks=True)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    model = VectorModel(cfg)
    R = cfg.row_bytes
    results = []

    def get_outputs(ctx):
        vals = {}
        for field, name in SIGNALS.items():
            sig = dut
            for part in name.split("."):
                sig = getattr(sig, part)
            vals[field] = ctx.get(sig)
        return vals

    async def bench(ctx):
        rng = random.Random(seed)
        mem = bytearray(cfg.mem_bytes)
        # per port, the responses due in this and the next mem_latency - 1 cycles
        rsp = {"rd_a": [None] * cfg.mem_latency, "rd_b": [None] * cfg.mem_latency}
        cycle = 0
        for case, before in jobs:
            mem[:] = bytes(before)
            issued = False
            while True:
                cycle += 1
                assert cycle < max_cycles, "the lockstep run did not finish"
                for port in ("rd_a", "rd_b"):
                    p = getattr(dut, port)
                    due = rsp[port].pop(0)
                    ctx.set(p.rsp.valid, due is not None)
                    ctx.set(p.rsp.payload, due or 0)
                ready = {k: int(rng.random() < p_ready) for k in ("rd_a", "rd_b", "wr", "done")}
                for port in ("rd_a", "rd_b", "wr"):
                    ctx.set(getattr(dut, port).req.ready, ready[port])
                ctx.set(dut.done.ready, ready["done"])
                cmd = None
                if not issued:
                    op = case.op
                    ctx.set(dut.cmd.payload.table, int.from_bytes(table_bytes(case), "little"))
                    ctx.set(dut.cmd.payload.as_code, AS_CODE[case.as_bits])
                    ctx.set(dut.cmd.payload.op_code, op.op_code)
                    ctx.set(dut.cmd.payload.section_ai, int(op.section == Section.AI))
                    ctx.set(dut.cmd.valid, 1)
                got = get_outputs(ctx)
                want = model.outputs()
                bad = []
                for field, value in want.items():
                    g = got[field]
                    if field in ("rd_a_row",) and not want.rd_a_valid or \
                       field in ("rd_b_row",) and not want.rd_b_valid or \
                       field in ("wr_row", "wr_be") and not want.wr_valid or \
                       field == "done_fault" and not want.done_valid:
                        continue
                    if g != value:
                        bad.append(f"{SIGNALS[field]}: RTL {g:#x}, model {value:#x}")
                assert not bad, f"{case.name}: cycle {cycle}: " + "; ".join(bad)
                if not issued and got["cmd_ready"]:
                    cmd = (case.mnemonic, case.fields)
                    issued = True
                # memory: reads see the memory before this cycle's write
                for port, vk, rk in (("rd_a", "rd_a_valid", "rd_a_row"), ("rd_b", "rd_b_valid", "rd_b_row")):
                    data = None
                    if got[vk] and ready[port]:
                        row = got[rk]
                        data = int.from_bytes(mem[row * R:row * R + R], "little")
                    rsp[port].append(data)
                if got["wr_valid"] and ready["wr"]:
                    row, be = got["wr_row"], got["wr_be"]
                    data = ctx.get(dut.wr.req.payload.data).to_bytes(R, "little")
                    for i in range(R):
                        if be >> i & 1:
                            mem[row * R + i] = data[i]
                finished = got["done_valid"] and ready["done"]
                fault = got["done_fault"]
                await ctx.tick()
                ctx.set(dut.cmd.valid, 0)
                model.edge(ready_a=ready["rd_a"], ready_b=ready["rd_b"], ready_w=ready["wr"],
                           done_ready=ready["done"], cmd=cmd)
                if finished:
                    results.append((fault, np.frombuffer(bytes(mem), dtype=np.uint8).copy(), 0))
                    break

    sim.add_testbench(bench)
    sim.run()
    return results


@pytest.mark.parametrize("cfg, seed, p_ready", [(CFG8, 1, 0.7), (CFG8, 2, 0.45), (CFG32, 3, 0.75),
                                                (CFG32N, 4, 0.75), (CFG16N, 5, 0.6), (CFG16NS, 6, 0.6),
                                                (CFG32N_L2, 7, 0.75), (CFG8_L2, 8, 0.6), (CFG32N_L3, 9, 0.75)],
                         ids=["w8", "w8_slow_memory", "w32", "w32_narrow", "w16_narrow", "w16_narrow_staged",
                              "w32_narrow_latency2", "w8_latency2", "w32_narrow_latency3"])
def test_lockstep(cfg, seed, p_ready):
    jobs = cases(seed) + (narrow_cases(seed) if cfg.vector_narrow_stages else [])
    exp = [golden(cfg, c) for c in jobs]
    got = lockstep(cfg, [(c, e[0]) for c, e in zip(jobs, exp)], seed=seed, p_ready=p_ready)
    errors = [r for r in (compare(c, e, g) for c, e, g in zip(jobs, exp, got)) if r]
    assert not errors, errors[:3]


def test_narrow_step_cycles():
    """The narrow path's step length (hw/vector_alu_split.py): every cut has a rank, a
    step takes one cycle more than the ranks among its cuts, never more than one per
    cut, and more cuts never shorten it (the lockstep run of `CFG16NS` checks that
    every path of every narrow kind settles within it)."""
    assert set(CUT_RANK) == set(NARROW_CUTS)
    steps = [narrow_step_cycles(k) for k in range(len(NARROW_CUTS) + 1)]
    assert steps[0] == 1 and all(1 <= s <= 1 + k for k, s in enumerate(steps))
    assert steps == sorted(steps) and steps[-1] == 1 + len(set(CUT_RANK.values()))
    assert CFG16NS.narrow_step_cycles == steps[13] < 14


@pytest.mark.parametrize("cfg, unit, per_beat", [(CFG8, DU.S8, 8), (CFG32, DU.S4, 64), (CFG32N, DU.S4, 32),
                                                 (CFG8_L2, DU.S8, 8), (CFG32N_L2, DU.S4, 32), (CFG32N_L3, DU.S8, 32)],
                         ids=["int8", "int4", "int4_in_8bit_lanes", "int8_latency2", "int4_in_8bit_lanes_latency2",
                              "int8_in_32_byte_rows_latency3"])
def test_full_rate_without_stalls(cfg, unit, per_beat):
    """With every port always ready the model (and the RTL, which the lockstep runs
    hold to it) issue one beat per cycle for ADD: 8 W / L elements per cycle, L = 4 for
    int4 unless the configuration's narrowest lane is 8 bits; with a memory read
    latency of 2 and 3 too (the readers' fifth and sixth rows, `reader_slots`)."""
    rng = random.Random(5)
    B = {"s0": unit, "s1": unit, "d": unit}
    runs = []
    for n in (384, 768):                    # (multiples of every beat: a whole number of beats)
        c = make("add", B, n, rng=rng, seed=9, addr={"s0": 0x303, "s1": 0x805, "d": 0xC01}, name=f"add{n}")
        model = VectorModel(cfg)
        model.edge(cmd=(c.mnemonic, c.fields))
        cycles = 1
        while not model.outputs().done_valid:
            model.edge()
            cycles += 1
        runs.append(cycles)
    assert runs[1] - runs[0] == 384 // per_beat
