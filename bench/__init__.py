"""Benchmarks: measured figures, printed (and as JSON), never asserted in tests.

Each module has ``run(config) -> dict`` of figures (the shapes are defined in
`xdsa.bench.report`: structured ``{"title", "rows", "plot"}``, ``{case: figures}``
or flat ``{figure: value}``); `xdsa bench NAME` runs one of them (on the Verilator
backend; the golden-model benchmark runs on the golden model) and `xdsa bench all`
runs every one registered here, in this order, plus the synthesis of `base`, and
writes build/bench/report.md, report.json and utilisation.svg. A registered module
that does not exist yet is reported as not run.
"""

BENCHMARKS = {
    "golden": "xdsa.bench.golden",
    "fetch": "xdsa.bench.fetch",
    "datamove": "xdsa.bench.datamove",
    "vector": "xdsa.bench.vector",
    "matmul": "xdsa.bench.matmul",
    "conv": "xdsa.bench.conv",
    "simspeed": "xdsa.bench.simspeed",
}
