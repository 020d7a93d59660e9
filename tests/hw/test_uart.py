# amaranth: UnusedElaboratable=no
"""The UART (hw/uart.py), the bridge protocol (hw/uart_bridge.py) and the host client
(xdsa/hostclient.py).

* UART: transmitter into receiver at several divisors (back-to-back bytes at full
  rate), a receiver driven by a line model whose bit time is 2 % off, glitches,
  framing errors, a break and an overrun.
* Bridge protocol on byte streams against a Wishbone slave model with random ack
  latency (which also checks the master's B4 classic behaviour): every command,
  random command sequences against a Python model of the memory, and each
  resynchronisation rule (bad op code, bad header check, bad data check, timeout,
  line error) followed by a working command.
* Client over `SimTransport` to a `UARTBridge` with a memory model: the API, and
  recovery by resync and retry from an injected break.
* Round trip through the whole core: `BridgedCore` (core + bridge) driven by the
  client over the modelled serial line (divisor 8): load a program, start, wait,
  status and memory against the golden model, then a program that faults.

Set XDSA_VCD=1 to write waveforms.
"""

import os
import random

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from xdsa.golden.asm import assemble
from xdsa.hw.config import CoreConfig
from xdsa.hw.hostport import ID_VALUE, Reg
from xdsa.hw.uart import UARTRx, UARTTx, baud_divisor
from xdsa.hw.uart_bridge import BridgeProtocol, Op, Status, UARTBridge, check_byte
from xdsa.hostclient import BridgeError, HostClient, SimTransport

VCD = bool(os.environ.get("XDSA_VCD"))


def run(dut, *benches, background=(), name="uart"):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    for b in background:
        sim.add_testbench(b, background=True)
    for b in benches:
        sim.add_testbench(b)
    if VCD:
        with sim.write_vcd(f"{name}.vcd"):
            sim.run()
    else:
        sim.run()


# --- UART -----------------------------------------------------------------------------------

def test_baud_divisor():
    assert baud_divisor(100e6, 1_000_000) == 100
    assert baud_divisor(12e6, 115200) == 104              # 0.16 % off
    assert baud_divisor(48e6, 3_000_000) == 16
    with pytest.raises(ValueError, match="too slow"):
        baud_divisor(12e6, 4_000_000)
    with pytest.raises(ValueError, match="% off"):
        baud_divisor(10e6, 1_900_000)                     # 5.26 -> 5, 5 % off
    with pytest.raises(TypeError, match="integer"):
        UARTRx(8.0)
    with pytest.raises(ValueError, match="at least 4"):
        UARTTx(3)


@pytest.mark.parametrize("divisor", [4, 5, 8, 13])
def test_uart_loopback(divisor):
    """TX into RX: every byte comes back, TX sends back to back at 10 * divisor cycles
    per byte, and the line idles high."""
    m = Module()
    m.submodules.tx = tx = UARTTx(divisor)
    m.submodules.rx = rx = UARTRx(divisor)
    m.d.comb += rx.rx.eq(tx.tx)
    data = [0x00, 0xFF, 0x55, 0xAA, 0x01, 0x80] + [random.Random(divisor).randrange(256) for _ in range(20)]
    got, starts = [], []

    async def feed(ctx):
        cycle = 0
        for b in data:
            ctx.set(tx.i.valid, 1)
            ctx.set(tx.i.payload, b)
            while True:
                _, _, ready = await ctx.tick().sample(tx.i.ready)
                cycle += 1
                if ready:
                    starts.append(cycle)
                    break
        ctx.set(tx.i.valid, 0)
        await ctx.tick().repeat(12 * divisor)
        assert got == data
        gaps = {b - a for a, b in zip(starts, starts[1:])}
        assert gaps == {10 * divisor}, f"bytes sent every {gaps} cycles, not {10 * divisor}"
        assert ctx.get(tx.tx) == 1

    async def collect(ctx):
        ctx.set(rx.o.ready, 1)
        async for _, _, valid, payload, err, ovr in ctx.tick().sample(rx.o.valid, rx.o.payload, rx.frame_error,
                                                                      rx.overrun):
            assert not err and not ovr
            if valid:
                got.append(payload)

    run(m, feed, background=[collect], name=f"uart_loop_{divisor}")


