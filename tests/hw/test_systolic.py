# amaranth: UnusedElaboratable=no
"""The systolic array (hw/systolic.py) against its cycle model (golden/cycle/systolic.py).

The RTL and the model run side by side on the same inputs; every cycle the harness
compares every PE's registers (activation, bank tag, valid bit, partial sum, shadow
and active weights, the active weight's tag and freshness) and the deskewed column
sums, and names the first PE and register that differ. The
model itself is checked against plain matrix-vector products (`reference`) with the
array's latency. Operands are drawn from the s8, u8, s16 and u16 ranges (the values
the engine feeds), including their extremes.

Waveforms: ``XDSA_VCD=1`` writes ``systolic_<test>.vcd`` in the current directory.
"""

import os
import random

import numpy as np
import pytest
from amaranth.back import verilog
from amaranth.sim import Simulator

from xdsa.golden.cycle.systolic import SystolicModel, psum_bits as model_psum_bits, reference
from xdsa.hw.systolic import SystolicArray, psum_bits

RANGES = {"s8": (-128, 127), "u8": (0, 255), "s16": (-32768, 32767), "u16": (0, 65535)}
REGS = ("a", "bank", "valid", "prod", "psum", "ws", "wa", "wtag", "wok")


def operand(rng, kind):
    lo, hi = RANGES[kind]
    r = rng.random()
    if r < 0.15:
        return lo
    if r < 0.3:
        return hi
    return rng.randint(lo, hi)


def run(n, cycles, name):
    """Run `cycles` [(x, x_bank, x_valid, w_we, w_col, w_data, w_flush)] on RTL and model;
    compare every register every cycle. Returns the RTL's sums per cycle."""
    dut = SystolicArray(n)
    model = SystolicModel(n)
    assert dut.latency == model.latency
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    out = []

    async def bench(ctx):
        for t, (x, xb, xv, we, wc, wd, fl) in enumerate(cycles):
            for r in range(n):
                ctx.set(dut.x[r], int(x[r]))
                ctx.set(dut.w_data[r], int(wd[r]))
            ctx.set(dut.x_bank, xb)
            ctx.set(dut.x_valid, xv)
            ctx.set(dut.w_we, we)
            ctx.set(dut.w_col, wc)
            ctx.set(dut.w_flush, fl)
            want = model.state()
            for reg in REGS:
                for r in range(n):
                    for c in range(n):
                        got = ctx.get(getattr(dut.pes[r][c], reg))
                        assert got == want[reg][r, c], (
                            f"cycle {t}: pe_{r}_{c}.{reg} = {got}, model {want[reg][r, c]}")
            sums = [ctx.get(dut.sums[c]) for c in range(n)]
            assert sums == [int(v) for v in model.sums()], f"cycle {t}: sums {sums}, model {model.sums()}"
            out.append(sums)
            await ctx.tick()
            model.step(x, xb, xv, we, wc, wd, fl)

    sim.add_testbench(bench)
    if os.environ.get("XDSA_VCD"):
        with sim.write_vcd(f"systolic_{name}.vcd"):
            sim.run()
    else:
        sim.run()
    return out


def test_widths():
    for n in (1, 2, 4, 8, 16):
        assert psum_bits(n) == model_psum_bits(n)
        # n products of the largest magnitude (u16 * u16) fit with a sign bit
        assert n * 65535 * 65535 < 1 << (psum_bits(n) - 1)


@pytest.mark.parametrize("n", [1, 2, 4])
def test_random_cycles(n):
    """Unconstrained random inputs: any vector, any bank tag and valid bit, a shadow
    write to any column and a flush in any cycle (also while a swap passes): the RTL
    must still be the model, register for register."""
    rng = random.Random(11 + n)
    cycles = []
    for _ in range(120):
        kind = rng.choice(list(RANGES))
        wkind = rng.choice(list(RANGES))
        zero = rng.random() < 0.1
        cycles.append(([0 if zero else operand(rng, kind) for _ in range(n)], rng.getrandbits(1),
                       int(rng.random() < 0.7), int(rng.random() < 0.4), rng.randrange(n),
                       [operand(rng, wkind) for _ in range(n)], int(rng.random() < 0.05)))
    run(n, cycles, f"random_{n}")


