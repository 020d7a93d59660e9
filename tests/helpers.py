"""Shared test helpers: assemble and run programs on the golden model."""

import numpy as np

from xdsa.golden.asm import assemble
from xdsa.golden.machine import Machine

PROLOGUE = ".tables 0x7000\n.text 0\n"


def run_source(source, mem_size=1 << 16, max_instructions=10_000, **kw):
    """Assemble `source` (a full program) and run it; returns (machine, result)."""
    image = assemble(source, "<test>")
    m = Machine(mem_size, **kw)
    m.load(image)
    return m, m.run(max_instructions)


def run_body(body, data="", mem_size=1 << 16, **kw):
    """Run instructions `body` followed by exit/end, with `data` in a .data section at
    0x8000 (tables at 0x7000). Returns (machine, result, symbols)."""
    source = PROLOGUE + body + "\n    exit\n    end\n.data 0x8000\n" + data + "\n"
    image = assemble(source, "<test>")
    m = Machine(mem_size, **kw)
    m.load(image)
    res = m.run(10_000)
    return m, res, {s.name: s.address for s in image.symbols}


def bytes_at(machine, address, n):
    return bytes(machine.mem[address:address + n])


def values(machine, address, dtype, count):
    return np.frombuffer(bytes_at(machine, address, np.dtype(dtype).itemsize * count), dtype=dtype)


def engines_config():
    """The configuration of every Verilator co-simulation in the default test run (the
    core, vector and matrix tests share it, so the model is compiled once per run); its
    vector engine and memory read latency are `base`'s."""
    from xdsa.hw.config import CoreConfig, get_config
    base = get_config("base")
    return CoreConfig("engines", mem_bytes=16 << 10, row_bytes=32, domains=(0x80,), vector_bytes=32,
                      vector_narrow_bits=64, vector_narrow_stages=base.vector_narrow_stages,
                      vector_min_lane=8, array_n=4, key_timeout=40, mem_latency=base.mem_latency)
