"""Vector engine throughput and latency on the Verilator backend (`xdsa bench vector`).

* **int8 ADD** and **int32 MUL** over 64 KiB vectors (64 Ki int8 or 16 Ki int32
  elements): bytes of destination data per cycle. The three operands overlap
  legally (destination 7 and 19 bytes below the two sources, D-OVERLAP), so that
  64 KiB vectors fit the 128 KiB memory of `base` and every operand starts at a
  different byte alignment.
* **16-element int8 ADD**: cycles from issue to completion.

Each figure is the difference in core cycles between a program with the
instruction twice and one with it once (as in `xdsa.bench.datamove`): the cost of
one more instruction, issue to completion, with fetch and setup included. Every
program is also run on the golden model and must agree with it (trace, memory).
Target (issue 5): int8 ADD at >= 0.9 x W bytes per cycle, W = ``vector_bytes``.
"""

import sys

import numpy as np

from xdsa.golden.builder import ProgramBuilder
from xdsa.golden.cycle.vector import NARROW, NARROW_SCALED
from xdsa.golden.isa import DataUnit, by_mnemonic
from xdsa.hw.vector_ops import ROLE_FIELDS
from xdsa.sim.cosim import run_golden
from xdsa.sim.trace import compare
from xdsa.sim.verilator import run_verilator

SIZE = 64 << 10
TABLES, BASE = 0x400, 0x1000
TARGET = 0.9


def _role_fields(mnemonic, role):
    """The address and unit field names of `role` in `mnemonic`'s operand table
    (``src`` or ``src0``, ... : the candidates of `hw.vector_ops.ROLE_FIELDS`)."""
    names = {f.name for f in by_mnemonic(mnemonic).table.resolve(32).fields}
    return tuple(next(c for c in cands if c in names) for cands in ROLE_FIELDS[role])


