"""Co-simulation: run one image on the golden model and on the RTL (pysim or
Verilator) and compare the retire traces, the final memory and the key tables.

The golden model is given the configuration's capability (the opcodes its engines
execute) and a no-op handler for each configured domain port, so both sides fault
on the same instructions.
"""

from dataclasses import dataclass

from xdsa.golden.machine import Machine
from xdsa.hw.capabilities import golden_capability

from .trace import RunOutcome, from_golden, compare

__all__ = ["run_golden", "run_rtl", "cosim", "CosimReport"]


def _domain_sink(machine, pc, instruction):
    return ()


def run_golden(image, config, max_instructions=1_000_000) -> RunOutcome:
    m = Machine(config.mem_bytes, domains={d: _domain_sink for d in config.domains},
                capability=golden_capability(config))
    m.load(image)
    r = m.run(max_instructions)
    return RunOutcome(r.status, r.fault, r.fault_pc, from_golden(r.trace), bytes(m.mem),
                      keys=m.keys.ravel().tolist(), backend="golden")


def run_rtl(image, config, backend="pysim", **kw) -> RunOutcome:
    if backend == "pysim":
        from .pysim import run_pysim
        return run_pysim(image, config, **kw)
    if backend == "verilator":
        from .verilator import run_verilator
        return run_verilator(image, config, **kw)
    raise ValueError(f"unknown backend {backend!r}; expected pysim or verilator")


@dataclass
class CosimReport:
    golden: RunOutcome
    rtl: RunOutcome
    differences: list

    @property
    def ok(self):
        return not self.differences


def cosim(image, config, backend="pysim", **kw) -> CosimReport:
    g = run_golden(image, config)
    r = run_rtl(image, config, backend, **kw)
    return CosimReport(g, r, compare(g, r))
