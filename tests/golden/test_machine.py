"""The golden model's architectural behaviour: stopping, fetch and PCs, DID routing,
key tables, the retire trace and the capability hook (docs/isa-decisions.md:
D-PC, D-STORAGE-PAD, D-EXIT, D-SYNC, D-KEYS, D-BLK, D-PRECEDENCE).

Most programs here are made of non-Unity instructions routed to small Python
domain handlers (a no-op and a memory writer), so that they exercise the machine
itself and not the semantics of any Unity opcode. Tests that need a Unity
instruction that neither stops nor faults use ``add`` with ``len=0`` (D-LENGTH: a
length of zero is legal and writes nothing).
"""

import numpy as np
import pytest

from xdsa.golden.asm import assemble
from xdsa.golden.encoding import Instruction, SyncCtrl, UnityInstruction
from xdsa.golden.image import Image, Segment, SegmentKind
from xdsa.golden.isa import DID, DataUnit, Fault, Section, by_mnemonic
from xdsa.golden.machine import Capability, Machine, Retired, RunResult
from xdsa.golden.storage import pack_program

NOP = 0x80          # custom DID: a handler that does nothing
WRITE = 0x81        # custom DID: a handler that writes memory (see `writer`)
EXIT_CODE = by_mnemonic("exit").op_code
ADD = by_mnemonic("add")


