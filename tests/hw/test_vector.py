# amaranth: UnusedElaboratable=no
"""The vector engine (hw/vector*.py) against the golden model.

Every case is one instruction: the golden `Machine` executes it (program built
with `ProgramBuilder`, operand table encoded by `encode_table`) on a random
memory image, and the engine executes the same operand table in pysim on a
behavioural memory with random ``req.ready`` stalls on every port
(test_vector_harness.py). The whole final memory and the fault code are
compared.

* W = 8: every opcode x every integer unit (test_vector_cases.sweep), mixed
  units, and the directed cases (lengths 0/1/odd, int4 odd counts, alignment,
  legal and illegal overlaps, float units, unit rules, ADDRESS_RANGE with 16-,
  32- and 64-bit addresses and lengths, shift amounts 0/width/beyond, division
  by zero and min / -1, every reduction axis mask);
* W = 16 and W = 32: the mixed and directed cases and a third of the sweep.

The cases of one configuration run back to back in one simulation (elaboration
is the expensive part); each case is still its own test. The performance figures
(int8 ADD and int32 MUL bytes per cycle, the latency of a 16-element ADD) are
printed and the design properties asserted.

Waveforms: ``XDSA_VCD=1`` writes ``vector_<config>.vcd``.
"""

import os
import random
import sys

import numpy as np
import pytest

from xdsa.golden.isa import DataUnit as DU, Fault
from xdsa.hw.config import CoreConfig, get_config
from xdsa.hw.vector import OPCODES, VectorEngine, refuses
from xdsa.hw.vector_ops import OPS

sys.path.insert(0, os.path.dirname(__file__))      # the shared vector test helpers live here
from test_vector_cases import directed, make, mixed, sweep               # noqa: E402
from test_vector_harness import INT_UNITS, compare, golden, run_rtl      # noqa: E402

CONFIGS = {
    "w8": CoreConfig("w8", mem_bytes=8192, row_bytes=8, vector_bytes=8),
    "w16": CoreConfig("w16", mem_bytes=8192, row_bytes=16, vector_bytes=16),
    "w32": CoreConfig("w32", mem_bytes=8192, row_bytes=32, vector_bytes=32),
}


def _cases(name, cfg):
    if name == "w8":
        return sweep(cfg, seed=0) + mixed(cfg, seed=1) + directed(cfg, seed=2)
    seed = {"w16": 10, "w32": 20}[name]
    return sweep(cfg, seed=seed)[name == "w32"::3] + mixed(cfg, seed=seed + 1) + directed(cfg, seed=seed + 2)


CASES = {name: _cases(name, cfg) for name, cfg in CONFIGS.items()}
_RESULTS = {}


def results_for(name):
    if name not in _RESULTS:
        cfg = CONFIGS[name]
        cases = CASES[name]
        exp = [golden(cfg, c) for c in cases]
        got = run_rtl(cfg, [(c, e[0]) for c, e in zip(cases, exp)], seed=len(name), vcd_name=f"vector_{name}")
        _RESULTS[name] = {c.name: (c, e, g) for c, e, g in zip(cases, exp, got)}
    return _RESULTS[name]


@pytest.mark.parametrize("cfg_name, case_name", [(k, c.name) for k, cs in CASES.items() for c in cs],
                         ids=[f"{k}-{c.name}" for k, cs in CASES.items() for c in cs])
def test_instruction(cfg_name, case_name):
    case, exp, got = results_for(cfg_name)[case_name]
    err = compare(case, exp, got)
    assert err is None, err


def test_case_names_unique():
    for name, cases in CASES.items():
        names = [c.name for c in cases]
        assert len(names) == len(set(names)), name


def test_coverage():
    """The sweep covers every opcode x every integer unit (logic: bytes), and the
    cases together reach every fault the engine can raise and every reduction axis."""
    res = results_for("w8")
    seen = {(c.mnemonic, u) for c, e, g in res.values()
            for u in [c.fields.get("src0_unit", c.fields.get("src_unit"))]}
    for mn, info in OPS.items():
        if info.bytes_only:
            assert any(m == mn for m, _ in seen), mn
            continue
        for u in INT_UNITS:
            assert (mn, int(u)) in seen, (mn, u.mnemonic)
    faults = {e[2] for c, e, g in res.values()}
    assert {0, Fault.UNSUPPORTED_UNIT, Fault.ILLEGAL_OPERAND, Fault.ADDRESS_RANGE} <= faults
    axes = {c.fields["axis"] for c, e, g in res.values() if "axis" in c.fields and e[2] == 0}
    assert axes == set(range(1, 8))
    assert {c.as_bits for c, e, g in res.values() if e[2] == 0} == {16, 32, 64}


