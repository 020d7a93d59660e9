"""Fetch rate: instructions per cycle for a 1024-instruction program on the Verilator
backend. The program is 1023 instructions for a configured domain port (which
retire in the cycle the port takes them, so the fetcher is the only limit) and END.
"""

from xdsa.golden.builder import ProgramBuilder
from xdsa.sim.cosim import run_golden
from xdsa.sim.trace import compare
from xdsa.sim.verilator import run_verilator

N = 1024


def program(did):
    b = ProgramBuilder()
    b.text(0)
    for k in range(N - 1):
        b.raw(did, k)
    b.end()
    return b.build()


def run(config):
    if not config.domains:
        return {"note": f"configuration {config.name} has no domain port; fetch rate not measured"}
    image = program(config.domains[0])
    rtl = run_verilator(image, config)
    diffs = compare(run_golden(image, config), rtl)
    return {
        "instructions": N,
        "cycles_start_to_stop": rtl.cycles,
        "instructions_per_cycle": round(N / rtl.cycles, 4),
        "matches_golden": not diffs,
    }
