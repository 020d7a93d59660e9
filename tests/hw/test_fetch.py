# amaranth: UnusedElaboratable=no
"""The instruction fetcher (hw/fetch.py) against its cycle model
(golden/cycle/fetcher.py) and against the storage format (golden/storage.py).

Every simulation runs the RTL and the cycle model side by side and compares every
output in every cycle; a behavioural memory answers each granted request exactly
one cycle later and withholds ``mem.req.ready`` at random (arbitration), and the
consumer withholds ``out.ready`` at random (back-pressure). The harness also checks the stream
rules on ``out`` and ``mem.req`` by itself. The items that transferred are then
checked, independently of both, against the program as the
storage format defines it (``unpack_program``, ``pc_of``).

Waveforms: ``XDSA_VCD=1`` writes ``fetch_<test>.vcd`` in the current directory.
"""

import os
import random

import numpy as np
import pytest
from amaranth.back import verilog
from amaranth.hdl import Signal
from amaranth.sim import Simulator

from xdsa.golden.cycle.fetcher import FetcherModel
from xdsa.golden.encoding import Instruction
from xdsa.golden.isa import DID, Fault
from xdsa.golden.storage import pack_program, pc_of, program_bytes, unpack_program
from xdsa.hw.config import CoreConfig, get_config
from xdsa.hw.fetch import Fetcher

END = int(DID.END)
FETCH_RANGE = int(Fault.FETCH_RANGE)
M64 = (1 << 64) - 1

# RTL port of each `FetcherOutputs` field.
SIGNAL_NAMES = {
    "out_valid": "out.valid", "out_pc": "out.payload.pc", "out_did": "out.payload.did",
    "out_payload": "out.payload.payload", "out_fault": "out.payload.fault",
    "req_valid": "mem.req.valid", "req_addr": "mem.req.payload", "busy": "busy",
}


# --- programs and memory --------------------------------------------------------------

def make_program(n, rng, end_at=None):
    """`n` random instructions; the last one (or number `end_at`) has DID END, no other does."""
    end_at = n - 1 if end_at is None else end_at
    dids = [d for d in range(256) if d != END]
    return [Instruction(END if k == end_at else rng.choice(dids), rng.getrandbits(128))
            for k in range(n)]


def make_memory(cfg, rng, programs=()):
    """Random memory contents (so that reads past a program see junk) with each
    (start, instructions) of `programs` packed in place."""
    mem = np.frombuffer(rng.randbytes(cfg.mem_bytes), dtype=np.uint8).copy()
    for start, ins in programs:
        data = pack_program(ins)
        data = data[:max(0, cfg.mem_bytes - start)]
        mem[start:start + len(data)] = np.frombuffer(data, dtype=np.uint8)
    return mem


