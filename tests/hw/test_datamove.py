# amaranth: UnusedElaboratable=no
"""The data-move engine (hw/datamove.py) against the golden model.

Every case is one DATA_MOVE instruction: its program is built with
`ProgramBuilder` (operand table encoded by `encode_table`), the golden `Machine`
executes it on a random memory image, and the engine executes the same operand
table in pysim on a behavioural memory (a Python bytearray) that answers reads
exactly one cycle after the request transferred and withholds ``req.ready`` of
both ports at random. The whole final memory, the fault code and the set of
bytes written are compared; the harness also checks the stream rules on the
engine's requests, that no request leaves the memory, and that the engine takes
the (held) command before it answers ``done``.

Configurations: row widths 8/16/32 with lanes = row_bytes, lanes = 1 (``lanes1``),
row_bytes = 32 with lanes = 4, and the micro-coded engine (hw/datamove_micro.py) of
``tiny`` (``micro``, and ``micro_r32`` with 32-byte rows; its micro-PC trace is
also compared with the microprogram model `xdsa.golden.cycle.dm_micro.MicroModel`,
instruction by instruction); per configuration the directed cases (every mode,
dimensionality, unit class, alignment, overlap, zero-length move and fault, AS
16/32/64) and 25 seeded random cases. The cases of one configuration run back
to back in one simulation (pysim elaboration is the expensive part); each case is
still its own test. The throughput tests count simulated cycles (from
``cmd.valid`` to the ``done`` transfer) without memory stalls.

Waveforms: ``XDSA_VCD=1`` writes ``datamove_<config>.vcd`` in the current directory.
"""

import random
from dataclasses import dataclass

import numpy as np
import pytest

from xdsa.golden.builder import ProgramBuilder
from xdsa.golden.encoding import encode_table
from xdsa.golden.isa import DataUnit, Fault, by_mnemonic
from xdsa.golden.machine import Machine
from xdsa.hw.config import CoreConfig
from xdsa.golden.cycle.dm_micro import MicroModel
from xdsa.hw.datamove import DataMoveEngine
from xdsa.hw.datamove_micro import DataMoveMicro

from engine_harness import ranges, run_commands, touched_mask

OP = by_mnemonic("data_move")
TABLE_AT = 0x240                          # the operand table (the program group is at 0)
NORMAL, IMMEDIATE, UPSAMPLE, TRANSPOSE = range(4)
MODES = ("normal", "immediate", "upsample", "transpose")
U = {u.mnemonic: int(u) for u in DataUnit}
BITS = {int(u): u.bits for u in DataUnit}

CONFIGS = {
    "r8": CoreConfig("r8", mem_bytes=4096, row_bytes=8),
    "r16": CoreConfig("r16", mem_bytes=4096, row_bytes=16),
    "r32": CoreConfig("r32", mem_bytes=4096, row_bytes=32),
    "lanes1": CoreConfig("lanes1", mem_bytes=8 << 10, row_bytes=8, datamove_lanes=1),
    "r32_lanes4": CoreConfig("r32_lanes4", mem_bytes=4096, row_bytes=32, datamove_lanes=4),
    "micro": CoreConfig("micro", mem_bytes=8 << 10, row_bytes=8, datamove_lanes=1, datamove="micro"),
    "micro_r32": CoreConfig("micro_r32", mem_bytes=4096, row_bytes=32, datamove_lanes=1, datamove="micro"),
    # the memory's read latency of 2 (requests registered in front of the block RAMs)
    "r32_lanes16_l2": CoreConfig("r32_lanes16_l2", mem_bytes=4096, row_bytes=32, datamove_lanes=16,
                                 mem_latency=2),
    "lanes1_l2": CoreConfig("lanes1_l2", mem_bytes=8 << 10, row_bytes=8, datamove_lanes=1, mem_latency=2),
}


# --- cases -----------------------------------------------------------------------------

@dataclass
class Case:
    name: str
    fields: dict                  # operand fields by ISA name (data_unit, transfer_mode as codes)
    as_bits: int = 32
    seed: int = 0


