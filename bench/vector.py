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
from xdsa.golden.isa import DataUnit
from xdsa.sim.cosim import run_golden
from xdsa.sim.trace import compare
from xdsa.sim.verilator import run_verilator

SIZE = 64 << 10
TABLES, BASE = 0x400, 0x1000
TARGET = 0.9


def program(mnemonic, unit, n, dst, repeat, payload):
    b = ProgramBuilder()
    b.tables(TABLES)
    b.text(0)
    for _ in range(repeat):
        b.insn(mnemonic, src0=dst + 7, src1=dst + 19, dst=dst, len=n, src0_unit=unit, src1_unit=unit,
               dst_unit=unit, sat=0)
    b.exit()
    b.end()
    b.data(BASE)
    b.bytes(payload)
    return b.build()


def marginal_cycles(config, mnemonic, unit, n, seed):
    """Cycles of one more `mnemonic` of `n` elements (issue to completion)."""
    size = n * DataUnit(unit).bits // 8
    payload = np.random.default_rng(seed).integers(0, 256, size + 32, dtype=np.uint8).tobytes()
    dst = BASE + 5
    cycles = {}
    for repeat in (1, 2):
        image = program(mnemonic, int(unit), n, dst, repeat, payload)
        rtl = run_verilator(image, config)
        diffs = compare(run_golden(image, config), rtl)
        if diffs or rtl.status != "exit":
            raise RuntimeError(f"the RTL disagrees with the golden model on {mnemonic} x{n} ({rtl.status}): "
                               + "; ".join(diffs[:3]))
        cycles[repeat] = rtl.cycles
    return cycles[2] - cycles[1]


def run(config):
    W = config.vector_bytes
    if not W:
        return {"title": "Vector engine", "rows": [],
                "notes": [f"configuration {config.name} has no vector engine (vector_bytes = 0)"]}
    size = SIZE
    while size + BASE + 0x100 > config.mem_bytes:
        size //= 2
    rows = []
    for name, mn, unit in (("int8 ADD", "add", DataUnit.S8), ("int32 MUL", "mul", DataUnit.S32)):
        n = size * 8 // unit.bits
        print(f"vector bench: {name} over {size} bytes ...", file=sys.stderr)
        c = marginal_cycles(config, mn, unit, n, seed=len(rows) + 1)
        rows.append({"case": f"{name}, {size // 1024} KiB", "elements": n, "dest_bytes": size, "cycles": c,
                     "bytes_per_cycle": round(size / c, 3), "fraction_of_W": round(size / c / W, 4)})
    print("vector bench: 16-element int8 ADD latency ...", file=sys.stderr)
    lat = marginal_cycles(config, "add", DataUnit.S8, 16, seed=3)
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
    notes.append(f"16-element int8 ADD: {lat} cycles from issue to completion (operand checks, one read per "
                 "source, 3 pipeline stages, one write; the engine docstring gives the breakdown).")
    result = {"title": f"Vector engine ({config.name}, W = {W})", "rows": rows, "notes": notes}
    for r in rows:
        print(f"  {r['case']:36s} {r['cycles']:8d} cycles  {r['bytes_per_cycle']:7.3f} B/cycle "
              f"({100 * r['fraction_of_W']:.1f} % of W)", file=sys.stderr)
    for n in notes:
        print("  " + n, file=sys.stderr)
    return result


def limits(config, add):
    """What limits int8 ADD below the target (the overhead per instruction or the
    steady-state rate)."""
    W = config.vector_bytes
    beats = add["dest_bytes"] / W
    extra = add["cycles"] - beats
    return (f"int8 ADD takes {add['cycles']} cycles for {beats:g} beats of W bytes: {extra:g} cycles "
            f"({extra / beats:.3f} per beat) above one beat per cycle")
