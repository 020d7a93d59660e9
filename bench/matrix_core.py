"""Matrix benchmarks through the core: run a program of matrix instructions on the
Verilator build of a core configuration, check it against the golden model and
count the cycles the instructions take from issue to completion.

`measure(config, instructions, patches)` builds one program (the instructions,
then ``exit`` and ``end``; operand tables from TABLES, data patches from DATA),
co-simulates it (`sim.cosim`: retire trace, whole memory and key tables must
match the golden model, else `RuntimeError` with the differences) and returns the
core's cycle count minus that of a program holding only ``exit`` and ``end``
(`baseline`): the cycles from the fetch of the first matrix instruction to the
retirement of the last, everything included (fetch, decode, operand-table load,
the engine's checks, operand loading, compute, drain, writes, retire).
"""

import time

from xdsa.golden.builder import ProgramBuilder
from xdsa.golden.isa import Fault
from xdsa.sim.cosim import cosim
from xdsa.sim.verilator import build, run_verilator

__all__ = ["TABLES", "DATA", "measure", "baseline", "check_config"]

TABLES = 0x1000          # operand tables (up to 128 instructions of a 96-byte table)
DATA = 0x4000            # operands and results

_BASELINE = {}


def check_config(config):
    if not config.array_n:
        raise ValueError(f"configuration {config.name!r} has no matrix unit (array_n = 0); use base or large")


def _image(config, instructions, patches):
    b = ProgramBuilder(32)
    b.tables(TABLES)
    b.text(0)
    for op, fields in instructions:
        b.insn(op, **fields)
    b.exit()
    b.end()
    for a, data in sorted(patches):
        if a < DATA or a + len(data) > config.mem_bytes:
            raise ValueError(f"data at {a:#x}+{len(data)} is outside {DATA:#x}..{config.mem_bytes:#x}")
        b.data(a)
        b.bytes(bytes(data))
    return b.build()


def baseline(config):
    """Cycles of the program ``exit; end`` on `config` (what `measure` subtracts)."""
    if config not in _BASELINE:
        _BASELINE[config] = run_verilator(_image(config, [], []), config).cycles
    return _BASELINE[config]


def measure(config, instructions, patches, *, label=""):
    """{cycles, instructions, sim_seconds} of `instructions` [(mnemonic, fields)] on
    `config`, co-simulated against the golden model."""
    check_config(config)
    image = _image(config, instructions, patches)
    build(config)                   # export and compile (cached) outside the timed run
    t0 = time.monotonic()
    report = cosim(image, config, "verilator")
    if not report.ok:
        raise RuntimeError(f"{label}: the core disagrees with the golden model:\n" + "\n".join(report.differences))
    if report.rtl.status != "exit" or any(e.fault != Fault.NONE for e in report.golden.trace):
        raise RuntimeError(f"{label}: the program did not run to its exit ({report.rtl.status}, "
                           f"{Fault(report.rtl.fault).name})")
    return {"cycles": report.rtl.cycles - baseline(config), "instructions": len(instructions),
            "sim_seconds": round(time.monotonic() - t0, 1)}