def mv(name, unit, mode, src, dst, s=(), d=(), as_bits=32, seed=0, **extra):
    """A case: `s`/`d` are (trans_size, num_trans, width, line_stride, surface_stride),
    shorter tuples meaning zeros."""
    f = {"src": src, "dst": dst, "data_unit": U[unit] if isinstance(unit, str) else unit,
         "transfer_mode": MODES.index(mode)}
    for p, geo in (("src", s), ("des", d)):
        for k, v in zip(("trans_size", "num_trans", "width", "line_stride", "surface_stride"), geo):
            f[f"{p}_{k}"] = v
    f.update(extra)
    return Case(name, f, as_bits, seed)


def directed(mem):
    """Directed cases for a memory of `mem` bytes (every mode, dimensionality,
    unit class, alignment, overlap and fault)."""
    c = []
    # normal, 1-D, every unit, unaligned on both sides
    for i, u in enumerate(U):
        n = 37 if BITS[U[u]] >= 8 else 75
        c.append(mv(f"normal_1d_{u}", u, "normal", 0x301 + i, 0x9A3 + 3 * i, (n,), (n,), seed=i))
    c += [
        mv("normal_long_unaligned", "u8", "normal", 0x411, 0x82B, (300,), (300,)),
        mv("normal_long_aligned", "u8", "normal", 0x400, 0x800, (256,), (256,)),
        mv("normal_2d_gaps_u16", "u16", "normal", 0x303, 0x907, (20, 0, 5, 13), (20, 0, 10, 27)),
        mv("normal_2d_reshape_u8", "u8", "normal", 0x305, 0x8F1, (24, 0, 8, 11), (24, 0, 3, 5)),
        mv("normal_3d_u32", "u32", "normal", 0x322, 0x951, (12, 3, 4, 21, 70), (36, 0, 9, 40)),
        mv("normal_3d_u4_odd", "u4", "normal", 0x322, 0x951, (15, 2, 5, 4, 13), (10, 3, 5, 3, 9)),
        mv("normal_2d_s4", "s4", "normal", 0x3A0, 0x7F3, (12, 0, 4, 3), (12, 0, 6, 5)),
        mv("normal_short_lines", "u8", "normal", 0x311, 0x933, (40, 0, 1, 3), (40, 0, 2, 5)),
        mv("normal_f64_2d", "f64", "normal", 0x307, 0x901, (6, 0, 3, 29), (6, 0, 2, 19)),
        mv("normal_u16_num_no_width", "s16", "normal", 0x301, 0x801, (5, 3, 0, 0, 17), (15,)),
        # zero strides: the later element wins
        mv("zero_dst_line_stride", "u8", "normal", 0x300, 0x900, (12, 0, 4, 4), (12, 0, 4, 0)),
        mv("zero_dst_strides_3d", "u16", "normal", 0x300, 0x901, (12, 3, 2, 4, 8), (12, 3, 2, 0, 0)),
        mv("zero_dst_stride_u4", "u4", "normal", 0x300, 0x900, (12, 0, 3, 2), (12, 0, 3, 0)),
        mv("overlapping_dst_lines", "u32", "normal", 0x300, 0x902, (12,), (12, 0, 3, 5)),
        mv("zero_src_stride", "u8", "normal", 0x301, 0x905, (20, 0, 5, 0), (20,)),
        mv("zero_dst_stride_many_lines", "u8", "normal", 0x301, 0x905, (600,), (600, 0, 2, 0)),
        mv("lines_143", "u8", "normal", 0x301, 0x905, (1001, 0, 7, 7), (1001, 0, 13, 13)),
        mv("lines_not_dividing", "u8", "normal", 0x301, 0x905, (1000, 0, 7, 7), (1000,)),
        mv("up_kh5_kv4", "u16", "upsample", 0x301, 0x905, (6, 0, 3, 6), (120, 0, 15, 31)),
        # immediate
        mv("imm_u8", "u8", "immediate", 0x5A, 0x903, (), (70,)),
        mv("imm_s16_2d", "s16", "immediate", 0xBEEF, 0x905, (), (18, 0, 6, 15)),
        mv("imm_f16", "f16", "immediate", 0x3C00, 0x907, (), (9,)),
        mv("imm_u32_3d", "u32", "immediate", 0x12345678, 0x903, (), (6, 2, 3, 14, 50)),
        mv("imm_u64_as64", "u64", "immediate", 0x0123456789ABCDEF, 0x90B, (), (11,), as_bits=64),
        mv("imm_f64_as16", "f64", "immediate", 0xA5C3, 0x901, (), (5,), as_bits=16),
        mv("imm_u4", "u4", "immediate", 0x7, 0x901, (), (13,)),
        mv("imm_s4_2d", "s4", "immediate", 0xFD, 0x901, (), (9, 0, 3, 2)),
        mv("imm_ignores_source_geometry", "u8", "immediate", 0x11, 0x900, (7, 200, 3, 1, 1), (10,)),
        mv("imm_zero_stride", "u16", "immediate", 0x1234, 0x905, (), (8, 0, 2, 0)),
        # upsample
        mv("up_kh1_kv3_u8", "u8", "upsample", 0x301, 0x903, (12, 0, 4, 7), (36, 0, 4, 9)),
        mv("up_kh2_kv2_u16", "u16", "upsample", 0x303, 0x905, (6, 0, 3, 8), (24, 0, 6, 13)),
        mv("up_kh3_kv1_u32", "u32", "upsample", 0x305, 0x907, (4, 0, 2, 9), (12, 0, 6, 25)),
        mv("up_1d_u8", "u8", "upsample", 0x301, 0x905, (5,), (20,)),
        mv("up_num1_f16", "f16", "upsample", 0x301, 0x905, (4, 1, 2, 4), (16, 1, 4, 9)),
        mv("up_u4", "u4", "upsample", 0x300, 0x900, (6, 0, 3, 2), (24, 0, 6, 4)),
        mv("up_u64", "u64", "upsample", 0x301, 0x901, (2,), (6,)),
        # transpose
        mv("tr_u8", "u8", "transpose", 0x301, 0x903, (12, 0, 4, 5), (12, 0, 3, 6)),
        mv("tr_u16_no_width", "u16", "transpose", 0x301, 0x903, (5,), (5, 0, 1, 2)),
        mv("tr_3d_u32", "u32", "transpose", 0x303, 0x905, (6, 3, 2, 9, 30), (6, 3, 3, 13, 40)),
        mv("tr_u4", "s4", "transpose", 0x300, 0x900, (12, 0, 4, 2), (12, 0, 3, 3)),
        mv("tr_u64", "u64", "transpose", 0x300, 0x901, (6, 0, 3, 24), (6, 0, 2, 17)),
        mv("tr_f16_lines", "f16", "transpose", 0x301, 0x903, (8, 0, 1, 3), (8,)),
        # overlaps (D-OVERLAP)
        mv("overlap_down_legal", "u8", "normal", 0x310, 0x305, (100,), (100,)),
        mv("overlap_down_far_legal", "u8", "normal", 0x350, 0x301, (200,), (200,)),
        mv("overlap_same_legal", "u32", "normal", 0x304, 0x304, (20,), (20,)),
        mv("overlap_2d_contig_legal", "u16", "normal", 0x340, 0x330, (24, 2, 4, 8, 24), (48, 0, 8, 16)),
        mv("overlap_u4_legal", "u4", "normal", 0x312, 0x310, (30,), (30,)),
        mv("overlap_up_illegal", "u8", "normal", 0x300, 0x305, (100,), (100,)),
        mv("overlap_gap_illegal", "u8", "normal", 0x310, 0x300, (20, 0, 4, 8), (20,)),
        mv("overlap_tr_illegal", "u8", "transpose", 0x300, 0x300, (4, 0, 2, 2), (4, 0, 2, 2)),
        mv("overlap_up_mode_illegal", "u8", "upsample", 0x300, 0x302, (2,), (4,)),
        mv("overlap_u4_odd_lines_illegal", "u4", "normal", 0x310, 0x300, (6, 0, 3, 1), (6,)),
        mv("no_overlap_touching", "u8", "normal", 0x300, 0x310, (16,), (16,)),
        # zero-length moves
        mv("empty_normal", "u8", "normal", 0x300, 0x900, (), ()),
        mv("empty_imm", "u8", "immediate", 0x300, 0x900, (), ()),
        mv("empty_up", "u8", "upsample", 0x300, 0x900, (), ()),
        mv("empty_tr", "u8", "transpose", 0x300, 0x900, (0, 3), (0, 4)),
        mv("empty_width_set", "u16", "normal", 0x300, 0x900, (0, 0, 3), (0, 0, 5)),
        mv("empty_out_of_range", "u8", "normal", 1 << 40, 1 << 50, (), (), as_bits=64),
        mv("empty_overlapping", "u8", "normal", 0x300, 0x300, (0, 2, 0, 0, 1), (0,)),
        # faults
        mv("reserved_unit_13", 13, "normal", 0x300, 0x900, (4,), (4,)),
        mv("reserved_unit_15_empty", 15, "normal", 0x300, 0x900, (), ()),
        mv("bad_src_width", "u8", "normal", 0x300, 0x900, (10, 0, 3), (10,)),
        mv("bad_dst_width", "u8", "normal", 0x300, 0x900, (10,), (10, 0, 4)),
        mv("bad_width_empty_move", "u8", "normal", 0x300, 0x900, (0, 0, 3), (10, 0, 4)),
        mv("count_mismatch", "u8", "normal", 0x300, 0x900, (10, 2), (10, 3)),
        mv("one_side_empty", "u8", "normal", 0x300, 0x900, (10,), ()),
        mv("up_num_trans", "u8", "upsample", 0x300, 0x900, (4, 2), (8,)),
        mv("up_num_trans_empty", "u8", "upsample", 0x300, 0x900, (0, 0), (0, 2)),
        mv("up_kh_not_integer", "u8", "upsample", 0x300, 0x900, (6, 0, 3, 3), (10, 0, 5, 5)),
        mv("up_kv_not_integer", "u8", "upsample", 0x300, 0x900, (6, 0, 3, 3), (15, 0, 3, 5)),
        mv("up_smaller", "u8", "upsample", 0x300, 0x900, (6,), (3,)),
        mv("up_src_empty", "u8", "upsample", 0x300, 0x900, (), (3,)),
        mv("tr_shape", "u8", "transpose", 0x300, 0x900, (12, 0, 4, 4), (12, 0, 4, 4)),
        mv("tr_surfaces", "u8", "transpose", 0x300, 0x900, (12, 2, 4, 4, 16), (12, 3, 3, 3, 16)),
        mv("range_dst_end", "u8", "normal", 0x300, mem - 9, (10,), (10,)),
        mv("range_dst_exact_fit", "u8", "normal", 0x300, mem - 10, (10,), (10,)),
        mv("range_src_end", "u32", "normal", mem - 39, 0x300, (10,), (10,)),
        mv("range_src_exact_fit", "u32", "normal", mem - 40, 0x300, (10,), (10,)),
        mv("range_u4_last_byte", "u4", "normal", mem - 3, 0x300, (5,), (5,)),
        mv("range_u4_odd_fits", "u4", "normal", mem - 3, 0x300, (6,), (6,)),
        mv("range_2d_stride", "u8", "normal", 0x300, 0x900, (8, 0, 2, mem // 3), (8,)),
        mv("range_3d_surface", "u8", "normal", 0x300, 0x900, (24,), (8, 3, 0, 0, mem // 2)),
        mv("fits_3d_surface", "u8", "normal", 0x300, 0x900, (24,), (8, 3, 0, 0, (mem - 0x908) // 2)),
        mv("range_huge_stride", "u8", "normal", 0x300, 0x900, (1 << 23, 0, 1, (1 << 24) - 1),
           (1 << 23, 0, 1, (1 << 24) - 1)),
        mv("range_as64_top", "u64", "normal", (1 << 64) - 8, 0x300, (1,), (1,), as_bits=64),
        mv("range_as16", "u8", "normal", 0xFFF0, 0x300, (4,), (4,), as_bits=16),
        mv("range_imm_dst", "u8", "immediate", 0, mem, (), (1,)),
        mv("illegal_beats_range", "u8", "normal", 1 << 40, 0x300, (10,), (11,), as_bits=64),
        mv("overlap_beats_range", "u8", "normal", (1 << 40) + 8, 1 << 40, (10, 0, 2, 3), (10,),
           as_bits=64),
        mv("overlap_huge_extent", "u8", "normal", 0x300, 0x100000, (1 << 20, 0, 1, 7), (1 << 20,),
           as_bits=64),
        mv("reserved_beats_illegal", 14, "transpose", 0x300, 0x900, (3, 0, 2), (4,)),
        mv("overlap_dst_above_far", "u8", "normal", 1 << 40, (1 << 40) + 4, (10,), (10,), as_bits=64),
        mv("touching_far", "u8", "normal", 1 << 40, (1 << 40) + 10, (10,), (10,), as_bits=64),
        mv("touching_far_below", "u8", "normal", (1 << 40) + 10, 1 << 40, (10, 0, 5, 6), (10,),
           as_bits=64),
        mv("huge_span_overlaps", "u8", "normal", 0x300, 0x300 + (1 << 45), ((1 << 23) + 2, 0, 2, (1 << 24) - 1),
           ((1 << 23) + 2,), as_bits=64),
        mv("huge_span_clear", "u8", "normal", 0x300, 0x300 + (1 << 48), ((1 << 23) + 2, 0, 2, (1 << 24) - 1),
           ((1 << 23) + 2,), as_bits=64),
        mv("huge_span_dst_overlaps", "u8", "normal", 0x300 + (1 << 45), 0x300, ((1 << 23) + 2,),
           ((1 << 23) + 2, 0, 2, (1 << 24) - 1), as_bits=64),
        mv("huge_surfaces", "u16", "normal", 0x300 + (1 << 31), 0x300, (6, 255, 3, (1 << 24) - 1, (1 << 24) - 1),
           (6 * 255, 0, 6, 13), as_bits=64),
        # a move over its own operand table (the table is read before any write)
        mv("imm_over_own_table", "u8", "immediate", 0xA5, TABLE_AT + 3, (), (40,)),
        mv("normal_over_own_table", "u32", "normal", 0x301, TABLE_AT - 4, (12,), (12,), as_bits=64),
        # address spaces
        mv("as16_normal", "u16", "normal", 0x301, 0x803, (20, 0, 5, 11), (20,), as_bits=16),
        mv("as64_normal", "u8", "normal", 0x301, 0x803, (33, 0, 11, 15), (33,), as_bits=64),
        mv("as64_transpose", "u16", "transpose", 0x301, 0x803, (6, 0, 2, 5), (6, 0, 3, 7), as_bits=64),
    ]
    return c


def random_cases(cfg, n, seed):
    """Random legal-looking moves (the golden model decides what they do)."""
    rng = random.Random(seed)
    mem = cfg.mem_bytes
    out = []
    for k in range(n):
        unit = rng.choice(list(U))
        bits = BITS[U[unit]]
        size = max(1, bits // 8)
        mode = rng.choices(MODES, (5, 2, 2, 2))[0]

        def geo():
            width = rng.randint(1, 8)
            lines = rng.randint(1, 5)
            num = rng.choice([0, 0, 1, 2, 3])
            trans = width * lines
            wf = 0 if lines == 1 and rng.random() < 0.5 else width
            line_bytes = max(1, (width * bits + 7) // 8)
            ls = rng.choice([line_bytes, line_bytes + rng.randint(0, 9), rng.randint(0, 3 * line_bytes)])
            if bits == 4 and ls == line_bytes and width % 2:
                ls += rng.randint(0, 1)
            ss = rng.choice([trans * size if bits >= 8 else (trans + 1) // 2,
                             lines * ls + rng.randint(0, 16), rng.randint(0, 64)])
            return [trans, num, wf, ls, ss]

        d = geo()
        if mode == "normal":
            count = d[0] * (d[1] or 1)
            num = rng.choice([x for x in (0, 1, 2, 3, 4) if count % (x or 1) == 0])
            trans = count // (num or 1)
            w = rng.choice([x for x in range(1, 9) if trans % x == 0])
            s = geo()
            s = [trans, num, 0 if w == trans and rng.random() < 0.5 else w, s[3], s[4]]
        elif mode == "upsample":
            sw, sl = rng.randint(1, 4), rng.randint(1, 3)
            kh, kv = rng.randint(1, 3), rng.randint(1, 3)
            s = [sw * sl, rng.choice([0, 1]), sw, rng.randint(0, 12), 0]
            d = [sw * kh * sl * kv, rng.choice([0, 1]), sw * kh, rng.randint(sw * kh * size, 40 + sw * kh * size), 0]
        elif mode == "transpose":
            sw, sl, num = rng.randint(1, 5), rng.randint(1, 5), rng.choice([0, 1, 2])
            s = [sw * sl, num, sw, rng.randint(0, 24), rng.randint(0, 80)]
            d = [sw * sl, num, sl, rng.randint(0, 24), rng.randint(0, 80)]
        else:
            s = []
        if rng.random() < 0.1:                     # a sprinkle of illegal shapes
            d[0] += 1
        as_bits = rng.choice([16, 32, 64])
        src_range = mem - 200 if rng.random() < 0.9 else mem
        src = rng.randrange(0, src_range)
        dst = rng.randrange(0, mem - 200 if rng.random() < 0.9 else mem)
        if rng.random() < 0.15:                    # overlaps, legal or not
            dst = max(0, src + rng.randint(-12, 12))
        if mode == "immediate":
            src = rng.getrandbits(as_bits)
        out.append(mv(f"random_{k}_{unit}_{mode}", unit, mode, src, dst, tuple(s), tuple(d),
                      as_bits=as_bits, seed=seed * 1000 + k))
    return out


# --- the golden side ---------------------------------------------------------------------

def table_bytes(case):
    return encode_table(OP, case.as_bits, case.fields)


def golden(cfg, case):
    """(initial memory, final memory, fault, bytes written (a mask), fault detail) of one case."""
    b = ProgramBuilder(case.as_bits)
    b.text(0)
    f = dict(case.fields)
    b.insn("data_move", table=TABLE_AT, **f)
    b.exit()
    b.end()
    image = b.build()
    rng = np.random.default_rng(case.seed)
    m = Machine(cfg.mem_bytes)
    m.mem[:] = rng.integers(0, 256, cfg.mem_bytes, dtype=np.uint8)
    image.write_into(m.mem)
    tb = table_bytes(case)
    assert bytes(m.mem[TABLE_AT:TABLE_AT + len(tb)]) == tb      # the builder agrees with encode_table
    before = m.mem.copy()
    m.reset(image.start)
    rec = m.step()
    return before, m.mem.copy(), int(rec.fault), touched_mask(cfg.mem_bytes, rec.writes), rec.detail


# --- the RTL side --------------------------------------------------------------------------

def run_rtl(cfg, jobs, *, stall=0.3, seed=1, vcd_name=None, max_cycles=200_000, traces=None):
    """Run `jobs` [(AS bits, table bytes, initial memory)] back to back on one engine
    (the one `cfg.datamove` names); [(fault, final memory, touched bytes, cycles from
    command to done)]."""
    dut = DataMoveMicro(cfg) if cfg.datamove == "micro" else DataMoveEngine(cfg, checks=True)
    return run_commands(dut, cfg, [dut.rd], [("data_move", as_bits, tb, before, f"job {i}")
                                             for i, (as_bits, tb, before) in enumerate(jobs)],
                        stall=stall, seed=seed, vcd_name=vcd_name, max_cycles=max_cycles, traces=traces,
                        table_addr=TABLE_AT)


N_RANDOM = 25
CASES = {name: directed(cfg.mem_bytes) + random_cases(cfg, N_RANDOM, seed=7 + i)
         for i, (name, cfg) in enumerate(CONFIGS.items())}
_RESULTS = {}
_TRACES = {}


def results_for(cfg_name):
    if cfg_name not in _RESULTS:
        cfg = CONFIGS[cfg_name]
        exp = [golden(cfg, c) for c in CASES[cfg_name]]
        traces = [] if cfg.datamove == "micro" else None
        got = run_rtl(cfg, [(c.as_bits, table_bytes(c), e[0]) for c, e in zip(CASES[cfg_name], exp)],
                      vcd_name=f"datamove_{cfg_name}", max_cycles=2_000_000, traces=traces)
        _RESULTS[cfg_name] = {c.name: (e, g) for c, e, g in zip(CASES[cfg_name], exp, got)}
        _TRACES[cfg_name] = {c.name: t for c, t in zip(CASES[cfg_name], traces or [])}
    return _RESULTS[cfg_name]


@pytest.mark.parametrize("cfg_name, case", [(k, c) for k, cs in CASES.items() for c in cs],
                         ids=[f"{k}-{c.name}" for k, cs in CASES.items() for c in cs])
def test_move(cfg_name, case):
    (before, want, want_fault, want_touched, detail), (fault, got, touched, cycles) = \
        results_for(cfg_name)[case.name]
    assert fault == want_fault, (f"fault {Fault(fault).name}, golden {Fault(want_fault).name} "
                                 f"({detail})")
    diff = np.flatnonzero(got != want)
    assert not len(diff), (f"{len(diff)} bytes differ, first at {diff[0]:#x}: RTL {got[diff[0]]:#04x}, "
                           f"golden {want[diff[0]]:#04x}, before {before[diff[0]]:#04x}")
    assert ranges(touched) == ranges(want_touched), "the bytes written differ from the golden model's"
    if CONFIGS[cfg_name].datamove == "micro":
        model_fault, model_trace = MicroModel(CONFIGS[cfg_name].mem_bytes).run(table_bytes(case), case.as_bits,
                                                                               before.copy())
        trace = _TRACES[cfg_name][case.name]
        step = next((i for i, (a, b) in enumerate(zip(trace, model_trace)) if a != b), min(len(trace), len(model_trace)))
        assert model_fault == fault and trace == model_trace, \
            f"micro-PC trace differs from the model's at step {step} of {len(model_trace)}"


def test_case_mix():
    """The directed and random cases exercise every mode, fault and unit."""
    for name in CONFIGS:
        faults = {r[0][2] for r in results_for(name).values()}
        assert {0, Fault.RESERVED_UNIT, Fault.ILLEGAL_OPERAND, Fault.ADDRESS_RANGE} <= faults
        ok = [c for c in CASES[name] if results_for(name)[c.name][0][2] == 0]
        assert {c.fields["transfer_mode"] for c in ok} == {0, 1, 2, 3}
        assert {c.fields["data_unit"] for c in ok} == set(range(13))
        assert {c.as_bits for c in ok} == {16, 32, 64}


# --- throughput -------------------------------------------------------------------------------

BW = CoreConfig("bw", mem_bytes=192 << 10, row_bytes=32)


def measure(cfg, cases):
    exp = [golden(cfg, c) for c in cases]
    got = run_rtl(cfg, [(c.as_bits, table_bytes(c), e[0]) for c, e in zip(cases, exp)], stall=0)
    for c, e, g in zip(cases, exp, got):
        assert g[0] == e[2] == 0, c.name
        assert np.array_equal(g[1], e[1]), c.name
    return [g[3] for g in got]


def test_bandwidth_64k():
    """A 64 KiB contiguous copy with row_bytes = 32, source and destination at
    different byte alignments: steady-state bytes per cycle from simulated cycles
    (the difference between a 64 KiB and a 32 KiB copy, so that the setup and
    pipeline fill cancel)."""
    big, small = 64 << 10, 32 << 10
    src, dst = 0x1003, 0x1003 + big + 0x1000 + 26
    cycles = measure(BW, [mv("bw_64k", "u8", "normal", src, dst, (big,), (big,), seed=3),
                          mv("bw_32k", "u8", "normal", src, dst, (small,), (small,), seed=3)])
    steady = (big - small) / (cycles[0] - cycles[1])
    print(f"\n64 KiB copy: {cycles[0]} cycles ({big / cycles[0]:.2f} B/cycle overall), "
          f"32 KiB: {cycles[1]} cycles; steady state {steady:.2f} B/cycle")
    assert steady >= 0.9 * 32
    assert big / cycles[0] >= 0.9 * 32


def test_throughput_modes():
    """Steady-state bytes per cycle of each mode (the difference between a move and
    one of half its size, so that setup and pipeline fill cancel), and the cycles
    of a one-byte move (setup latency), printed; floors are asserted."""
    cfg = CoreConfig("bw2", mem_bytes=64 << 10, row_bytes=32)
    n = 4096

    def pair(name, unit, mode, src, dst, s, d, hs=None, hd=None):
        def half(g):
            return g and (g[0] // 2,) + tuple(g[1:])
        return [mv(name, unit, mode, src, dst, s, d),
                mv(name + "_half", unit, mode, src, dst, hs or half(s), hd or half(d))]

    cases = (pair("imm_u32", "u32", "immediate", 0xDEADBEEF, 0x2001, (), (n // 4,))
             + pair("normal_2d_u8", "u8", "normal", 0x1001, 0x8003, (n, 0, 256, 300), (n, 0, 512, 520))
             + pair("up_kh1_u8", "u8", "upsample", 0x1001, 0x8003, (n // 2, 0, 256, 256), (n, 0, 256, 256))
             + pair("up_kh2_u16", "u16", "upsample", 0x1001, 0x8003, (n // 4, 0, 64, 128), (n // 2, 0, 128, 256))
             + pair("tr_u8", "u8", "transpose", 0x1001, 0x8003, (n, 0, 64, 64), (n, 0, 64, 64),
                    (n // 2, 0, 64, 64), (n // 2, 0, 32, 64))
             + pair("tr_u32", "u32", "transpose", 0x1000, 0x8000, (n // 4, 0, 32, 128), (n // 4, 0, 32, 128),
                    (n // 8, 0, 32, 128), (n // 8, 0, 16, 128))
             + pair("normal_u4", "u4", "normal", 0x1001, 0x8003, (512,), (512,))
             + pair("imm_u4", "u4", "immediate", 5, 0x8003, (), (512,))
             + [mv("one_byte", "u8", "normal", 0x1001, 0x8003, (1,), (1,)),
                mv("one_byte_2d", "u8", "normal", 0x1001, 0x8003, (1, 1, 1, 1, 1), (1, 1, 1, 1, 1))])
    cycles = measure(cfg, cases)
    rates = {}
    for k in range(0, len(cases) - 2, 2):
        c = cases[k]
        nbytes = c.fields["des_trans_size"] * BITS[c.fields["data_unit"]] // 8
        rates[c.name] = (nbytes - nbytes // 2) / (cycles[k] - cycles[k + 1])
    print("\nsteady state: " + ", ".join(f"{k} {v:.2f}" for k, v in rates.items()) + " B/cycle; "
          f"a one-byte move takes {cycles[-2]} cycles (2-D fields: {cycles[-1]})")
    assert rates["imm_u32"] >= 0.9 * 32
    assert rates["normal_2d_u8"] >= 0.8 * 32
    assert rates["up_kh1_u8"] >= 0.8 * 32
    assert rates["up_kh2_u16"] >= 0.9 * 2
    assert rates["tr_u32"] >= 0.9 * 4
    assert rates["normal_u4"] >= 0.12 and rates["imm_u4"] >= 0.12


@pytest.mark.parametrize("cfg_name", ["lanes1", "micro"])
def test_byte_serial_bandwidth(cfg_name):
    """lanes = 1, both engines: one byte per cycle for a contiguous copy and fill
    (simulated cycles, no memory stalls); the setup cost of a one-byte move is printed."""
    cfg = CONFIGS[cfg_name]
    cycles = measure(cfg, [mv("t", "u8", "normal", 0x403, 0x1005, (2048,), (2048,)),
                           mv("t2", "u8", "normal", 0x403, 0x1005, (1024,), (1024,)),
                           mv("f", "u16", "immediate", 0xBEEF, 0x1005, (), (1024,)),
                           mv("f2", "u16", "immediate", 0xBEEF, 0x1005, (), (512,)),
                           mv("one", "u8", "normal", 0x403, 0x1005, (1,), (1,))])
    copy, fill = 1024 / (cycles[0] - cycles[1]), 1024 / (cycles[2] - cycles[3])
    print(f"\n{cfg_name}: copy {copy:.3f} B/cycle, fill {fill:.3f} B/cycle, a one-byte move {cycles[4]} cycles")
    assert copy >= 0.95 and fill >= 0.95
