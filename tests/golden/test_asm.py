"""Assembler, builder and disassembler: round trips and error messages."""

import pathlib
import random
import re

import pytest
from hypothesis import given, settings, strategies as st

from xdsa.golden import isa
from xdsa.golden.asm import assemble, AsmErrors
from xdsa.golden.builder import ProgramBuilder, AsmError
from xdsa.golden.disasm import disassemble
from xdsa.golden.encoding import UnityInstruction, decode_table
from xdsa.golden.image import Image, SegmentKind
from xdsa.golden.isa import Kind
from xdsa.golden.storage import unpack_program

DEMO = pathlib.Path(__file__).resolve().parents[2] / "xdsa" / "examples" / "demo.s"


def normalise(text):
    lines = (re.sub(r"\s*[;#].*$", "", ln).rstrip() for ln in text.splitlines())
    return [ln for ln in lines if ln.strip()]


def test_demo_round_trip_text_and_bytes():
    source = DEMO.read_text()
    image = assemble(source, "demo.s")
    text = disassemble(image)
    assert normalise(text) == normalise(source)
    again = assemble(text)
    assert again.to_bytes() == image.to_bytes()
    assert Image.from_bytes(image.to_bytes()).to_bytes() == image.to_bytes()


def test_demo_fields_decode_as_written():
    image = assemble(DEMO.read_text())
    symbols = {s.name: s.address for s in image.symbols}
    prog = image.program_segment()
    mem = image.memory(0x1000)
    first = UnityInstruction.decode(unpack_program(prog.data, prog.count)[0])
    assert first.opcode.mnemonic == "add" and first.as_bits == 32
    fields = decode_table(first.opcode, 32, mem[first.operand_descriptor:])
    assert fields["src0"] == symbols["a"] and fields["dst"] == symbols["sum"]
    assert fields["len"] == 8 and fields["sat"] == 1 and fields["src0_unit"] == isa.DataUnit.S8
    assert first.operand_descriptor == 0x400          # first auto-placed table
    second = UnityInstruction.decode(unpack_program(prog.data, prog.count)[1])
    assert second.operand_descriptor == 0x420         # next 32-byte row


def test_builder_gives_the_same_bytes_as_text():
    text = """
    .as 16
    .text 0x20
    go:
        add.u8 src0=x, src1=y, dst=z, len=3
        abs src0=x, dst=z, len=3, src0_unit=s8, dst_unit=s16, sat=1, as=32, wait=1:7*3, blk
        .insn arm64, 0xff
        end
    .tables 0x300
    .data 0x400
    x: .u8 1, 2, 3
    y: .u8 4, 5, 6
    z: .zero 6
    .keys 1:7, 3
    """
    b = ProgramBuilder(as_bits=16)
    b.text(0x20)
    b.label("go")
    b.insn("add", "u8", src0="x", src1="y", dst="z", len=3)
    b.insn("abs", src0="x", dst="z", len=3, src0_unit="s8", dst_unit="s16", sat=1, as_bits=32,
           wait=(1, 7, 3), blk=True)
    b.raw("arm64", 0xFF)
    b.end()
    b.tables(0x300)
    b.data(0x400)
    b.label("x"); b.values("u8", [1, 2, 3])
    b.label("y"); b.values("u8", [4, 5, 6])
    b.label("z"); b.zero(6)
    b.keys(1, 7, 3)
    assert b.build().to_bytes() == assemble(text).to_bytes()


def _random_program(rng):
    b = ProgramBuilder(as_bits=rng.choice([16, 32, 64]))
    b.text(0)
    n = rng.randrange(1, 45)
    for _ in range(n):
        kind = rng.random()
        if kind < 0.15:
            b.raw(rng.choice([1, 2, 3, 4, 5, 6, 0x7F, rng.randrange(0x80, 0x100), rng.randrange(7, 0x7F)]),
                  rng.getrandbits(128))
            continue
        op = rng.choice(isa.OPCODES)
        kw = {}
        if rng.random() < 0.3:
            kw["wait"] = (rng.randrange(4), rng.randrange(256), rng.randrange(1, 9))
        if rng.random() < 0.3:
            kw["signal"] = (rng.randrange(4), rng.randrange(256))
        kw["blk"] = rng.random() < 0.2
        if op.table is None:
            b.insn(op.mnemonic, **kw)
            continue
        as_bits = rng.choice([16, 32, 64])
        layout = op.table.resolve(as_bits)
        fields = {}
        for f in layout.fields:
            if f.kind == Kind.UNIT:
                fields[f.name] = rng.randrange(16)
            elif rng.random() < 0.7:
                raw = rng.getrandbits(f.width)
                fields[f.name] = f.to_signed(raw)
        b.insn(op.mnemonic, as_bits=as_bits, **kw, **fields)
    b.tables(0x8000)
    b.data(0x20000)
    b.label("buf")
    for _ in range(rng.randrange(4)):
        unit = rng.choice(list(isa.DataUnit))
        vals = ([rng.uniform(-1e3, 1e3) for _ in range(rng.randrange(1, 6))] if unit.is_float else
                [rng.randrange(-(1 << (unit.bits - 1)), 1 << (unit.bits - 1)) if unit.signed
                 else rng.randrange(1 << unit.bits) for _ in range(rng.randrange(1, 6))])
        b.values(unit, vals)
        b.zero(rng.randrange(3))
    return b.build()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_random_programs_disassemble_to_identical_bytes(seed):
    image = _random_program(random.Random(seed))
    text = disassemble(image)
    again = assemble(text)
    assert again.to_bytes() == image.to_bytes()
    assert disassemble(again) == text


