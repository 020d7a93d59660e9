"""Simulation speed: simulated core cycles per wall-clock second in pysim and in the
Verilator backend, on the same kind of program (a chain of DATA_MOVEs), excluding
the one-off Verilator build."""

import numpy as np

from xdsa.golden.builder import ProgramBuilder
from xdsa.sim.pysim import run_pysim
from xdsa.sim.verilator import run_verilator


def program(moves, size):
    """`moves` DATA_MOVEs of `size` bytes back and forth; two operand tables serve them all."""
    b = ProgramBuilder()
    text_bytes = -(-(moves + 2) // 32) * 544
    tables = -(-text_bytes // 1024) * 1024
    data = tables + 1024
    b.tables(tables)
    b.text(0)
    for k in range(moves):
        src, dst = (data, data + size + 64) if k % 2 == 0 else (data + size + 64 + 3, data + 5)
        b.insn("data_move", "u8", src=src, dst=dst, src_trans_size=size - 16, des_trans_size=size - 16,
               table=tables + 64 * (k % 2))
    b.exit()
    b.end()
    b.data(data)
    b.bytes(np.random.default_rng(1).integers(0, 256, size, dtype=np.uint8).tobytes())
    return b.build()


def run(config):
    out = {}
    image = program(16, 2048)
    r = run_pysim(image, config, read_keys_back=False)
    out["pysim_cycles"] = r.cycles
    out["pysim_cycles_per_second"] = round(r.cycles / r.run_seconds)
    image = program(1500, 24576)
    r = run_verilator(image, config)
    out["verilator_cycles"] = r.cycles
    out["verilator_cycles_per_second"] = round(r.cycles / r.run_seconds)
    return out