def expected_items(mem, start, ins=None):
    """The items the golden model's fetch gives for a program at `start`: each
    instruction as (pc, did, payload, 0) up to and including the first END, or up
    to the first one whose payload is not entirely in memory, which gives
    (pc, 0, 0, FETCH_RANGE) (D-PC; Machine._fetch). When `ins` is given, the
    instructions read are also checked against it."""
    if start % 32:
        return [((start + 32) & M64, 0, 0, FETCH_RANGE)]
    items = []
    for k in range(len(mem) // 16 + 1):
        pc = pc_of(start, k)
        if pc + 16 > len(mem):
            return items + [(pc & M64, 0, 0, FETCH_RANGE)]
        group = start + 544 * (k // 32)
        data = bytes(mem[group:group + 544]).ljust(544, b"\0")     # a group cut by the end of memory
        i = unpack_program(data, 32)[k % 32]
        if ins is not None and k < len(ins):
            assert i == ins[k], f"instruction {k} in memory is {i}, the program's is {ins[k]}"
        items.append((pc, i.did, i.payload, 0))
        if i.did == END:
            return items
    raise AssertionError("unreachable: the memory ends before the program does")


# --- the lockstep simulation ------------------------------------------------------------

def simulate(cfg, mem, script, *, seed=0, ready_p=0.7, grant_p=0.8, max_cycles=20_000,
             depth=None, name="fetch", idle_tail=3, flags=None):
    """Run the RTL fetcher and its cycle model side by side.

    `script` maps a cycle number to that cycle's inputs (``start``, ``start_addr``,
    ``stop``); ``out.ready`` and ``mem.req.ready`` are random with probabilities
    `ready_p` and `grant_p` (1.0: always). The run ends `idle_tail` cycles after
    the fetcher is idle past the last scripted cycle. Returns the transferred items
    as a list of (cycle, (pc, did, payload, fault)). The head's domain flags are
    checked against the item's DID in every cycle with a valid item (`flags`, a list:
    the flags of each transferred item are appended to it)."""
    dut = Fetcher(cfg, depth, checks=True)
    model = FetcherModel(cfg, mem, depth=dut.depth)
    rb = cfg.row_bytes
    last_event = max(script, default=0)
    items = []

    def row(r):
        return int.from_bytes(mem[r * rb:(r + 1) * rb].tobytes(), "little")

    async def bench(ctx):
        rng = random.Random(seed)
        rsp_due = [None] * cfg.mem_latency    # data due on mem.rsp in this and the next cycles
        idle_for = 0
        held = {}                       # outputs that must hold this cycle (stream rules)
        for cycle in range(max_cycles):
            ev = script.get(cycle, {})
            start, stop, addr = int(ev.get("start", 0)), int(ev.get("stop", 0)), int(ev.get("start_addr", 0))
            out_ready = int(rng.random() < ready_p)
            req_ready = int(rng.random() < grant_p)
            ctx.set(dut.start, start)
            ctx.set(dut.stop, stop)
            ctx.set(dut.start_addr, addr)
            ctx.set(dut.out.ready, out_ready)
            ctx.set(dut.mem.req.ready, req_ready)
            rsp = rsp_due.pop(0)
            ctx.set(dut.mem.rsp.valid, rsp is not None)
            ctx.set(dut.mem.rsp.payload, rsp or 0)

            exp = model.step(start=start, start_addr=addr, stop=stop, out_ready=out_ready,
                             req_ready=req_ready)
            p = ctx.get(dut.out.payload)
            got = {"out_valid": ctx.get(dut.out.valid), "out_pc": p.pc, "out_did": p.did,
                   "out_payload": p.payload, "out_fault": p.fault,
                   "req_valid": ctx.get(dut.mem.req.valid), "req_addr": ctx.get(dut.mem.req.payload),
                   "busy": ctx.get(dut.busy)}
            for field, want in exp.items():
                assert got[field] == want, (f"cycle {cycle}: {SIGNAL_NAMES[field]}: RTL {got[field]:#x}, "
                                            f"model {want:#x}")

            # Stream rules, checked independently of the model: a valid that did not
            # transfer holds, with its payload, unless start/stop/the end of fetching
            # intervened (then the fetcher withdraws it; see hw/fetch.py).
            for field, value in held.items():
                assert got[field] == value, (f"cycle {cycle}: {SIGNAL_NAMES[field]} changed from {value:#x} "
                                             f"to {got[field]:#x} before its transfer")
            held = {}
            if not (start or stop):
                if got["out_valid"] and not out_ready:
                    held.update((f, got[f]) for f in ("out_valid", "out_pc", "out_did", "out_payload",
                                                      "out_fault"))
                last_item = got["out_valid"] and out_ready and (got["out_fault"] or got["out_did"] == END)
                if got["req_valid"] and not req_ready and not last_item:
                    held.update((f, got[f]) for f in ("req_valid", "req_addr"))

            if got["out_valid"] and not got["out_fault"] and cfg.domains:
                want = sum(1 << k for k, d in enumerate(cfg.domains) if got["out_did"] == d)
                assert ctx.get(dut.head_domain) == want, \
                    f"cycle {cycle}: head_domain {ctx.get(dut.head_domain):#b} for DID {got['out_did']:#x}"
            if got["out_valid"] and out_ready:
                items.append((cycle, (p.pc, p.did, p.payload, p.fault)))
                if flags is not None:
                    flags.append(ctx.get(dut.head_domain))
            rsp = None
            if got["req_valid"]:
                assert got["req_addr"] < cfg.rows, f"cycle {cycle}: read request for row {got['req_addr']} " \
                                                   f"outside the {cfg.rows}-row memory"
                if req_ready:
                    rsp = row(got["req_addr"])
            rsp_due.append(rsp)
            await ctx.tick()

            if cycle > last_event and not got["busy"]:
                assert not got["out_valid"] and not got["req_valid"], f"cycle {cycle}: active while idle"
                idle_for += 1
                if idle_for > idle_tail:
                    return
        raise AssertionError(f"the fetcher was still busy after {max_cycles} cycles")

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    if os.environ.get("XDSA_VCD"):
        with sim.write_vcd(f"{name}.vcd"):
            sim.run()
    else:
        sim.run()
    return items


def session(items, first, last=None):
    """The items transferred in cycles first..last (inclusive)."""
    return [it for c, it in items if c >= first and (last is None or c <= last)]


DOMAINS = (1, 2, 3, 0x80, 0x81, 0xFE)       # domain ports: the fetcher flags these DIDs at its head


def config(row_bytes, mem_bytes=1 << 15, latency=1):
    """A configuration with `row_bytes`-byte rows, the memory read latency `latency`
    and the domain ports `DOMAINS`."""
    return CoreConfig(f"test{row_bytes}", mem_bytes=mem_bytes, row_bytes=row_bytes, mem_latency=latency,
                      domains=DOMAINS)


# --- programs that end with END ---------------------------------------------------------

@pytest.mark.parametrize("row_bytes", [8, 32])
def test_head_domain_flags(row_bytes):
    """A program of mostly domain DIDs: each transferred item's flags name its DID's port
    (checked in every cycle by the harness) and every port's flag is seen set."""
    rng = random.Random(77 + row_bytes)
    cfg = config(row_bytes, mem_bytes=8192)
    ins = [Instruction(rng.choice(DOMAINS + (0, 7, 0x40, 0xFF)), rng.getrandbits(128)) for _ in range(70)]
    ins.append(Instruction(END, 0))
    mem = make_memory(cfg, rng, [(64, ins)])
    flags = []
    items = simulate(cfg, mem, {0: {"start": 1, "start_addr": 64}}, seed=row_bytes, flags=flags)
    assert [it for _, it in items] == expected_items(mem, 64, ins)
    assert flags == [sum(1 << k for k, d in enumerate(DOMAINS) if i.did == d) for i in ins]
    assert all(any(f >> k & 1 for f in flags) for k in range(len(DOMAINS)))


@pytest.mark.parametrize("latency", [1, 2])
@pytest.mark.parametrize("row_bytes", [8, 16, 32])
@pytest.mark.parametrize("n", [1, 31, 32, 33, 100])
def test_program(row_bytes, n, latency):
    rng = random.Random(1000 * n + row_bytes)
    cfg = config(row_bytes, mem_bytes=8192, latency=latency)
    start = 32 * rng.randrange(1, (cfg.mem_bytes - program_bytes(n)) // 32)
    ins = make_program(n, rng)
    mem = make_memory(cfg, rng, [(start, ins)])
    items = simulate(cfg, mem, {0: dict(start=1, start_addr=start)}, seed=n,
                     name=f"fetch_program_{n}_{row_bytes}")
    got = session(items, 0)
    assert got == expected_items(mem, start, ins)
    assert got == [(pc_of(start, k), i.did, i.payload, 0) for k, i in enumerate(ins)]


@pytest.mark.parametrize("ready_p", [0.3, 1.0])
def test_program_on_tiny(ready_p):
    """`tiny` sets a 1-entry buffer (CoreConfig.fetch_depth), which RTL and model both take."""
    cfg = get_config("tiny")
    assert Fetcher(cfg).depth == cfg.fetch_depth == 1
    rng = random.Random(55)
    ins = make_program(70, rng)
    mem = make_memory(cfg, rng, [(0x40, ins)])
    items = simulate(cfg, mem, {0: dict(start=1, start_addr=0x40)}, seed=3, ready_p=ready_p,
                     name="fetch_program_tiny")
    assert session(items, 0) == [(pc_of(0x40, k), i.did, i.payload, 0) for k, i in enumerate(ins)]


def test_program_1024():
    rng = random.Random(1024)
    cfg = config(32)
    ins = make_program(1024, rng)
    start = 0x160
    mem = make_memory(cfg, rng, [(start, ins)])
    items = simulate(cfg, mem, {0: dict(start=1, start_addr=start)}, seed=7, ready_p=0.8,
                     name="fetch_program_1024")
    assert session(items, 0) == [(pc_of(start, k), i.did, i.payload, 0) for k, i in enumerate(ins)]


@pytest.mark.parametrize("row_bytes", [8, 16, 32])
def test_end_mid_group(row_bytes):
    """END at slot 9 of the second group, non-END instructions after it: nothing after
    END is emitted (rows after it may be read)."""
    rng = random.Random(row_bytes)
    cfg = config(row_bytes, mem_bytes=4096)
    ins = make_program(64, rng, end_at=41)
    mem = make_memory(cfg, rng, [(0x40, ins)])
    items = simulate(cfg, mem, {0: dict(start=1, start_addr=0x40)}, seed=3, ready_p=1.0, grant_p=1.0)
    assert session(items, 0) == [(pc_of(0x40, k), i.did, i.payload, 0) for k, i in enumerate(ins[:42])]


@pytest.mark.parametrize("row_bytes", [8, 16, 32])
def test_back_to_back_programs(row_bytes):
    """A new start in the cycle after the previous program's END transferred; memory
    with every read granted and the consumer always ready."""
    rng = random.Random(50 + row_bytes)
    cfg = config(row_bytes, mem_bytes=4096)
    a, b = make_program(3, rng), make_program(35, rng)
    mem = make_memory(cfg, rng, [(0, a), (0x400, b)])
    first = simulate(cfg, mem, {0: dict(start=1, start_addr=0)}, ready_p=1.0, grant_p=1.0, idle_tail=0)
    t = first[-1][0] + 1
    items = simulate(cfg, mem, {0: dict(start=1, start_addr=0), t: dict(start=1, start_addr=0x400)},
                     ready_p=1.0, grant_p=1.0)
    assert session(items, 0, t - 1) == expected_items(mem, 0, a)
    assert session(items, t) == expected_items(mem, 0x400, b)


# --- faults: outside memory, misaligned start ----------------------------------------------

@pytest.mark.parametrize("latency", [1, 2])
@pytest.mark.parametrize("row_bytes", [8, 16, 32])
@pytest.mark.parametrize("cut", ["payload", "did_pack", "half_row"])
def test_runs_off_memory(row_bytes, cut, latency):
    """The program continues past the end of memory: the instructions inside it are
    emitted, then FETCH_RANGE at the PC of the first one outside."""
    rng = random.Random(f"{cut}/{row_bytes}")
    start = 0x60
    end_of_group1 = start + 2 * 544
    mem_bytes = {"payload": end_of_group1 - 544 + 32 + 16 * 13,       # 13 payloads of group 1 in memory
                 "did_pack": end_of_group1 + 16,                      # memory ends inside a DID pack
                 "half_row": end_of_group1 + 32 + 16 * 5 + 8}[cut]    # ... inside a payload (8-byte rows)
    mem_bytes -= mem_bytes % row_bytes
    cfg = config(row_bytes, mem_bytes=mem_bytes, latency=latency)
    ins = make_program(200, rng)
    mem = make_memory(cfg, rng, [(start, ins)])
    items = simulate(cfg, mem, {0: dict(start=1, start_addr=start)}, seed=row_bytes,
                     name=f"fetch_range_{cut}_{row_bytes}")
    got = session(items, 0)
    want = expected_items(mem, start)
    assert got == want
    assert got[-1][3] == FETCH_RANGE and got[-1][0] + 16 > mem_bytes
    assert all(pc + 16 <= mem_bytes for pc, *_ in got[:-1])
    assert got[:-1] == [(pc_of(start, k), i.did, i.payload, 0) for k, i in enumerate(ins[:len(got) - 1])]


@pytest.mark.parametrize("row_bytes", [8, 16, 32])
@pytest.mark.parametrize("start", [8, 0x50, 0x21, 2048 - 32, 2048, 5000 * 32, (1 << 64) - 32, (1 << 64) - 8])
def test_bad_start(row_bytes, start):
    """Misaligned, or no payload of the first instruction in memory: one FETCH_RANGE
    item at start + 32 (mod 2**64), no memory read at all."""
    rng = random.Random(start)
    cfg = config(row_bytes, mem_bytes=2048)
    mem = make_memory(cfg, rng)
    items = simulate(cfg, mem, {0: dict(start=1, start_addr=start)}, seed=start & 0xFF)
    assert session(items, 0) == [((start + 32) & M64, 0, 0, FETCH_RANGE)]


@pytest.mark.parametrize("row_bytes", [8, 16])
@pytest.mark.parametrize("mem_bytes,fits", [(960 + 1088, True), (960 + 1072, False)])
def test_last_payload_at_end_of_memory(row_bytes, mem_bytes, fits):
    """64 instructions at 960: the END payload ends exactly at the end of memory (all
    fetched), or is the first payload outside it (FETCH_RANGE at its PC)."""
    rng = random.Random(mem_bytes + row_bytes)
    cfg = config(row_bytes, mem_bytes=mem_bytes)
    ins = make_program(64, rng)
    mem = make_memory(cfg, rng, [(960, ins)])
    got = session(simulate(cfg, mem, {0: dict(start=1, start_addr=960)}, seed=row_bytes), 0)
    want = [(pc_of(960, k), i.did, i.payload, 0) for k, i in enumerate(ins)]
    if not fits:
        want[-1] = (pc_of(960, 63), 0, 0, FETCH_RANGE)
    assert got == want == expected_items(mem, 960)


# --- stop and restart ------------------------------------------------------------------------

@pytest.mark.parametrize("latency", [1, 2])
@pytest.mark.parametrize("row_bytes", [8, 16, 32])
@pytest.mark.parametrize("gap", [0, 1, 5])
def test_stop_and_restart(row_bytes, gap, latency):
    """`stop` in the middle of a program drops everything prefetched; a start `gap`
    cycles later (0: together with the stop, which wins, so the start is lost and
    a second start follows the cycle after) runs another program from scratch."""
    rng = random.Random(row_bytes * 10 + gap)
    cfg = config(row_bytes, mem_bytes=8192, latency=latency)
    a, b = make_program(80, rng), make_program(40, rng)
    mem = make_memory(cfg, rng, [(0x20, a), (0x1000, b)])
    t_stop = 37 + gap
    script = {0: dict(start=1, start_addr=0x20), t_stop: dict(stop=1)}
    if gap == 0:
        script[t_stop] = dict(stop=1, start=1, start_addr=0x20)    # stop wins: no fetch of a
        script[t_stop + 1] = dict(start=1, start_addr=0x1000)
        t_b = t_stop + 1
    else:
        t_b = t_stop + gap
        script[t_b] = dict(start=1, start_addr=0x1000)
    items = simulate(cfg, mem, script, seed=gap, name=f"fetch_stop_{row_bytes}_{gap}")
    before = session(items, 0, t_stop)
    assert 0 < len(before) < len(a)
    assert before == expected_items(mem, 0x20, a)[:len(before)]
    assert session(items, t_stop + 1, t_b) == []
    assert session(items, t_b + 1) == expected_items(mem, 0x1000, b)


@pytest.mark.parametrize("latency", [1, 2])
@pytest.mark.parametrize("row_bytes", [8, 32])
def test_restart_while_busy(row_bytes, latency):
    """A start while busy (no stop) abandons the running program; also with a request
    held back by the arbiter at that moment (grant probability 0.3)."""
    rng = random.Random(row_bytes)
    cfg = config(row_bytes, mem_bytes=8192, latency=latency)
    a, b = make_program(100, rng), make_program(33, rng)
    mem = make_memory(cfg, rng, [(0x200, a), (0x1000, b)])
    for seed, grant_p in ((1, 0.3), (2, 0.9)):
        items = simulate(cfg, mem, {0: dict(start=1, start_addr=0x200), 60: dict(start=1, start_addr=0x1000)},
                         seed=seed, grant_p=grant_p)
        before = session(items, 0, 60)
        assert before == expected_items(mem, 0x200, a)[:len(before)]
        assert session(items, 61) == expected_items(mem, 0x1000, b)


def test_stop_while_idle_and_after_fault():
    rng = random.Random(9)
    cfg = config(16, mem_bytes=2048)
    ins = make_program(10, rng)
    mem = make_memory(cfg, rng, [(0, ins)])
    script = {0: dict(stop=1), 2: dict(start=1, start_addr=0x10), 3: dict(stop=1),
              5: dict(start=1, start_addr=0)}
    items = simulate(cfg, mem, script)
    assert session(items, 0, 5) in ([], [(0x30, 0, 0, FETCH_RANGE)])
    assert session(items, 6) == expected_items(mem, 0, ins)


# --- rate ------------------------------------------------------------------------------------

def measure_rate(row_bytes, n=1024, latency=1):
    rng = random.Random(77)
    cfg = config(row_bytes, latency=latency)
    ins = make_program(n, rng)
    mem = make_memory(cfg, rng, [(0, ins)])
    items = simulate(cfg, mem, {0: dict(start=1, start_addr=0)}, ready_p=1.0, grant_p=1.0)
    assert [it for _, it in items] == [(pc_of(0, k), i.did, i.payload, 0) for k, i in enumerate(ins)]
    cycles = [c for c, _ in items]
    latency = cycles[0]
    # Steady state: from the first item to the last, every cycle counted.
    return latency, (len(cycles) - 1) / (cycles[-1] - cycles[0])


@pytest.mark.parametrize("mem_latency", [1, 2, 3])
@pytest.mark.parametrize("row_bytes,minimum,first", [(32, 1.0, 4), (16, 32 / 34, 5), (8, 32 / 68, 8)])
def test_rate(row_bytes, minimum, first, mem_latency, capsys):
    """Instructions per cycle over 1024 instructions, out.ready always high and every
    request granted (simulated cycles). 32-byte rows: at least 1.0; narrower rows: the
    memory's bandwidth (34 and 68 row reads per 32 instructions), with either memory
    read latency. Also the latency from start to the first item that hw/fetch.py
    documents (`first` is that of mem_latency 1; each cycle of read latency adds one)."""
    first += mem_latency - 1
    latency, rate = measure_rate(row_bytes, latency=mem_latency)
    with capsys.disabled():
        print(f"\nfetch rate, 1024 instructions, {row_bytes}-byte rows, memory latency {mem_latency}: "
              f"{rate:.3f} instructions/cycle (first item {latency} cycles after start)")
    assert rate >= minimum - 1e-9, (f"{rate:.3f} instructions/cycle with {row_bytes}-byte rows, "
                                    f"expected >= {minimum:.3f}")
    assert latency == first, f"first item {latency} cycles after start, documented {first}"


# --- elaboration ------------------------------------------------------------------------------

@pytest.mark.parametrize("row_bytes", [8, 16, 32])
def test_converts_to_verilog(row_bytes):
    dut = Fetcher(config(row_bytes, mem_bytes=65536))
    ports = [v for _, _, v in dut.signature.flatten(dut) if isinstance(v, Signal)]
    text = verilog.convert(dut, name="fetcher", emit_src=False, ports=ports)
    assert "module fetcher" in text


def test_parameters_checked():
    with pytest.raises(TypeError, match="CoreConfig"):
        Fetcher("base")
    with pytest.raises(ValueError, match="depth"):
        Fetcher(config(32), depth=0)
