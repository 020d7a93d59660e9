"""The ISA table against the seed text itself (docs/spec/xdsa-isa-seed.txt), parsed
independently of golden/isa."""

import pathlib
import re

import pytest

from xdsa.golden import isa
from xdsa.golden.isa import Section, Kind

SEED = pathlib.Path(__file__).resolve().parents[2] / "docs" / "spec" / "xdsa-isa-seed.txt"


def parse_seed():
    """(section, name, group, code, group_from_14bit, code_from_14bit) per opcode heading."""
    text = SEED.read_text(encoding="utf-8")
    section, group = Section.BASE, None
    rows, pending = [], None
    for line in text.splitlines():
        if line.strip() == "AI Instructions":
            section = Section.AI
        m = re.search(r"OP_CODE\[13:5\] = 9’b?([01]+)", line)
        if m:
            group = int(m.group(1), 2)
            continue
        m = re.match(r"^\s*([A-Za-z0-9_]+)\s*:?\s*\(?\s*OP_CODE\[4:0\]\s*=\s*[‘']?h([0-9a-fA-F]+)\)", line)
        if m:
            pending = [section, m.group(1), group, int(m.group(2), 16)]
            continue
        m = re.search(r"OP_CODE: .*\(14’b\s*([01_ ]+)\)", line)
        if m and pending is not None:
            bits = int(m.group(1).replace("_", "").replace(" ", ""), 2)
            rows.append((*pending, bits >> 5, bits & 0x1F))
            pending = None
    return rows


def test_counts():
    assert isa.opcode_count() == 224
    assert isa.opcode_count(Section.BASE) == 142
    assert isa.opcode_count(Section.AI) == 82


def test_every_opcode_matches_the_seed():
    seed = parse_seed()
    assert len(seed) == 224
    by_key = {}
    for section, name, group, code, g14, c14 in seed:
        assert (group, code) == (g14, c14), f"the seed disagrees with itself on {name}"
        assert (section, group, code) not in by_key, f"the seed repeats {name}'s encoding"
        by_key[(section, group, code)] = name
    ours = {(op.section, op.group, op.code): op.name for op in isa.OPCODES}
    assert set(ours) == set(by_key)
    for key, name in by_key.items():
        assert ours[key].upper() == name.upper(), (key, name, ours[key])


def test_mnemonics_unique_and_duplicated_names_distinct():
    names = [op.name for op in isa.OPCODES]
    dups = {n for n in names if names.count(n) > 1}
    assert dups == {"SIGN", "IS_EMPTY", "RAND_BERNOULLI", "TANH"}
    mnemonics = [op.mnemonic for op in isa.OPCODES]
    assert len(set(mnemonics)) == 224
    for n in dups:
        assert len({op.mnemonic for op in isa.OPCODES if op.name == n}) == 2


def test_lookup_by_key_and_mnemonic():
    for op in isa.OPCODES:
        assert isa.lookup(op.section, op.op_code) is op
        assert isa.by_mnemonic(op.mnemonic) is op
    assert isa.lookup(Section.BASE, 0x1FF << 5 | 0x1E) is None
    assert isa.lookup(0x15, 0) is None


@pytest.mark.parametrize("as_bits", [16, 32, 64])
def test_layouts_are_consistent(as_bits):
    for op in isa.OPCODES:
        if op.table is None:
            continue
        layout = op.table.resolve(as_bits)
        used = set()
        for f in layout.fields:
            for t_lo, w, _ in f.pieces:
                bits = set(range(t_lo, t_lo + w))
                assert not bits & used, (op.mnemonic, f.name)
                assert max(bits) < layout.bits, (op.mnemonic, f.name)
                used |= bits
        # slots tile the table from bit 0 without gaps
        pos = 0
        for s in layout.slots:
            assert s.lo == pos, (op.mnemonic, s.name)
            pos += s.width
        assert pos == layout.bits
        for f in layout.fields:
            if f.kind == Kind.ADDR:
                assert f.width >= as_bits, (op.mnemonic, f.name)


def test_seed_layout_positions():
    """Spot checks of bit positions quoted from the seed."""
    add = isa.by_mnemonic("add").table.resolve(32)
    assert add.field("src0").describe_bits() == "[31:0]"
    assert add.field("len").describe_bits() == "[127:96]"          # [4A-1:3A]
    assert add.slots[-1].lo == 128 and add.slots[-1].hi == 159       # OP Mode [4A+31:4A]
    mm = isa.by_mnemonic("matrix_mul").table.resolve(16)            # M = max(32, 16) = 32
    assert mm.field("padding_addr").describe_bits() == "[143:112]"   # [3A+63+M : 3A+64]
    assert mm.field("k_num").describe_bits() == "[271:260]"          # top of [3A+191+M : 3A+160+M]
    conv = isa.by_mnemonic("conv2d").table.resolve(64)               # M = 64
    assert conv.field("clip_max").describe_bits() == f"[{3*64+239+5*64}:{3*64+224+5*64}]"
    assert conv.field("bias_addr").describe_bits() == f"[{3*64+95+2*64}:{3*64+96+64}]"
    dm = isa.by_mnemonic("data_move").table.resolve(16)
    assert dm.field("src_line_stride").describe_bits() == "[159:144], [103:96]"   # split over two words
    assert dm.field("des_width").describe_bits() == "[239:224]"            # [2A+223:2A+192] low half
    red = isa.by_mnemonic("reduce_sum").table.resolve(32)
    assert red.field("axis").describe_bits() == "[130:128]"          # {src_unit[3:0], axis[2:0]}
    assert red.field("src_unit").describe_bits() == "[134:131]"
    dc = isa.by_mnemonic("data_convert").table.resolve(32)
    assert dc.field("src_unit").describe_bits() == "[99:96]"
    assert dc.field("dst_unit").describe_bits() == "[103:100]"


def test_widened_slots():
    tr = isa.by_mnemonic("transpose").table.resolve(32)
    dims = next(s for s in tr.slots if s.name == "dims")
    assert dims.width == 64
    assert tr.field("src_data_unit").lo == 2 * 32 + 64 + 24   # {unit, FW, FN}: unit above 24 bits
    assert isa.by_mnemonic("softmax").table.resolve(16).slots[2].width == 64


def test_user_defined_layouts_are_marked():
    assert sum(op.user_defined for op in isa.OPCODES) >= 70
    assert not isa.by_mnemonic("add").user_defined
    assert isa.by_mnemonic("reshape").user_defined
