# amaranth: UnusedElaboratable=no
"""The memory system (hw/memory.py) against a Python model of the memory, cycle by cycle.

Random requests from several clients on several physical read ports and on the
shared write port; every cycle the test checks each client's ``req.ready`` (fixed
priority), each response (routing, data, one-cycle latency), the ``error`` pulse,
and at the end the whole memory contents, for the three read latencies
(``mem_latency`` 1; 2: the requests registered in front of the SRAM; 3: its read
data registered too). Set
XDSA_VCD=1 to write waveforms.
"""

import os
import random
from dataclasses import replace

import pytest
from amaranth.back import verilog
from amaranth.hdl import Signal
from amaranth.sim import Simulator

from xdsa.hw.bus import row_addr_bits
from xdsa.hw.config import CONFIGS, CoreConfig
from xdsa.hw.memory import MemorySystem, rows_from_bytes

# rows = 24 with 5-bit row addresses: rows 24..31 are addressable but out of range
CFG_ODD = CoreConfig("t24x8", mem_bytes=24 * 8, row_bytes=8)
CFG_32 = CoreConfig("t12x32", mem_bytes=12 * 32, row_bytes=32)
CFG_16 = CoreConfig("t16x16", mem_bytes=16 * 16, row_bytes=16)      # no row is out of range


def registered(config, latency=2):
    """`config` with the read latency of 2 (requests registered in front of the SRAM) or 3
    (the read data registered too)."""
    return replace(config, name=config.name + f"_l{latency}", mem_latency=latency)


def simulate(dut, testbench, name):
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    if os.environ.get("XDSA_VCD"):
        with sim.write_vcd(f"{name}.vcd"):
            sim.run()
    else:
        sim.run()


class MemoryModel:
    """The data memory as rows of bytes, with the memory system's bounds rule."""

    def __init__(self, config, init=b""):
        self.config = config
        self.rows = rows_from_bytes(config, init)

    def read(self, row):
        return self.rows[row] if row < self.config.rows else 0

    def write(self, row, value, be):
        if row >= self.config.rows:
            return
        old = self.rows[row]
        for b in range(self.config.row_bytes):
            if be >> b & 1:
                mask = 0xFF << (8 * b)
                old = (old & ~mask) | (value & mask)
        self.rows[row] = old


