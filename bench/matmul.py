"""GEMM MAC utilisation of the matrix engine (Matrix_Mul, s8 x s8 -> s32) on Verilator.

For square GEMMs of 64, 128, 256 and 512: Y (n x n, s32) = X (n x n, s8) times W^T
(W: n x n, s8), laid out as the engine streams best (NHWC: X is n positions of n
channels, row-major; W is n kernels of n weights, row-major; Y is n positions of n
kernel outputs, row-major) -- the usual layout of a fully connected layer. Every
operand is in the data memory; each result is checked byte for byte against the
golden model (the same instruction on `golden.machine.Machine`).

Utilisation = useful MACs / (N^2 x cycles from issue to completion), where the
cycles are counted from the engine's command to its ``done`` (everything: operand
checks, operand loading, compute, drain and writes) on the standalone engine
harness (bench/matrix_harness.py): the memory system's ports as the core gives
them to the engine. The core adds its own fixed per-instruction cost (decode,
operand-table load, retire: a few cycles) outside these figures.

Configurations: a GEMM runs on `base` (N = 8, 128 KiB) when its operands and
result fit, else on `large` (N = 16, 1 MiB); ``n8_1m`` (N = 8 with 1 MiB, a
simulation-only variant of `base`) gives the N = 8 figure for every size. A 512
GEMM's s32 result is 1 MiB, more than any configuration holds next to its
operands: it runs as 4 instructions of 128 kernels each (512 x 128 result slices
written to the same 256 KiB buffer, each slice checked against the golden model);
its cycles are the sum of the four.
"""

import dataclasses

import numpy as np

from xdsa.golden.builder import ProgramBuilder
from xdsa.golden.encoding import encode_table
from xdsa.golden.isa import DataUnit, by_mnemonic
from xdsa.golden.machine import Machine
from xdsa.hw.config import get_config

from .matrix_harness import run_engine

SIZES = (64, 128, 256, 512)


def n8_1m():
    return dataclasses.replace(get_config("base"), name="n8_1m", mem_bytes=1 << 20)


def gemm_fields(n, k_num, x, w, y):
    s8 = int(DataUnit.S8)
    return {"fm": x, "kernel": w, "dst": y, "fm_unit": s8, "w_unit": s8, "result_unit": int(DataUnit.S32),
            "data_format": 0, "fm_c": n, "fm_h": 1, "fm_w": n, "fm_surface_stride": n, "fm_line_stride": 0,
            "k_num": k_num, "k_h": 1, "k_w": 1, "k_line_stride": n}


def golden_run(op, fields, memory):
    """(initial memory with the program, final memory, fault) of one instruction on
    `memory` on the golden model (the program and its operand table are placed below
    0x1000)."""
    b = ProgramBuilder(32)
    b.text(0)
    b.insn(op, table=0x100, **fields)
    b.exit()
    b.end()
    image = b.build()
    m = Machine(len(memory))
    m.mem[:] = np.frombuffer(memory, dtype=np.uint8)
    image.write_into(m.mem)
    before = bytes(m.mem)
    m.reset(image.start)
    rec = m.step()
    return before, bytes(m.mem), rec.fault


def run_instruction(config, op, fields, memory):
    """Run on the engine, check against the golden model; returns the engine's run."""
    table = encode_table(by_mnemonic(op), 32, fields)
    before, want, want_fault = golden_run(op, fields, memory)
    got = run_engine(config, op, 32, table, before)
    if int(got.fault) != int(want_fault) or got.memory != want[:len(got.memory)]:
        diff = np.flatnonzero(np.frombuffer(got.memory, np.uint8) != np.frombuffer(want, np.uint8))
        raise RuntimeError(f"{op}: the engine disagrees with the golden model (fault {got.fault.name} vs "
                           f"{want_fault.name}, {len(diff)} bytes differ)")
    return got


def gemm(config, n, rng):
    """Cycles of an n x n x n GEMM on `config` (summed over slices if the result does not fit)."""
    x, w = 0x1000, 0x1000 + n * n
    y = w + n * n
    slices = 1
    while y + n * (n // slices) * 4 > config.mem_bytes:
        slices *= 2
        if n // slices < config.array_n:
            return None
    kn = n // slices
    mem = np.zeros(config.mem_bytes, dtype=np.uint8)
    mem[x:y] = rng.integers(0, 256, 2 * n * n, dtype=np.uint8)
    cycles = reads = writes = 0
    for s in range(slices):
        r = run_instruction(config, "matrix_mul", gemm_fields(n, kn, x, w + s * kn * n, y), mem.tobytes())
        cycles += r.cycles
        reads += r.reads_a + r.reads_b
        writes += r.writes
    return {"cycles": cycles, "instructions": slices, "row_reads": reads, "row_writes": writes}


def run(config=None):
    """{size: figures} for every GEMM size; `config` (a CoreConfig or None) forces one
    configuration, else each size runs on base or large (see the module docstring),
    and on n8_1m."""
    rng = np.random.default_rng(1)
    out = {}
    for n in SIZES:
        cfgs = [config] if config is not None else []
        if config is None:
            base, large = get_config("base"), get_config("large")
            cfgs.append(base if 2 * n * n + 4 * n * n + 0x1000 <= base.mem_bytes else large)
            cfgs.append(n8_1m())
        for cfg in cfgs:
            r = gemm(cfg, n, rng)
            if r is None:
                continue
            N = cfg.array_n
            r.update({"config": cfg.name, "N": N, "macs": n ** 3,
                      "mac_utilisation": round(n ** 3 / (N * N * r["cycles"]), 4)})
            out[f"{n}@{cfg.name}"] = r
    return out


if __name__ == "__main__":
    for k, v in run().items():
        print(k, v)
