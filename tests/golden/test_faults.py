"""Every fault code of the golden model, raised by a crafted bad program, and the
order in which coexisting problems are reported (docs/isa-decisions.md:
D-PRECEDENCE, D-RSVD, D-EXIT, D-ADDR, D-KEYS, D-PC).

Each case checks the fault code, the exact fault PC, that the machine stopped at
the faulting instruction (nothing after it retired), and that memory is exactly
the memory right after loading plus what earlier, successful instructions wrote.
Every program starts with a custom-domain instruction that writes a marker (so a
fault can be seen not to undo earlier writes) and follows the bad instruction
with one that would write a second marker (so it can be seen not to run).

The assembler writes what it can express; the rest is written as raw payloads
(``.insn unity, PAYLOAD``) and hand-made operand-table bytes (``.byte``).
"""

import numpy as np
import pytest

from xdsa.golden import isa
from xdsa.golden.asm import assemble
from xdsa.golden.dispatch import HANDLERS
from xdsa.golden.encoding import Instruction, SyncCtrl, UnityInstruction, encode_table
from xdsa.golden.image import Image, Segment, SegmentKind
from xdsa.golden.isa import DataUnit, Fault, Section, by_mnemonic
from xdsa.golden.machine import Capability, Machine
from xdsa.golden.storage import pack_program, pc_of

MEM = 0x1000                  # a small data memory, so that ranges can run off its end
NOP, WRITE = 0x80, 0x81       # custom domains handled by the test's domain handlers
MARK = (0x900, 4, 0xA5)       # written by instruction 0 of every program
LATE = (0x940, 4, 0x5A)       # would be written by the instruction after the faulting one


def nop(machine, pc, instruction):
    return ()


def writer(machine, pc, instruction):
    """Payload [31:0] address, [39:32] byte count, [47:40] byte value."""
    p = instruction.payload
    address, n, value = p & 0xFFFF_FFFF, (p >> 32) & 0xFF, (p >> 40) & 0xFF
    machine.mem[address:address + n] = value
    return [(address, n)]


def write_insn(address, n, value):
    return f".insn {WRITE:#x}, {address | (n << 32) | (value << 40):#x}"


def sync(wait=None, signal=None, rsvd=0):
    s = {"rsvd": rsvd}
    if wait is not None:
        t, i, *n = wait
        s.update(fetch=True, keyr_bar=t, fetch_key_addr=i, num_keys=n[0] if n else 1)
    if signal is not None:
        s.update(deposit=True, keyw_bar=signal[0], deposit_key_addr=signal[1])
    return SyncCtrl(**s)


def unity_payload(mnemonic=None, *, section=None, code=None, as_code=1, desc=0, rsvd=0,
                  wait=None, signal=None, sync_rsvd=0):
    if mnemonic is not None:
        op = by_mnemonic(mnemonic)
        section, code = int(op.section), op.op_code
    return UnityInstruction(section, code, as_code, sync(wait, signal, sync_rsvd), desc, rsvd).encode().payload


def unity(mnemonic=None, **kw):
    """A raw Unity instruction line (for what the assembler refuses to write)."""
    return f".insn unity, {unity_payload(mnemonic, **kw):#x}"


def table_bytes(mnemonic, as_bits=32, **fields):
    """`.byte` lines of a hand-made operand table (any field value, reserved units too)."""
    data = encode_table(by_mnemonic(mnemonic), as_bits, fields)
    return ".byte " + ", ".join(str(b) for b in data)


def source(bad, *, tables="", data="", keys="", before=()):
    """Instruction 0 writes MARK, then `before`, then the bad instruction, then one
    that would write LATE, EXIT and END. Auto tables go to 0x400, `tables` (hand-made
    bytes) to 0x600, `data` to 0x800."""
    lines = [keys, ".text 0", "    " + write_insn(*MARK)]
    lines += ["    " + b for b in before]
    lines += ["    " + bad, "    " + write_insn(*LATE), "    exit", "    end",
              ".tables 0x400", ".data 0x600", tables, ".data 0x800", data]
    return "\n".join(lines) + "\n"


def load(image, mem_size=MEM, capability=None):
    m = Machine(mem_size, domains={NOP: nop, WRITE: writer}, capability=capability)
    m.load(image)
    return m, m.mem.copy(), m.keys.copy()