def pc(start, k):
    """D-PC, written out: the payload address of instruction k."""
    return start + (k // 32) * 544 + 32 + 16 * (k % 32)


class Recorder:
    """A domain handler that records its calls and writes nothing."""

    def __init__(self):
        self.calls = []

    def __call__(self, machine, pc_, instruction):
        self.calls.append((pc_, instruction))
        return ()


def writer(machine, pc_, instruction):
    """Payload [31:0] address, [39:32] byte count, [47:40] byte value."""
    p = instruction.payload
    address, n, value = p & 0xFFFF_FFFF, (p >> 32) & 0xFF, (p >> 40) & 0xFF
    machine.mem[address:address + n] = value
    return [(address, n)]


def write_payload(address, n, value):
    return address | (n << 32) | (value << 40)


def exit_insn(**sync):
    return UnityInstruction(Section.BASE, EXIT_CODE, addr_space=0, sync=SyncCtrl(**sync)).encode()


def nop_insn(payload=0):
    return Instruction(NOP, payload)


END = Instruction(DID.END, 0)


def image_of(instructions, start=0, keys=None, extra=()):
    segs = [Segment(SegmentKind.PROGRAM, start, pack_program(instructions), len(instructions)), *extra]
    return Image(start, segs, keys=dict(keys or {}))


def run(image, mem_size=1 << 16, max_instructions=10_000, domains=None, **kw):
    doms = {NOP: Recorder(), WRITE: writer}
    if domains is not None:
        doms.update(domains)
    m = Machine(mem_size, domains=doms, **kw)
    m.load(image)
    return m, m.run(max_instructions)


def run_asm(source, **kw):
    return run(assemble(source, "<test>"), **kw)


def assert_stopped(res, status, retired, fault=Fault.NONE, fault_pc=None):
    assert (res.status, res.retired, res.fault, res.fault_pc) == (status, retired, fault, fault_pc)
    assert len(res.trace) == retired
    assert [r.index for r in res.trace] == list(range(retired))
    faults = [r.fault for r in res.trace]
    assert faults == [Fault.NONE] * (retired - 1) + [fault]


# --- stopping ----------------------------------------------------------------------


def test_end_stops_and_later_instructions_do_not_run():
    rec = Recorder()
    m, res = run(image_of([nop_insn(1), END, nop_insn(2), exit_insn()]), domains={NOP: rec})
    assert_stopped(res, "end", 2)
    assert rec.calls == [(pc(0, 0), nop_insn(1))]
    assert res.trace[1] == Retired(1, pc(0, 1), DID.END)
    assert m.halted and m.status == "end" and m.fault == Fault.NONE and m.fault_pc is None


def test_exit_stops_and_later_instructions_do_not_run():
    rec = Recorder()
    m, res = run(image_of([nop_insn(1), exit_insn(), nop_insn(2), END]), domains={NOP: rec})
    assert_stopped(res, "exit", 2)
    assert rec.calls == [(pc(0, 0), nop_insn(1))]
    assert res.trace[1].mnemonic == "exit" and res.trace[1].pc == pc(0, 1)
    assert m.status == "exit"


def test_end_with_a_nonzero_payload_still_stops():
    m, res = run(image_of([Instruction(DID.END, (1 << 128) - 1), nop_insn()]))
    assert_stopped(res, "end", 1)


def test_program_without_end_stops_at_the_storage_padding():
    """D-STORAGE-PAD: the rest of the last group is DID END, payload 0."""
    rec = Recorder()
    m, res = run(image_of([nop_insn(k) for k in range(3)]), domains={NOP: rec})
    assert_stopped(res, "end", 4)
    assert res.trace[3] == Retired(3, pc(0, 3), DID.END)
    assert len(rec.calls) == 3


def test_program_of_31_instructions_stops_at_the_last_padding_slot():
    m, res = run(image_of([nop_insn(k) for k in range(31)]))
    assert_stopped(res, "end", 32)
    assert res.trace[31].pc == pc(0, 31) == 32 + 16 * 31


@pytest.mark.parametrize("start", [0, 0x1040])
def test_programs_longer_than_one_group(start):
    n = 70
    rec = Recorder()
    insns = [nop_insn(k) for k in range(n)] + [exit_insn(), END]
    m, res = run(image_of(insns, start), domains={NOP: rec})
    assert_stopped(res, "exit", n + 1)
    assert [r.pc for r in res.trace] == [pc(start, k) for k in range(n + 1)]
    assert [r.pc for r in res.trace][30:35] == [start + 32 + 16 * 30, start + 32 + 16 * 31,
                                                 start + 544 + 32, start + 544 + 48, start + 544 + 64]
    assert res.trace[64].pc == start + 2 * 544 + 32
    assert rec.calls == [(pc(start, k), nop_insn(k)) for k in range(n)]
    assert m.pc == pc(start, n + 1)


def test_long_program_without_end_pads_its_last_group():
    m, res = run(image_of([nop_insn() for _ in range(33)]))
    assert_stopped(res, "end", 34)
    assert res.trace[-1].pc == 544 + 32 + 16


def test_start_address_other_than_zero_from_text_and_start():
    rec = Recorder()
    source = f"""
    .text 0
        .insn {NOP:#x}, 0xdead          ; not the start: never runs
        end
    .text 0x1040
        .insn {NOP:#x}, 7
        exit
        end
    .start 0x1040
    """
    m, res = run_asm(source, domains={NOP: rec})
    assert_stopped(res, "exit", 2)
    assert rec.calls == [(0x1060, nop_insn(7))]
    assert [r.pc for r in res.trace] == [0x1060, 0x1070]


def test_text_section_alone_sets_the_start():
    m, res = run_asm(".text 0x1040\n    exit\n    end\n")
    assert m.start == 0x1040
    assert_stopped(res, "exit", 1)
    assert res.trace[0].pc == 0x1060


@pytest.mark.parametrize("start", [0x10, 0x1048, 0x1041, 0x101F])
def test_start_address_not_32_byte_aligned_faults_fetch_range(start):
    """D-PC; the fault PC is that of instruction 0, start + 32."""
    base = start - start % 32
    img = Image(start, [Segment(SegmentKind.PROGRAM, base, pack_program([exit_insn(), END]), 2)])
    rec = Recorder()
    m, res = run(img, domains={NOP: rec})
    assert_stopped(res, "fault", 1, Fault.FETCH_RANGE, start + 32)
    assert res.trace[0].did is None and res.trace[0].section is None


def test_running_off_the_end_of_memory_faults_fetch_range():
    insns = [nop_insn(k) for k in range(32)]             # one full group, no padding
    m, res = run(image_of(insns), mem_size=544)
    assert_stopped(res, "fault", 33, Fault.FETCH_RANGE, 544 + 32)
    assert res.trace[-1].did is None


@pytest.mark.parametrize("extra, status", [(32 + 15, "fault"), (32 + 16, "end")])
def test_fetch_range_boundary(extra, status):
    """Instruction 32's DID byte is at 544 and its payload at 576..591: it can be
    fetched exactly when the payload's last byte is in memory."""
    insns = [nop_insn(k) for k in range(32)]
    img = image_of(insns, extra=[Segment(SegmentKind.DATA, 544, bytes([DID.END]))])
    m, res = run(img, mem_size=544 + extra)
    if status == "fault":
        assert_stopped(res, "fault", 33, Fault.FETCH_RANGE, 576)
    else:
        assert_stopped(res, "end", 33)
        assert res.trace[-1] == Retired(32, 576, DID.END)


def test_start_address_outside_memory_faults_fetch_range():
    img = Image(0x10000, [])
    m, res = run(img, mem_size=0x10000)
    assert_stopped(res, "fault", 1, Fault.FETCH_RANGE, 0x10020)


def test_run_limit_step_and_halt():
    insns = [nop_insn(k) for k in range(40)] + [exit_insn()]
    m, res = run(image_of(insns), max_instructions=10)
    assert (res.status, res.retired, res.fault) == ("limit", 10, Fault.NONE)
    assert not m.halted and m.pc == pc(0, 10)
    r = m.step()
    assert r == Retired(10, pc(0, 10), NOP) and m.trace[-1] is r
    res = m.run()
    assert_stopped(res, "exit", 41)
    assert isinstance(res, RunResult) and res.trace is m.trace
    with pytest.raises(RuntimeError):
        m.step()
    again = m.run()                                       # a stopped machine stays stopped
    assert (again.status, again.retired) == ("exit", 41)


def test_load_resets_memory_keys_and_state():
    img = image_of([Instruction(WRITE, write_payload(0x900, 4, 0xAB)), exit_insn(deposit=True,
                                                                            keyw_bar=1, deposit_key_addr=2)])
    m, res = run(img)
    assert res.status == "exit" and m.keys[1, 2] == 1 and m.mem[0x900] == 0xAB
    m.load(image_of([END], keys={(3, 3): 5}))
    assert m.mem[0x900] == 0 and m.keys[1, 2] == 0 and m.keys[3, 3] == 5
    assert not m.halted and m.trace == [] and m.fault == Fault.NONE
    res = m.run()
    assert_stopped(res, "end", 1)


def test_memory_size_must_be_positive():
    with pytest.raises(ValueError):
        Machine(0)


# --- DID routing ---------------------------------------------------------------------


def test_unity_executes():
    m, res = run(image_of([exit_insn()]))
    assert_stopped(res, "exit", 1)
    assert res.trace[0].did == 0 and res.trace[0].mnemonic == "exit"


STANDARD = [DID.ZHOUYI, DID.ARM32, DID.ARM64, DID.RISCV32, DID.RISCV64, DID.MIPS32]


@pytest.mark.parametrize("did", STANDARD)
def test_standard_domain_without_handler_faults_domain_absent(did):
    m, res = run(image_of([nop_insn(), Instruction(did, 0x1234), exit_insn()]))
    assert_stopped(res, "fault", 2, Fault.DOMAIN_ABSENT, pc(0, 1))
    assert res.trace[1].did == did and res.trace[1].section is None


def test_every_custom_domain_without_handler_faults_domain_absent():
    for did in range(0x82, 0x100):
        m = Machine(0x1000)
        m.load(image_of([Instruction(did, 5), exit_insn()]))
        res = m.run()
        assert (res.status, res.fault, res.fault_pc, res.retired) == ("fault", Fault.DOMAIN_ABSENT, 32, 1), did
    for did in (NOP, WRITE):                              # the ones the helper handles, bare
        m = Machine(0x1000)
        m.load(image_of([Instruction(did, 5), exit_insn()]))
        assert m.run().fault == Fault.DOMAIN_ABSENT


@pytest.mark.parametrize("did", STANDARD + [0x80, 0x9A, 0xFF])
def test_registered_handler_is_called(did):
    rec = Recorder()
    payload = (1 << 127) | 0x55
    m, res = run(image_of([Instruction(did, payload), exit_insn()]), domains={did: rec})
    assert_stopped(res, "exit", 2)
    assert rec.calls == [(32, Instruction(did, payload))]
    assert res.trace[0] == Retired(0, 32, did)


def test_handler_writes_are_traced():
    def two_writes(machine, pc_, ins):
        machine.mem[0x900:0x904] = 1
        machine.mem[0xA00] = 2
        return [(0x900, 4), (0xA00, 1)]
    m, res = run(image_of([Instruction(DID.ARM64, 0), Instruction(WRITE, write_payload(0x800, 3, 0x5A)),
                           exit_insn()]), domains={DID.ARM64: two_writes})
    assert_stopped(res, "exit", 3)
    assert res.trace[0].writes == ((0x900, 4), (0xA00, 1))
    assert res.trace[1].writes == ((0x800, 3),)
    assert bytes(m.mem[0x800:0x804]) == b"\x5a\x5a\x5a\x00"


def test_handler_returning_none_writes_nothing():
    m, res = run(image_of([Instruction(0xC0, 0), exit_insn()]), domains={0xC0: lambda m_, p, i: None})
    assert_stopped(res, "exit", 2)
    assert res.trace[0].writes == ()


def test_every_reserved_did_faults_reserved_did():
    for did in range(7, 0x7F):
        rec = Recorder()
        m = Machine(0x1000, domains={did: rec})           # a handler does not make it legal
        m.load(image_of([Instruction(did, 0), exit_insn()]))
        res = m.run()
        assert (res.status, res.fault, res.fault_pc, res.retired) == ("fault", Fault.RESERVED_DID, 32, 1), did
        assert res.trace[0].did == did and rec.calls == []


def test_handlers_for_unity_and_end_are_not_used():
    rec = Recorder()
    m, res = run(image_of([exit_insn()]), domains={0: rec})
    assert_stopped(res, "exit", 1)
    m, res = run(image_of([END]), domains={DID.END: rec})
    assert_stopped(res, "end", 1)
    assert rec.calls == []


def _mixed(extra):
    rec = Recorder()
    doms = {DID.ARM32: rec, DID.RISCV64: rec, 0xC3: rec, DID.ZHOUYI: rec}
    insns = [Instruction(DID.ARM32, 1), Instruction(0xC3, 2), Instruction(DID.RISCV64, 3),
             Instruction(WRITE, write_payload(0x900, 2, 0x11)), Instruction(DID.ZHOUYI, 4)]
    insns += extra + [exit_insn(), END]
    m, res = run(image_of(insns), domains=doms)
    return m, res, rec


def test_mixed_domains_run_in_order():
    m, res, rec = _mixed([])
    assert_stopped(res, "exit", 6)
    assert [r.did for r in res.trace] == [DID.ARM32, 0xC3, DID.RISCV64, WRITE, DID.ZHOUYI, 0]
    assert [c[1].payload for c in rec.calls] == [1, 2, 3, 4]
    assert [c[0] for c in rec.calls] == [pc(0, 0), pc(0, 1), pc(0, 2), pc(0, 4)]
    assert [r.pc for r in res.trace] == [pc(0, k) for k in range(6)]


@pytest.mark.parametrize("bad, fault", [(Instruction(DID.MIPS32, 0), Fault.DOMAIN_ABSENT),
                                        (Instruction(0x85, 0), Fault.DOMAIN_ABSENT),
                                        (Instruction(0x40, 0), Fault.RESERVED_DID),
                                        (Instruction(0x7E, 0), Fault.RESERVED_DID),
                                        (END, Fault.NONE)])
def test_mixed_domains_stop_at_the_first_problem(bad, fault):
    m, res, rec = _mixed([bad, Instruction(DID.ARM32, 9)])
    if fault == Fault.NONE:
        assert_stopped(res, "end", 6)
    else:
        assert_stopped(res, "fault", 6, fault, pc(0, 5))
    assert [c[1].payload for c in rec.calls] == [1, 2, 3, 4]
    assert m.mem[0x900] == 0x11


# --- keys --------------------------------------------------------------------------------


def test_preset_key_satisfies_wait_and_is_consumed():
    m, res = run_asm(".keys 0:3, 2\n.text 0\n    exit wait=0:3\n    end\n")
    assert_stopped(res, "exit", 1)
    assert m.keys[0, 3] == 1
    assert np.count_nonzero(m.keys) == 1


def test_wait_without_keys_faults_key_timeout_at_its_pc():
    src = ".keys 1:3, 1\n.keys 0:4, 1\n.text 0x40\n" + f"    .insn {NOP:#x}, 0\n" * 35 + "    exit wait=0:3\n    end\n"
    m, res = run_asm(src)
    assert_stopped(res, "fault", 36, Fault.KEY_TIMEOUT, pc(0x40, 35))
    assert res.trace[-1].mnemonic == "exit" and res.trace[-1].writes == ()
    assert m.keys[1, 3] == 1 and m.keys[0, 4] == 1 and m.keys[0, 3] == 0   # other tables/entries do not count


@pytest.mark.parametrize("n", [1, 2, 3, 8])
def test_wait_for_n_keys(n):
    m, res = run_asm(f".keys 2:200, {n}\n.text 0\n    exit wait=2:200*{n}\n    end\n")
    assert_stopped(res, "exit", 1)
    assert m.keys[2, 200] == 0
    m, res = run_asm(f".keys 2:200, {n + 5}\n.text 0\n    exit wait=2:200*{n}\n    end\n")
    assert res.status == "exit" and m.keys[2, 200] == 5


@pytest.mark.parametrize("n", [2, 3, 8])
def test_wait_for_more_keys_than_present_times_out_and_keeps_them(n):
    m, res = run_asm(f".keys 2:200, {n - 1}\n.text 0\n    exit wait=2:200*{n}\n    end\n")
    assert_stopped(res, "fault", 1, Fault.KEY_TIMEOUT, 32)
    assert m.keys[2, 200] == n - 1


def test_exit_signal_deposits_to_the_named_table_and_entry():
    for t, i in [(0, 0), (1, 7), (2, 128), (3, 255)]:
        m, res = run_asm(f".text 0\n    exit signal={t}:{i}\n    end\n")
        assert_stopped(res, "exit", 1)
        expected = np.zeros((4, 256), dtype=np.uint8)
        expected[t, i] = 1
        assert np.array_equal(m.keys, expected), (t, i)


def test_exit_wait_and_signal_together():
    """D-EXIT: EXIT fetches its keys, then deposits after it completes."""
    m, res = run_asm(".keys 1:1, 1\n.text 0\n    exit wait=1:1, signal=1:2\n    end\n")
    assert_stopped(res, "exit", 1)
    assert (m.keys[1, 1], m.keys[1, 2]) == (0, 1)
    # the same entry: consumed first, deposited after
    m, res = run_asm(".keys 0:9, 255\n.text 0\n    exit wait=0:9, signal=0:9\n    end\n")
    assert_stopped(res, "exit", 1)
    assert m.keys[0, 9] == 255
    # the deposit comes after the instruction, so it cannot satisfy its own wait
    m, res = run_asm(".text 0\n    exit wait=0:9, signal=0:9\n    end\n")
    assert_stopped(res, "fault", 1, Fault.KEY_TIMEOUT, 32)
    assert m.keys[0, 9] == 0


def test_deposit_into_full_entry_faults_key_overflow():
    m, res = run_asm(".keys 3:17, 255\n.text 0\n    exit signal=3:17\n    end\n")
    assert_stopped(res, "fault", 1, Fault.KEY_OVERFLOW, 32)
    assert m.status == "fault" and m.keys[3, 17] == 255
    m, res = run_asm(".keys 3:17, 254\n.text 0\n    exit signal=3:17\n    end\n")
    assert_stopped(res, "exit", 1)
    assert m.keys[3, 17] == 255


def test_host_deposit_key_satisfies_wait():
    img = assemble(".text 0\n    exit wait=2:5*3\n    end\n")
    m = Machine(1 << 16)
    m.load(img)
    m.deposit_key(2, 5)
    m.deposit_key(2, 5, 2)
    assert m.keys[2, 5] == 3
    res = m.run()
    assert_stopped(res, "exit", 1)
    assert m.keys[2, 5] == 0


def test_host_deposit_between_steps():
    img = assemble(f".text 0\n    .insn {NOP:#x}, 0\n    exit wait=1:1\n    end\n")
    m = Machine(1 << 16, domains={NOP: Recorder()})
    m.load(img)
    m.step()
    m.deposit_key(1, 1)
    assert_stopped(m.run(), "exit", 2)


def test_blk_has_no_visible_effect():
    body = f"    .insn {NOP:#x}, 0\n    exit wait=0:1, signal=1:1{{}}\n    end\n"
    plain = run_asm(".keys 0:1, 1\n.text 0\n" + body.format(""))
    blk = run_asm(".keys 0:1, 1\n.text 0\n" + body.format(", blk"))
    (m0, r0), (m1, r1) = plain, blk
    assert [r.key() for r in r0.trace] == [r.key() for r in r1.trace]
    assert (r1.status, r1.retired) == ("exit", 2)
    assert np.array_equal(m0.keys, m1.keys) and np.array_equal(m0.mem[0x1000:], m1.mem[0x1000:])


ADD0 = "add.u8 src0=0x8000, src1=0x8000, dst=0x8000, len=0"


def test_deposit_by_one_instruction_satisfies_a_later_wait():
    src = f"""
    .tables 0x7000
    .text 0
        {ADD0}, signal=1:7
        {ADD0}, signal=1:7
        {ADD0}, wait=1:7, signal=2:8
        exit wait=1:7, signal=0:0
        end
    """
    m, res = run_asm(src)
    assert_stopped(res, "exit", 4)
    assert (m.keys[1, 7], m.keys[2, 8], m.keys[0, 0]) == (0, 1, 1)
    assert all(r.writes == () for r in res.trace)


def test_consumed_keys_do_not_satisfy_a_second_wait():
    src = f"""
    .keys 0:3, 1
    .tables 0x7000
    .text 0
        {ADD0}, wait=0:3
        exit wait=0:3
        end
    """
    m, res = run_asm(src)
    assert_stopped(res, "fault", 2, Fault.KEY_TIMEOUT, pc(0, 1))
    assert m.keys[0, 3] == 0


def test_wait_for_deposits_of_several_instructions():
    src = ".tables 0x7000\n.text 0\n" + f"    {ADD0}, signal=3:3\n" * 4 + \
        "    exit wait=3:3*4\n    end\n"
    m, res = run_asm(src)
    assert_stopped(res, "exit", 5)
    assert m.keys[3, 3] == 0
    src = src.replace("wait=3:3*4", "wait=3:3*5")
    m, res = run_asm(src)
    assert_stopped(res, "fault", 5, Fault.KEY_TIMEOUT, pc(0, 4))
    assert m.keys[3, 3] == 4


# --- retire trace ------------------------------------------------------------------------


def test_trace_records():
    src = f"""
    .tables 0x7000
    .text 0
        .insn {WRITE:#x}, {write_payload(0x8100, 2, 7):#x}
        add.u8 src0=a, src1=b, dst=c, len=4
        exit
        end
    .data 0x8000
    a:  .u8 1, 2, 3, 4
    b:  .u8 10, 20, 30, 40
    c:  .u8 0, 0, 0, 0
    """
    m, res = run_asm(src)
    assert_stopped(res, "exit", 3)
    t = res.trace
    assert t[0] == Retired(0, 32, WRITE, writes=((0x8100, 2),))
    assert (t[1].index, t[1].pc, t[1].did, t[1].section, t[1].op_code, t[1].mnemonic, t[1].fault,
            t[1].writes) == (1, 48, 0, Section.BASE, ADD.op_code, "add", Fault.NONE, ((0x8008, 4),))
    assert t[2] == Retired(2, 64, 0, Section.BASE, EXIT_CODE, "exit")
    assert bytes(m.mem[0x8008:0x800C]) == bytes([11, 22, 33, 44])


def test_trace_record_of_a_faulting_unity_instruction():
    bad = UnityInstruction(Section.BASE, 0x10, addr_space=1).encode()      # no opcode there
    m, res = run(image_of([bad]))
    assert_stopped(res, "fault", 1, Fault.ILLEGAL_OPCODE, 32)
    r = res.trace[0]
    assert (r.pc, r.did, r.section, r.op_code, r.mnemonic, r.fault, r.writes) == \
        (32, 0, 0x3F, 0x10, "", Fault.ILLEGAL_OPCODE, ())
    assert r.detail and res.detail == r.detail


def test_retired_key_is_what_cosimulation_compares():
    r = Retired(3, 0x50, 0, Section.AI, 0x40, "conv2d", Fault.UNIMPLEMENTED, ((1, 2),), "some detail")
    assert r.key() == (0x50, 0, Section.AI, 0x40, Fault.UNIMPLEMENTED, ((1, 2),))
    assert r.key() == Retired(9, 0x50, 0, Section.AI, 0x40, "", Fault.UNIMPLEMENTED, ((1, 2),), "x").key()
    assert r.key() != Retired(3, 0x60, 0, Section.AI, 0x40, "conv2d", Fault.UNIMPLEMENTED, ((1, 2),)).key()
    m, res = run(image_of([nop_insn(), exit_insn()]))
    assert [r.key() for r in res.trace] == [(32, NOP, None, None, Fault.NONE, ()),
                                           (48, 0, Section.BASE, EXIT_CODE, Fault.NONE, ())]


def test_trace_of_end_and_fetch_fault():
    m, res = run(image_of([END]))
    assert res.trace[0].key() == (32, DID.END, None, None, Fault.NONE, ())
    m, res = run(Image(0x40, []), mem_size=0x40)
    assert res.trace[0].key() == (0x60, None, None, None, Fault.FETCH_RANGE, ())


# --- capability hook ---------------------------------------------------------------------


def test_capability_refusing_an_opcode():
    seen = []

    def executes(op):
        seen.append(op.mnemonic)
        return op.mnemonic != "exit"
    rec = Recorder()
    m, res = run(image_of([nop_insn(), exit_insn(), nop_insn()]), capability=Capability(executes),
                 domains={NOP: rec})
    assert_stopped(res, "fault", 2, Fault.UNIMPLEMENTED, pc(0, 1))
    assert seen == ["exit"] and len(rec.calls) == 1
    assert res.trace[1].mnemonic == "exit"


def test_capability_allowing_everything_changes_nothing():
    m, res = run(image_of([nop_insn(), exit_insn()]), capability=Capability())
    assert_stopped(res, "exit", 2)


def test_capability_is_not_asked_about_other_domains():
    seen = []
    cap = Capability(lambda op: seen.append(op) or False, lambda op, f: seen.append(op) or "no")
    m, res = run(image_of([nop_insn(), END]), capability=cap)
    assert_stopped(res, "end", 2)
    assert seen == []


def test_capability_refusing_a_unit():
    def refuses(op, fields):
        if op.mnemonic == "add" and DataUnit.S8 in (fields["src0_unit"], fields["src1_unit"], fields["dst_unit"]):
            return "no s8 adder"
        return None
    src = """
    .tables 0x7000
    .text 0
        add.u8 src0=0x8000, src1=0x8000, dst=0x8010, len=2
        add src0=0x8000, src1=0x8000, dst=0x8020, len=2, src0_unit=u8, src1_unit=s8, dst_unit=u8
        exit
        end
    .data 0x8000
        .u8 5, 6
    """
    m, res = run_asm(src, capability=Capability(refuses=refuses))
    assert_stopped(res, "fault", 2, Fault.UNSUPPORTED_UNIT, 48)
    assert bytes(m.mem[0x8010:0x8012]) == b"\x0a\x0c" and not m.mem[0x8020:0x8022].any()


def test_capability_refusal_comes_before_the_key_fetch():
    """D-PRECEDENCE: 'semantics present and supported by the configuration
    (UNIMPLEMENTED)' is checked before the key fetch, so a refused instruction
    neither times out nor consumes its keys."""
    cap = Capability(lambda op: op.mnemonic != "exit")
    m, res = run_asm(".text 0\n    exit wait=0:5\n    end\n", capability=cap)
    assert_stopped(res, "fault", 1, Fault.UNIMPLEMENTED, 32)
    m, res = run_asm(".keys 0:5, 1\n.text 0\n    exit wait=0:5\n    end\n", capability=cap)
    assert_stopped(res, "fault", 1, Fault.UNIMPLEMENTED, 32)
    assert m.keys[0, 5] == 1


def test_capability_unit_refusal_comes_after_reserved_unit_codes():
    """D-PRECEDENCE: unit codes (RESERVED_UNIT) before unit support
    (UNSUPPORTED_UNIT), whoever decides the support."""
    cap = Capability(refuses=lambda op, f: "no s8" if f.get("src0_unit") == DataUnit.S8 else None)
    src = """
    .tables 0x7000
    .text 0
        add src0=0x8000, src1=0x8000, dst=0x8010, len=2, src0_unit=s8, src1_unit=s8, dst_unit=13
        exit
        end
    """
    m, res = run_asm(src, capability=cap)
    assert_stopped(res, "fault", 1, Fault.RESERVED_UNIT, 32)