def test_opcodes_and_refuses():
    """OPCODES are the integer elementwise and reduction mnemonics; `refuses` names
    exactly the float units."""
    brief = ("add sub max min maxsi minsi thres asum abs median sign mul div mod pow and or xor inv bclr bset "
             "asr asl lsr lsl ror nsr sxt uxt seq sne sle slt sge sgt clip round ceil floor data_convert "
             "reduce_all reduce_any reduce_mean reduce_max reduce_min reduce_prod reduce_sum reduce_var").split()
    assert sorted(OPCODES) == sorted(brief) == sorted(OPS)
    from xdsa.golden.isa import by_mnemonic
    cfg = get_config("base")
    add = by_mnemonic("add")
    assert refuses(cfg, add, {"src0_unit": 6, "src1_unit": 6, "dst_unit": 6, "len": 3}) is None
    for code in (10, 11, 12):
        assert "f" in refuses(cfg, add, {"src0_unit": 6, "src1_unit": code, "dst_unit": 6, "len": 3})
    with pytest.raises(ValueError, match="vector_bytes"):
        VectorEngine(CoreConfig("bad", mem_bytes=4096, row_bytes=16, vector_bytes=8))


# --- performance ------------------------------------------------------------------------------------

PERF = CoreConfig("perf", mem_bytes=64 << 10, row_bytes=32, vector_bytes=32)


def _measure(cases):
    exp = [golden(PERF, c) for c in cases]
    got = run_rtl(PERF, [(c, e[0]) for c, e in zip(cases, exp)], stall=0)
    for c, e, g in zip(cases, exp, got):
        err = compare(c, e, g)
        assert err is None, err
        assert e[2] == 0, c.name
    return [g[2] for g in got]


def test_performance():
    """Steady-state destination bytes per cycle (the difference between a long and a
    half-length run at unaligned addresses, so that setup and pipeline fill cancel)
    and the latency of a 16-element int8 ADD, with the memory never stalling."""
    rng = random.Random(7)
    W = PERF.vector_bytes
    addr = {"s0": 0x1003, "s1": 0x5011, "s2": 0x9005, "d": 0xB01D}
    specs = {
        "add_s8": ("add", {"s0": DU.S8, "s1": DU.S8, "d": DU.S8}, 1, 8192),
        "add_s8_s16_widen": ("add", {"s0": DU.S8, "s1": DU.S8, "d": DU.S16}, 2, 2048),
        "add_u4": ("add", {"s0": DU.U4, "s1": DU.U4, "d": DU.U4}, 0.5, 8192),
        "mul_s32": ("mul", {"s0": DU.S32, "s1": DU.S32, "d": DU.S32}, 4, 1024),
        "mul_s32_s64": ("mul", {"s0": DU.S32, "s1": DU.S32, "d": DU.S64}, 8, 512),
        "mul_s64": ("mul", {"s0": DU.S64, "s1": DU.S64, "d": DU.S64}, 8, 512),
        "mul_s8": ("mul", {"s0": DU.S8, "s1": DU.S8, "d": DU.S8}, 1, 4096),
        "median_s8": ("median", {"s0": DU.S8, "s1": DU.S8, "s2": DU.S8, "d": DU.S8}, 1, 2048),
        "div_s8": ("div", {"s0": DU.S8, "s1": DU.S8, "d": DU.S8}, 1, 512),
        "div_s32": ("div", {"s0": DU.S32, "s1": DU.S32, "d": DU.S32}, 4, 128),
    }
    cases = []
    for name, (mn, units, size, n) in specs.items():
        for k in (n, n // 2):
            cases.append(make(mn, units, k, rng=rng, seed=3, addr=addr, edges=False, name=f"{name}_{k}"))
    cases.append(make("add", {"s0": DU.S8, "s1": DU.S8, "d": DU.S8}, 16, rng=rng, seed=4, edges=False,
                      addr={"s0": 0x1000, "s1": 0x2000, "d": 0x3000}, name="latency_add16"))
    cycles = _measure(cases)
    rates = {}
    for i, (name, (mn, units, size, n)) in enumerate(specs.items()):
        c_full, c_half = cycles[2 * i], cycles[2 * i + 1]
        rates[name] = (n - n // 2) * size / (c_full - c_half)
    latency = cycles[-1]
    print("\nvector engine, W = 32, steady state (destination bytes per cycle): "
          + ", ".join(f"{k} {v:.2f}" for k, v in rates.items())
          + f"; 16-element int8 ADD: {latency} cycles from cmd accepted to done")
    assert rates["add_s8"] >= 0.9 * W
    assert rates["add_s8_s16_widen"] >= 0.9 * W
    assert rates["mul_s32"] >= 0.9 * W                 # one pass: one beat per cycle
    assert rates["mul_s32_s64"] >= 0.9 * W
    assert rates["mul_s64"] >= 0.45 * W                # two passes
    assert rates["median_s8"] >= 0.45 * W              # sources 1 and 2 share port B
    assert latency <= 24
