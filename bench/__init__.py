"""Benchmarks: measured figures, printed (and as JSON), never asserted in tests.

Each module has ``run(config) -> dict`` of figures; `xdsa bench NAME` runs it on the
Verilator backend (the golden-model benchmark runs on the golden model).
"""

BENCHMARKS = {
    "golden": "xdsa.bench.golden",
    "fetch": "xdsa.bench.fetch",
    "datamove": "xdsa.bench.datamove",
}