def run_source(src, mem_size=MEM, **kw):
    m, snap, keys = load(assemble(src, "<test>"), mem_size, **kw)
    return m, m.run(1000), snap, keys


def check(m, res, snap, code, index, *, start=0, writes=(MARK,), committed=()):
    """The fault, its PC, the stop, and memory = snapshot + `writes` (earlier
    instructions) + `committed` (written by the faulting instruction itself: only a
    KEY_OVERFLOW fault keeps them)."""
    assert (res.status, res.fault) == ("fault", code), res.detail
    assert res.fault_pc == m.fault_pc == pc_of(start, index)
    assert res.retired == index + 1 == len(res.trace)
    assert m.halted and m.status == "fault" and m.fault == code
    assert [r.fault for r in res.trace] == [Fault.NONE] * index + [code]
    assert res.trace[-1].pc == res.fault_pc
    expected = snap.copy()
    for address, n, value in writes:
        expected[address:address + n] = value
    for address, data in committed:
        expected[address:address + len(data)] = list(data)
    assert res.trace[-1].writes == tuple((a, len(d)) for a, d in committed)
    diff = np.nonzero(m.mem != expected)[0]
    assert not len(diff), f"memory differs at {[hex(int(a)) for a in diff[:16]]}"
    with pytest.raises(RuntimeError):
        m.step()


def expect(src, code, index=1, mem_size=MEM, keys=None, **kw):
    """Run `src`; check the fault (see `check`) and, if given, key-table entries."""
    committed = kw.pop("committed", ())
    m, res, snap, _ = run_source(src, mem_size, **kw)
    check(m, res, snap, code, index, committed=committed)
    for (t, i), n in (keys or {}).items():
        assert m.keys[t, i] == n, (t, i)
    return m, res


DATA = "a: .u8 1, 2, 3, 4, 5, 6, 7, 8"             # at 0x800
DST = 0x980


# --- RESERVED_DID ------------------------------------------------------------------------


@pytest.mark.parametrize("did", [7, 8, 0x10, 0x40, 0x7E])
def test_reserved_did(did):
    expect(source(f".insn {did}, 0"), Fault.RESERVED_DID)


# --- DOMAIN_ABSENT -----------------------------------------------------------------------


@pytest.mark.parametrize("did", ["zhouyi", "arm32", "arm64", "riscv32", "riscv64", "mips32", "0x82", "0xff"])
def test_domain_absent(did):
    expect(source(f".insn {did}, 0x1234"), Fault.DOMAIN_ABSENT)


# --- ILLEGAL_OPCODE ----------------------------------------------------------------------


@pytest.mark.parametrize("section", [0x15, 0x01, 0x3E, 0x20])
def test_illegal_opcode_unknown_section(section):
    code = by_mnemonic("add").op_code        # a code that is defined in BASE
    expect(source(unity(section=section, code=code, desc=0x400)), Fault.ILLEGAL_OPCODE)


def _undefined_codes(section):
    return [c for c in range(1 << 14) if isa.lookup(section, c) is None]


@pytest.mark.parametrize("section, code", [(Section.BASE, _undefined_codes(Section.BASE)[0]),
                                           (Section.BASE, 0x3FFE),     # next to EXIT
                                           (Section.AI, _undefined_codes(Section.AI)[0]),
                                           (Section.AI, 0x3FFF)])      # EXIT's code, AI section
def test_illegal_opcode_unknown_code_in_a_known_section(section, code):
    assert isa.lookup(section, code) is None
    expect(source(unity(section=section, code=code, desc=0x400)), Fault.ILLEGAL_OPCODE)


# --- RESERVED_BITS -----------------------------------------------------------------------


@pytest.mark.parametrize("mnemonic", ["exit", "add", "conv2d"])
@pytest.mark.parametrize("rsvd", [1, 0x10, 0x200])
def test_reserved_payload_bits(mnemonic, rsvd):
    """D-RSVD: instruction bits [39:30]; EXIT too (D-EXIT)."""
    expect(source(unity(mnemonic, desc=0x400, rsvd=rsvd)), Fault.RESERVED_BITS)


@pytest.mark.parametrize("mnemonic", ["exit", "add"])
@pytest.mark.parametrize("rsvd", [1, 0x20])
def test_reserved_sync_ctrl_bits(mnemonic, rsvd):
    """D-SYNC: SYNC_CTRL[31:26]."""
    expect(source(unity(mnemonic, desc=0x400, sync_rsvd=rsvd)), Fault.RESERVED_BITS)


