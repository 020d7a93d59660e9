"""The reset in the middle of a run (pysim, `engines_config()`).

Only the control state of the core has a reset; datapath registers (operands,
partial sums, queue entries, pipeline stages) keep whatever they held
(docs/architecture.md, "Reset"). This test interrupts one program -- matrix,
vector and data-move instructions whose destinations overlap no operand, so a
rerun over a partly written memory ends with the same memory -- by a one-cycle
reset at eight points of its run (a sample: a reset-less register is caught only
if some point leaves it stale where it matters), restarting it through the host
port after each reset. The run after the last reset must be the golden model's
(retire trace, memory, key tables): a register that needed its reset and lost
it shows up as a stale value in that run.
"""

import random

import numpy as np
import pytest

from xdsa.golden.builder import ProgramBuilder
from xdsa.golden.isa import DataUnit, Fault
from xdsa.sim.cosim import cosim

from helpers import engines_config
from matrix_cases import IMM, PER_CH, conv, gemm
from test_core_matrix import TABLES, DATA, Layout
from test_vector_cases import make, reduce_case, role_units

CFG = engines_config()


def _program():
    """The image and the number of its instructions."""
    L = Layout()
    rng = random.Random(5)
    cases = [L(gemm, "gemm_5x7x9", 5, 7, 9, seed=1),
             L(conv, "conv_requant", C=5, H=4, W=5, K=6, seed=43,
               params={"bias": (PER_CH, None), "mul": (PER_CH, None), "shift": (IMM, 20)}),
             L(gemm, "gemm_s16", 3, 6, 5, fm_unit="s16", w_unit="s16", dist="edge", seed=8)]
    insns = [(c.op, c.as_bits, c.fields) for c in cases]
    patches = [p for c in cases for p in c.patches]
    base = (L.pos + 63) & ~63
    for k, (mn, unit, n) in enumerate([("add", DataUnit.S8, 150), ("mul", DataUnit.S16, 70),
                                        ("median", DataUnit.S8, 60), ("add", DataUnit.U8, 40)]):
        at = {role: base + 0x100 * i + rng.randrange(32) for i, role in enumerate(("s0", "s1", "s2", "d"))}
        v = make(mn, role_units(mn, unit), n, rng=rng, seed=k, addr=at)
        insns.append((v.mnemonic, v.as_bits, v.fields))
        patches += v.patches
        base += 0x400
    for k, (mn, unit, dims) in enumerate([("reduce_sum", DataUnit.S8, (6, 4, 3)),
                                          ("reduce_var", DataUnit.S16, (5, 3, 2))]):
        r = reduce_case(mn, unit, rng=rng, seed=10 + k, dims=dims, addr=(base + 5, base + 0x100 + 3))
        insns.append((r.mnemonic, r.as_bits, r.fields))
        patches += r.patches
        base += 0x200
    src, dst = base, base + 0x200
    insns.append(("data_move", 32, dict(unit=DataUnit.U16, src=src + 3, dst=dst + 5, src_trans_size=24,
                                        src_width=6, src_line_stride=20, des_trans_size=24, des_width=4,
                                        des_line_stride=10)))
    end = dst + 0x100
    assert end <= CFG.mem_bytes
    b = ProgramBuilder(32)
    b.tables(TABLES)
    b.text(0)
    for op, as_bits, fields in insns:
        fields = dict(fields)
        unit = fields.pop("unit", None)
        if unit is None:
            b.insn(op, as_bits=as_bits, **fields)
        else:
            b.insn(op, unit, as_bits=as_bits, **fields)
    b.exit()
    b.end()
    region = np.random.default_rng(3).integers(0, 256, end - DATA, dtype=np.uint8)
    for a, d in patches:
        region[a - DATA:a - DATA + len(d)] = np.frombuffer(bytes(d), dtype=np.uint8)
    b.data(DATA)
    b.bytes(region.tobytes())
    return b.build(), len(insns)


@pytest.fixture(scope="module")
def image_and_cycles():
    image, n = _program()
    report = cosim(image, CFG, "pysim")
    assert report.ok, "\n".join(report.differences)
    assert len(report.golden.trace) == n + 1 and all(e.fault == Fault.NONE for e in report.golden.trace)
    return image, report.rtl.cycles


def test_reset_mid_run(image_and_cycles):
    image, cycles = image_and_cycles
    rng = random.Random(1)
    # reset points in every third of the run, three in the first instruction's setup
    # (cheap: the run is cut early) and twice in a row right after a start
    points = ([rng.randrange(k * cycles // 3, (k + 1) * cycles // 3) for k in range(3)]
              + [rng.randrange(4, 60) for _ in range(3)] + [0, 1])
    rng.shuffle(points)
    report = cosim(image, CFG, "pysim", resets_at=points)
    assert report.ok, f"after resets at {points}:\n" + "\n".join(report.differences)
