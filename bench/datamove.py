"""DATA_MOVE bandwidth on the Verilator backend: bytes per cycle of a copy of up to
64 KiB (the largest power of two that fits twice in the configuration's memory
above the program; source and destination at different byte alignments), from
instruction issue to completion, and the fractions of the row width and of the
data-move lanes it reaches."""

import numpy as np

from xdsa.golden.builder import ProgramBuilder
from xdsa.sim.cosim import run_golden
from xdsa.sim.trace import compare
from xdsa.sim.verilator import run_verilator

SIZE = 64 << 10


def program(size, src, dst, repeat, payload):
    b = ProgramBuilder()
    b.tables(0x400)
    b.text(0)
    for _ in range(repeat):
        b.insn("data_move", "u8", src=src, dst=dst, src_trans_size=size, des_trans_size=size)
    b.exit()
    b.end()
    b.data(src)
    b.bytes(payload)
    return b.build()


def run(config):
    base = 0x1000 if config.mem_bytes >= 0x10000 else 0x800     # above the program and its tables
    size = SIZE
    while base + 2 * size + 0x100 > config.mem_bytes:
        size //= 2
    if size < 64:
        raise ValueError(f"{config.name}: {config.mem_bytes} bytes of memory leave no room for the benchmark")
    src, dst = base + 3, base + size + 0x80 + 17
    rng = np.random.default_rng(7)
    cycles = {}
    payload = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
    for repeat in (1, 2):
        image = program(size, src, dst, repeat, payload)
        rtl = run_verilator(image, config)
        if compare(run_golden(image, config), rtl):
            raise RuntimeError("the RTL disagrees with the golden model on the benchmark program")
        cycles[repeat] = rtl.cycles
    per_move = cycles[2] - cycles[1]            # one more DATA_MOVE, issue to completion
    return {
        "bytes": size,
        "cycles_per_move": per_move,
        "bytes_per_cycle": round(size / per_move, 3),
        "row_bytes": config.row_bytes,
        "fraction_of_row_bandwidth": round(size / per_move / config.row_bytes, 4),
        "lanes": config.lanes,
        "fraction_of_lanes": round(size / per_move / config.lanes, 4),
    }