def test_disassembly_of_a_hand_made_image_with_reserved_bits():
    # an ADD with RSVD payload bits set, and one whose table has reserved bits set
    add = isa.by_mnemonic("add")
    good = UnityInstruction(int(add.section), add.op_code, 1, operand_descriptor=0x400).encode()
    bad_rsvd = UnityInstruction(int(add.section), add.op_code, 1, operand_descriptor=0x400, rsvd=5).encode()
    bad_as = UnityInstruction(int(add.section), add.op_code, 3, operand_descriptor=0x400).encode()
    from xdsa.golden.image import Segment
    from xdsa.golden.storage import pack_program
    table = bytearray(20)
    table[19] = 0x80                    # a reserved OP Mode bit
    image = Image(0, [Segment(SegmentKind.PROGRAM, 0, pack_program([good, bad_rsvd, bad_as]), 3),
                      Segment(SegmentKind.TABLES, 0x400, bytes(table))])
    text = disassemble(image)
    assert ".insn unity" in text
    assert assemble(text).to_bytes() == image.to_bytes()


@pytest.mark.parametrize("source,message", [
    ("frobnicate src=1", r"<t>:3: error: unknown mnemonic 'frobnicate'"),
    ("ad.s8 src0=1", r"<t>:3: error: unknown mnemonic 'ad' \(did you mean .*add"),
    ("add.s8 src0=1, len=70000, as=16", r"<t>:3: error: add: len is a 16-bit field: expected 0..65535, got 70000"),
    ("add.s8 src0=1, sat=2", r"<t>:3: error: add: sat is a 1-bit field: expected 0..1, got 2"),
    ("add.s8 src0=nowhere", r"<t>:3: error: add: src0: undefined label 'nowhere'"),
    ("add.s8 src0=1, as=48", r"<t>:3: error: address space must be 16, 32 or 64, not 48"),
    ("add src0=1", r"<t>:3: error: add needs a data unit: write add.<unit> .*src0_unit=, dst_unit=, src1_unit="),
    ("add.s9 src0=1", r"<t>:3: error: data unit suffix: unknown data unit 's9'; expected one of u4, u8"),
    ("add.s8 src9=1", r"<t>:3: error: add has no field 'src9'; its fields are src0, src1, dst, len"),
    ("add.s8 src0", r"<t>:3: error: operand 'src0' is not of the form field=value"),
    ("add.s8 src0=1, src0=2", r"<t>:3: error: field src0 is given twice"),
    ("exit src0=1", r"<t>:3: error: exit has no operand table, so it takes no fields"),
    ("data_move.u8 transfer_mode=sideways", r"<t>:3: error: data_move: transfer_mode: .*expected one of normal, immediate, upsample, transpose"),
    ("add.s8 wait=5:1", r"<t>:3: error: wait: key table must be 0..3, not 5"),
    ("add.s8 wait=0:1*9", r"<t>:3: error: wait: a key fetch takes 1..8 keys, not 9"),
    (".frob 3", r"<t>:3: error: unknown directive .frob"),
    (".insn 0x100, 0", r"<t>:3: error: DID must be 0..255, not 256"),
])
def test_error_messages_name_file_line_field_and_expectation(source, message):
    text = f".tables 0x400\n.text 0\n{source}\n"
    with pytest.raises(AsmErrors) as e:
        assemble(text, "<t>")
    assert re.search(message, str(e.value)), str(e.value)


def test_every_error_is_reported():
    text = ".text 0\nfoo\nadd.s8 len=-1\n.tables 0x100\nbar\n"
    with pytest.raises(AsmErrors) as e:
        assemble(text, "x.s")
    assert [err.line for err in e.value.errors] == [2, 3, 5]


@pytest.mark.parametrize("source,message", [
    (".text 0x10\nexit\n", r"\.text address 0x10 is not a multiple of 32"),
    (".data 0\n.u8 1\n", r"the program has no \.text section"),
    (".text 0\nadd.s8 len=1\n", r"add needs an operand table but there is no \.tables section"),
    (".text 0\nexit\n.data 0x100\na: .u8 1\na: .u8 2\n", r":5: error: label 'a' is already defined on line 4"),
    (".text 0\nexit\n.data 0x10\n.u8 1\n", r"sections overlap: program at 0x0..0x220 and data at 0x10"),
    (".text 0\nexit\n.data 0x100\n.s8 200\n", r"\.s8: 200 is out of range -128..127"),
    (".text 0\nexit\n.data 0x101\n.align 4\n", r"\.align 4: the section at 0x101 is not 4-byte aligned"),
    (".u8 1\n", r"data must follow a \.text, \.tables or \.data directive"),
    (".text 0\n.u8 1\n", r"data belongs in a \.data or \.tables section"),
])
def test_structure_errors(source, message):
    with pytest.raises(AsmErrors) as e:
        assemble(source, "s.s")
    assert re.search(message, str(e.value)), str(e.value)


def test_builder_errors_without_line_numbers():
    b = ProgramBuilder()
    b.text(0)
    with pytest.raises(AsmError, match="unknown mnemonic 'nope'"):
        b.insn("nope")


def test_int4_data_and_float_specials():
    image = assemble(".text 0\nexit\n.data 0x400\nq: .s4 1, -1, 7\nf: .f16 inf, -0.0, 65504.0, 6e-08\n")
    data = next(s for s in image.segments if s.kind == SegmentKind.DATA).data
    assert data[:2] == bytes([0xF1, 0x07])              # element 2k in the low nibble
    assert data[2:4] == bytes([0x00, 0x7C])             # +inf in binary16
    assert data[8:10] == bytes([0x01, 0x00])            # smallest binary16 subnormal
    assert assemble(disassemble(image)).to_bytes() == image.to_bytes()
