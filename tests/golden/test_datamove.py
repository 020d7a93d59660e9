"""DATA_MOVE golden semantics (docs/isa-decisions.md, D-DATAMOVE, D-SNAPSHOT,
D-OVERLAP, D-INT4).

Expected memory is computed here from the specification with plain Python loops
over a copy of memory (no golden-model code), then compared with the whole memory
of the machine after the run, so bytes outside the destination are checked too.
The reference also predicts the D-OVERLAP fault from the rule in the document.
"""

import random
import struct
from dataclasses import dataclass

import numpy as np
import pytest

from xdsa.golden.asm import assemble
from xdsa.golden.isa import Fault
from xdsa.golden.machine import Machine

PROLOGUE = ".tables 0x7000\n.text 0\n"              # as tests/helpers.py
DATA = 0x8000                      # random bytes from here to the end of memory
MEM = 1 << 16
PC = [32 + 16 * k for k in range(8)]

BITS = {"u4": 4, "s4": 4, "u8": 8, "s8": 8, "u16": 16, "s16": 16, "u32": 32, "s32": 32,
        "u64": 64, "s64": 64, "f16": 16, "f32": 32, "f64": 64}
UNITS = list(BITS)


@dataclass
class Geo:
    """One side of a move: address, trans_size, num_trans, width, line/surface stride."""
    base: int
    trans: int
    num: int = 0
    width: int = 0
    ls: int = 0
    ss: int = 0

    def fields(self, p):
        return (f"{p}_trans_size={self.trans}, {p}_num_trans={self.num}, {p}_width={self.width}, "
                f"{p}_line_stride={self.ls}, {p}_surface_stride={self.ss}")

    def elements(self):
        """(line start byte, index in line) of every element, in traversal order."""
        n, w = self.num or 1, self.width or self.trans
        return [(self.base + s * self.ss + (i // w) * self.ls, i % w)
                for s in range(n) for i in range(self.trans)]

    def extent(self, bits):
        """(lowest, highest) byte the pattern touches, or None when it is empty."""
        touched = [b for p in self.elements() for b in element_bytes(p, bits)]
        return (min(touched), max(touched)) if touched else None

    def contiguous(self, bits):
        """D-OVERLAP: consecutive element positions (nibble positions for int4, the
        first byte otherwise) follow each other one element apart, in traversal order."""
        if bits == 4:
            pos, step = [2 * line + e for line, e in self.elements()], 1
        else:
            pos, step = [line + e * (bits // 8) for line, e in self.elements()], bits // 8
        return all(b - a == step for a, b in zip(pos, pos[1:]))


def element_bytes(pos, bits):
    """The bytes element `pos` (line start byte, index in line) occupies (D-INT4)."""
    line, e = pos
    if bits == 4:
        return [line + e // 2]
    nb = bits // 8
    return list(range(line + e * nb, line + e * nb + nb))


def extents_intersect(unit, src, dst):
    """Whether the byte extents (lowest to highest byte) of two patterns intersect;
    an empty pattern has no extent."""
    se, de = src.extent(BITS[unit]), dst.extent(BITS[unit])
    return se is not None and de is not None and de[0] <= se[1] and se[0] <= de[1]


def illegal_overlap(unit, mode, src, dst):
    """D-OVERLAP, from the document: when the byte extents of the two patterns
    intersect, the move is legal only in normal mode with both patterns contiguous
    and dst <= src. Immediate mode reads no source."""
    if mode == "immediate" or not extents_intersect(unit, src, dst):
        return False
    bits = BITS[unit]
    return not (mode == "normal" and src.contiguous(bits) and dst.contiguous(bits)
                and dst.base <= src.base)


def insn(unit, mode, src, dst, extra=""):
    """One data_move line; `src` is a Geo or (immediate mode) an int or text."""
    suffix = f".{unit}" if unit else ""
    if isinstance(src, Geo):
        s = f"src={src.base}, {src.fields('src')}"
    else:
        s = f"src={src}"
    return (f"    data_move{suffix} {s}, dst={dst.base}, transfer_mode={mode}, "
            f"{dst.fields('des')}{', ' + extra if extra else ''}")


NOP = insn("u8", "normal", Geo(DATA, 0), Geo(DATA, 0))    # a legal zero-length move


def run(lines, mem_size=MEM, seed=1):
    """Assemble and run `lines`; memory from DATA up is random. Returns
    (machine, result, memory before the run)."""
    image = assemble(PROLOGUE + "\n".join(lines) + "\n    exit\n    end\n", "<test>")
    m = Machine(mem_size)
    m.load(image)
    rng = np.random.default_rng(seed)
    m.mem[DATA:] = rng.integers(0, 256, mem_size - DATA, dtype=np.uint8)
    before = m.mem.copy()
    return m, m.run(100), before


# --- the reference model (plain Python, from the specification) ----------------------

def get(mem, pos, bits):
    line, e = pos
    if bits == 4:
        return (mem[line + e // 2] >> (4 * (e % 2))) & 0xF
    nb = bits // 8
    return bytes(mem[line + e * nb:line + e * nb + nb])


def put(mem, pos, bits, v, touched):
    line, e = pos
    if bits == 4:
        a = line + e // 2
        mem[a] = (mem[a] & 0xF0) | v if e % 2 == 0 else (mem[a] & 0x0F) | (v << 4)
        touched.add(a)
        return
    nb = bits // 8
    a = line + e * nb
    mem[a:a + nb] = v
    touched.update(range(a, a + nb))


def ranges(touched):
    out = []
    for a in sorted(touched):
        if out and out[-1][0] + out[-1][1] == a:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((a, 1))
    return tuple(out)


def reference(before, unit, mode, src, dst):
    """(expected memory, expected trace writes) of one legal move (D-SNAPSHOT: every
    source element is read before anything is written)."""
    bits = BITS[unit]
    mem = bytearray(before.tobytes())
    D = dst.elements()
    if mode == "immediate":
        v = src & ((1 << bits) - 1)
        vals = [v if bits == 4 else v.to_bytes(bits // 8, "little")] * len(D)
    else:
        S = [get(mem, p, bits) for p in src.elements()]            # all sources first
        ws, wd = src.width or src.trans, dst.width or dst.trans
        if mode == "normal":
            vals = S
        elif mode == "upsample":
            kh, kv = wd // ws, (dst.trans // wd) // (src.trans // ws)
            vals = [S[(i // wd) // kv * ws + (i % wd) // kh] for i in range(dst.trans)]
        else:                                                       # transpose
            ls_ = src.trans // ws
            vals = [S[s * src.trans + e * ws + ln] for s in range(src.num or 1)
                    for ln in range(ws) for e in range(ls_)]
    assert len(vals) == len(D)
    touched = set()
    for p, v in zip(D, vals):                                      # later elements win
        put(mem, p, bits, v, touched)
    return np.frombuffer(bytes(mem), dtype=np.uint8), ranges(touched)


def check(unit, mode, src, dst, extra="", seed=1):
    """Run one legal move and compare the whole memory and the trace with the reference."""
    assert not illegal_overlap(unit, mode, src, dst), "the test means a legal move"
    m, res, before = run([insn(unit, mode, src, dst, extra)], seed=seed)
    assert res.status == "exit", res.detail
    expected, writes = reference(before, unit, mode, src, dst)
    diff = np.flatnonzero(m.mem != expected)
    assert not len(diff), f"first difference at {diff[0]:#x}"
    assert res.trace[0].writes == writes
    return m, res, before


def check_fault(line, code, *words, mem_size=MEM):
    """`line` runs as instruction 1 (after a zero-length move) and faults `code`
    without writing anything; the detail names every one of `words`."""
    m, res, before = run([NOP, line], mem_size=mem_size)
    assert res.status == "fault"
    assert res.fault == code, res.detail
    assert res.fault_pc == PC[1]
    assert res.trace[1].writes == ()
    assert np.array_equal(m.mem, before)
    for w in words:
        assert w in res.detail, (w, res.detail)
    return res


def check_overlap_fault(unit, mode, src, dst, extra=""):
    """An overlap D-OVERLAP forbids: ILLEGAL_OPERAND at the instruction, nothing written."""
    assert illegal_overlap(unit, mode, src, dst), "the test means an illegal overlap"
    return check_fault(insn(unit, mode, src, dst, extra), Fault.ILLEGAL_OPERAND, "overlap",
                       "D-OVERLAP")


def check_predicted(unit, mode, src, dst, seed=1):
    """Run one move and compare it with the reference's prediction: the D-OVERLAP
    fault (at the move, nothing written) or the memory and trace of a legal move."""
    if not illegal_overlap(unit, mode, src, dst):
        check(unit, mode, src, dst, seed=seed)
        return True
    m, res, before = run([insn(unit, mode, src, dst)], seed=seed)
    assert res.status == "fault" and res.fault == Fault.ILLEGAL_OPERAND, (res.status, res.detail)
    assert res.fault_pc == PC[0] and res.trace[0].writes == ()
    assert "overlap" in res.detail, res.detail
    assert np.array_equal(m.mem, before)
    return False


# --- normal ----------------------------------------------------------------------------

@pytest.mark.parametrize("unit", UNITS)
def test_normal_1d_unaligned_every_unit(unit):
    check(unit, "normal", Geo(DATA + 3, 7), Geo(DATA + 0x105, 7))


@pytest.mark.parametrize("unit", UNITS)
def test_normal_2d_strided_with_gaps(unit):
    # 3 lines of 5 elements; the line strides leave gaps that must stay untouched
    src = Geo(DATA + 1, 15, width=5, ls=45)
    dst = Geo(DATA + 0x401, 15, width=5, ls=47)
    check(unit, "normal", src, dst)


@pytest.mark.parametrize("unit", ["s4", "u8", "s16", "f32", "u64"])
def test_normal_3d_reshape(unit):
    # 3 surfaces x 2 lines x 4 elements -> 2 surfaces x 4 lines x 3 elements
    src = Geo(DATA + 7, 8, num=3, width=4, ls=40, ss=100)
    dst = Geo(DATA + 0x601, 12, num=2, width=3, ls=30, ss=200)
    check(unit, "normal", src, dst)


@pytest.mark.parametrize("unit", ["u4", "s8", "f16"])
def test_normal_2d_to_1d_and_back(unit):
    check(unit, "normal", Geo(DATA + 2, 12, width=4, ls=16), Geo(DATA + 0x300, 12))
    check(unit, "normal", Geo(DATA + 2, 12), Geo(DATA + 0x301, 12, width=3, ls=33))
    # width 0 is one line of trans_size; a zero surface stride keeps the last surface
    check(unit, "normal", Geo(DATA + 2, 12, width=6, ls=99), Geo(DATA + 0x301, 6, num=2, ss=0))


def test_normal_s8_values_and_trace():
    m, res, before = check("s8", "normal", Geo(DATA, 4, width=2, ls=8), Geo(DATA + 0x100, 4, width=1, ls=3))
    got = [int(m.mem[DATA + 0x100 + 3 * i]) for i in range(4)]
    assert got == [int(before[DATA]), int(before[DATA + 1]), int(before[DATA + 8]), int(before[DATA + 9])]
    assert res.trace[0].writes == tuple((DATA + 0x100 + 3 * i, 1) for i in range(4))


def test_normal_int4_odd_lines_leave_high_nibble():
    # lines of 3 nibbles start on bytes: the high nibble of each line's second byte stays
    m, res, before = check("u4", "normal", Geo(DATA, 6), Geo(DATA + 0x10, 6, width=3, ls=2))
    for ln in range(2):
        a = DATA + 0x10 + 2 * ln
        assert m.mem[a + 1] >> 4 == before[a + 1] >> 4
    assert res.trace[0].writes == ((DATA + 0x10, 4),)


def test_normal_int4_nibble_order():
    lines = [insn("s4", "normal", Geo(DATA, 5), Geo(DATA + 0x21, 5))]
    image = assemble(PROLOGUE + "\n".join(lines) + "\n    exit\n    end\n.data 0x8000\n"
                     ".s4 1, -2, 3, -4, 5, 6\n")
    m = Machine(MEM)
    m.load(image)
    m.mem[DATA + 0x21:DATA + 0x24] = 0xAB
    res = m.run(10)
    assert res.status == "exit"
    assert bytes(m.mem[DATA + 0x21:DATA + 0x24]) == bytes([0xE1, 0xC3, 0xA5])


@pytest.mark.parametrize("unit", ["f16", "f32", "f64"])
def test_float_bit_patterns_are_moved_exactly(unit):
    fmt = {"f16": "<e", "f32": "<f", "f64": "<d"}[unit]
    nan = {"f16": b"\x01\x7c", "f32": b"\x01\x00\x80\x7f", "f64": b"\x01" + b"\x00" * 5 + b"\xf0\x7f"}[unit]
    pattern = nan + struct.pack(fmt, -0.0) + struct.pack(fmt, 1.5)
    lines = [insn(unit, "normal", Geo(DATA, 3), Geo(DATA + 0x41, 3))]
    image = assemble(PROLOGUE + "\n".join(lines) + "\n    exit\n    end\n")
    m = Machine(MEM)
    m.load(image)
    m.mem[DATA:DATA + len(pattern)] = np.frombuffer(pattern, dtype=np.uint8)
    assert m.run(10).status == "exit"
    assert bytes(m.mem[DATA + 0x41:DATA + 0x41 + len(pattern)]) == pattern


# --- immediate ---------------------------------------------------------------------------

@pytest.mark.parametrize("unit, imm", [
    ("u4", 0x1234567B), ("s4", 0xF), ("u8", 0x1FF), ("s8", 0x80), ("u16", 0xDEADBEEF),
    ("s16", 0x8001), ("u32", 0x89ABCDEF), ("s32", 0xFFFFFFFF), ("u64", 0x89ABCDEF), ("f64", 0x3FF8),
])
def test_immediate_low_bits_of_src(unit, imm):
    check(unit, "immediate", imm, Geo(DATA + 3, 12, num=2, width=4, ls=20, ss=64))


def test_immediate_fp16_value():
    m, res, _ = check("f16", "immediate", 0x3E00, Geo(DATA + 1, 5, width=5))
    got = np.frombuffer(m.mem[DATA + 1:DATA + 11].tobytes(), dtype="<f2")
    assert list(got) == [1.5] * 5
    # the assembler's f16() form gives the same bit pattern
    m2, res2, _ = run([insn("f16", "immediate", "f16(1.5)", Geo(DATA + 1, 5, width=5))])
    assert bytes(m2.mem[DATA + 1:DATA + 11]) == bytes(m.mem[DATA + 1:DATA + 11])


@pytest.mark.parametrize("as_bits, imm", [(16, 0xBEEF), (32, 0xDEADBEEF), (64, 0x0123456789ABCDEF)])
def test_immediate_u64_is_the_zero_extended_src_field(as_bits, imm):
    m, res, _ = run([insn("u64", "immediate", imm, Geo(DATA + 5, 3), f"as={as_bits}")])
    assert res.status == "exit"
    for i in range(3):
        a = DATA + 5 + 8 * i
        assert int.from_bytes(bytes(m.mem[a:a + 8]), "little") == imm


def test_immediate_int4_3d_and_odd_lines():
    dst = Geo(DATA + 1, 5, num=2, width=5, ls=0, ss=7)
    m, res, before = check("s4", "immediate", 0x9, dst)
    for s in range(2):
        a = DATA + 1 + 7 * s
        assert list(m.mem[a:a + 2]) == [0x99, 0x99]
        assert m.mem[a + 2] == (before[a + 2] & 0xF0) | 0x9


def test_immediate_does_not_read_or_check_the_source():
    # the source address is far outside memory and the source geometry is invalid
    line = (f"    data_move.u8 src=0xFFFFFFF0, dst={DATA}, transfer_mode=immediate, "
            f"src_trans_size=7, src_width=2, src_num_trans=9, des_trans_size=4")
    m, res, before = run([line])
    assert res.status == "exit", res.detail
    assert list(m.mem[DATA:DATA + 4]) == [0xF0] * 4


# --- upsample ----------------------------------------------------------------------------

@pytest.mark.parametrize("unit", ["u4", "s8", "u16", "f32", "s64"])
def test_upsample_1d(unit):
    check(unit, "upsample", Geo(DATA + 1, 5), Geo(DATA + 0x201, 15))


@pytest.mark.parametrize("unit", ["s4", "u8", "f16", "u32", "f64"])
def test_upsample_2d(unit):
    # 2 lines x 3 -> 6 lines x 6 (kh = 2, kv = 3), destination lines with gaps
    src = Geo(DATA + 3, 6, num=1, width=3, ls=50)
    dst = Geo(DATA + 0x301, 36, num=1, width=6, ls=70)
    check(unit, "upsample", src, dst)


def test_upsample_values():
    m, res, before = check("u8", "upsample", Geo(DATA, 4, width=2, ls=2), Geo(DATA + 0x100, 16, width=4, ls=4))
    s = [[before[DATA], before[DATA + 1]], [before[DATA + 2], before[DATA + 3]]]
    got = m.mem[DATA + 0x100:DATA + 0x110].reshape(4, 4)
    assert got.tolist() == [[s[r // 2][c // 2] for c in range(4)] for r in range(4)]


def test_upsample_factor_one_is_a_copy():
    check("u16", "upsample", Geo(DATA + 1, 8, width=4, ls=9), Geo(DATA + 0x101, 8, width=4, ls=11))


# --- transpose ---------------------------------------------------------------------------

def test_transpose_2d_doc_example():
    src, dst = Geo(DATA, 8, width=4, ls=4), Geo(DATA + 0x10, 8, width=2, ls=2)
    m, res, before = check("s8", "transpose", src, dst)
    a = before[DATA:DATA + 8].reshape(2, 4)
    assert m.mem[DATA + 0x10:DATA + 0x18].reshape(4, 2).tolist() == a.T.tolist()
    assert res.trace[0].writes == ((DATA + 0x10, 8),)


@pytest.mark.parametrize("unit", UNITS)
def test_transpose_2d(unit):
    # 3 lines x 5 -> 5 lines x 3, strided with gaps, unaligned
    check(unit, "transpose", Geo(DATA + 1, 15, width=5, ls=44), Geo(DATA + 0x403, 15, width=3, ls=29))


@pytest.mark.parametrize("unit", ["u4", "s4", "s8", "f16", "u32", "f64"])
def test_transpose_3d(unit):
    src = Geo(DATA + 5, 12, num=3, width=4, ls=40, ss=130)
    dst = Geo(DATA + 0x501, 12, num=3, width=3, ls=27, ss=111)
    check(unit, "transpose", src, dst)


def test_transpose_single_line_and_single_column():
    check("u16", "transpose", Geo(DATA, 6), Geo(DATA + 0x101, 6, width=1, ls=5))
    check("u16", "transpose", Geo(DATA, 6, width=1, ls=3), Geo(DATA + 0x101, 6))


# --- zero length, zero strides, overlap --------------------------------------------------

@pytest.mark.parametrize("mode", ["normal", "immediate", "upsample", "transpose"])
@pytest.mark.parametrize("unit", ["u4", "u32"])
def test_zero_length_moves_nothing(mode, unit):
    src = Geo(DATA, 0, width=4) if mode != "immediate" else 0x5
    num = 1 if mode == "upsample" else 2
    for dst in (Geo(DATA + 0x100, 0), Geo(DATA + 0x100, 0, width=3, num=num, ls=9, ss=50),
                Geo(0xFFFFFF, 0)):                   # an empty side is not range-checked
        m, res, before = run([insn(unit, mode, src, dst)])
        assert res.status == "exit", res.detail
        assert res.trace[0].writes == ()
        assert np.array_equal(m.mem, before)


def test_zero_sized_source_outside_memory_is_legal():
    m, res, before = run([insn("u8", "normal", Geo(0xFFFFFFFF, 0, num=4), Geo(DATA, 0))])
    assert res.status == "exit" and np.array_equal(m.mem, before)


@pytest.mark.parametrize("unit", ["u4", "u8", "s16", "f64"])
def test_zero_destination_line_stride_last_element_wins(unit):
    m, res, before = check(unit, "normal", Geo(DATA, 12, width=3, ls=8), Geo(DATA + 0x101, 12, width=3, ls=0))
    # the last source line is what remains
    bits = BITS[unit]
    if bits >= 8:
        nb = bits // 8
        assert bytes(m.mem[DATA + 0x101:DATA + 0x101 + 3 * nb]) == bytes(before[DATA + 24:DATA + 24 + 3 * nb])


def test_zero_strides_everywhere_last_element_wins():
    m, res, before = check("u8", "normal", Geo(DATA, 24, num=2, width=3, ls=3, ss=12),
                           Geo(DATA + 0x101, 24, num=2, width=1, ls=0, ss=0))
    assert m.mem[DATA + 0x101] == before[DATA + 12 + 7 * 3 + 2]     # surface 1, line 7, element 2
    assert res.trace[0].writes == ((DATA + 0x101, 1),)


def test_zero_stride_int4_nibbles():
    # every line writes nibbles 0..2 of the same two bytes; the last line wins
    check("s4", "normal", Geo(DATA, 27), Geo(DATA + 0x41, 9, num=3, width=1, ls=0, ss=0))
    check("u4", "normal", Geo(DATA, 9), Geo(DATA + 0x41, 9, width=3, ls=0))


def test_overlapping_lines_later_wins():
    # line stride smaller than a line: lines overlap, the later line wins
    check("u16", "normal", Geo(DATA, 12), Geo(DATA + 0x81, 12, width=4, ls=5))
    check("u4", "normal", Geo(DATA, 12), Geo(DATA + 0x81, 12, width=4, ls=1))


# --- overlapping source and destination (D-SNAPSHOT, D-OVERLAP) ------------------------

X = DATA + 0x80                    # the source of the overlap tests; random bytes around it


def contiguous_geo(base, trans, unit, num=0, width=0):
    """A pattern whose lines and surfaces follow each other without gaps."""
    bits = BITS[unit]
    w = width or trans
    return Geo(base, trans, num, width, w * bits // 8 if width else 0,
               trans * bits // 8 if num else 0)


@pytest.mark.parametrize("unit", ["u4", "s4", "u8", "s16", "s32", "f64"])
@pytest.mark.parametrize("shift", [0, -1, -3, -8])
def test_overlap_dst_at_or_below_src_is_a_snapshot(unit, shift):
    # contiguous normal moves with dst <= src: legal, and the result is the source as
    # it was before the move (D-SNAPSHOT), for every unit and a shift below one element
    n = 20
    nbytes = n * BITS[unit] // 8                    # 20 nibbles are 10 whole bytes
    m, res, before = check(unit, "normal", Geo(X, n), Geo(X + shift, n))
    assert bytes(m.mem[X + shift:X + shift + nbytes]) == bytes(before[X:X + nbytes])
    assert res.trace[0].writes == ((X + shift, nbytes),)
    if shift == 0:
        assert np.array_equal(m.mem, before)        # in place: the same bytes rewritten


@pytest.mark.parametrize("unit", ["u4", "s8", "u16", "f32", "s64"])
@pytest.mark.parametrize("shift", [0, -1, -7, -30])
def test_overlap_contiguous_2d_3d_reshape_is_a_snapshot(unit, shift):
    # 2 surfaces x 3 lines x 4 -> 4 lines x 6 -> 1 line of 24 -> 3 surfaces x 8:
    # all contiguous, so each move is a byte copy of the source as it was
    nbytes = 24 * BITS[unit] // 8
    shapes = [contiguous_geo(0, 12, unit, num=2, width=4), contiguous_geo(0, 24, unit, width=6),
              contiguous_geo(0, 24, unit), contiguous_geo(0, 8, unit, num=3)]
    for a, b in zip(shapes, shapes[1:] + shapes[:1]):
        src = Geo(X, a.trans, a.num, a.width, a.ls, a.ss)
        dst = Geo(X + shift, b.trans, b.num, b.width, b.ls, b.ss)
        assert src.contiguous(BITS[unit]) and dst.contiguous(BITS[unit])
        m, res, before = check(unit, "normal", src, dst)
        assert bytes(m.mem[X + shift:X + shift + nbytes]) == bytes(before[X:X + nbytes])
        assert res.trace[0].writes == ((X + shift, nbytes),)


def test_overlap_unused_strides_do_not_break_contiguity():
    # a one-line side ignores its line stride, a one-surface side its surface stride
    check("u8", "normal", Geo(X, 4, num=2, ls=7, ss=4), Geo(X - 2, 8, width=8, ls=3))
    check("s16", "normal", Geo(X, 8, num=1, width=4, ls=8, ss=5), Geo(X, 4, num=2, ls=1, ss=8))
    check("u4", "normal", Geo(X, 6, num=1, ls=9, ss=1), Geo(X - 1, 6, num=0, width=6, ls=2, ss=9))


@pytest.mark.parametrize("unit", ["u4", "s4", "u8", "s32", "f64"])
@pytest.mark.parametrize("shift", ["one byte", "one element", "last byte"])
def test_overlap_dst_above_src_faults(unit, shift):
    # a destination that starts above an overlapping source would overwrite source
    # bytes not yet read by a streaming engine: ILLEGAL_OPERAND, even contiguous
    nbytes = 20 * BITS[unit] // 8
    k = {"one byte": 1, "one element": max(1, BITS[unit] // 8), "last byte": nbytes - 1}[shift]
    check_overlap_fault(unit, "normal", Geo(X, 20), Geo(X + k, 20))
    # 2-D and 3-D contiguous patterns, dst one byte above
    check_overlap_fault(unit, "normal", contiguous_geo(X, 20, unit, width=4),
                        contiguous_geo(X + 1, 10, unit, num=2))


@pytest.mark.parametrize("unit", ["u4", "u8", "s16"])
@pytest.mark.parametrize("src, dst", [
    (Geo(X, 12, width=4, ls=6), Geo(X, 12, width=4, ls=6)),          # in place, both with gaps
    (Geo(X, 12), Geo(X - 4, 12, width=4, ls=9)),                     # dst below, dst with gaps
    (Geo(X, 12, width=4, ls=9), Geo(X - 2, 12)),                     # dst below, src with gaps
    (Geo(X, 8, num=2, width=4, ls=0, ss=0), Geo(X, 16)),             # repeated source lines
    (Geo(X, 12), Geo(X, 12, width=3, ls=0)),                         # zero destination stride
    (Geo(X + 1, 4, width=1, ls=5), Geo(X, 4, width=1, ls=5)),        # interleaved, dst below
    (Geo(X, 4, width=1, ls=5), Geo(X + 1, 4, width=1, ls=5)),        # interleaved, dst above
])
def test_overlap_non_contiguous_faults(unit, src, dst):
    # the extents intersect (even where no byte is shared: the interleaved u4/u8
    # patterns) and a pattern is not contiguous: ILLEGAL_OPERAND whatever dst vs src
    check_overlap_fault(unit, "normal", src, dst)


@pytest.mark.parametrize("unit", ["u8", "s32"])
def test_overlap_contiguous_surfaces_with_a_gap_faults(unit):
    # contiguous lines, but a gap of one byte between the surfaces
    nb = BITS[unit] // 8
    src = Geo(X, 8, num=2, width=4, ls=4 * nb, ss=8 * nb + 1)
    check_overlap_fault(unit, "normal", src, Geo(X, 16))
    check_overlap_fault(unit, "normal", Geo(X + 8, 16), src)


def test_overlap_int4_odd_lines_are_not_contiguous():
    # lines of 3 nibbles start on bytes: nibble positions jump, so not contiguous
    src = Geo(X, 6, width=3, ls=2)
    check_overlap_fault("u4", "normal", src, Geo(X - 1, 6))
    check_overlap_fault("s4", "normal", Geo(X, 6), Geo(X, 6, width=3, ls=2))
    # even lines of 4 nibbles two bytes apart are contiguous: legal in place
    check("u4", "normal", Geo(X, 8, width=4, ls=2), Geo(X, 8))


@pytest.mark.parametrize("mode, unit, src, dst", [
    ("transpose", "u8", Geo(X, 12, width=4, ls=4), Geo(X, 12, width=3, ls=3)),          # in place
    ("transpose", "f32", Geo(X, 6, width=3, ls=12), Geo(X + 4, 6, width=2, ls=8)),      # above
    ("transpose", "s16", Geo(X + 8, 6, width=3, ls=6), Geo(X, 6, width=2, ls=4)),       # below
    ("transpose", "u16", Geo(X, 6), Geo(X, 6, width=1, ls=2)),        # a copy, still transpose
    ("transpose", "s4", Geo(X, 8, num=2, width=4, ls=2, ss=4),
     Geo(X + 3, 8, num=2, width=2, ls=1, ss=4)),                                         # 3-D
    ("upsample", "s16", Geo(X, 4, width=2, ls=4), Geo(X, 16, width=4, ls=8)),           # in place
    ("upsample", "u8", Geo(X, 8), Geo(X, 8)),                         # factor 1, in place
    ("upsample", "u8", Geo(X + 4, 4), Geo(X, 8)),                     # below
    ("upsample", "u4", Geo(X, 3), Geo(X + 1, 6)),                     # above, int4
])
def test_overlap_in_transpose_and_upsample_faults(mode, unit, src, dst):
    # only normal moves may overlap: the other modes do not read the source in order
    check_overlap_fault(unit, mode, src, dst)


@pytest.mark.parametrize("mode, unit, src, dst", [
    ("normal", "u8", Geo(X, 12, width=4, ls=6), Geo(X + 16, 12, width=1, ls=3)),   # just above
    ("normal", "u8", Geo(X, 12, width=4, ls=6), Geo(X - 34, 12, width=1, ls=3)),   # just below
    ("transpose", "u8", Geo(X, 8, width=4, ls=4), Geo(X + 8, 8, width=2, ls=2)),
    ("transpose", "s32", Geo(X, 8, width=4, ls=16), Geo(X - 32, 8, width=2, ls=8)),
    ("upsample", "u16", Geo(X, 4), Geo(X + 8, 8)),
    ("upsample", "u4", Geo(X, 3), Geo(X + 2, 6)),          # src nibbles 0..2 end in byte X+1
    ("upsample", "u4", Geo(X, 3), Geo(X - 3, 6)),
])
def test_adjacent_patterns_do_not_overlap(mode, unit, src, dst):
    # extents that touch without sharing a byte are no overlap: legal in every mode
    check(unit, mode, src, dst)


@pytest.mark.parametrize("mode", ["normal", "upsample", "transpose"])
def test_empty_patterns_never_overlap(mode):
    for src, dst in [(Geo(X, 0, width=2), Geo(X, 0)), (Geo(X, 0), Geo(X, 0, width=3))]:
        m, res, before = run([insn("u8", mode, src, dst)])
        assert res.status == "exit", res.detail
        assert res.trace[0].writes == () and np.array_equal(m.mem, before)


@pytest.mark.parametrize("unit", ["u4", "u8", "s16", "u32", "f64"])
def test_immediate_may_overlap_its_source_field(unit):
    # immediate mode reads no source: a destination over the src "address" is legal,
    # whatever the (ignored) source geometry fields say
    for imm in (X, X + 2, X - 1):
        check(unit, "immediate", imm, Geo(X - 4, 16, width=4, ls=2))
        check(unit, "immediate", imm, Geo(X, 8), extra="src_trans_size=8, src_width=2, src_line_stride=1")


def test_overlap_precedence():
    # D-PRECEDENCE: RESERVED_UNIT, then ILLEGAL_OPERAND (D-OVERLAP), then ADDRESS_RANGE
    check_fault(insn(None, "transpose", Geo(X, 8, width=4, ls=4), Geo(X, 8, width=2, ls=2),
                     "data_unit=15"), Fault.RESERVED_UNIT, "data_unit")
    # illegal overlaps that are also outside memory fault ILLEGAL_OPERAND
    check_overlap_fault("u8", "normal", Geo(MEM - 4, 8), Geo(MEM - 2, 8))
    check_overlap_fault("u8", "normal", Geo(MEM - 4, 8, width=2, ls=3), Geo(MEM - 4, 8))
    check_overlap_fault("s16", "transpose", Geo(MEM - 4, 8, width=4, ls=8), Geo(MEM - 4, 8, width=2, ls=4))
    check_overlap_fault("u8", "upsample", Geo(MEM - 2, 4), Geo(MEM - 2, 8))
    # a legal overlap outside memory faults ADDRESS_RANGE
    assert not illegal_overlap("u8", "normal", Geo(MEM - 4, 8), Geo(MEM - 8, 8))
    check_fault(insn("u8", "normal", Geo(MEM - 4, 8), Geo(MEM - 8, 8)), Fault.ADDRESS_RANGE, "source")


# --- faults ------------------------------------------------------------------------------

@pytest.mark.parametrize("code", [13, 14, 15])
def test_reserved_unit(code):
    line = insn(None, "normal", Geo(DATA, 4), Geo(DATA + 8, 4), f"data_unit={code}")
    check_fault(line, Fault.RESERVED_UNIT, "data_unit", str(code))


def test_reserved_unit_before_illegal_operand():
    line = insn(None, "normal", Geo(DATA, 5, width=2), Geo(DATA + 8, 4), "data_unit=15")
    check_fault(line, Fault.RESERVED_UNIT, "data_unit")


@pytest.mark.parametrize("mode", ["normal", "upsample", "transpose"])
def test_source_trans_size_not_a_multiple_of_width(mode):
    line = insn("u8", mode, Geo(DATA, 10, width=4, ls=4), Geo(DATA + 0x80, 10))
    check_fault(line, Fault.ILLEGAL_OPERAND, "src_trans_size = 10", "src_width = 4")


@pytest.mark.parametrize("mode", ["normal", "immediate", "upsample", "transpose"])
def test_destination_trans_size_not_a_multiple_of_width(mode):
    src = Geo(DATA, 9) if mode != "immediate" else 0
    line = insn("s16", mode, src, Geo(DATA + 0x80, 9, width=2, ls=4))
    check_fault(line, Fault.ILLEGAL_OPERAND, "des_trans_size = 9", "des_width = 2")


def test_zero_trans_size_with_width_is_legal():
    m, res, before = run([insn("u8", "normal", Geo(DATA, 0, width=4), Geo(DATA + 0x80, 0, width=3))])
    assert res.status == "exit"


@pytest.mark.parametrize("src, dst", [
    (Geo(DATA, 8), Geo(DATA + 0x80, 7)),
    (Geo(DATA, 4, num=2), Geo(DATA + 0x80, 4)),
    (Geo(DATA, 8), Geo(DATA + 0x80, 0)),
    (Geo(DATA, 0), Geo(DATA + 0x80, 3)),
])
def test_normal_element_count_mismatch(src, dst):
    check_fault(insn("u8", "normal", src, dst), Fault.ILLEGAL_OPERAND, "normal", "src_trans_size",
                "des_trans_size")


@pytest.mark.parametrize("side", ["src", "des"])
@pytest.mark.parametrize("num", [2, 255])
def test_upsample_is_1d_2d_only(side, num):
    src = Geo(DATA, 4, num=num if side == "src" else 1)
    dst = Geo(DATA + 0x80, 8, num=num if side == "des" else 0)
    check_fault(insn("u8", "upsample", src, dst), Fault.ILLEGAL_OPERAND, f"{side}_num_trans = {num}")


def test_upsample_num_trans_checked_even_when_empty():
    check_fault(insn("u8", "upsample", Geo(DATA, 0, num=3), Geo(DATA + 0x80, 0)),
                Fault.ILLEGAL_OPERAND, "src_num_trans = 3")


@pytest.mark.parametrize("src, dst", [
    (Geo(DATA, 4), Geo(DATA + 0x80, 6)),                                   # width 4 -> 6
    (Geo(DATA, 4), Geo(DATA + 0x80, 2)),                                   # shrinking
    (Geo(DATA, 6, width=3, ls=3), Geo(DATA + 0x80, 9, width=3, ls=3)),     # 2 lines -> 3
    (Geo(DATA, 6, width=3, ls=3), Geo(DATA + 0x80, 8, width=4, ls=4)),     # 3 -> 4 wide
    (Geo(DATA, 0), Geo(DATA + 0x80, 4)),                                   # from nothing
    (Geo(DATA, 4), Geo(DATA + 0x80, 0)),                                   # to nothing
])
def test_upsample_non_integer_factors(src, dst):
    check_fault(insn("s8", "upsample", src, dst), Fault.ILLEGAL_OPERAND, "upsample", "des_width",
                "src_width")


@pytest.mark.parametrize("dst", [
    Geo(DATA + 0x80, 8, width=4, ls=4),             # width must be L = 2
    Geo(DATA + 0x80, 6, width=2, ls=2),             # trans_size must be 8
    Geo(DATA + 0x80, 8, num=2, width=2, ls=2),      # same number of surfaces
    Geo(DATA + 0x80, 8),                            # one line of 8
])
def test_transpose_shape_mismatch(dst):
    check_fault(insn("u32", "transpose", Geo(DATA, 8, width=4, ls=16), dst), Fault.ILLEGAL_OPERAND,
                "transpose", "des_trans_size", "des_width")


def test_illegal_operand_before_address_range():
    line = insn("u8", "normal", Geo(0xFFFFFF0, 8), Geo(DATA, 7))
    check_fault(line, Fault.ILLEGAL_OPERAND, "normal")


@pytest.mark.parametrize("unit, nbytes", [("u8", 1), ("s16", 2), ("f32", 4), ("u64", 8)])
def test_address_range_exact_extent_1d(unit, nbytes):
    n = 5
    last_ok = MEM - n * nbytes
    check(unit, "normal", Geo(last_ok, n), Geo(DATA, n))                 # ends exactly at the end
    check(unit, "normal", Geo(DATA, n), Geo(last_ok, n))
    check_fault(insn(unit, "normal", Geo(last_ok + 1, n), Geo(DATA, n)), Fault.ADDRESS_RANGE, "source")
    check_fault(insn(unit, "normal", Geo(DATA, n), Geo(last_ok + 1, n)), Fault.ADDRESS_RANGE,
                "destination")


def test_address_range_exact_extent_3d():
    # 2 surfaces x 3 lines x 4 u16: extent (2-1)*1000 + (3-1)*100 + 8 bytes
    span = 1000 + 200 + 8
    ok = Geo(MEM - span, 12, num=2, width=4, ls=100, ss=1000)
    bad = Geo(MEM - span + 1, 12, num=2, width=4, ls=100, ss=1000)
    check("u16", "normal", ok, Geo(DATA, 24))
    check("u16", "normal", Geo(DATA, 24), ok)
    check_fault(insn("u16", "normal", bad, Geo(DATA, 24)), Fault.ADDRESS_RANGE, "source")
    check_fault(insn("u16", "normal", Geo(DATA, 24), bad), Fault.ADDRESS_RANGE, "destination")


def test_address_range_int4_extent():
    # lines of 5 nibbles span 3 bytes; the last line ends at byte (2-1)*10 + 2
    ok = Geo(MEM - 13, 10, width=5, ls=10)
    check("u4", "normal", ok, Geo(DATA, 10))
    check("u4", "normal", Geo(DATA, 10), ok)
    bad = Geo(MEM - 12, 10, width=5, ls=10)
    check_fault(insn("u4", "normal", bad, Geo(DATA, 10)), Fault.ADDRESS_RANGE, "source")
    check_fault(insn("s4", "normal", Geo(DATA, 10), bad), Fault.ADDRESS_RANGE, "destination")


def test_address_range_huge_fields():
    # a 255-surface move with 24-bit strides far outside memory: faults, allocates nothing big
    m24 = (1 << 24) - 1

    def big(base):
        return Geo(base, m24, num=255, width=1, ls=m24, ss=m24)     # ~1 TB extent

    def same(base):
        return Geo(base, m24, num=255, width=1, ls=0, ss=0)         # 8 bytes, 4G elements

    # disjoint patterns (the 8-byte side below the huge one): ADDRESS_RANGE
    check_fault(insn("u64", "normal", big(DATA + 0x100), same(DATA)), Fault.ADDRESS_RANGE, "source")
    check_fault(insn("u64", "normal", same(DATA), big(DATA + 0x100)), Fault.ADDRESS_RANGE,
                "destination")
    check_fault(insn("u64", "normal", Geo(DATA, 1, num=0), Geo(1 << 40, 1), "as=64"),
                Fault.ADDRESS_RANGE, "destination")
    check_fault(insn("u8", "immediate", 0, big(DATA)), Fault.ADDRESS_RANGE, "destination")
    check_fault(insn("u8", "immediate", DATA + 0x100, big(DATA)), Fault.ADDRESS_RANGE, "destination")
    # the same patterns overlapping (neither is contiguous): ILLEGAL_OPERAND first
    for src, dst in [(big(DATA), same(DATA)), (same(DATA), big(DATA)),
                     (big(DATA), same(DATA + 0x100)), (same(DATA + 0x100), big(DATA))]:
        check_fault(insn("u64", "normal", src, dst), Fault.ILLEGAL_OPERAND, "overlap", "D-OVERLAP")
    # huge contiguous patterns overlapping legally (dst 8 bytes below src): ADDRESS_RANGE
    contig = Geo(0, m24, width=1, ls=8)                              # 2^24 - 1 lines of one u64
    src = Geo(DATA + 8, contig.trans, contig.num, contig.width, contig.ls, contig.ss)
    dst = Geo(DATA, contig.trans, contig.num, contig.width, contig.ls, contig.ss)
    check_fault(insn("u64", "normal", src, dst), Fault.ADDRESS_RANGE)
    # ... but with dst above src they overlap illegally: ILLEGAL_OPERAND
    check_fault(insn("u64", "normal", dst, src), Fault.ILLEGAL_OPERAND, "overlap")


@pytest.mark.parametrize("mode", ["upsample", "transpose"])
def test_address_range_other_modes(mode):
    if mode == "upsample":
        src, dst = Geo(MEM - 3, 4), Geo(DATA, 8)
    else:
        src, dst = Geo(DATA, 4, width=2, ls=2), Geo(MEM - 3, 4, width=2, ls=2)
    check_fault(insn("u8", mode, src, dst), Fault.ADDRESS_RANGE, "source" if mode == "upsample" else "destination")


def test_fault_pc_after_committed_moves():
    first = insn("u8", "normal", Geo(DATA, 4), Geo(DATA + 0x100, 4))
    second = insn("u8", "immediate", 0x77, Geo(DATA + 0x200, 4))
    bad = insn("u8", "transpose", Geo(DATA, 4, width=2, ls=2), Geo(DATA + 0x300, 4, width=4))
    m, res, before = run([first, second, bad])
    assert res.status == "fault" and res.fault == Fault.ILLEGAL_OPERAND and res.fault_pc == PC[2]
    expected = before.copy()
    expected[DATA + 0x100:DATA + 0x104] = before[DATA:DATA + 4]
    expected[DATA + 0x200:DATA + 0x204] = 0x77
    assert np.array_equal(m.mem, expected)
    assert [r.writes for r in res.trace] == [((DATA + 0x100, 4),), ((DATA + 0x200, 4),), ()]
    assert [r.pc for r in res.trace] == PC[:3]


# --- randomised against the reference ---------------------------------------------------

def _random_side(rng, trans, num, width, unit, packed=False):
    """Random strides; `packed` gives lines and surfaces without gaps (contiguous unless
    int4 lines of an odd width, which start on bytes)."""
    nb = max(1, BITS[unit] // 8)
    line_bytes = ((width or trans) * BITS[unit] + 7) // 8
    lines = trans // width if width else 1
    if packed:
        return dict(trans=trans, num=num, width=width, ls=line_bytes, ss=lines * line_bytes), nb
    ls = rng.choice([0, line_bytes, line_bytes + rng.randrange(0, 9), rng.randrange(0, line_bytes + 1)])
    surf = lines * max(ls, line_bytes)
    ss = rng.choice([0, surf, surf + rng.randrange(0, 17), rng.randrange(0, surf + 1)])
    return dict(trans=trans, num=num, width=width, ls=ls, ss=ss), nb


def test_random_moves_match_reference():
    rng = random.Random(2024)
    outcome = {"disjoint": 0, "legal overlap": 0, "illegal overlap": 0}
    for case in range(300):
        unit = rng.choice(UNITS)
        mode = rng.choice(["normal", "normal", "immediate", "upsample", "transpose"])
        ws, ls_ = rng.randint(1, 5), rng.randint(1, 4)
        n = rng.choice([0, 1]) if mode == "upsample" else rng.choice([0, 1, 2, 3])
        src_w = rng.choice([0, ws]) if ls_ == 1 else ws
        # the destination is placed near the source in most normal moves (most of them
        # with both sides packed, mostly legal overlaps) and in some moves of other modes
        overlap = rng.random() < (0.8 if mode == "normal" else 0.3)
        packed = mode == "normal" and overlap and rng.random() < 0.7
        s, _ = _random_side(rng, ls_ * ws, n, src_w, unit, packed)
        if mode == "normal":
            dw = rng.randint(1, 6)
            total = (n or 1) * ls_ * ws
            dn = rng.choice([d for d in (1, 2, 3, 4, 6, 12) if total % (d * dw) == 0] or [1])
            if total % (dn * dw):
                dw, dn = total, 1
            d, _ = _random_side(rng, total // dn, dn, dw, unit, packed)
        elif mode == "upsample":
            kh, kv = rng.randint(1, 3), rng.randint(1, 3)
            d, _ = _random_side(rng, ls_ * ws * kh * kv, rng.choice([0, 1]), ws * kh, unit)
        elif mode == "transpose":
            d, _ = _random_side(rng, ls_ * ws, n, ls_, unit)
        else:
            d, _ = _random_side(rng, rng.randint(0, 12), rng.randint(0, 3), 0, unit)
            if d["trans"]:
                d["width"] = rng.choice([w for w in range(1, d["trans"] + 1) if d["trans"] % w == 0])
        src = Geo(DATA + 0x20 + rng.randrange(0, 0x200), **s)
        if not overlap:                 # far above any source extent (< 0x1000 bytes)
            at = DATA + rng.randrange(0x1000, 0x1200)
        elif packed:                    # in place or below the source, sometimes above
            at = src.base - rng.choice([0, 0, rng.randrange(1, 9), rng.randrange(1, 17),
                                        -rng.randrange(1, 9)])
        else:                           # near the source
            at = src.base + rng.randrange(-16, 17)
        dst = Geo(at, **d)
        if mode == "immediate":         # sometimes an immediate equal to a destination address
            src = rng.choice([rng.getrandbits(32), dst.base, dst.base + 1])
        if mode == "immediate" or not extents_intersect(unit, src, dst):
            outcome["disjoint"] += 1
        else:
            outcome["illegal overlap" if illegal_overlap(unit, mode, src, dst) else "legal overlap"] += 1
        check_predicted(unit, mode, src, dst, seed=case)
    # most moves are legal, and every outcome is well represented
    assert outcome["disjoint"] + outcome["legal overlap"] >= 2 * outcome["illegal overlap"], outcome
    assert min(outcome.values()) >= 30, outcome


def test_chunked_enumeration_matches_reference(monkeypatch):
    # a huge move is enumerated in chunks; force tiny chunks to exercise that path
    from xdsa.golden.semantics import datamove
    monkeypatch.setattr(datamove, "CHUNK_POSITIONS", 7)
    check("u8", "normal", Geo(DATA, 24, num=2, width=3, ls=5, ss=50), Geo(DATA + 0x81, 48, width=4, ls=3))
    check("s4", "transpose", Geo(DATA, 12, num=2, width=4, ls=3, ss=7), Geo(DATA + 0x43, 12, num=2, width=3,
                                                                             ls=1, ss=5))
    check("u16", "upsample", Geo(DATA, 6, width=3, ls=7), Geo(DATA + 0x21, 36, width=6, ls=8))
    check("f32", "immediate", 0x3F800000, Geo(DATA + 1, 12, num=3, width=2, ls=0, ss=9))
    # legal overlaps: every chunk reads the source as it was before the move
    check("u16", "normal", Geo(DATA + 0x105, 12, num=2, width=4, ls=8, ss=24),
          Geo(DATA + 0x100, 24, width=6, ls=12))
    check("s4", "normal", Geo(DATA + 0x200, 20, num=2, width=4, ls=2, ss=10), Geo(DATA + 0x1FD, 40))
    check("u8", "normal", Geo(DATA + 0x300, 30), Geo(DATA + 0x300, 10, num=3, width=5, ls=5, ss=10))


def test_scattered_and_run_staging_give_the_same_trace():
    # single-byte runs (scattered) and long runs (ranges) both merge into address order
    m, res, _ = check("u8", "normal", Geo(DATA, 64), Geo(DATA + 0x100, 64, width=1, ls=2))
    assert res.trace[0].writes == tuple((DATA + 0x100 + 2 * i, 1) for i in range(64))
    m, res, _ = check("u8", "normal", Geo(DATA, 256), Geo(DATA + 0x200, 256, width=64, ls=64))
    assert res.trace[0].writes == ((DATA + 0x200, 256),)
    m, res, _ = check("u8", "normal", Geo(DATA, 256), Geo(DATA + 0x200, 256, width=64, ls=65))
    assert res.trace[0].writes == tuple((DATA + 0x200 + 65 * i, 64) for i in range(4))


# --- large moves (timing is measured by the benchmarks, not here) -----------------------

@pytest.mark.parametrize("unit, mode", [("u8", "normal"), ("u8", "transpose"), ("s4", "normal")])
def test_one_megabyte_3d_move(unit, mode):
    n, lines, width = 16, 256, 256 * (2 if unit == "s4" else 1)     # 1 MiB of data
    line_bytes = 256
    src = Geo(0x10000, lines * width, n, width, line_bytes + 16, lines * (line_bytes + 16) + 64)
    if mode == "transpose":
        dst = Geo(0x300000, lines * width, n, lines, 256 + 8, width * (256 + 8) + 32)
    else:
        dst = Geo(0x300000, lines * width, n, width, line_bytes + 8, lines * (line_bytes + 8) + 32)
    image = assemble(PROLOGUE + insn(unit, mode, src, dst) + "\n    exit\n    end\n")
    m = Machine(1 << 23)
    m.load(image)
    m.mem[0x10000:] = np.random.default_rng(5).integers(0, 256, (1 << 23) - 0x10000, dtype=np.uint8)
    before = m.mem.copy()
    r = m.step()
    assert r.fault == Fault.NONE, r.detail
    # expected with numpy strided views (bytes; s4 lines are 256 whole bytes)
    view = np.lib.stride_tricks.as_strided
    s = view(before[src.base:], (n, lines, line_bytes), (src.ss, src.ls, 1))
    expected = before.copy()
    if mode == "transpose":
        d = view(expected[dst.base:], (n, width, lines), (dst.ss, dst.ls, 1))
        d[...] = s.transpose(0, 2, 1)
    else:
        d = view(expected[dst.base:], (n, lines, line_bytes), (dst.ss, dst.ls, 1))
        d[...] = s
    assert np.array_equal(m.mem, expected)
    assert sum(nb for _, nb in r.writes) == 1 << 20