# --- RESERVED_AS -------------------------------------------------------------------------


@pytest.mark.parametrize("mnemonic", ["add", "data_move", "reduce_sum", "conv2d"])
def test_reserved_as(mnemonic):
    expect(source(unity(mnemonic, as_code=3, desc=0x400)), Fault.RESERVED_AS)


def test_exit_ignores_as_and_operand_descriptor():
    """D-EXIT: EXIT's AS (even 3) and OPERAND DESCRIPTOR (even outside memory) are ignored."""
    for kw in (dict(as_code=3), dict(desc=(1 << 64) - 1), dict(as_code=2, desc=MEM - 1)):
        src = source(unity("exit", **kw))
        m, res, snap, _ = run_source(src)
        assert (res.status, res.retired, res.fault) == ("exit", 2, Fault.NONE), kw


# --- RESERVED_UNIT -----------------------------------------------------------------------


@pytest.mark.parametrize("code", [13, 14, 15])
def test_reserved_unit_hand_made_table(code):
    """A reserved unit code in a hand-written table (each unit field of ADD in turn)."""
    for field in ("src0_unit", "src1_unit", "dst_unit"):
        units = dict(src0_unit=DataUnit.U8, src1_unit=DataUnit.U8, dst_unit=DataUnit.U8)
        units[field] = code
        tab = table_bytes("add", src0=0x800, src1=0x800, dst=DST, len=4, **units)
        expect(source(unity("add", desc=0x600), tables=tab, data=DATA), Fault.RESERVED_UNIT)


@pytest.mark.parametrize("line", [
    "data_move src=0x800, dst=0x980, data_unit=14, transfer_mode=normal, src_trans_size=4, des_trans_size=4",
    "reduce_sum src=0x800, dst=0x980, fw=4, axis=1, src_unit=15",
    "abs src0=0x800, dst=0x980, len=4, src0_unit=s8, dst_unit=13",
    "sqrt src=0x800, dst=0x980, len=2, src_unit=13, dst_unit=f16",
])
def test_reserved_unit(line):
    expect(source(line, data=DATA), Fault.RESERVED_UNIT)


# --- UNSUPPORTED_UNIT --------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "abs.u8 src0=0x800, dst=0x980, len=4",                               # D-ARITH: ABS signed/float only
    "abs src0=0x800, dst=0x980, len=2, src0_unit=u16, dst_unit=s16",
    "sqrt.s16 src=0x800, dst=0x980, len=2",                              # float only
    "sqrt src=0x800, dst=0x980, len=2, src_unit=f16, dst_unit=s16",      # every unit a float
    "lsl.f32 src0=0x800, src1=0x800, dst=0x980, len=1",                  # D-SHIFT: integers only
    "asr.s64 src0=0x800, src1=0x800, dst=0x980, len=1",                  # ASR: no 64-bit source
])
def test_unsupported_unit(line):
    expect(source(line, data=DATA), Fault.UNSUPPORTED_UNIT)


# --- ILLEGAL_OPERAND ---------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    # normal move: the element counts differ (D-DATAMOVE)
    "data_move src=0x800, dst=0x980, data_unit=u8, transfer_mode=normal, src_trans_size=4, des_trans_size=8",
    "data_move src=0x800, dst=0x980, data_unit=u8, transfer_mode=normal, src_trans_size=4, src_num_trans=2, "
    "src_surface_stride=4, des_trans_size=4",
    # trans_size not a multiple of width
    "data_move src=0x800, dst=0x980, data_unit=u8, transfer_mode=normal, src_trans_size=6, src_width=4, "
    "des_trans_size=6",
    # reductions: axis mask 0 (D-REDUCE)
    "reduce_sum.s8 src=0x800, dst=0x980, fw=4, axis=0",
    "reduce_max.u8 src=0x800, dst=0x980, fw=2, fh=2, axis=0",
])
def test_illegal_operand(line):
    expect(source(line, data=DATA), Fault.ILLEGAL_OPERAND)


