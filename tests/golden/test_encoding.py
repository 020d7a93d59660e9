"""Round trips: instruction <-> value <-> fields, operand tables for every opcode and
address space, SYNC_CTRL, storage format."""

import random

import pytest
from hypothesis import given, settings, strategies as st

from xdsa.golden import isa
from xdsa.golden.encoding import (Instruction, SyncCtrl, UnityInstruction, encode_table,
                                  decode_table)
from xdsa.golden.isa import DID, DidClass, did_class, GROUP_BYTES
from xdsa.golden.storage import pack_program, unpack_program, pc_of, slot_of_pc

u128 = st.integers(0, (1 << 128) - 1)
u8 = st.integers(0, 255)


@given(u8, u128)
def test_instruction_value_and_bytes(did, payload):
    ins = Instruction(did, payload)
    assert Instruction.from_value(ins.value) == ins
    assert Instruction.from_bytes(ins.to_bytes()) == ins
    assert ins.value == (payload << 8) | did
    assert ins.to_bytes()[0] == did                     # little-endian: DID in byte 0


def test_instruction_rejects_out_of_range():
    with pytest.raises(ValueError, match="DID"):
        Instruction(256, 0)
    with pytest.raises(ValueError, match="128-bit"):
        Instruction(0, 1 << 128)


sync_ctrl = st.builds(SyncCtrl, fetch=st.booleans(), deposit=st.booleans(), blk=st.booleans(),
                      num_keys=st.integers(1, 8), keyr_bar=st.integers(0, 3),
                      fetch_key_addr=u8, keyw_bar=st.integers(0, 3), deposit_key_addr=u8,
                      rsvd=st.integers(0, 63))


@given(sync_ctrl)
def test_sync_ctrl_round_trip(s):
    v = s.encode()
    assert 0 <= v < 1 << 32
    assert SyncCtrl.decode(v) == s


@given(st.integers(0, (1 << 32) - 1))
def test_sync_ctrl_decode_encode(v):
    assert SyncCtrl.decode(v).encode() == v


def test_sync_ctrl_positions():
    # D-SYNC: fetch_key_addr [7:0], deposit [15:8], keyr [17:16], keyw [19:18],
    # sync_en [21:20], blk [22], num_key [25:23]
    s = SyncCtrl(fetch=True, deposit=True, blk=True, num_keys=8, keyr_bar=3, fetch_key_addr=0xA5,
                 keyw_bar=2, deposit_key_addr=0x5A)
    assert s.encode() == 0xA5 | 0x5A << 8 | 3 << 16 | 2 << 18 | 3 << 20 | 1 << 22 | 7 << 23


@given(st.integers(0, 63), st.integers(0, 3), st.integers(0, (1 << 14) - 1), sync_ctrl,
       st.integers(0, (1 << 64) - 1), st.integers(0, 1023))
def test_unity_fields_round_trip(section, as_code, op_code, sync, desc, rsvd):
    u = UnityInstruction(section, op_code, as_code, sync, desc, rsvd)
    ins = u.encode()
    assert ins.did == 0
    assert UnityInstruction.decode(ins) == u
    # positions in the 136-bit instruction, as the seed numbers them
    v = ins.value
    assert (v >> 8) & 0x3F == section and (v >> 14) & 3 == as_code
    assert (v >> 16) & 0x3FFF == op_code and (v >> 30) & 0x3FF == rsvd
    assert (v >> 40) & 0xFFFFFFFF == sync.encode() and v >> 72 == desc


def _random_values(layout, rng):
    vals = {}
    for f in layout.fields:
        raw = rng.getrandbits(f.width)
        vals[f.name] = f.to_signed(raw) if f.signed else raw
    return vals