async def line_send(ctx, pin, levels, bit):
    for level in levels:
        ctx.set(pin, level)
        await ctx.delay(bit)
    ctx.set(pin, 1)


def frame(byte, stop=1):
    return [0] + [(byte >> i) & 1 for i in range(8)] + [stop]


@pytest.mark.parametrize("skew", [-0.02, 0.0, 0.02])
def test_uart_rx_baud_tolerance(skew):
    """The receiver takes bytes from a sender whose bit time is 2 % off."""
    divisor = 16
    rx = UARTRx(divisor)
    data = list(range(0, 256, 7))
    got = []
    bit = divisor * 1e-8 * (1 + skew)

    async def sender(ctx):
        ctx.set(rx.rx, 1)
        await ctx.delay(3 * bit)
        for b in data:
            await line_send(ctx, rx.rx, frame(b), bit)
        await ctx.delay(3 * bit)
        assert got == data

    async def collect(ctx):
        ctx.set(rx.o.ready, 1)
        async for _, _, valid, payload, err in ctx.tick().sample(rx.o.valid, rx.o.payload, rx.frame_error):
            assert not err
            if valid:
                got.append(payload)

    run(rx, sender, background=[collect], name="uart_rx_skew")


def test_uart_rx_errors():
    """A glitch shorter than half a bit is ignored; a stop bit of 0 is a framing error
    (no byte); a break gives one framing error and the receiver recovers; a byte
    completing while the previous one is held is dropped with an overrun pulse."""
    divisor = 8
    rx = UARTRx(divisor)
    bit = divisor * 1e-8
    got, events = [], []
    ready = [1]

    async def sender(ctx):
        ctx.set(rx.rx, 1)
        await ctx.delay(4 * bit)
        await line_send(ctx, rx.rx, [0], 0.3 * bit)                    # glitch
        await ctx.delay(2 * bit)
        await line_send(ctx, rx.rx, frame(0x5A), bit)
        await line_send(ctx, rx.rx, frame(0x33, stop=0), bit)         # framing error
        await ctx.delay(2 * bit)
        await line_send(ctx, rx.rx, frame(0xC3), bit)
        await line_send(ctx, rx.rx, [0] * 30, bit)                    # break
        await ctx.delay(2 * bit)
        await line_send(ctx, rx.rx, frame(0x81), bit)
        await ctx.delay(2 * bit)
        assert got == [0x5A, 0xC3, 0x81]
        assert events == ["frame_error", "frame_error"]
        ready[0] = 0                                                  # now hold the output
        await line_send(ctx, rx.rx, frame(0x11) + frame(0x22), bit)
        await ctx.delay(2 * bit)
        assert events[-1] == "overrun"
        assert ctx.get(rx.o.valid) and ctx.get(rx.o.payload) == 0x11
        ready[0] = 1
        await ctx.delay(2 * bit)
        await line_send(ctx, rx.rx, frame(0x44), bit)
        await ctx.delay(2 * bit)
        assert got == [0x5A, 0xC3, 0x81, 0x11, 0x44]

    async def collect(ctx):
        while True:
            ctx.set(rx.o.ready, ready[0])
            _, _, valid, rdy, payload, err, ovr = await ctx.tick().sample(
                rx.o.valid, rx.o.ready, rx.o.payload, rx.frame_error, rx.overrun)
            if valid and rdy:
                got.append(payload)
            if err:
                events.append("frame_error")
            if ovr:
                events.append("overrun")

    run(rx, sender, background=[collect], name="uart_rx_errors")


# --- bridge protocol on byte streams -----------------------------------------------------------