# --- ADDRESS_RANGE -----------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    f"add.u8 src0=0x800, src1=0x800, dst={MEM - 2:#x}, len=4",           # destination partly outside
    f"add.u8 src0=0x800, src1={MEM - 1:#x}, dst=0x980, len=2",           # source 1 partly outside
    f"add.u8 src0={MEM:#x}, src1=0x800, dst=0x980, len=1",               # source 0 just outside
    f"add.u16 src0=0x800, src1=0x800, dst={MEM - 7:#x}, len=4",          # 8 bytes from MEM-7
    f"add.u8 src0=0x800, src1=0x800, dst={1 << 40:#x}, len=1, as=64",    # far outside (64-bit AS)
    f"data_move src=0x800, dst={MEM - 3:#x}, data_unit=u8, transfer_mode=normal, src_trans_size=4, "
    "des_trans_size=4",
    f"data_move src={MEM - 1:#x}, dst=0x980, data_unit=u16, transfer_mode=normal, src_trans_size=1, "
    "des_trans_size=1",
    f"reduce_sum.u8 src={MEM - 3:#x}, dst=0x980, fw=4, axis=1",
])
def test_address_range(line):
    expect(source(line, data=DATA), Fault.ADDRESS_RANGE)


@pytest.mark.parametrize("dst, fault", [(MEM - 4, Fault.NONE), (MEM - 3, Fault.ADDRESS_RANGE)])
def test_address_range_boundary(dst, fault):
    src = source(f"add.u8 src0=0x800, src1=0x800, dst={dst:#x}, len=4", data=DATA)
    m, res, snap, _ = run_source(src)
    if fault == Fault.NONE:
        assert (res.status, res.retired) == ("exit", 4), res.detail
        assert res.trace[1].writes == ((dst, 4),)
        assert bytes(m.mem[dst:dst + 4]) == bytes([2, 4, 6, 8])
    else:
        check(m, res, snap, fault, 1)


def test_zero_length_operands_are_never_out_of_range():
    """D-ADDR counts the bytes an instruction reads or writes; D-LENGTH: a zero
    length reads and writes none."""
    src = source(f"add.u8 src0={1 << 40:#x}, src1={MEM:#x}, dst={(1 << 64) - 1:#x}, len=0, as=64")
    m, res, snap, _ = run_source(src)
    assert (res.status, res.retired, res.fault) == ("exit", 4, Fault.NONE), res.detail
    assert res.trace[1].writes == ()


# --- OPTABLE_RANGE -----------------------------------------------------------------------


@pytest.mark.parametrize("mnemonic, as_code, desc", [
    ("add", 1, MEM - 8),                     # the 20-byte table straddles the end
    ("add", 1, MEM - 19),
    ("add", 1, MEM),
    ("add", 1, (1 << 64) - 1),
    ("add", 0, MEM - 11),                    # 12-byte table at AS=16
    ("add", 2, MEM - 35),                    # 36-byte table at AS=64
    ("data_move", 1, MEM - 4),
    ("reduce_sum", 1, 1 << 40),
])
def test_optable_range(mnemonic, as_code, desc):
    expect(source(unity(mnemonic, as_code=as_code, desc=desc)), Fault.OPTABLE_RANGE)


@pytest.mark.parametrize("as_code, nbytes", [(0, 12), (1, 20), (2, 36)])
def test_table_ending_at_the_end_of_memory_is_in_range(as_code, nbytes):
    """An all-zero ADD table (u4, length 0) that ends exactly at the end of memory."""
    assert isa.by_mnemonic("add").table.resolve((16, 32, 64)[as_code]).nbytes == nbytes
    src = source(unity("add", as_code=as_code, desc=MEM - nbytes))
    m, res, snap, _ = run_source(src)
    assert (res.status, res.retired, res.fault) == ("exit", 4, Fault.NONE), res.detail
    assert res.trace[1].writes == ()


# --- FETCH_RANGE -------------------------------------------------------------------------


MEM_END_MARK = 560            # in the (absent) second group's DID pack, inside memory


def test_fetch_range_running_off_the_end_of_memory():
    lines = [".text 0", "    " + write_insn(MEM_END_MARK, 2, 0xA5)] + [f"    .insn {NOP:#x}, 0"] * 31
    m, res, snap, _ = run_source("\n".join(lines) + "\n", mem_size=544 + 40)
    check(m, res, snap, Fault.FETCH_RANGE, 32, writes=[(MEM_END_MARK, 2, 0xA5)])
    assert res.fault_pc == 576 and res.trace[-1].did is None


