"""Simulation speed: simulated core cycles per wall-clock second in pysim and in the
Verilator backend, on the same kind of program (a chain of DATA_MOVEs), excluding
the one-off Verilator build."""

import numpy as np

from xdsa.golden.builder import ProgramBuilder
from xdsa.sim.pysim import run_pysim
from xdsa.sim.verilator import run_verilator


def _layout(moves, size):
    """(tables, data, end) addresses of `program(moves, size)`."""
    text_bytes = -(-(moves + 2) // 32) * 544
    tables = -(-text_bytes // 1024) * 1024
    data = tables + 1024
    return tables, data, data + 2 * size + 64 + 3


def _fitted(config, moves, size):
    """`moves` and `size` halved until the program fits the configuration's memory."""
    while _layout(moves, size)[2] > config.mem_bytes:
        if moves > 16:
            moves //= 2
        elif size > 256:
            size //= 2
        else:
            raise ValueError(f"{config.name}: {config.mem_bytes} bytes of memory leave no room for the "
                             f"simulation-speed program")
    return moves, size


def program(moves, size):
    """`moves` DATA_MOVEs of `size` bytes back and forth; two operand tables serve them all."""
    b = ProgramBuilder()
    tables, data, _ = _layout(moves, size)
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
    """The programs: 16 moves of 2 KiB for pysim, 1500 of 24 KiB for Verilator (fewer and
    shorter where the memory is smaller)."""
    out = {}
    image = program(*_fitted(config, 16, 2048))
    r = run_pysim(image, config, read_keys_back=False)
    out["pysim_cycles"] = r.cycles
    out["pysim_cycles_per_second"] = round(r.cycles / r.run_seconds)
    image = program(*_fitted(config, 1500, 24576))
    r = run_verilator(image, config)
    out["verilator_cycles"] = r.cycles
    out["verilator_cycles_per_second"] = round(r.cycles / r.run_seconds)
    return out