def random_traffic(config, read_clients, write_clients, *, cycles, seed, p_req=0.6, init=None, exclusive=()):
    """`exclusive`: clients of which the traffic never has two on one port requesting at once."""
    rng = random.Random(seed)
    if init is None:
        init = bytes(rng.randrange(256) for _ in range(config.mem_bytes))
    dut = MemorySystem(config, read_clients, write_clients, init=init, exclusive=exclusive)
    port_of = {n: i for i, port in enumerate(read_clients) for n in port} | {n: "w" for n in write_clients}
    model = MemoryModel(config, init)
    addr_space = 1 << row_addr_bits(config.rows)
    hot = [rng.randrange(config.rows) for _ in range(2)]        # same-row collisions
    row_bits, row_bytes = config.row_bits, config.row_bytes
    readers = [n for port in read_clients for n in port]
    stats = {"reads": 0, "writes": 0, "oob": 0, "collisions": 0, "waits": 0}

    def random_row():
        r = rng.random()
        if r < 0.35:
            return rng.choice(hot)
        if r < 0.45 and addr_space > config.rows:
            return rng.randrange(config.rows, addr_space)
        return rng.randrange(config.rows)

    def random_be():
        r = rng.random()
        if r < 0.15:
            return 0
        if r < 0.35:
            return (1 << row_bytes) - 1
        return rng.getrandbits(row_bytes)

    async def testbench(ctx):
        held_r = {n: None for n in readers}           # row requested and not yet transferred
        held_w = {n: None for n in write_clients}     # (row, data, be)

        def may_request(n):                           # no other exclusive client of its port holds one
            held = held_r if n in held_r else held_w
            return n not in exclusive or not any(held[o] is not None for o in exclusive
                                                 if o != n and port_of.get(o) == port_of[n])
        # per cycle still to come: (read client -> expected data, error expected); the
        # responses of a cycle's grants are due `mem_latency` cycles later
        latency = config.mem_latency
        due_queue = [({}, False)] * latency
        for cycle in range(cycles):
            due, error_due = due_queue.pop(0)
            where = f"{config.name} seed {seed} cycle {cycle}"
            # requests: new ones only when the client holds none (stream rule)
            for n in readers:
                if held_r[n] is None and rng.random() < p_req and may_request(n):
                    held_r[n] = random_row()
                port = getattr(dut, f"r_{n}")
                ctx.set(port.req.valid, held_r[n] is not None)
                ctx.set(port.req.payload, held_r[n] if held_r[n] is not None else rng.randrange(addr_space))
            for n in write_clients:
                if held_w[n] is None and rng.random() < p_req and may_request(n):
                    held_w[n] = (random_row(), rng.getrandbits(row_bits), random_be())
                port = getattr(dut, f"w_{n}")
                ctx.set(port.req.valid, held_w[n] is not None)
                row, value, be = held_w[n] or (rng.randrange(addr_space), rng.getrandbits(row_bits),
                                               rng.getrandbits(row_bytes))
                ctx.set(port.req.payload, {"row": row, "data": value, "be": be})

            # responses to last cycle's reads, and the error pulse
            for n in readers:
                port = getattr(dut, f"r_{n}")
                valid = ctx.get(port.rsp.valid)
                assert valid == (n in due), \
                    f"{where}: r_{n}.rsp.valid is {valid}, expected {int(n in due)}"
                if n in due:
                    got = ctx.get(port.rsp.payload)
                    assert got == due[n], f"{where}: r_{n}.rsp.payload {got:#x}, expected {due[n]:#x}"
            got_error = ctx.get(dut.error)
            assert got_error == error_due, f"{where}: error is {got_error}, expected {int(error_due)}"

            # fixed priority (an exclusive client waits only for higher clients that are not);
            # the grants of this cycle
            reads, write = {}, None
            for port_clients in read_clients:
                higher = shared = False
                for n in port_clients:
                    ready = ctx.get(getattr(dut, f"r_{n}").req.ready)
                    want = not (shared if n in exclusive else higher)
                    assert ready == want, f"{where}: r_{n}.req.ready is {ready}, expected {int(want)}"
                    if held_r[n] is not None and not higher:
                        reads[n] = held_r[n]
                    elif held_r[n] is not None:
                        stats["waits"] += 1
                    higher |= held_r[n] is not None
                    shared |= held_r[n] is not None and n not in exclusive
            higher = shared = False
            for n in write_clients:
                valid = held_w[n] is not None
                ready = ctx.get(getattr(dut, f"w_{n}").req.ready)
                want = not (shared if n in exclusive else higher)
                assert ready == want, f"{where}: w_{n}.req.ready is {ready}, expected {int(want)}"
                if valid and not higher:
                    write, held_w[n] = held_w[n], None
                elif valid:
                    stats["waits"] += 1
                higher |= valid
                shared |= valid and n not in exclusive

            # reads see the memory before this cycle's write
            due = {n: model.read(row) for n, row in reads.items()}
            error_due = any(row >= config.rows for row in reads.values())
            for n in reads:
                held_r[n] = None
            if write is not None:
                row, value, be = write
                error_due |= row >= config.rows
                stats["collisions"] += any(r == row for r in reads.values())
                model.write(row, value, be)
                stats["writes"] += 1
            stats["reads"] += len(reads)
            stats["oob"] += error_due
            due_queue.append((due, error_due))
            await ctx.tick()

        for n in readers:                                 # nothing requested: no write is pending
            ctx.set(getattr(dut, f"r_{n}").req.valid, 0)
        for n in write_clients:
            ctx.set(getattr(dut, f"w_{n}").req.valid, 0)
        for _ in range(latency - 1):                      # a registered write lands a cycle later
            await ctx.tick()

        for row in range(config.rows):
            got = ctx.get(dut.data[row])
            assert got == model.rows[row], \
                f"{config.name} seed {seed}: row {row} holds {got:#x}, expected {model.rows[row]:#x}"

    simulate(dut, testbench, f"memory_{config.name}_{seed}")
    return stats


@pytest.mark.parametrize("config,seed", [(CFG_ODD, 1), (CFG_32, 2), (CFG_16, 3), (CFG_ODD, 4),
                                         (registered(CFG_ODD), 1), (registered(CFG_32), 2),
                                         (registered(CFG_16), 3), (registered(CFG_ODD, 3), 1),
                                         (registered(CFG_32, 3), 2)])
def test_random_traffic(config, seed):
    stats = random_traffic(config, [["a", "b", "c"], ["d"], ["e", "f"]], ["x", "y", "z"],
                           cycles=600, seed=seed)
    # the traffic really exercised what it claims to
    assert stats["waits"] > 50 and stats["collisions"] > 5 and stats["writes"] > 300
    if config.rows < 1 << row_addr_bits(config.rows):
        assert stats["oob"] > 10


@pytest.mark.parametrize("config,seed", [(CFG_ODD, 5), (CFG_ODD, 6), (registered(CFG_ODD), 5),
                                         (registered(CFG_ODD, 3), 6)])