class WishboneMemory:
    """A Wishbone B4 classic slave holding a sparse word memory, acking each access
    after a random latency; checks that the master holds its signals until ack and
    always selects whole words."""

    def __init__(self, bus, rng, latency=(1, 4)):
        self.bus, self.rng, self.latency = bus, rng, latency
        self.mem = {}
        self.accesses = []

    def read(self, addr):
        return self.mem.get(addr, (addr * 0x9E3779B1) & 0xFFFF_FFFF)

    async def process(self, ctx):
        bus = self.bus
        ctx.set(bus.ack, 0)
        while True:
            await ctx.tick()
            ctx.set(bus.ack, 0)
            if not (ctx.get(bus.cyc) and ctx.get(bus.stb)):
                continue
            req = (ctx.get(bus.we), ctx.get(bus.adr), ctx.get(bus.dat_w), ctx.get(bus.sel))
            assert req[3] == 0xF, f"sel {req[3]:#x}: the bridge accesses whole words"
            for _ in range(self.rng.randint(*self.latency) - 1):
                await ctx.tick()
                held = (ctx.get(bus.we), ctx.get(bus.adr), ctx.get(bus.dat_w), ctx.get(bus.sel))
                assert ctx.get(bus.cyc) and ctx.get(bus.stb) and held == req, "the master changed an access before ack"
            we, adr, dat, _ = req
            self.accesses.append(("w" if we else "r", adr << 2))
            if we:
                self.mem[adr << 2] = dat
            else:
                ctx.set(bus.dat_r, self.read(adr << 2))
            ctx.set(bus.ack, 1)


def header(op, addr=None, n=None, *, corrupt=False):
    h = bytes([op])
    if addr is not None:
        h += addr.to_bytes(4, "little")
    if n is not None:
        h += n.to_bytes(2, "little")
    return h + bytes([check_byte(h) ^ (0x10 if corrupt else 0)])


def words_bytes(words):
    return b"".join(w.to_bytes(4, "little") for w in words)


class ProtoBench:
    """`BridgeProtocol(timeout)` with a `WishboneMemory` and byte-stream helpers; the
    output stream is drained in the background with random back-pressure."""

    def __init__(self, timeout=60, seed=0):
        self.rng = random.Random(seed)
        self.dut = BridgeProtocol(timeout)
        self.timeout = timeout
        self.wb = WishboneMemory(self.dut.wb, self.rng)
        self.out = []

    async def drain(self, ctx):
        while True:
            ready = self.rng.random() < 0.7
            ctx.set(self.dut.o.ready, ready)
            _, _, valid, payload = await ctx.tick().sample(self.dut.o.valid, self.dut.o.payload)
            if valid and ready:
                self.out.append(payload)

    async def send(self, ctx, data, gap=(0, 3)):
        i = self.dut.i
        for b in data:
            for _ in range(self.rng.randint(*gap)):
                await ctx.tick()
            ctx.set(i.valid, 1)
            ctx.set(i.payload, b)
            await ctx.tick().until(i.ready)
            ctx.set(i.valid, 0)

    async def expect(self, ctx, n, limit=2000):
        for _ in range(limit):
            if len(self.out) >= n:
                break
            await ctx.tick()
        got, self.out[:] = bytes(self.out[:n]), self.out[n:]
        assert len(got) == n, f"{len(got)} answer bytes ({got.hex()}), expected {n}"
        return got

    async def quiet(self, ctx, cycles=40):
        await ctx.tick().repeat(cycles)
        assert not self.out, f"unexpected answer bytes {bytes(self.out).hex()}"

    async def status(self, ctx, expected=Status.OK):
        s = (await self.expect(ctx, 1))[0]
        assert s == expected, f"status {s:#x}, expected {expected!r}"

    async def write(self, ctx, addr, value):
        d = value.to_bytes(4, "little")
        await self.send(ctx, header(Op.WRITE, addr) + d + bytes([check_byte(d)]))
        await self.status(ctx)

    async def read(self, ctx, addr):
        await self.send(ctx, header(Op.READ, addr))
        await self.status(ctx)
        d = await self.expect(ctx, 5)
        assert d[4] == check_byte(d[:4])
        return int.from_bytes(d[:4], "little")

    async def write_block(self, ctx, addr, words):
        d = words_bytes(words)
        await self.send(ctx, header(Op.WRITE_BLOCK, addr, len(words)) + d + bytes([check_byte(d)]))
        await self.status(ctx)

    async def read_block(self, ctx, addr, n):
        await self.send(ctx, header(Op.READ_BLOCK, addr, n))
        await self.status(ctx)
        d = await self.expect(ctx, 4 * n + 1)
        assert d[-1] == check_byte(d[:-1]), "read data check byte"
        return [int.from_bytes(d[4 * k:4 * k + 4], "little") for k in range(n)]

    def run(self, bench, name="bridge_proto"):
        run(self.dut, bench, background=[self.drain, self.wb.process], name=name)