def test_tiles():
    """The engine's discipline on random tiles (N = 4): flush, load the shadows column by
    column, stream a tile's vectors tagged 0, 1, 0, ... (each pass swaps its tile in);
    the next tile is written into the shadows once the pass's first vector has left
    the array, with no bubble between passes and some idle (invalid, zero) cycles.
    Every register is compared with the model every cycle, and the outputs with plain
    matrix-vector products after the array's latency."""
    n = 4
    rng = random.Random(5)
    lat = 2 * n + 1                               # the array's latency (hw/systolic.py)
    left = 2 * n                                  # a vector has passed the last PE (swapped it)
    assert SystolicModel(n).latency == lat
    zero = [0] * n
    cycles, expect = [], []                       # expect: (cycle, sums)
    tiles = []
    for k in range(5):
        kind = rng.choice(list(RANGES))
        tiles.append(np.array([[operand(rng, kind) for _ in range(n)] for _ in range(n)]))

    cycles.append((zero, 0, 0, 0, 0, zero, 1))   # a new instruction: stale active weights
    for c in range(n):
        cycles.append((zero, 0, 0, 1, c, list(tiles[0][:, c]), 0))
    weights = [tiles[0], None]
    for k, tile in enumerate(tiles):
        bank = k % 2
        nxt = tiles[k + 1] if k + 1 < len(tiles) else None
        kind = rng.choice(list(RANGES))
        nvec = rng.randint(2 * n + n + 1, 3 * n + 6)
        for i in range(nvec):
            x = [operand(rng, kind) for _ in range(n)]
            # the next tile's columns once this pass's first vector has left the array
            we, wc, wd = 0, 0, zero
            j = i - left
            if nxt is not None and 0 <= j < n:
                we, wc, wd = 1, j, list(nxt[:, j])
            cycles.append((x, bank, 1, we, wc, wd, 0))
            expect.append((len(cycles) - 1 + lat, reference(weights, [x], [bank])[0]))
            if we and j == n - 1:
                weights[1 - bank] = nxt
            if rng.random() < 0.1:
                cycles.append((zero, 1 - bank, 0, 0, 0, zero, 0))   # idle: its tag swaps nothing
    cycles += [(zero, 0, 0, 0, 0, zero, 0)] * (lat + 1)
    sums = run(n, cycles, "tiles")
    for t, want in expect:
        assert sums[t] == [int(v) for v in want], f"cycle {t}: {sums[t]} != {list(want)}"


def test_first_pass_after_flush_swaps_same_tag():
    """An instruction whose first pass has the tag of the previous instruction's last
    pass: after ``w_flush`` the first valid vector swaps the new tile in anyway."""
    n = 2
    zero = [0] * n
    old = np.array([[1, 2], [3, 4]])
    new = np.array([[5, -6], [7, 8]])
    cycles = [(zero, 0, 0, 1, c, list(old[:, c]), 0) for c in range(n)]
    cycles.append(([1, 1], 0, 1, 0, 0, zero, 0))                  # pass tagged 0 with `old`
    cycles += [(zero, 0, 0, 0, 0, zero, 0)] * (2 * n + 1)
    cycles.append((zero, 0, 0, 0, 0, zero, 1))                    # next instruction
    cycles += [(zero, 0, 0, 1, c, list(new[:, c]), 0) for c in range(n)]
    t_new = len(cycles)
    cycles.append(([1, 1], 0, 1, 0, 0, zero, 0))                  # tagged 0 again, with `new`
    cycles += [(zero, 0, 0, 0, 0, zero, 0)] * (2 * n + 1)
    sums = run(n, cycles, "flush")
    assert sums[n + 2 * n + 1] == [4, 6]                           # [1, 1] @ old
    assert sums[t_new + 2 * n + 1] == [12, 2]                      # [1, 1] @ new


def test_pe_names():
    """PEs are named pe_<row>_<col> in the Verilog."""
    text = verilog.convert(SystolicArray(2), name="array", emit_src=False)
    for r in range(2):
        for c in range(2):
            assert f"pe_{r}_{c}" in text