@pytest.mark.parametrize("start", [0x10, 0x28, 0x1F])
def test_fetch_range_start_not_aligned(start):
    prog = pack_program([Instruction(WRITE, 0x900 | (4 << 32) | (0xA5 << 40)),
                         UnityInstruction(Section.BASE, by_mnemonic("exit").op_code, 0).encode()])
    m, snap, _ = load(Image(start, [Segment(SegmentKind.PROGRAM, 0x0, prog, 2)]))
    res = m.run()
    check(m, res, snap, Fault.FETCH_RANGE, 0, start=start, writes=())
    assert res.fault_pc == start + 32


@pytest.mark.parametrize("start", [MEM, MEM - 32, MEM + 0x1000, 1 << 40])
def test_fetch_range_start_outside_memory(start):
    m, snap, _ = load(Image(start, [Segment(SegmentKind.DATA, 0x800, b"\x01\x02")]))
    res = m.run()
    check(m, res, snap, Fault.FETCH_RANGE, 0, start=start, writes=())


# --- KEY_TIMEOUT -------------------------------------------------------------------------


@pytest.mark.parametrize("wait, preset", [("0:0", ""), ("3:255", ".keys 3:254, 5\n.keys 2:255, 5"),
                                          ("1:9*3", ".keys 1:9, 2")])
def test_key_timeout(wait, preset):
    t, i = (int(v) for v in wait.split("*")[0].split(":"))
    held = 2 if "1:9" in preset else 0
    expect(source(f"exit wait={wait}", keys=preset), Fault.KEY_TIMEOUT, keys={(t, i): held})


def test_key_timeout_on_a_unity_operation():
    expect(source("add.u8 src0=0x800, src1=0x800, dst=0x980, len=4, wait=2:2", data=DATA),
           Fault.KEY_TIMEOUT, keys={(2, 2): 0})


# --- KEY_OVERFLOW ------------------------------------------------------------------------


def test_key_overflow_on_exit():
    m, res = expect(source("exit signal=1:4", keys=".keys 1:4, 255"), Fault.KEY_OVERFLOW,
                    keys={(1, 4): 255})
    assert m.status == "fault"


def test_key_overflow_happens_after_the_writes():
    """D-PRECEDENCE: KEY_OVERFLOW is the one fault whose instruction's writes stay."""
    m, res = expect(source(f"add.u8 src0=0x800, src1=0x800, dst={DST:#x}, len=4, signal=3:0",
                           keys=".keys 3:0, 255", data=DATA),
                    Fault.KEY_OVERFLOW, keys={(3, 0): 255}, committed=[(DST, [2, 4, 6, 8])])


def test_key_overflow_after_a_wait_keeps_the_keys_consumed():
    expect(source("exit wait=0:1*2, signal=0:2", keys=".keys 0:1, 5\n.keys 0:2, 255"),
           Fault.KEY_OVERFLOW, keys={(0, 1): 3, (0, 2): 255})


# --- UNIMPLEMENTED -----------------------------------------------------------------------


def test_unimplemented_dep_conv():
    assert by_mnemonic("dep_conv").key not in HANDLERS, "dep_conv now has semantics: pick another opcode here"
    expect(source("dep_conv.s8 fm=0x800, kernel=0x800, dst=0x980, fm_c=1, fm_h=1, fm_w=1, k_h=1, k_w=1, k_num=1",
                  data=DATA), Fault.UNIMPLEMENTED)


def test_unimplemented_every_opcode_without_golden_semantics():
    """Whatever is still missing from the dispatch table faults UNIMPLEMENTED (over an
    all-zero table), and nothing else does."""
    missing = [op for op in isa.OPCODES if op.key not in HANDLERS]
    exit_ = UnityInstruction(Section.BASE, by_mnemonic("exit").op_code, 0).encode()
    for op in missing:
        insn = UnityInstruction(int(op.section), op.op_code, 1, operand_descriptor=0x800).encode()
        m, snap, _ = load(Image(0, [Segment(SegmentKind.PROGRAM, 0, pack_program([insn, exit_]), 2)]))
        res = m.run()
        assert (res.fault, res.fault_pc, res.retired) == (Fault.UNIMPLEMENTED, 32, 1), op.mnemonic
        assert np.array_equal(m.mem, snap)