def test_random_traffic_exclusive_clients(config, seed):
    """The core's arrangement: engines first on each port and on the write port, never two
    of one port requesting at once; an engine's ready ignores the other engines' requests."""
    stats = random_traffic(config, [["a", "b", "c", "f"], ["d", "e"]], ["x", "y", "z"], cycles=600, seed=seed,
                           exclusive=("a", "b", "d", "e", "x", "y"))
    assert stats["waits"] > 50 and stats["writes"] > 200


def test_exclusive_ready_ignores_other_exclusive_clients():
    """b's ready stays high while a (exclusive, higher) requests, and drops for c (not exclusive)."""
    dut = MemorySystem(CFG_ODD, [["a", "c", "b"]], ["x"], exclusive=("a", "b"))

    async def testbench(ctx):
        ctx.set(dut.r_a.req.valid, 1)
        assert ctx.get(dut.r_b.req.ready) == 1
        ctx.set(dut.r_c.req.valid, 1)
        assert ctx.get(dut.r_b.req.ready) == 0
        assert ctx.get(dut.r_c.req.ready) == 0

    simulate(dut, testbench, "memory_exclusive")


def test_after_busy_client_waits_for_busy_not_for_exclusive_requests():
    """c (after `busy`) ignores a's request (exclusive, higher) and waits while `busy` is
    high; it waits for b (higher, not exclusive) as ever; a request it is not granted
    gets no response and no error pulse, even out of range."""
    init = bytes(range(CFG_ODD.mem_bytes))
    dut = MemorySystem(CFG_ODD, [["a", "b", "c"]], ["x"], init=init, exclusive=("a",), after_busy=("c",))

    async def testbench(ctx):
        ctx.set(dut.r_c.req.valid, 1)
        ctx.set(dut.r_c.req.payload, 30)           # out of range: an error only if granted
        ctx.set(dut.busy, 1)
        assert ctx.get(dut.r_c.req.ready) == 0     # busy, nobody requests
        await ctx.tick()
        assert not ctx.get(dut.r_c.rsp.valid) and not ctx.get(dut.error)
        ctx.set(dut.r_c.req.payload, 2)
        ctx.set(dut.busy, 0)
        ctx.set(dut.r_b.req.valid, 1)
        assert ctx.get(dut.r_c.req.ready) == 0     # b is not exclusive
        ctx.set(dut.r_b.req.valid, 0)
        assert ctx.get(dut.r_c.req.ready) == 1
        await ctx.tick()
        assert ctx.get(dut.r_c.rsp.valid) and not ctx.get(dut.error)
        assert ctx.get(dut.r_c.rsp.payload) == int.from_bytes(init[16:24], "little")

    simulate(dut, testbench, "memory_after_busy")


def test_after_busy_checks_refuse_an_exclusive_request_while_not_busy():
    dut = MemorySystem(CFG_ODD, [["a", "c"]], ["x"], exclusive=("a",), after_busy=("c",), checks=True)

    async def testbench(ctx):
        ctx.set(dut.r_a.req.valid, 1)
        ctx.set(dut.busy, 1)
        await ctx.tick()
        ctx.set(dut.busy, 0)
        await ctx.tick()

    with pytest.raises(AssertionError, match="an exclusive client above c requests while busy is low"):
        simulate(dut, testbench, "memory_after_busy_checks")


def test_after_busy_names_must_be_read_clients():
    with pytest.raises(ValueError, match="after_busy clients must be read clients; unknown: x"):
        MemorySystem(CFG_ODD, [["a"]], ["x"], after_busy=("x",))


def test_exclusive_names_must_be_clients():
    with pytest.raises(ValueError, match="exclusive clients must be read or write clients; unknown: q"):
        MemorySystem(CFG_ODD, [["a"]], ["x"], exclusive=("a", "q"))


