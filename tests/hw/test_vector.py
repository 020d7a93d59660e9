# amaranth: UnusedElaboratable=no
"""The vector engine (hw/vector*.py) against the golden model, in pysim, under
memory back-pressure.

Every case is one instruction: the golden `Machine` executes it (program built
with `ProgramBuilder`, operand table encoded by `encode_table`) on a random
memory image, and the engine executes the same operand table in pysim on a
behavioural memory with random ``req.ready`` and ``done.ready`` stalls on every
port (test_vector_harness.py, which also checks the stream rules). The whole
final memory and the fault code are compared.

* W = 8: every opcode x every integer unit (test_vector_cases.sweep), mixed
  units, and the directed cases (lengths 0/1/odd, int4 odd counts, alignment,
  legal and illegal overlaps, float units, unit rules, ADDRESS_RANGE with 16-,
  32- and 64-bit addresses and lengths, shift amounts 0/width/beyond, division
  by zero and min / -1, every reduction axis mask);
* W = 32: a reduced set -- the directed cases about streaming (lengths,
  alignment, int4, overlaps, faults, address spaces; not the lane arithmetic of
  shift amounts, division edges and reduction axes), a sixteenth of the sweep and
  an eighth of the mixed cases (and as many again at read latency 2).

The bulk at W = 32 (every opcode x every integer unit, twice, plus longer
vectors, mixed and all directed cases) runs on the core in Verilator
(test_core_vector.py), as do the throughput and latency checks; the cycle model
is compared every cycle in test_vector_cycle.py. The cases of one configuration
run back to back in one simulation (elaboration is the expensive part); each
case is still its own test.

Waveforms: ``XDSA_VCD=1`` writes ``vector_<config>.vcd``.
"""


import pytest

from xdsa.golden.isa import DataUnit as DU, Fault
from xdsa.hw.config import CoreConfig, get_config
from xdsa.hw.vector import OPCODES, VectorEngine, refuses
from xdsa.hw.vector_ops import OPS

from test_vector_cases import directed, mixed, sweep
from test_vector_harness import INT_UNITS, compare, golden, run_rtl

CONFIGS = {
    "w8": CoreConfig("w8", mem_bytes=8192, row_bytes=8, vector_bytes=8),
    "w32": CoreConfig("w32", mem_bytes=8192, row_bytes=32, vector_bytes=32),
    # as `base`, with the memory's requests registered (read latency 2)
    "w32n_l2": CoreConfig("w32n_l2", mem_bytes=8192, row_bytes=32, vector_bytes=32, vector_narrow_bits=64,
                          vector_min_lane=8, mem_latency=2),
}


LANE_ONLY = ("amounts_", "div_edges", "mod_edges", "axis")      # W = 8 only: lane arithmetic


def _cases(name, cfg):
    if name == "w8":
        return sweep(cfg, seed=0) + mixed(cfg, seed=1) + directed(cfg, seed=2)
    if name == "w32n_l2":
        return (sweep(cfg, seed=30)[3::16] + mixed(cfg, seed=31)[1::6]
                + [c for c in directed(cfg, seed=32) if not c.name.startswith(LANE_ONLY)])
    return (sweep(cfg, seed=20)[1::16] + mixed(cfg, seed=21)[::8]
            + [c for c in directed(cfg, seed=22) if not c.name.startswith(LANE_ONLY)])


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


