"""The Unity decode ROM (hw/decode.py) against a model built directly from golden/isa
and the golden machine's decode rules (D-PRECEDENCE), exhaustively over every
opcode x AS code x section, plus reserved sections, unassigned codes, reserved bits
and random payloads. The model itself is checked against `golden.machine.Machine`.

Two capability tables: the real one of `hw.capabilities` (whatever the engines
declare today) and fake ones built here, to show the ROM follows the table.
"""

import random

import pytest
from amaranth.back import verilog
from amaranth.sim import Simulator

from xdsa.golden import isa
from xdsa.golden.encoding import Instruction, UnityInstruction, table_length
from xdsa.golden.isa import (Fault, Section, UNITY_FIELDS, SYNC_CTRL_FIELDS, field_map,
                             GROUP_SIZE, DID_PACK_BYTES)
from xdsa.golden.machine import Capability, Machine
from xdsa.hw.capabilities import engine_opcodes
from xdsa.hw.config import CONFIGS
from xdsa.hw.decode import DECODE_FAULTS, Decoder, decode_rom, engine_enum
from xdsa.hw.fields import table_bits

_U = field_map(UNITY_FIELDS)
_S = field_map(SYNC_CTRL_FIELDS)
SECTIONS = [int(s) for s in Section]
RESERVED_SECTIONS = [s for s in range(1 << _U["op_section"].width) if s not in SECTIONS]
CONFIG = CONFIGS["tiny"]


# --- the model -------------------------------------------------------------------------

def model(payload, engines):
    """Expected decoder outputs for `payload`, from golden/isa and the golden machine's
    order of checks (Machine._unity); engine is a name or None."""
    owner = {op.key: name for name, ops in engines.items() for op in ops}
    u = UnityInstruction.decode(Instruction(0, payload))
    raw = dict(section=u.op_section, op_code=u.op_code, as_code=u.addr_space,
               sync=_U["sync_ctrl"].get(payload), descriptor=u.operand_descriptor)
    none = dict(raw, engine=None, is_exit=0, table_bytes=0, has_table=0)
    op = u.opcode
    if u.rsvd or u.sync.rsvd:
        return dict(none, fault=Fault.RESERVED_BITS)
    if op is None:
        return dict(none, fault=Fault.ILLEGAL_OPCODE)
    if op.table is not None and u.as_bits is None:
        return dict(none, fault=Fault.RESERVED_AS)
    if op.key not in owner:
        return dict(none, fault=Fault.UNIMPLEMENTED)
    return dict(raw, fault=0, engine=owner[op.key], is_exit=int(op.table is None),
                table_bytes=table_length(op, u.as_bits) if op.table else 0,
                has_table=int(op.table is not None))


def golden_decode_fault(payload, executed_keys):
    """The decode fault the golden machine itself reports for a one-instruction program
    (later faults -- keys, operand table, semantics -- count as 'decoded', 0)."""
    m = Machine(mem_size=DID_PACK_BYTES + 16 * GROUP_SIZE,
                capability=Capability(executes=lambda op: op.key in executed_keys))
    m.mem[0] = 0                                                  # DID Unity
    m.mem[DID_PACK_BYTES:DID_PACK_BYTES + 16] = list(payload.to_bytes(16, "little"))
    r = m.step()
    return r.fault if r.fault in DECODE_FAULTS else 0


# --- vectors ---------------------------------------------------------------------------

def payload_of(rng, section, op_code, as_code, rsvd=0, sync_rsvd=0, descriptor=None):
    sync = _S["rsvd"].put(rng.getrandbits(32), sync_rsvd)
    p = 0
    p = _U["op_section"].put(p, section)
    p = _U["addr_space"].put(p, as_code)
    p = _U["op_code"].put(p, op_code)
    p = _U["rsvd"].put(p, rsvd)
    p = _U["sync_ctrl"].put(p, sync)
    p = _U["operand_descriptor"].put(p, rng.getrandbits(64) if descriptor is None else descriptor)
    return p