def test_unimplemented_by_configuration():
    cap = Capability(lambda op: op.mnemonic != "add")
    expect(source("add.u8 src0=0x800, src1=0x800, dst=0x980, len=4", data=DATA), Fault.UNIMPLEMENTED,
           capability=cap)


# --- precedence (D-PRECEDENCE) -----------------------------------------------------------

FULL_BAD = dict(as_code=3, rsvd=1, sync_rsvd=1, desc=(1 << 64) - 1)


@pytest.mark.parametrize("line, fault, preset, keys_after", [
    # DID class before anything in the payload
    (f".insn 0x7e, {unity_payload('add', **FULL_BAD):#x}", Fault.RESERVED_DID, "", {}),
    (f".insn arm32, {unity_payload('add', **FULL_BAD):#x}", Fault.DOMAIN_ABSENT, "", {}),
    # reserved payload bits before section/opcode, AS, keys and the table
    (unity(section=0x15, code=0, rsvd=1), Fault.RESERVED_BITS, "", {}),
    (unity(section=0x15, code=0, sync_rsvd=0x10), Fault.RESERVED_BITS, "", {}),
    (unity("add", as_code=3, rsvd=0x80, wait=(0, 1)), Fault.RESERVED_BITS, ".keys 0:1, 1", {(0, 1): 1}),
    # section/opcode before AS
    (unity(section=0x15, code=0, as_code=3), Fault.ILLEGAL_OPCODE, "", {}),
    (unity(section=Section.BASE, code=0x3FFE, as_code=3, wait=(0, 1)), Fault.ILLEGAL_OPCODE, "", {}),
    # AS before semantics, keys and the table
    (unity("add", as_code=3, desc=(1 << 64) - 1), Fault.RESERVED_AS, "", {}),
    (unity("conv2d", as_code=3), Fault.RESERVED_AS, "", {}),
    (unity("add", as_code=3, desc=0x400, wait=(0, 1)), Fault.RESERVED_AS, "", {}),
    (unity("add", as_code=3, desc=0x400, wait=(0, 1)), Fault.RESERVED_AS, ".keys 0:1, 1", {(0, 1): 1}),
    # semantics present before the key fetch: no timeout, no key consumed
    ("dep_conv.s8 wait=0:0", Fault.UNIMPLEMENTED, "", {}),
    ("dep_conv.s8 wait=0:0*2", Fault.UNIMPLEMENTED, ".keys 0:0, 2", {(0, 0): 2}),
    (unity("dep_conv", desc=(1 << 64) - 1), Fault.UNIMPLEMENTED, "", {}),
    # key fetch before the table and the operand checks
    (unity("add", desc=(1 << 64) - 1, wait=(1, 1)), Fault.KEY_TIMEOUT, "", {}),
    ("add src0=0x800, src1=0x800, dst=0x980, len=4, src0_unit=13, src1_unit=u8, dst_unit=u8, wait=1:1",
     Fault.KEY_TIMEOUT, "", {}),
    (f"add.u8 src0=0x800, src1=0x800, dst={MEM:#x}, len=4, wait=1:1*3", Fault.KEY_TIMEOUT, ".keys 1:1, 2",
     {(1, 1): 2}),
    # the table before its contents; keys fetched by a faulting instruction stay consumed
    (unity("add", desc=MEM - 4, wait=(1, 1)), Fault.OPTABLE_RANGE, ".keys 1:1, 1", {(1, 1): 0}),
    # unit codes before unit support, field values and ranges
    ("abs src0=0x800, dst=0x980, len=4, src0_unit=u8, dst_unit=13", Fault.RESERVED_UNIT, "", {}),
    ("reduce_sum src=0x800, dst=0x980, fw=4, axis=0, src_unit=15", Fault.RESERVED_UNIT, "", {}),
    ("data_move src=0x800, dst=0x980, data_unit=14, transfer_mode=normal, src_trans_size=4, "
     "des_trans_size=8", Fault.RESERVED_UNIT, "", {}),
    (f"add src0=0x800, src1=0x800, dst={MEM:#x}, len=4, src0_unit=u8, src1_unit=u8, dst_unit=13, wait=2:3",
     Fault.RESERVED_UNIT, ".keys 2:3, 1", {(2, 3): 0}),
    # unit support before ranges
    (f"abs.u8 src0=0x800, dst={MEM - 1:#x}, len=4", Fault.UNSUPPORTED_UNIT, "", {}),
    (f"sqrt.s16 src={MEM:#x}, dst={MEM:#x}, len=2", Fault.UNSUPPORTED_UNIT, "", {}),
    # field values before ranges
    (f"data_move src={MEM:#x}, dst={MEM:#x}, data_unit=u8, transfer_mode=normal, src_trans_size=4, "
     "des_trans_size=8", Fault.ILLEGAL_OPERAND, "", {}),
    (f"reduce_sum.s8 src={MEM - 1:#x}, dst={MEM:#x}, fw=4, axis=0", Fault.ILLEGAL_OPERAND, "", {}),
    # ranges before the writes and the deposit
    (f"add.u8 src0=0x800, src1=0x800, dst={MEM - 2:#x}, len=4, signal=3:3", Fault.ADDRESS_RANGE,
     ".keys 3:3, 255", {(3, 3): 255}),
    (f"add.u8 src0=0x800, src1=0x800, dst={MEM - 2:#x}, len=4, signal=3:3", Fault.ADDRESS_RANGE,
     "", {(3, 3): 0}),
    (f"add.u8 src0=0x800, src1=0x800, dst={MEM - 2:#x}, len=4, wait=0:7*2", Fault.ADDRESS_RANGE,
     ".keys 0:7, 3", {(0, 7): 1}),
])
def test_precedence(line, fault, preset, keys_after):
    expect(source(line, keys=preset, data=DATA), fault, keys=keys_after)