def test_narrow_path_configuration():
    """`vector_narrow_bits` is 0 or a power of two from 64 bits to the datapath; the
    narrow kinds are exactly the ALU kinds of the cycle model's NARROW mnemonics."""
    from xdsa.golden.cycle.vector import NARROW
    from xdsa.hw.vector_ops import NARROW_KINDS, Kind
    assert NARROW_KINDS == {Kind.POW, Kind.MEDIAN, Kind.CLIP, Kind.MUL, Kind.LSL, Kind.LSR, Kind.ROR, Kind.ASL,
                            Kind.ASR, Kind.DIV, Kind.MOD}
    assert {mn for mn, op in OPS.items() if op.kind in NARROW_KINDS} == NARROW
    assert get_config("base").narrow_groups == 4
    assert CoreConfig("w", mem_bytes=4096, row_bytes=32, vector_bytes=32).narrow_groups == 1
    for bad in (32, 96, 512):
        with pytest.raises(ValueError, match=f"vector_narrow_bits .* not {bad}"):
            CoreConfig("bad", mem_bytes=4096, row_bytes=32, vector_bytes=32, vector_narrow_bits=bad)
    with pytest.raises(ValueError, match="vector_narrow_bits"):
        CoreConfig("bad", mem_bytes=4096, row_bytes=32, vector_narrow_bits=64)      # no vector engine


def test_min_lane_configuration():
    """`vector_min_lane` is 4 or 8 bits; the cycle model's plan puts int4-only
    instructions in lanes of at least that width, and `Lanes` builds the widths it is
    given only (tests/hw/test_vector_cycle.py holds the RTL to the plan, lockstep)."""
    from xdsa.golden.cycle.vector import plan
    from amaranth.hdl import Module, Signal
    from xdsa.hw.vector_swar import Lanes
    assert get_config("base").vector_min_lane == 8
    for bad in (2, 16):
        with pytest.raises(ValueError, match=f"vector_min_lane must be 4 or 8 bits, not {bad}"):
            CoreConfig("bad", mem_bytes=4096, row_bytes=32, vector_bytes=32, vector_min_lane=bad)
    f = {"src0_unit": int(DU.S4), "src1_unit": int(DU.S4), "dst_unit": int(DU.S4), "len": 9}
    assert plan("add", f).lane_bits == 4 and plan("add", f, min_lane=8).lane_bits == 8
    assert Lanes(Module(), 64, Signal(3), widths=(8, 16, 32, 64)).widths == ((1, 8), (2, 16), (3, 32), (4, 64))


def test_overlap_rule_matches_golden():
    """`OverlapCheck` (hw/vector_overlap.py, the engine's D-OVERLAP test for one source)
    against the golden model's rule (golden/semantics/elementwise.py) for every pair of
    unit widths, on small distances and lengths around the boundaries and on random
    64-bit addresses and lengths: a pysim run of the pipeline, one check every other
    cycle (the length and the destination's unit presented one cycle earlier, as in
    the engine), each verdict two cycles after its check, while the next vector is
    presented, and no verdict for the cycles without ``valid``."""
    import random

    from amaranth.sim import Simulator

    from xdsa.golden import units as U
    from xdsa.golden.semantics.elementwise import _check_overlap
    from xdsa.hw.vector_overlap import OverlapCheck

    width_units = {u.bits: u for u in (DU.U4, DU.U8, DU.U16, DU.U32, DU.U64)}

    class Probe:                                   # the operand view _check_overlap reads
        def __init__(self, src, dst):
            self.f = {"src": src, "dst": dst}
            self.faulted = False

        def fault(self, code, detail):
            self.faulted = code == Fault.ILLEGAL_OPERAND

    def golden_bad(src, dst, n, bs, bd):
        x = Probe(src, dst)
        _check_overlap(x, width_units[4 << bd], n, [("src", width_units[4 << bs])])
        return x.faulted

    rng = random.Random(7)
    vectors = []
    for bs in range(5):
        for bd in range(5):
            for n in (0, 1, 2, 3, 7, 64, 1000):
                for delta in range(-70, 71, 3):
                    vectors.append((0x8000 + delta, 0x8000, n, bs, bd))
            for _ in range(60):
                n = rng.choice((rng.randrange(2, 1 << 64), rng.randrange(2, 1 << 20), (1 << 64) - 1, 1 << 63))
                dst = rng.randrange(1 << 64)
                span = U.nbytes(width_units[4 << max(bs, bd)], n)
                src = (dst + rng.randrange(-span - 8, span + 8)) % (1 << 64)
                vectors.append((src, dst, n, bs, bd))
    expected = [golden_bad(*v) for v in vectors]
    assert 0 < sum(expected) < len(expected)       # both verdicts occur

    dut = OverlapCheck()
    got = []

    async def bench(ctx):
        # vector i: its length and bd in cycle 2i, the check (valid) in cycle 2i + 1 with the
        # length and bd held, the verdict in cycle 2i + 3 (while the next vector is presented)
        seen = []
        for src, dst, n, bs, bd in vectors:
            for valid in (0, 1):
                for sig, val in ((dut.src, src), (dut.dst, dst), (dut.length, n), (dut.bs, bs), (dut.bd, bd),
                                 (dut.valid, valid)):
                    ctx.set(sig, val)
                await ctx.tick()
                seen.append(ctx.get(dut.bad))
        ctx.set(dut.valid, 0)
        for _ in range(2):
            await ctx.tick()
            seen.append(ctx.get(dut.bad))
        # seen[k]: the verdict during cycle k + 1; vector i's check in cycle 2i + 1 -> seen[2i + 2]
        got.extend(bool(seen[2 * i + 2]) for i in range(len(vectors)))
        assert not any(seen[2 * i + 1] for i in range(len(vectors))), "a verdict for a cycle without valid"

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    wrong = [(v, e) for v, e, g in zip(vectors, expected, got) if e != g]
    assert not wrong, f"{len(wrong)} of {len(vectors)} differ, e.g. (src, dst, n, bs, bd), golden: {wrong[:5]}"


