# amaranth: UnusedElaboratable=no
"""The requantisation pipeline (hw/requant.py) against `requantise` on Python ints
and against the golden model's `_requantise` (golden/semantics/matrix.py).

Random elements with the extremes of every width (53-bit accumulators, 33-bit
parameters, shifts 0..255 including the >= 86 region, crossing clip bounds, every
result unit's saturation) stream through the pipeline one per cycle while ``en``
drops at random; the outputs must come out in order, exactly.
"""

import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from xdsa.golden.isa import DataUnit
from xdsa.golden.semantics.matrix import _requantise
from xdsa.hw.requant import ACC_BITS, Requantiser, requantise, sat_bounds

INT_UNITS = [u for u in DataUnit if u.is_int and u.bits >= 8]


def pick(rng, bits, signed=True):
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    r = rng.random()
    if r < 0.1:
        return lo
    if r < 0.2:
        return hi
    if r < 0.5:
        return rng.randint(-1000, 1000) if signed else rng.randint(0, 1000)
    return rng.randint(lo, hi)


def elements(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        acc = pick(rng, ACC_BITS)
        pb = rng.choice([8, 16, 32])
        bias, mul, scale = (pick(rng, pb), pick(rng, rng.choice([8, 16, 32])), pick(rng, rng.choice([8, 16, 32])))
        if rng.random() < 0.3:                       # unsigned 32-bit parameters
            mul = rng.randint(0, (1 << 32) - 1)
        r = rng.random()
        shift = rng.randint(0, 40) if r < 0.6 else rng.choice([0, 1, 63, 64, 84, 85, 86, 87, 127, 128, 200, 255])
        cmin, cmax = pick(rng, 16), pick(rng, 16)
        if rng.random() < 0.5:
            cmin, cmax = min(cmin, cmax), max(cmin, cmax)
        if rng.random() < 0.05:
            cmin = cmax = 0
        unit = rng.choice(INT_UNITS)
        out.append((acc, bias, mul, shift, scale, cmin, cmax, unit))
    return out


def test_reference_agrees_with_golden():
    """`requantise` is the golden model's arithmetic (checked on the same elements)."""
    for acc, bias, mul, shift, scale, cmin, cmax, unit in elements(400, 3):
        g = _requantise(np.array([[[acc]]], dtype=object), {
            "bias": np.array([[[bias]]], dtype=object), "mul": np.array([[[mul]]], dtype=object),
            "shift": np.array([[[shift]]], dtype=object), "scale_o": np.array([[[scale]]], dtype=object)},
            cmin, cmax)
        lo, hi = sat_bounds(unit)
        want = min(max(int(g.reshape(-1)[0]), lo), hi)
        assert requantise(acc, bias, mul, shift, scale, cmin, cmax, lo, hi) == want


def edge_elements():
    """Shifted values at the edges of the compare width (the last stage compares 35 bits
    and flags the values outside them, 2**34 and up, below -2**34), with output offsets
    and clip bounds that tell a value outside from its low 35 bits."""
    rng = random.Random(3)
    out = []
    for base in (1 << 34, -(1 << 34), 1 << 35, -(1 << 35), 1 << 33, -(1 << 51)):
        for d in (-1, 0, 1):
            for scale in (0, -(1 << 32), (1 << 32) - 1, -1000, 1000):
                cmin, cmax = sorted((pick(rng, 16), pick(rng, 16)))
                unit = rng.choice(INT_UNITS)
                out.append((base + d, 0, 1, 0, scale, cmin, cmax, unit))
                out.append((base + d, 0, 1 << 3, 3, scale, cmin, cmax, unit))    # through the shift
    return out


@pytest.mark.parametrize("stage_enables", [False, True])
def test_pipeline(stage_enables):
    """1,500 random elements with random stalls; with ``stage_enables`` every stage's
    enable bit carries the same stall (as the drain's copies do)."""
    run_pipeline(elements(1500, 7), stage_enables)


def test_pipeline_compare_edges():
    """The values at the edges of the last stage's compare width (`edge_elements`)."""
    run_pipeline(edge_elements(), False)


def run_pipeline(els, stage_enables):
    """`els` through the pipeline with random stalls; every result checked against
    `requantise`, in order."""
    dut = Requantiser(tag_bits=11, stage_enables=stage_enables)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    got = []

    async def bench(ctx):
        rng = random.Random(1)
        i = 0
        cycles = 0
        while len(got) < len(els):
            cycles += 1
            assert cycles < 4 * len(els)
            en = rng.random() < 0.8
            ctx.set(dut.en, (1 << len(dut.en)) - 1 if en else 0)
            valid = i < len(els) and rng.random() < 0.9
            if valid:
                acc, bias, mul, shift, scale, cmin, cmax, unit = els[i]
                lo, hi = sat_bounds(unit)
                for s, v in ((dut.acc, acc), (dut.bias, bias), (dut.mul, mul), (dut.shift, shift),
                             (dut.scale, scale), (dut.clip_min, cmin), (dut.clip_max, cmax),
                             (dut.sat_lo, lo), (dut.sat_hi, hi), (dut.i_tag, i)):
                    ctx.set(s, v)
            ctx.set(dut.i_valid, valid)
            ov, ot, val = ctx.get(dut.o_valid), ctx.get(dut.o_tag), ctx.get(dut.value)
            await ctx.tick()
            if en and ov:
                got.append((ot, val))
            if en and valid:
                i += 1

    # o_valid/value are registers: sample before the edge that (with en) moves them on
    sim.add_testbench(bench)
    sim.run()
    for k, (tag, val) in enumerate(got):
        assert tag == k
        acc, bias, mul, shift, scale, cmin, cmax, unit = els[k]
        lo, hi = sat_bounds(unit)
        want = requantise(acc, bias, mul, shift, scale, cmin, cmax, lo, hi)
        assert val == want, (f"element {k}: acc={acc} bias={bias} mul={mul} shift={shift} scale={scale} "
                             f"clip=[{cmin}, {cmax}] {unit.mnemonic}: RTL {val}, expected {want}")


def test_latency():
    """With ``en`` high an element leaves exactly ``LATENCY`` cycles after it entered,
    and ``busy`` is high from the cycle after it entered until it has left."""
    dut = Requantiser(tag_bits=4)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    seen = []

    async def bench(ctx):
        ctx.set(dut.en, 1)
        acc, bias, mul, shift, scale, cmin, cmax, unit = elements(1, 3)[0]
        lo, hi = sat_bounds(unit)
        for s, v in ((dut.acc, acc), (dut.bias, bias), (dut.mul, mul), (dut.shift, shift),
                     (dut.scale, scale), (dut.clip_min, cmin), (dut.clip_max, cmax),
                     (dut.sat_lo, lo), (dut.sat_hi, hi), (dut.i_tag, 5)):
            ctx.set(s, v)
        ctx.set(dut.i_valid, 1)
        await ctx.tick()
        ctx.set(dut.i_valid, 0)
        for cycle in range(1, Requantiser.LATENCY + 3):
            seen.append((cycle, ctx.get(dut.o_valid), ctx.get(dut.busy)))
            if ctx.get(dut.o_valid):
                assert ctx.get(dut.o_tag) == 5
                assert ctx.get(dut.value) == requantise(acc, bias, mul, shift, scale, cmin, cmax, lo, hi)
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    assert [c for c, v, _ in seen if v] == [Requantiser.LATENCY]
    assert [c for c, _, b in seen if b] == list(range(1, Requantiser.LATENCY + 1))