def test_precedence_optable_before_reserved_unit():
    """A data_move table that straddles the end of memory; the part inside holds a
    reserved unit code (byte 8: data_unit = 14)."""
    desc = MEM - 20
    raw = encode_table(by_mnemonic("data_move"), 32, dict(src=0x800, dst=0x980, data_unit=14,
                                                          src_trans_size=4, des_trans_size=4))
    src = source(unity("data_move", desc=desc), data=DATA) + f".data {desc:#x}\n" + \
        ".byte " + ", ".join(str(b) for b in raw[:20]) + "\n"
    expect(src, Fault.OPTABLE_RANGE)


def test_reserved_bits_inside_operand_tables_are_ignored():
    """D-RSVD: ADD's OP Mode bits [11:9] and [31:16] are reserved; set, they change nothing."""
    raw = bytearray(encode_table(by_mnemonic("add"), 32, dict(src0=0x800, src1=0x800, dst=DST, len=4,
                                                             src0_unit=1, src1_unit=1, dst_unit=1)))
    raw[17] |= 0x0E
    raw[18] = raw[19] = 0xFF
    src = source(unity("add", desc=0x600), tables=".byte " + ", ".join(map(str, raw)), data=DATA)
    m, res, snap, _ = run_source(src)
    assert (res.status, res.retired, res.fault) == ("exit", 4, Fault.NONE), res.detail
    assert bytes(m.mem[DST:DST + 4]) == bytes([2, 4, 6, 8])


# --- every fault code is covered --------------------------------------------------------

COVERAGE = {
    Fault.RESERVED_DID: "test_reserved_did",
    Fault.ILLEGAL_OPCODE: "test_illegal_opcode_unknown_code_in_a_known_section",
    Fault.RESERVED_BITS: "test_reserved_sync_ctrl_bits",
    Fault.RESERVED_AS: "test_reserved_as",
    Fault.RESERVED_UNIT: "test_reserved_unit_hand_made_table",
    Fault.UNSUPPORTED_UNIT: "test_unsupported_unit",
    Fault.ILLEGAL_OPERAND: "test_illegal_operand",
    Fault.ADDRESS_RANGE: "test_address_range",
    Fault.OPTABLE_RANGE: "test_optable_range",
    Fault.FETCH_RANGE: "test_fetch_range_running_off_the_end_of_memory",
    Fault.KEY_TIMEOUT: "test_key_timeout",
    Fault.KEY_OVERFLOW: "test_key_overflow_on_exit",
    Fault.DOMAIN_ABSENT: "test_domain_absent",
    Fault.UNIMPLEMENTED: "test_unimplemented_dep_conv",
}


def test_every_fault_code_has_a_test():
    assert set(COVERAGE) == set(Fault) - {Fault.NONE}
    assert all(callable(globals().get(name)) for name in COVERAGE.values())