@pytest.mark.parametrize("config", [CFG_ODD, registered(CFG_ODD), registered(CFG_ODD, 3)])
def test_buffered_client(config):
    """A buffered client (h, below a on both ports): its ready is its buffers' state, not a's
    requests; a write waits in the buffer while a holds the write port, a later read waits
    behind it (though the read port is free) and returns the written data L cycles after
    its own grant; a write does not enter while a read is buffered."""
    dut = MemorySystem(config, [["a", "h"]], ["a", "h"], init=bytes(range(config.mem_bytes)), buffered=["h"])
    L = config.mem_latency
    row_bytes = config.row_bytes
    value = int.from_bytes(bytes(0xA0 + b for b in range(row_bytes)), "little")

    async def testbench(ctx):
        async def cycle():
            # h's ready does not follow a's requests within the cycle
            readies = set()
            for v in (0, 1):
                ctx.set(dut.r_a.req.valid, v)
                ctx.set(dut.w_a.req.valid, v)
                readies.add((ctx.get(dut.r_h.req.ready), ctx.get(dut.w_h.req.ready)))
            assert len(readies) == 1, readies
            ctx.set(dut.r_a.req.valid, a_reads)
            ctx.set(dut.w_a.req.valid, a_writes)
            got = ctx.get(dut.r_h.rsp.valid), ctx.get(dut.r_h.rsp.payload)
            await ctx.tick()
            return got

        a_reads = a_writes = 0
        ctx.set(dut.w_a.req.payload, {"row": 7, "data": 0, "be": 0})
        ctx.set(dut.r_a.req.payload, 9)
        # cycle 0: a holds the write port (until cycle 6); h's write enters its buffer
        a_writes = 1
        assert ctx.get(dut.w_h.req.ready) == 1
        ctx.set(dut.w_h.req.valid, 1)
        ctx.set(dut.w_h.req.payload, {"row": 3, "data": value, "be": (1 << row_bytes) - 1})
        await cycle()
        ctx.set(dut.w_h.req.valid, 0)
        # cycle 1: h's write waits; h's read of the same row enters the read buffer
        assert ctx.get(dut.w_h.req.ready) == 0
        assert ctx.get(dut.r_h.req.ready) == 1
        ctx.set(dut.r_h.req.valid, 1)
        ctx.set(dut.r_h.req.payload, 3)
        await cycle()
        ctx.set(dut.r_h.req.valid, 0)
        # while the read is buffered, neither buffer takes a request; the read port is free
        # from cycle 4, but the read waits for the write (cycle 6)
        a_reads = 1
        responses = []
        for c in range(2, 12 + L):
            if c == 4:
                a_reads = 0
            if c == 6:
                a_writes = 0                        # the write port frees: h's write goes in cycle 6
            if c < 7:
                assert ctx.get(dut.r_h.req.ready) == 0 and ctx.get(dut.w_h.req.ready) == 0, c
            responses.append((c, *await cycle()))
        got = [(c, data) for c, valid, data in responses if valid]
        assert got == [(7 + L, value)], got
        assert ctx.get(dut.r_h.req.ready) == 1 and ctx.get(dut.w_h.req.ready) == 1
        # a read buffered behind a's reads, the write buffer empty: no write enters
        a_reads = 1
        ctx.set(dut.r_h.req.valid, 1)
        await cycle()
        ctx.set(dut.r_h.req.valid, 0)
        for _ in range(2):
            assert ctx.get(dut.w_h.req.ready) == 0 and ctx.get(dut.r_h.req.ready) == 0
            await cycle()
        a_reads = 0
        await cycle()                               # the read goes
        assert ctx.get(dut.w_h.req.ready) == 1 and ctx.get(dut.r_h.req.ready) == 1

    simulate(dut, testbench, f"memory_buffered_{config.name}")


def test_buffered_names_must_be_clients():
    with pytest.raises(ValueError, match="buffered clients must be read or write clients; unknown: q"):
        MemorySystem(CFG_ODD, [["a"]], ["x"], buffered=("a", "q"))


@pytest.mark.parametrize("config", [CFG_ODD, registered(CFG_ODD), registered(CFG_ODD, 3)])
def test_random_traffic_light_load(config):
    """Sparse requests: responses and grants when most clients are idle."""
    random_traffic(config, [["a", "b"]], ["x"], cycles=400, seed=7, p_req=0.15)


def test_single_client_ports():
    random_traffic(CFG_32, [["a"], ["b"]], ["x"], cycles=300, seed=8)


def test_same_cycle_read_write_returns_old_data():
    init = bytes(range(CFG_ODD.mem_bytes))
    dut = MemorySystem(CFG_ODD, [["a"]], ["x"], init=init)

    async def testbench(ctx):
        ctx.set(dut.r_a.req.valid, 1)
        ctx.set(dut.r_a.req.payload, 3)
        ctx.set(dut.w_x.req.valid, 1)
        ctx.set(dut.w_x.req.payload, {"row": 3, "data": 0x1122334455667788, "be": 0b0000_0110})
        await ctx.tick()
        ctx.set(dut.w_x.req.valid, 0)
        assert ctx.get(dut.r_a.rsp.valid)
        assert ctx.get(dut.r_a.rsp.payload) == int.from_bytes(init[24:32], "little")
        await ctx.tick()
        expected = bytearray(init[24:32])
        expected[1], expected[2] = 0x77, 0x66
        assert ctx.get(dut.r_a.rsp.payload) == int.from_bytes(expected, "little")
        ctx.set(dut.r_a.req.valid, 0)
        await ctx.tick()
        assert not ctx.get(dut.r_a.rsp.valid)

    simulate(dut, testbench, "memory_same_cycle")