def operands(mnemonic, units, n, *, separate=False):
    """Address and unit fields of `mnemonic` for `units` {role: DataUnit} and `n` elements. By
    default the sources sit 7, 19 and 29 bytes above the destination (a legal
    overlap for same-width operands, so two 64 KiB vectors fit 128 KiB); with
    `separate`, each operand has its own region, at a different byte alignment."""
    fields, top = {}, BASE
    for k, (role, unit) in enumerate(units.items()):
        afield, ufield = _role_fields(mnemonic, role)
        if separate:
            addr = (top + 63) // 64 * 64 + (3, 17, 29, 5)[k]
            top = addr + (n * unit.bits + 7) // 8
        else:
            addr = BASE + 5 + {"d": 0, "s0": 7, "s1": 19, "s2": 29}[role]
            top = max(top, addr + (n * unit.bits + 7) // 8)
        fields[afield], fields[ufield] = addr, int(unit)
    return fields, top


def program(mnemonic, fields, n, repeat, payload):
    b = ProgramBuilder()
    b.tables(TABLES)
    b.text(0)
    for _ in range(repeat):
        b.insn(mnemonic, len=n, sat=0, **fields)
    b.exit()
    b.end()
    b.data(BASE)
    b.bytes(payload)
    return b.build()


def marginal_cycles(config, mnemonic, units, n, *, seed=1, separate=False):
    """Cycles of one more `mnemonic` of `n` elements (issue to completion), checked
    against the golden model. `units` {role: DataUnit} (roles s0, s1, s2, d)."""
    fields, top = operands(mnemonic, units, n, separate=separate)
    if top + 0x40 > config.mem_bytes:
        raise ValueError(f"{mnemonic} x{n} needs {top - BASE} bytes from {BASE:#x}; "
                         f"the memory of {config.name} is {config.mem_bytes} bytes")
    payload = np.random.default_rng(seed).integers(0, 256, top - BASE + 32, dtype=np.uint8).tobytes()
    cycles = {}
    for repeat in (1, 2):
        image = program(mnemonic, fields, n, repeat, payload)
        rtl = run_verilator(image, config)
        diffs = compare(run_golden(image, config), rtl)
        if diffs or rtl.status != "exit":
            raise RuntimeError(f"the RTL disagrees with the golden model on {mnemonic} x{n} ({rtl.status}): "
                               + "; ".join(diffs[:3]))
        cycles[repeat] = rtl.cycles
    return cycles[2] - cycles[1]


def steady_rate(config, mnemonic, units, n, **kw):
    """Steady-state destination bytes per cycle: the difference between `n` and
    `n` / 2 elements, so that setup and pipeline fill cancel."""
    full = marginal_cycles(config, mnemonic, units, n, **kw)
    half = marginal_cycles(config, mnemonic, units, n // 2, **kw)
    return (n - n // 2) * units["d"].bits / 8 / (full - half)


def run(config):
    W = config.vector_bytes
    if not W:
        return {"title": "Vector engine", "rows": [],
                "notes": [f"configuration {config.name} has no vector engine (vector_bytes = 0)"]}
    size = SIZE
    while size + BASE + 0x80 > config.mem_bytes:
        size //= 2
    rows = []
    narrow = config.narrow_groups > 1
    for name, mn, unit in (("int8 ADD", "add", DataUnit.S8), ("int32 MUL", "mul", DataUnit.S32),
                           ("int8 CLIP", "clip", DataUnit.S8)):
        if narrow and mn in NARROW:
            name += " (narrow path)"
        n = size * 8 // unit.bits
        units = {"s0": unit, "d": unit} if mn == "clip" else {"s0": unit, "s1": unit, "d": unit}
        print(f"vector bench: {name} over {size} bytes ...", file=sys.stderr)
        c = marginal_cycles(config, mn, units, n, seed=len(rows) + 1)
        rows.append({"case": f"{name}, {size // 1024} KiB", "elements": n, "dest_bytes": size, "cycles": c,
                     "bytes_per_cycle": round(size / c, 3), "fraction_of_W": round(size / c / W, 4)})
    print("vector bench: 16-element int8 ADD latency ...", file=sys.stderr)
    S8 = DataUnit.S8
    lat = marginal_cycles(config, "add", {"s0": S8, "s1": S8, "d": S8}, 16, seed=3)
    rows.append({"case": "int8 ADD, 16 elements (latency)", "elements": 16, "dest_bytes": 16, "cycles": lat,
                 "bytes_per_cycle": round(16 / lat, 3), "fraction_of_W": round(16 / lat / W, 4)})
    add = rows[0]
    target = TARGET * W
    notes = [f"W = {W} bytes (config {config.name}); cycles are the cost of one more instruction, "
             "issue to completion (program with it twice minus program with it once), Verilator backend; "
             "every program matched the golden model.",
             f"target: int8 ADD >= {target:g} B/cycle: {add['bytes_per_cycle']} B/cycle -> "
             + ("met" if add["bytes_per_cycle"] >= target else "NOT met")]
    if add["bytes_per_cycle"] < target:
        notes.append(limits(config, add))
    eng = engine_cycles(config, "add", {"s0": S8, "s1": S8, "d": S8}, 16)
    notes.append(f"16-element int8 ADD: {lat} cycles from issue to completion; {eng} of them in the engine "
                 "(command accepted to done, golden/cycle/vector.py: the decode, the unit, overlap and range "
                 "checks one per cycle, the reads, A/S0/S1/T/S2/P, the write, done), the rest in the core "
                 "(operand-table load, dispatch, retire), which runs one instruction at a time.")
    n_add = rows[0]["elements"]
    per_insn = rows[0]["cycles"] - n_add * 8 // (8 * W)
    notes.append(f"steady state: one beat of W bytes per cycle at any alignment (the datapath width, not the "
                 f"element width, sets the rate); the {per_insn} cycles above one per beat are the fixed cost per "
                 "instruction (the same as the short ADD's latency).")
    if narrow:
        K, step = config.vector_narrow_stages, config.narrow_step_cycles
        staged = (f", whose {K} stages make each of its steps {step} cycles" if K else "")
        notes.append(f"the narrow path's kinds ({', '.join(sorted(k.upper() for k in NARROW_SCALED))}) run on a "
                     f"{config.vector_narrow_bits}-bit ALU, one lane group of the beat after the other{staged}: "
                     f"{config.narrow_groups * step} times the cycles of a full-width beat "
                     f"(DIV and MOD, one 64-bit group at a time anyway: {step} times).")
    result = {"title": f"Vector engine ({config.name}, W = {W})", "rows": rows, "notes": notes}
    for r in rows:
        print(f"  {r['case']:36s} {r['cycles']:8d} cycles  {r['bytes_per_cycle']:7.3f} B/cycle "
              f"({100 * r['fraction_of_W']:.1f} % of W)", file=sys.stderr)
    for n in notes:
        print("  " + n, file=sys.stderr)
    return result


def engine_cycles(config, mnemonic, units, n):
    """Cycles from command accepted to ``done`` of the engine alone, from its cycle
    model (memory always ready), operands placed as in `marginal_cycles`."""
    from xdsa.golden.cycle.vector import VectorModel
    fields, _ = operands(mnemonic, units, n)
    fields.update(len=n, sat=0)
    model = VectorModel(config)
    model.edge(cmd=(mnemonic, fields))
    cycles = 1
    while not model.outputs().done_valid:
        model.edge()
        cycles += 1
    return cycles


def limits(config, add):
    """What limits int8 ADD below the target (the overhead per instruction or the
    steady-state rate)."""
    W = config.vector_bytes
    beats = add["dest_bytes"] / W
    extra = add["cycles"] - beats
    return (f"int8 ADD takes {add['cycles']} cycles for {beats:g} beats of W bytes: {extra:g} cycles "
            f"({extra / beats:.3f} per beat) above one beat per cycle")