@pytest.mark.parametrize("op", [op for op in isa.OPCODES if op.table], ids=lambda op: op.mnemonic)
@pytest.mark.parametrize("as_bits", [16, 32, 64])
def test_operand_table_round_trip(op, as_bits):
    rng = random.Random(hash((op.mnemonic, as_bits)) & 0xFFFFFFFF)
    layout = op.table.resolve(as_bits)
    for _ in range(25):
        vals = _random_values(layout, rng)
        data = encode_table(op, as_bits, vals)
        assert len(data) == layout.nbytes
        assert decode_table(op, as_bits, data) == vals
    # every field is independent: a single field set alone decodes alone
    for f in layout.fields:
        data = encode_table(op, as_bits, {f.name: 1})
        decoded = decode_table(op, as_bits, data)
        assert decoded[f.name] == 1
        assert all(v == 0 for k, v in decoded.items() if k != f.name)


def test_operand_table_bytes_are_little_endian():
    add = isa.by_mnemonic("add")
    data = encode_table(add, 16, {"src0": 0x1234, "src1": 0xABCD, "dst": 0x0F00, "len": 3,
                                  "src0_unit": 6, "dst_unit": 6, "src1_unit": 6, "sat": 1})
    assert data[:8] == bytes([0x34, 0x12, 0xCD, 0xAB, 0x00, 0x0F, 0x03, 0x00])
    assert data[8:] == bytes([0x66, 0x61, 0x00, 0x00])   # src0|dst, sat, src1 << 4


def test_operand_table_errors():
    add = isa.by_mnemonic("add")
    with pytest.raises(KeyError, match="no operand field 'bogus'"):
        encode_table(add, 32, {"bogus": 1})
    with pytest.raises(ValueError, match="len is a 16-bit field: expected 0..65535, got 65536"):
        encode_table(add, 16, {"len": 65536})
    with pytest.raises(ValueError, match=r"add \(AS=32\) needs a 20-byte operand table, got 10 bytes"):
        decode_table(add, 32, b"\0" * 10)


def _did_of(category, rng):
    return {
        "unity": 0,
        "end": 0x7F,
        "standard": rng.choice([1, 2, 3, 4, 5, 6]),
        "custom": rng.randrange(0x80, 0x100),
        "reserved": rng.choice([d for d in range(7, 0x7F)]),
    }[category]


@settings(max_examples=60)
@given(st.lists(st.tuples(st.sampled_from(["unity", "end", "standard", "custom", "reserved"]),
                          u128), max_size=100), st.randoms())
def test_storage_format_mixed_domains(items, rng):
    program = [Instruction(_did_of(c, rng), p) for c, p in items]
    data = pack_program(program)
    assert len(data) == -(-len(program) // 32) * GROUP_BYTES
    assert unpack_program(data, len(program)) == program
    padded = unpack_program(data)
    assert padded[:len(program)] == program
    assert all(i == Instruction(0x7F, 0) for i in padded[len(program):])


def test_storage_format_layout():
    program = [Instruction(k, (k + 1) * 0x0101) for k in range(33)]
    data = pack_program(program)
    assert len(data) == 2 * 544
    assert data[:32] == bytes(range(32))                     # DID pack
    assert data[32:48] == (0x0101).to_bytes(16, "little")    # instruction 0, low half of row 1
    assert data[48:64] == (0x0202).to_bytes(16, "little")    # instruction 1, high half
    assert data[544] == 32 and data[545:576] == bytes([0x7F]) * 31   # partial group padded with END
    assert pc_of(0x100, 0) == 0x120 and pc_of(0x100, 33) == 0x100 + 544 + 32 + 16
    for k in range(70):
        assert slot_of_pc(0x40, pc_of(0x40, k)) == k


@pytest.mark.parametrize("did,cls", [(0, DidClass.UNITY), (1, DidClass.STANDARD), (6, DidClass.STANDARD),
                                     (7, DidClass.RESERVED), (0x7E, DidClass.RESERVED),
                                     (0x7F, DidClass.END), (0x80, DidClass.CUSTOM), (0xFF, DidClass.CUSTOM)])
def test_did_classes(did, cls):
    assert did_class(did) == cls
    assert DID.END == 0x7F