def opcode_vectors(rng, descriptor=None):
    """Every opcode's OP_CODE x every AS code x both sections and some reserved ones."""
    sections = SECTIONS + [0x01, 0x3E, 0x20, rng.choice(RESERVED_SECTIONS)]
    codes = sorted({op.op_code for op in isa.OPCODES})
    return [payload_of(rng, s, c, a, descriptor=descriptor) for c in codes for s in sections for a in range(4)]


def unassigned_vectors(rng):
    """Every OP_CODE of both sections, one random AS each (most are unassigned)."""
    return [payload_of(rng, s, c, rng.randrange(4))
            for s in SECTIONS for c in range(1 << _U["op_code"].width)]


def reserved_bit_vectors(rng):
    """Each reserved payload and SYNC_CTRL bit alone, on legal and illegal opcodes, all AS."""
    out = []
    ops = [isa.by_mnemonic("exit"), rng.choice(isa.OPCODES), rng.choice(isa.OPCODES)]
    for bit in range(_U["rsvd"].width):
        for op in ops:
            for a in range(4):
                out.append(payload_of(rng, op.section, op.op_code, a, rsvd=1 << bit))
                out.append(payload_of(rng, rng.choice(RESERVED_SECTIONS), op.op_code, a, rsvd=1 << bit))
    for bit in range(_S["rsvd"].width):
        for op in ops:
            for a in range(4):
                out.append(payload_of(rng, op.section, op.op_code, a, sync_rsvd=1 << bit))
    return out


def random_vectors(rng, n):
    out = [rng.getrandbits(128) for _ in range(n)]
    # ... and with the reserved fields clear, on random legal and illegal keys
    out += [payload_of(rng, rng.choice(SECTIONS), rng.choice(isa.OPCODES).op_code ^ rng.choice([0, 0, 1 << rng.randrange(14)]),
                       rng.randrange(4)) for _ in range(n)]
    return out


# --- running the decoder ---------------------------------------------------------------

OUTPUTS = ("section", "op_code", "as_code", "sync", "descriptor", "fault", "is_exit", "table_bytes", "has_table")


def simulate(dut, payloads):
    """Apply each payload and collect the decoder's outputs (engine as a name or None)."""
    results = []

    async def bench(ctx):
        for p in payloads:
            ctx.set(dut.payload, p)
            r = {name: ctx.get(getattr(dut, name)) for name in OUTPUTS}
            e = ctx.get(dut.engine)
            r["engine"] = None if e == dut.engine_enum.NONE else e.name.lower()
            results.append(r)

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    return results


def check(dut, payloads, engines):
    got = simulate(dut, payloads)
    for p, g in zip(payloads, got):
        want = model(p, engines)
        diff = {k: (g[k], want[k]) for k in want if g[k] != want[k]}
        assert not diff, f"payload {p:#034x}: (rtl, model) differ in {diff}"


def fake_engines(seed):
    """A random capability table: 4 engines sharing a random 60% of the opcodes (EXIT included)."""
    rng = random.Random(seed)
    ops = [op for op in isa.OPCODES if rng.random() < 0.6 or op.table is None]
    names = ["alpha", "beta", "gamma", "delta"]
    out = {n: [] for n in names}
    for op in ops:
        out[rng.choice(names)].append(op)
    return out


ENGINE_TABLES = {
    "config": lambda: engine_opcodes(CONFIG),
    "fake": lambda: fake_engines(1),
    "all-one-engine": lambda: {"everything": list(isa.OPCODES)},
    "no-engines": lambda: {},
}


@pytest.mark.parametrize("table", ENGINE_TABLES)
def test_every_opcode_as_section(table):
    engines = ENGINE_TABLES[table]()
    dut = Decoder(CONFIG, engines=engines)
    rng = random.Random(2)
    check(dut, opcode_vectors(rng) + reserved_bit_vectors(rng) + random_vectors(rng, 500), engines)