def test_frame_bytes():
    """The frames of docs/boards.md's example."""
    assert header(Op.WRITE, 0x100) == bytes.fromhex("57 00 01 00 00 a7")
    assert check_byte((0xCAFEF00D).to_bytes(4, "little")) == 0x3A
    assert header(Op.READ, 0x100) == bytes.fromhex("52 00 01 00 00 ac")
    assert header(Op.PING) == bytes.fromhex("50 af")
    assert HostClient._header(Op.READ_BLOCK, 0x8000_1000, 256) == header(Op.READ_BLOCK, 0x8000_1000, 256)
    with pytest.raises(ValueError, match="multiple of 4"):
        HostClient._header(Op.READ, 0x102)


def test_bridge_commands():
    """Each command once, n = 0 blocks, the 2 low address bits ignored, and no
    access outside the command's words."""
    b = ProtoBench()

    async def bench(ctx):
        await b.send(ctx, header(Op.PING))
        await b.status(ctx)
        await b.write(ctx, 0x100, 0xDEADBEEF)
        assert b.wb.mem == {0x100: 0xDEADBEEF}
        assert await b.read(ctx, 0x100) == 0xDEADBEEF
        assert await b.read(ctx, 0x8000_0014) == b.wb.read(0x8000_0014)
        await b.write_block(ctx, 0x200, [1, 2, 3, 0xFFFF_FFFF])
        assert [b.wb.mem[0x200 + 4 * k] for k in range(4)] == [1, 2, 3, 0xFFFF_FFFF]
        assert await b.read_block(ctx, 0x1FC, 6) == [b.wb.read(0x1FC), 1, 2, 3, 0xFFFF_FFFF, b.wb.read(0x210)]
        b.wb.accesses.clear()
        await b.write_block(ctx, 0x300, [])
        assert await b.read_block(ctx, 0x300, 0) == []
        assert b.wb.accesses == []
        await b.write(ctx, 0x403, 7)                      # the low bits of addr are ignored
        assert b.wb.mem[0x400] == 7
        await b.quiet(ctx)

    b.run(bench)


def test_bridge_random_sequences():
    """Random well-formed commands (random gaps, back-pressure and ack latency)
    against a Python model of the memory."""
    b = ProtoBench(seed=1)
    model = {}
    rng = random.Random(2)

    async def bench(ctx):
        for _ in range(60):
            op = rng.choice(list(Op))
            addr = rng.randrange(0, 64) * 4 + rng.choice([0, 0x8000_0000])
            n = rng.randrange(0, 7)
            if op == Op.PING:
                await b.send(ctx, header(Op.PING))
                await b.status(ctx)
            elif op == Op.WRITE:
                v = rng.getrandbits(32)
                await b.write(ctx, addr, v)
                model[addr] = v
            elif op == Op.READ:
                assert await b.read(ctx, addr) == model.get(addr, b.wb.read(addr))
            elif op == Op.WRITE_BLOCK:
                ws = [rng.getrandbits(32) for _ in range(n)]
                await b.write_block(ctx, addr, ws)
                model.update({addr + 4 * k: w for k, w in enumerate(ws)})
            else:
                expected = [model.get(addr + 4 * k, b.wb.read(addr + 4 * k)) for k in range(n)]
                assert await b.read_block(ctx, addr, n) == expected
        assert b.wb.mem == model
        await b.quiet(ctx)

    b.run(bench, "bridge_random")


