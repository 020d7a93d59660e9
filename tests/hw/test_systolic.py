# amaranth: UnusedElaboratable=no
"""The systolic array (hw/systolic.py) against its cycle model (golden/cycle/systolic.py).

The RTL and the model run side by side on the same inputs; every cycle the harness
compares every PE's registers (activation, bank tag, partial sum, both weights) and
the deskewed column sums, and names the first PE and register that differ. The
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
REGS = ("a", "bank", "psum", "w0", "w1")


def operand(rng, kind):
    lo, hi = RANGES[kind]
    r = rng.random()
    if r < 0.15:
        return lo
    if r < 0.3:
        return hi
    return rng.randint(lo, hi)


def run(n, cycles, name):
    """Run `cycles` [(x, x_bank, w_we, w_bank, w_col, w_data)] on RTL and model; compare
    every register every cycle. Returns the RTL's sums per cycle."""
    dut = SystolicArray(n)
    model = SystolicModel(n)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    out = []

    async def bench(ctx):
        for t, (x, xb, we, wb, wc, wd) in enumerate(cycles):
            for r in range(n):
                ctx.set(dut.x[r], int(x[r]))
                ctx.set(dut.w_data[r], int(wd[r]))
            ctx.set(dut.x_bank, xb)
            ctx.set(dut.w_we, we)
            ctx.set(dut.w_bank, wb)
            ctx.set(dut.w_col, wc)
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
            model.step(x, xb, we, wb, wc, wd)

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
    """Unconstrained random inputs: any vector, any bank tag, a weight write to any
    column of any bank in any cycle (also to the bank in use): the RTL must still be
    the model, register for register."""
    rng = random.Random(11 + n)
    cycles = []
    for _ in range(120):
        kind = rng.choice(list(RANGES))
        wkind = rng.choice(list(RANGES))
        zero = rng.random() < 0.1
        cycles.append(([0 if zero else operand(rng, kind) for _ in range(n)], rng.getrandbits(1),
                       int(rng.random() < 0.4), rng.getrandbits(1), rng.randrange(n),
                       [operand(rng, wkind) for _ in range(n)]))
    run(n, cycles, f"random_{n}")


def test_tiles():
    """The engine's discipline on random tiles (N = 4): load bank 0 column by column,
    stream a tile's vectors tagged bank 0 while bank 1 is loaded with the next tile,
    then switch banks with no bubble, repeatedly, with some idle (zero) cycles. Every
    register is compared with the model every cycle, and the outputs with plain
    matrix-vector products after the array's latency."""
    n = 4
    rng = random.Random(5)
    lat = 2 * n - 1
    zero = [0] * n
    cycles, expect = [], []                       # expect: (cycle, sums)
    tiles = []
    for k in range(5):
        kind = rng.choice(list(RANGES))
        tiles.append(np.array([[operand(rng, kind) for _ in range(n)] for _ in range(n)]))
    weights = [None, None]

    def load(t, bank, cols):
        for c in cols:
            cycles.append((zero, 0, 1, bank, c, list(t[:, c])))

    load(tiles[0], 0, range(n))
    weights[0] = tiles[0]
    for k, tile in enumerate(tiles):
        bank = k % 2
        nxt = tiles[k + 1] if k + 1 < len(tiles) else None
        kind = rng.choice(list(RANGES))
        nvec = rng.randint(2 * n + n, 3 * n + 5)
        for i in range(nvec):
            x = [operand(rng, kind) for _ in range(n)]
            # load the other bank once the previous tile has left the array
            we, wc, wd = 0, 0, zero
            j = i - (2 * n)
            if nxt is not None and 0 <= j < n:
                we, wc, wd = 1, j, list(nxt[:, j])
            cycles.append((x, bank, we, 1 - bank, wc, wd))
            expect.append((len(cycles) - 1 + lat, reference([weights[0], weights[1]], [x], [bank])[0]))
            if we and j == n - 1:
                weights[1 - bank] = nxt
            if rng.random() < 0.1:
                cycles.append((zero, bank, 0, 0, 0, zero))
    cycles += [(zero, 0, 0, 0, 0, zero)] * (lat + 1)
    sums = run(n, cycles, "tiles")
    for t, want in expect:
        assert sums[t] == [int(v) for v in want], f"cycle {t}: {sums[t]} != {list(want)}"


def test_pe_names():
    """PEs are named pe_<row>_<col> in the Verilog."""
    text = verilog.convert(SystolicArray(2), name="array", emit_src=False)
    for r in range(2):
        for c in range(2):
            assert f"pe_{r}_{c}" in text