@pytest.mark.parametrize("table", ["config", "fake"])
def test_every_op_code(table):
    engines = ENGINE_TABLES[table]()
    dut = Decoder(CONFIG, engines=engines)
    check(dut, unassigned_vectors(random.Random(3)), engines)


def test_model_agrees_with_golden_machine():
    """The test's model reports the same decode fault as the golden machine (for the
    configuration's real capability; operand tables out of range so nothing executes)."""
    engines = engine_opcodes(CONFIG)
    keys = {op.key for ops in engines.values() for op in ops}
    rng = random.Random(4)
    payloads = opcode_vectors(rng, descriptor=1 << 63) + reserved_bit_vectors(rng)
    for p in payloads:
        assert golden_decode_fault(p, keys) == model(p, engines)["fault"], f"payload {p:#034x}"


def test_configuration_default():
    """Without `engines` the ROM follows hw/capabilities, and executes exactly its opcodes."""
    dut = Decoder(CONFIG)
    engines = engine_opcodes(CONFIG)
    assert list(dut.engine_enum.__members__) == ["NONE"] + [n.upper() for n in engines]
    assert dut.max_table_bits == table_bits([op for ops in engines.values() for op in ops])
    executed = {e.opcode.key: e.engine for e in dut.rom if e.engine is not None}
    assert executed == {op.key: n for n, ops in engines.items() for op in ops}
    assert executed[isa.by_mnemonic("exit").key] == "control"
    verilog.convert(dut, name="decode", emit_src=False)


def test_rom_contents():
    engines = fake_engines(5)
    rom = decode_rom(engines)
    assert len(rom) == len(isa.OPCODES) == 224
    assert len({e.key for e in rom}) == len(rom)
    owner = {op.key: n for n, ops in engines.items() for op in ops}
    for e in rom:
        op = e.opcode
        assert isa.lookup(*op.key) is op and e.engine == owner.get(op.key)
        if op.table is None:
            assert e.table_bytes is None and e.is_exit and not e.has_table
        else:
            assert e.table_bytes == tuple(op.table.resolve(a).nbytes for a in (16, 32, 64))


def test_fake_table_shapes():
    engines = fake_engines(6)
    dut = Decoder(CONFIG, engines=engines)
    assert list(dut.engine_enum.__members__) == ["NONE", "ALPHA", "BETA", "GAMMA", "DELTA"]
    assert dut.engine_enum.as_shape().width == 3
    assert dut.max_table_bits == table_bits([op for ops in engines.values() for op in ops])
    assert engine_enum(tuple(engines)) is dut.engine_enum    # one enum per engine table
    assert engine_enum(("x",)) is not dut.engine_enum
    verilog.convert(dut, name="decode", emit_src=False)


def test_engine_is():
    engines = fake_engines(7)
    dut = Decoder(CONFIG, engines=engines)
    ops = [ops[0] for ops in engines.values()]
    payloads = [payload_of(random.Random(0), op.section, op.op_code, 1) for op in ops]
    seen = []

    async def bench(ctx):
        for p in payloads:
            ctx.set(dut.payload, p)
            seen.append([ctx.get(dut.engine_is(n)) for n in engines])

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    assert seen == [[int(i == j) for j in range(len(engines))] for i in range(len(engines))]


@pytest.mark.parametrize("engines, match", [
    ({"a": [isa.by_mnemonic("exit")], "b": [isa.by_mnemonic("exit")]}, "both engine 'a' and engine 'b'"),
    ({"none": []}, "other than 'none'"),
    ({"a": ["exit"]}, "not an opcode"),
    ({"dm": [], "DM": []}, "more than letter case"),
])
def test_bad_tables(engines, match):
    with pytest.raises(ValueError, match=match):
        decode_rom(engines)
