"""The data-move microprogram (golden/cycle/dm_ucode.py), run by its model
(golden/cycle/dm_micro.py), against the golden model's DATA_MOVE: the directed
cases of tests/hw/test_datamove.py and 400 seeded random ones, for two memory
sizes. Fault code and every byte of the final memory must agree."""

import os
import sys

import numpy as np
import pytest

from xdsa.golden.cycle import dm_ucode
from xdsa.golden.cycle.dm_micro import MicroModel
from xdsa.golden.isa import Fault
from xdsa.hw.config import CoreConfig

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "hw"))
import test_datamove as T                                         # noqa: E402  (the case generators)

CONFIGS = [CoreConfig("m8k", mem_bytes=8 << 10, row_bytes=8, datamove_lanes=1, datamove="micro"),
           CoreConfig("m4k", mem_bytes=4 << 10, row_bytes=32, datamove_lanes=1, datamove="micro")]


@pytest.mark.parametrize("cfg", CONFIGS, ids=[c.name for c in CONFIGS])
def test_microprogram_matches_golden(cfg):
    model = MicroModel(cfg.mem_bytes)
    cases = T.directed(cfg.mem_bytes) + T.random_cases(cfg, 400, seed=123)
    bad, steps = [], []
    for c in cases:
        before, want, want_fault, _, detail = T.golden(cfg, c)
        mem = before.copy()
        fault, trace = model.run(T.table_bytes(c), c.as_bits, mem)
        steps.append(len(trace))
        if fault != want_fault or not np.array_equal(mem, want):
            bad.append(f"{c.name}: {Fault(fault).name}, golden {Fault(want_fault).name} ({detail}), "
                       f"{int((mem != want).sum())} bytes differ")
    print(f"\n{cfg.name}: {len(cases)} moves, micro-instructions executed: mean {np.mean(steps):.0f}, "
          f"max {max(steps)}")
    assert not bad, "\n".join(bad[:10])


def test_rom_fits():
    code, words = dm_ucode.program()
    assert len(words) <= dm_ucode.ROM_DEPTH and all(0 <= w < 1 << dm_ucode.WORD_BITS for w in words)
    labels = dm_ucode.labels()
    assert {"m.checks", "mv.normal", "mv.imm", "mv.up", "mv.tr", "side", "mul", "div"} <= set(labels)
    assert all(0 <= pc < len(words) for pc in labels.values())
    print(f"\nmicroprogram: {len(words)} of {dm_ucode.ROM_DEPTH} words")
