"""Shared harness of the matrix-engine tests (tests/hw/test_matrix*.py).

A `Case` is one Matrix_Mul or CONV2D instruction: its operand fields and the
memory contents it runs on (a seeded random image plus explicit byte patches).
`golden` runs it on the golden `Machine`; `run_rtl` runs a list of cases back to
back on `MatrixEngine` in pysim, on a behavioural memory (a bytearray) that
answers each read port exactly one cycle after the request transferred and
withholds ``req.ready`` of the three ports at random. The harness checks the
stream rules on the engine's requests (a request holds until it transfers), that
no request leaves the memory, that the engine takes the held command before it
answers ``done``, and records the bytes written.
"""

from dataclasses import dataclass, field

import numpy as np

from xdsa.golden.builder import ProgramBuilder
from xdsa.golden.encoding import encode_table
from xdsa.golden.isa import by_mnemonic
from xdsa.golden.machine import Machine
from xdsa.hw.matrix import MatrixEngine

from engine_harness import run_commands, touched_mask

TABLE_AT = 0x240
DATA_AT = 0x400


@dataclass
class Case:
    name: str
    op: str                                    # "matrix_mul" or "conv2d"
    fields: dict
    as_bits: int = 32
    seed: int = 0
    patches: list = field(default_factory=list)   # [(address, bytes)]


def table_bytes(case):
    return encode_table(by_mnemonic(case.op), case.as_bits, case.fields)


def initial_memory(cfg, case):
    b = ProgramBuilder(case.as_bits)
    b.text(0)
    b.insn(case.op, table=TABLE_AT, **case.fields)
    b.exit()
    b.end()
    image = b.build()
    rng = np.random.default_rng(case.seed)
    mem = rng.integers(0, 256, cfg.mem_bytes, dtype=np.uint8)
    image.write_into(mem)
    for a, data in case.patches:
        assert a >= DATA_AT, "patches must not overwrite the program"
        mem[a:a + len(data)] = np.frombuffer(bytes(data), dtype=np.uint8)
    tb = table_bytes(case)
    assert bytes(mem[TABLE_AT:TABLE_AT + len(tb)]) == tb
    return image, mem


def golden(cfg, case, capability=None):
    """(initial memory, final memory, fault, bytes written (a mask), detail)."""
    image, mem = initial_memory(cfg, case)
    m = Machine(cfg.mem_bytes, capability=capability)
    m.mem[:] = mem
    before = m.mem.copy()
    m.reset(image.start)
    rec = m.step()
    return before, m.mem.copy(), int(rec.fault), touched_mask(cfg.mem_bytes, rec.writes), rec.detail


def run_rtl(cfg, jobs, *, stall=0.25, seed=1, vcd_name=None, max_cycles=400_000, pb=None, rq_lanes=2):
    """Run `jobs` [(case, initial memory)] back to back; returns [(fault, final memory,
    touched bytes, cycles from command to done)]."""
    dut = MatrixEngine(cfg, pb=pb, rq_lanes=rq_lanes, checks=True)
    return run_commands(dut, cfg, [dut.rd_a, dut.rd_b],
                        [(case.op, case.as_bits, table_bytes(case), before, case.name) for case, before in jobs],
                        stall=stall, seed=seed, vcd_name=vcd_name, max_cycles=max_cycles)