def test_bridge_resync():
    """The resynchronisation rules, each followed by a command that works."""
    b = ProtoBench(timeout=60)

    async def bench(ctx):
        # a byte that is not an op code: BAD_OPCODE, nothing else
        await b.send(ctx, b"\x00")
        await b.status(ctx, Status.BAD_OPCODE)
        await b.send(ctx, b"\xff\x13")
        await b.status(ctx, Status.BAD_OPCODE)
        await b.status(ctx, Status.BAD_OPCODE)
        assert await b.read(ctx, 0x10) == b.wb.read(0x10)

        # a corrupted header: BAD_HEADER and no access; a READ answers nothing more
        b.wb.accesses.clear()
        await b.send(ctx, header(Op.READ, 0x20, corrupt=True))
        await b.status(ctx, Status.BAD_HEADER)
        await b.quiet(ctx)
        d = (5).to_bytes(4, "little")
        await b.send(ctx, header(Op.WRITE, 0x20, corrupt=True))
        await b.status(ctx, Status.BAD_HEADER)            # its data bytes then arrive between commands
        await b.send(ctx, d + bytes([check_byte(d)]))
        for _ in range(5):
            await b.status(ctx, Status.BAD_OPCODE)
        assert b.wb.accesses == []

        # a bad data check: WRITE does not write, WRITE_BLOCK has written
        await b.send(ctx, header(Op.WRITE, 0x30) + d + bytes([check_byte(d) ^ 1]))
        await b.status(ctx, Status.BAD_DATA)
        assert 0x30 not in b.wb.mem
        await b.send(ctx, header(Op.WRITE_BLOCK, 0x40, 1) + d + bytes([check_byte(d) ^ 1]))
        await b.status(ctx, Status.BAD_DATA)
        assert b.wb.mem[0x40] == 5

        # a command that stops in the middle: TIMEOUT after `timeout` cycles of silence
        for partial in (header(Op.WRITE_BLOCK, 0x80, 3)[:3], header(Op.WRITE_BLOCK, 0x80, 3) + d,
                        header(Op.WRITE, 0x80) + d, header(Op.READ, 0x80)[:-1]):
            await b.send(ctx, partial)
            await ctx.tick().repeat(b.timeout - 10)
            assert not b.out, "timed out too early"
            await b.status(ctx, Status.TIMEOUT)
        assert 0x84 not in b.wb.mem
        # gaps shorter than the timeout are fine
        await b.send(ctx, header(Op.WRITE, 0x90) + d + bytes([check_byte(d)]), gap=(b.timeout - 8, b.timeout - 5))
        await b.status(ctx)

        # a line error during a command: LINE, and a WRITE is not performed
        await b.send(ctx, header(Op.WRITE, 0xA0) + d[:2])
        ctx.set(b.dut.line_error, 1)
        await ctx.tick()
        ctx.set(b.dut.line_error, 0)
        await b.send(ctx, d[2:] + bytes([check_byte(d)]))
        await b.status(ctx, Status.LINE)
        assert 0xA0 not in b.wb.mem
        await b.send(ctx, header(Op.READ, 0xA0)[:2])
        ctx.set(b.dut.line_error, 1)
        await ctx.tick()
        ctx.set(b.dut.line_error, 0)
        await b.send(ctx, header(Op.READ, 0xA0)[2:])
        await b.status(ctx, Status.LINE)
        await b.quiet(ctx)

        # garbage of every kind, then the host's procedure: wait, drop, PING
        rng = random.Random(5)
        junk = bytes(rng.randrange(256) for _ in range(40)) + header(Op.WRITE_BLOCK, 0x1000, 500)
        await b.send(ctx, junk)
        await ctx.tick().repeat(3 * b.timeout)
        b.out.clear()
        await b.send(ctx, header(Op.PING))
        await b.status(ctx)
        await b.write(ctx, 0xB0, 0x12345678)
        assert await b.read(ctx, 0xB0) == 0x12345678

    b.run(bench, "bridge_resync")