def test_out_of_range_does_not_wrap():
    """Row 24 of a 24-row memory neither reads nor writes row 0; error pulses once."""
    init = bytes(range(CFG_ODD.mem_bytes))
    dut = MemorySystem(CFG_ODD, [["a"]], ["x"], init=init)

    async def testbench(ctx):
        assert not ctx.get(dut.error)
        ctx.set(dut.w_x.req.valid, 1)
        ctx.set(dut.w_x.req.payload, {"row": 24, "data": (1 << 64) - 1, "be": 0xFF})
        ctx.set(dut.r_a.req.valid, 1)
        ctx.set(dut.r_a.req.payload, 0)
        await ctx.tick()
        ctx.set(dut.w_x.req.valid, 0)
        assert ctx.get(dut.error)              # the out-of-range write
        assert ctx.get(dut.r_a.rsp.payload) == int.from_bytes(init[0:8], "little")
        ctx.set(dut.r_a.req.payload, 31)
        await ctx.tick()
        assert ctx.get(dut.error)              # the out-of-range read, with its response
        assert ctx.get(dut.r_a.rsp.valid) and ctx.get(dut.r_a.rsp.payload) == 0
        ctx.set(dut.r_a.req.payload, 1)
        await ctx.tick()
        assert not ctx.get(dut.error)
        assert ctx.get(dut.r_a.rsp.payload) == int.from_bytes(init[8:16], "little")
        ctx.set(dut.r_a.req.valid, 0)
        await ctx.tick()
        assert not ctx.get(dut.error) and not ctx.get(dut.r_a.rsp.valid)
        for row in range(CFG_ODD.rows):
            assert ctx.get(dut.data[row]) == int.from_bytes(init[8 * row:8 * row + 8], "little")

    simulate(dut, testbench, "memory_oob")


def test_init_preloads_little_endian_rows():
    dut = MemorySystem(CFG_32, [["a"]], [], init=b"\x01\x02\x03")
    assert dut.data[0] is not None
    assert rows_from_bytes(CFG_32, b"\x01\x02\x03")[:2] == [0x030201, 0]
    assert rows_from_bytes(CFG_32, bytes(range(40)))[1] == int.from_bytes(bytes(range(32, 40)), "little")


def test_parameter_errors():
    with pytest.raises(ValueError, match="more than"):
        MemorySystem(CFG_ODD, [["a"]], ["x"], init=bytes(CFG_ODD.mem_bytes + 1))
    with pytest.raises(ValueError, match="repeated: a"):
        MemorySystem(CFG_ODD, [["a"], ["a"]], ["x"])
    with pytest.raises(ValueError, match="non-empty"):
        MemorySystem(CFG_ODD, [["a"], []], ["x"])
    with pytest.raises(TypeError, match="identifier"):
        MemorySystem(CFG_ODD, [["a b"]], ["x"])
    with pytest.raises(TypeError, match="CoreConfig"):
        MemorySystem("tiny", [["a"]], ["x"])


def test_ports_and_verilog():
    cfg = CONFIGS["tiny"]
    dut = MemorySystem(cfg, [["loader", "fetch", "host"], ["dm"]], ["dm", "host"])
    assert set(dut.signature.members) == {"r_loader", "r_fetch", "r_host", "r_dm", "w_dm", "w_host", "error"}
    assert len(dut.r_host.req.payload) == row_addr_bits(cfg.rows)
    ports = [v for _, _, v in dut.signature.flatten(dut) if isinstance(v, Signal)]
    text = verilog.convert(dut, name="memory_system", emit_src=False, ports=ports)
    assert "module memory_system" in text


def test_mem_latency_is_checked():
    """mem_latency is 1, 2 or 3; the micro-coded data-move engine (which reads with a fixed
    latency of 1) refuses 2. Each error names the value."""
    assert CFG_ODD.mem_latency == 1 and registered(CFG_ODD).mem_latency == 2
    for bad in (0, 4):
        with pytest.raises(ValueError, match=f"mem_latency must be 1, 2 or 3 cycles, not {bad}"):
            replace(CFG_ODD, mem_latency=bad)
    with pytest.raises(ValueError, match="needs mem_latency = 1, not 2"):
        replace(CONFIGS["tiny"], mem_latency=2)