def test_reduce_results_wait_for_the_writer():
    """Results of one element each (C reduced, C = 1) in 64-bit units, four to a row, with
    the ports stalled nine cycles in ten, so that the writer holds its input while a
    result waits (every result is the golden one)."""
    import random

    from test_vector_cases import reduce_case
    cfg = CONFIGS["w8"]
    cases = [reduce_case(mn, unit, rng=random.Random(k), seed=5 + k, axis=4, dims=(24, 2, 1),
                         addr=(0x300, 0xC00), name=f"{mn}_{unit.mnemonic}_per_element")
             for k, (mn, unit) in enumerate([("reduce_max", DU.S64), ("reduce_sum", DU.U64),
                                             ("reduce_any", DU.S64)])]
    exp = [golden(cfg, c) for c in cases]
    got = run_rtl(cfg, [(c, e[0]) for c, e in zip(cases, exp)], stall=0.9, seed=3)
    errors = [r for r in (compare(c, e, g) for c, e, g in zip(cases, exp, got)) if r]
    assert not errors, errors


def test_prod_skips_unit_factors():
    """REDUCE_PROD multiplies only by factors of magnitude above 1: elements 1 and -1
    (signed) take no multiplier pass, so a run of them takes as many cycles as a run of
    1s, and fewer than a run of 2s; unsigned all-ones (255) is a factor like any other.
    Every result is the golden one."""
    import random

    from test_vector_cases import encode, reduce_case
    cfg = CONFIGS["w8"]
    runs = {"ones": (DU.S8, [1] * 6), "minus_ones": (DU.S8, [-1] * 6), "twos": (DU.S8, [2] * 6),
            "u255": (DU.U8, [255] * 6), "u_ones": (DU.U8, [1] * 6)}
    cases = []
    for name, (unit, vals) in runs.items():
        c = reduce_case("reduce_prod", unit, rng=random.Random(0), seed=3, axis=1, dims=(6, 1, 1),
                        addr=(0x300, 0xF00), name=f"prod_{name}")
        c.patches = [(0x300, encode(unit, vals))]
        cases.append(c)
    exp = [golden(cfg, c) for c in cases]
    got = run_rtl(cfg, [(c, e[0]) for c, e in zip(cases, exp)], stall=0)
    errors = [r for r in (compare(c, e, g) for c, e, g in zip(cases, exp, got)) if r]
    assert not errors, errors
    cycles = {name: g[3] for name, g in zip(runs, got)}
    assert cycles["minus_ones"] == cycles["ones"] == cycles["u_ones"] < cycles["twos"], cycles
    assert cycles["u255"] > cycles["u_ones"], cycles