# --- the client over the UART -------------------------------------------------------------------

class _BridgeMem(wiring.Component):
    """A `UARTBridge` with a Wishbone memory model behind it (for the client tests)."""

    def __init__(self, divisor, timeout_bits):
        self.bridge = UARTBridge(divisor, timeout_bits=timeout_bits)
        self.timeout_bits = timeout_bits
        super().__init__({"rx": wiring.In(1, init=1), "tx": wiring.Out(1, init=1),
                          "wb": wiring.Out(self.bridge.wb.signature)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.bridge = self.bridge
        m.d.comb += [self.bridge.rx.eq(self.rx), self.tx.eq(self.bridge.tx)]
        wiring.connect(m, self.bridge.wb, wiring.flipped(self.wb))
        return m


def test_client_over_uart():
    """The client's API through the UART and the bridge, and its recovery (resync and
    retry) when the line is disturbed."""
    dut = _BridgeMem(divisor=6, timeout_bits=40)
    t = SimTransport(dut, 6, vcd="client_uart.vcd" if VCD else None)
    wbm = WishboneMemory(dut.wb, random.Random(3))
    t.sim.add_testbench(wbm.process, background=True)
    c = HostClient(t)
    try:
        c.ping()
        c.write32(0x100, 0xCAFEF00D)
        assert c.read32(0x100) == 0xCAFEF00D
        c.write_block(0x200, bytes(range(32)))
        assert c.read_memory(0x200, 32) == bytes(range(32))
        assert c.read_memory(0x203, 6) == bytes(range(3, 9))
        c.write_memory(0x205, b"\xaa\xbb\xcc\xdd\xee")          # both ends partial words
        assert c.read_memory(0x200, 12) == bytes([0, 1, 2, 3, 4, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 10, 11])
        assert c.read_block(0x200, 2) == [0x03020100, 0xCCBBAA04]

        # a break in the middle of a block write: the bridge answers LINE or TIMEOUT,
        # the client resynchronises and resends the block
        data = bytes(range(100, 164))
        t.inject([0] * 25, after=30)                              # the line low for 25 bits after 30 bytes
        c.write_block(0x400, data)
        assert c.stats["retries"] == 1
        assert c.read_memory(0x400, len(data)) == data
        assert t.frame_errors == 0

        # a byte lost on the way: the bridge times out and the client retries; a
        # corrupted byte: a check byte catches it
        t.inject([], after=5, replace=True)
        c.write32(0x500, 0x600DF00D)
        assert c.stats["retries"] == 2
        t.inject([0] + [1, 0, 1, 0, 1, 0, 1, 0] + [1], after=9, replace=True)
        c.write_block(0x600, bytes(16))
        assert c.stats["retries"] == 3
        assert c.read_memory(0x500, 4) == bytes.fromhex("0df00d60")
        assert c.read_memory(0x600, 16) == bytes(16)
    finally:
        t.close()


def test_client_reports_naks():
    """With retries off, a NAK surfaces as a BridgeError naming the status."""
    dut = _BridgeMem(divisor=6, timeout_bits=40)
    t = SimTransport(dut, 6)
    t.sim.add_testbench(WishboneMemory(dut.wb, random.Random(4)).process, background=True)
    c = HostClient(t, retries=0)
    t.write(b"\x00")                                             # garbage before the command
    with pytest.raises(BridgeError, match="BAD_OPCODE"):
        c.ping()
    c.resync()
    c.ping()
    t.close()


# --- the whole core through the UART --------------------------------------------------------------

CFG = CoreConfig("uart_t", mem_bytes=4096, row_bytes=8, datamove_lanes=1)

PROGRAM = """
.as 32
.text 0x0
    data_move.u8 src=a, dst=b, transfer_mode=normal, src_trans_size=19, des_trans_size=19, wait=1:7*2, signal=2:9
    exit
    end
.tables 0x400
.keys 1:7, 3
.data 0x500
a:
    .u8 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19
    .zero 5
b:
    .zero 24
"""

# the same program with the move's destination beyond the 4 KiB memory
FAULTING = PROGRAM.replace("dst=b,", "dst=0xFF8,")


def test_core_round_trip():
    """Client -> serial line -> bridge -> core: load a program with key presets,
    start it, wait, check the status, the counters, the moved bytes and the keys
    against the golden model; then the same program patched to fault (fault code,
    PC, retired count)."""
    from xdsa.hw.boards import BridgedCore
    from xdsa.sim.cosim import run_golden

    divisor = 8
    dut = BridgedCore(CFG, divisor, timeout_bits=200)
    t = SimTransport(dut, divisor, vcd="core_uart.vcd" if VCD else None)
    leds = []                                               # (busy, stopped, fault) at each change

    async def watch(ctx):
        async for busy, stopped, fault in ctx.changed(dut.busy, dut.stopped, dut.fault):
            leds.append((busy, stopped, fault))
    t.sim.add_testbench(watch, background=True)
    c = HostClient(t)
    try:
        assert c.read32(Reg.ID) == ID_VALUE
        assert c.identify() == (CFG.mem_bytes, CFG.row_bytes)

        image = assemble(PROGRAM, "<uart>")
        golden = run_golden(image, CFG)
        assert golden.status == "exit"
        c.load_image(image, full=False)
        assert c.read32(Reg.START) == image.start
        st0 = c.status()
        assert not st0.busy and not st0.stopped
        c.start()
        st = c.wait(timeout=0.01)
        assert st.stopped and not st.busy and st.reason == "exit" and st.fault == 0
        assert st.retired == len(golden.trace)
        assert 0 < st.cycles < 2000
        syms = {s.name: s.address for s in image.symbols}
        b = syms["b"]
        assert c.read_memory(b, 24) == golden.memory[b:b + 24]
        for t_, i in ((1, 4), (2, 8)):                  # the key words the program used
            at = 256 * t_ + i
            assert list(c.read_memory(Reg.KEYS + at, 4)) == golden.keys[at:at + 4], f"keys of table {t_}"

        # the faulting variant: write only the words that differ (the operand table)
        bad = assemble(FAULTING, "<uart-fault>")
        gf = run_golden(bad, CFG)
        assert gf.status == "fault"
        old, new = image.memory(CFG.mem_bytes), bad.memory(CFG.mem_bytes)
        changed = [a for a in range(0, CFG.mem_bytes, 4) if old[a:a + 4] != new[a:a + 4]]
        assert 0 < len(changed) <= 4
        for a in changed:
            c.write32(a, int.from_bytes(new[a:a + 4], "little"))
        c.write32(Reg.KEYS + 256 * 1 + 4, 3 << 24)        # the key preset again (the first run used two)
        c.start()
        st = c.wait(timeout=0.01)
        assert st.reason == "fault"
        assert (st.fault, st.fault_pc) == (int(gf.fault), gf.fault_pc)
        assert st.retired == len(gf.trace)
        # the indicators (busy, stopped, fault): a clean run, then a run whose fault is
        # flagged when the faulting instruction retires, just before the core stops
        assert [v for v in leds if any(v)] == [(1, 0, 0), (0, 1, 0), (1, 0, 0), (1, 0, 1), (0, 1, 1)]
    finally:
        t.close()
