# amaranth: UnusedElaboratable=no
"""The Wishbone host port (hw/hostport.py) with a memory system behind its memory
ports and a behavioural key-table responder (random latency and back-pressure)
on its key ports. Transactions go through `Bench.wb_write` / `Bench.wb_read`,
which also check the one-cycle ``ack`` and measure the latency of each access.
Set XDSA_VCD=1 to write waveforms.
"""

import os
import random
from dataclasses import replace

import pytest
from amaranth.back import verilog
from amaranth.hdl import Elaboratable, Module, Shape, Signal
from amaranth.lib import wiring
from amaranth.sim import Simulator

from xdsa.hw.bus import KeyHostOp
from xdsa.hw.config import CONFIGS, CoreConfig
from xdsa.hw.hostport import HostPort, Reg, WishboneSignature, ID_VALUE, features
from xdsa.hw.memory import MemorySystem

CFG_8 = CoreConfig("h8", mem_bytes=24 * 8, row_bytes=8, vector_bytes=16, array_n=4)
CFG_32 = CoreConfig("h32", mem_bytes=8 * 32, row_bytes=32, vector_bytes=32, array_n=8)
CFG_16 = CoreConfig("h16", mem_bytes=16 * 16, row_bytes=16)

REG_LATENCY = 3         # cycles per register access, stb to ack inclusive
CFG_32_L2 = replace(CFG_32, name="h32_l2", mem_latency=2)        # requests registered in the memory
MEM_WRITE_LATENCY = 3


def mem_read_latency(config):
    """Cycles of a data memory read (hw/hostport.py): 5 plus the memory's read latency."""
    return 5 + config.mem_latency


def lanes(sel):
    return sum(0xFF << (8 * b) for b in range(4) if sel >> b & 1)


class _Top(Elaboratable):
    def __init__(self, host, mem):
        self.host, self.mem = host, mem

    def elaborate(self, platform):
        m = Module()
        m.submodules.host, m.submodules.mem = self.host, self.mem
        wiring.connect(m, self.host.mem_r, self.mem.r_host)
        wiring.connect(m, self.host.mem_w, self.mem.w_host)
        return m


class Bench:
    """A host port, a memory system (a higher-priority "noise" client shares both of
    its ports with the host), a key-table responder and Python models of both."""

    def __init__(self, config, *, seed=0, key_latency=(1, 4), key_ready=0.6):
        self.cfg = config
        self.rng = random.Random(seed)
        self.init = bytes(self.rng.randrange(256) for _ in range(config.mem_bytes))
        self.mem_model = bytearray(self.init)
        self.host = HostPort(config)
        self.mem = MemorySystem(config, [["noise", "host"]], ["noise", "host"], init=self.init, buffered=["host"])
        self.keys = [[self.rng.randrange(256) for _ in range(256)] for _ in range(4)]
        self.key_log = []                   # (op, table, index, value) in request order
        self.key_latency = key_latency      # response delay after the request, cycles (min, max)
        self.key_ready = key_ready          # probability that keys_req.ready is high
        self.noise = False                  # the noise client competes for the memory
        self.pulses = {"start": 0, "clear": 0}
        self.high = {"start": 0, "clear": 0}
        self.mem_errors = 0
        self.cycles = None                  # latency of the last access
        self.trace = None                   # (start, clear) per cycle of the last access, and one after
        self.early_drop = 0.0               # probability that the master drops stb in the ack cycle

    # --- Wishbone master ---------------------------------------------------------------

    async def access(self, ctx, addr, *, we, value=0, sel=0xF, limit=500):
        wb = self.host.wb
        assert addr % 4 == 0 and 0 <= addr < 1 << 32
        ctx.set(wb.cyc, 1)
        ctx.set(wb.stb, 1)
        ctx.set(wb.we, we)
        ctx.set(wb.adr, addr >> 2)
        ctx.set(wb.dat_w, value)
        ctx.set(wb.sel, sel)
        assert not ctx.get(wb.ack), f"ack high before the access to {addr:#x}"
        self.trace = []
        for n in range(1, limit):
            await ctx.tick()
            self.trace.append((ctx.get(self.host.start), ctx.get(self.host.clear)))
            if ctx.get(wb.ack):
                break
        else:
            raise AssertionError(f"no ack for the {'write' if we else 'read'} of {addr:#x} "
                                 f"within {limit} cycles")
        self.cycles = n + 1
        data = ctx.get(wb.dat_r)
        # B4 holds stb through the ack cycle; some masters (sim/wishbone.py) drop it in
        # the ack cycle (and may present the next access there): both must work
        early = self.rng.random() < self.early_drop
        if early:
            ctx.set(wb.cyc, 0)
            ctx.set(wb.stb, 0)
        await ctx.tick()
        self.trace.append((ctx.get(self.host.start), ctx.get(self.host.clear)))
        assert not ctx.get(wb.ack), f"ack high for more than one cycle ({addr:#x})"
        ctx.set(wb.cyc, 0)
        ctx.set(wb.stb, 0)
        ctx.set(wb.we, 0)
        return data

    async def wb_write(self, ctx, addr, value, sel=0xF):
        await self.access(ctx, addr, we=1, value=value, sel=sel)

    async def wb_read(self, ctx, addr, sel=0xF):
        return await self.access(ctx, addr, we=0, sel=sel)

    # --- models -------------------------------------------------------------------------

    def model_read(self, addr, sel=0xF):
        if addr >= self.cfg.mem_bytes:
            return 0
        return int.from_bytes(self.mem_model[addr:addr + 4], "little") & lanes(sel)

    def model_write(self, addr, value, sel=0xF):
        if addr < self.cfg.mem_bytes:
            for b in range(4):
                if sel >> b & 1:
                    self.mem_model[addr + b] = value >> (8 * b) & 0xFF

    async def check_memory(self, ctx):
        # a write is acknowledged when it enters the memory's write buffer: let the last one
        # reach the memory (the noise client may hold the port for a few cycles)
        for _ in range(20):
            await ctx.tick()
        rb = self.cfg.row_bytes
        for row in range(self.cfg.rows):
            got = ctx.get(self.mem.data[row]).to_bytes(rb, "little")
            expected = bytes(self.mem_model[row * rb:(row + 1) * rb])
            assert got == expected, f"row {row} holds {got.hex()}, expected {expected.hex()}"

    # --- background processes -------------------------------------------------------------

    async def _key_responder(self, ctx):
        req, rsp = self.host.keys_req, self.host.keys_rsp
        while True:
            ready = self.rng.random() < self.key_ready
            ctx.set(req.ready, ready)
            _, _, valid, payload = await ctx.tick().sample(req.valid, req.payload)
            if not (valid and ready):
                continue
            ctx.set(req.ready, 0)
            op, t, i, v = int(payload.op), int(payload.table), int(payload.index), int(payload.value)
            self.key_log.append((op, t, i, v))
            if op == KeyHostOp.WRITE:
                self.keys[t][i] = v
            elif op == KeyHostOp.DEPOSIT:
                self.keys[t][i] = min(255, self.keys[t][i] + 1)
            else:
                assert op == KeyHostOp.READ, f"unknown key op {op}"
            for _ in range(self.rng.randint(*self.key_latency) - 1):
                await ctx.tick()
            ctx.set(rsp.valid, 1)
            ctx.set(rsp.payload, {"value": self.keys[t][i]})
            await ctx.tick().until(rsp.ready)
            ctx.set(rsp.valid, 0)

    async def _noise(self, ctx):
        """A higher-priority client reading and (with no byte enabled) writing at random."""
        rd, wr = self.mem.r_noise.req, self.mem.w_noise.req
        rows = self.cfg.rows                # in range: the error monitor watches the host
        rd_held = wr_held = False
        while True:
            if not rd_held and self.noise and self.rng.random() < 0.5:
                rd_held = True
                ctx.set(rd.payload, self.rng.randrange(rows))
            if not wr_held and self.noise and self.rng.random() < 0.5:
                wr_held = True
                ctx.set(wr.payload, {"row": self.rng.randrange(rows), "data": self.rng.getrandbits(64),
                                     "be": 0})
            ctx.set(rd.valid, rd_held)
            ctx.set(wr.valid, wr_held)
            _, _, rd_ready, wr_ready = await ctx.tick().sample(rd.ready, wr.ready)
            rd_held &= not rd_ready
            wr_held &= not wr_ready

    async def _monitor(self, ctx):
        prev = {"start": 0, "clear": 0}
        async for _, _, start, clear, error in ctx.tick().sample(self.host.start, self.host.clear,
                                                                  self.mem.error):
            for name, value in (("start", start), ("clear", clear)):
                self.high[name] += value
                self.pulses[name] += value and not prev[name]
                prev[name] = value
            self.mem_errors += error

    def run(self, testbench, name="hostport"):
        sim = Simulator(_Top(self.host, self.mem))
        sim.add_clock(1e-6)
        sim.add_testbench(self._key_responder, background=True)
        sim.add_testbench(self._noise, background=True)
        sim.add_testbench(self._monitor, background=True)
        sim.add_testbench(testbench)
        if os.environ.get("XDSA_VCD"):
            with sim.write_vcd(f"{name}_{self.cfg.name}.vcd"):
                sim.run()
        else:
            sim.run()


# --- registers -----------------------------------------------------------------------------

@pytest.mark.parametrize("config", [CFG_8, CFG_32, CONFIGS["tiny"], CONFIGS["base"]], ids=lambda c: c.name)
def test_identification_registers(config):
    b = Bench(config)

    async def testbench(ctx):
        for addr, value in ((Reg.ID, ID_VALUE), (Reg.MEM_BYTES, config.mem_bytes),
                            (Reg.FEATURES, features(config))):
            for sel in range(16):
                got = await b.wb_read(ctx, addr, sel)
                assert got == value & lanes(sel), f"{addr:#x} sel {sel:#06b}: {got:#x}"
                assert b.cycles == REG_LATENCY
            await b.wb_write(ctx, addr, ~value & 0xFFFF_FFFF)       # read-only
            assert await b.wb_read(ctx, addr) == value

    b.run(testbench)
    assert features(config) == config.row_bytes | config.vector_bytes << 8 | config.array_n << 16
    assert ID_VALUE.to_bytes(4, "big") == b"xDSA"


def test_status_registers():
    b = Bench(CFG_8, seed=1)
    rng = random.Random(11)
    h = b.host

    async def testbench(ctx):
        for _ in range(12):
            v = {"busy": rng.randrange(2), "stopped": rng.randrange(2), "reason": rng.randrange(4),
                 "fault": rng.randrange(256), "fault_pc": rng.getrandbits(64),
                 "cycles": rng.getrandbits(64), "retired": rng.getrandbits(64)}
            for name, value in v.items():
                ctx.set(getattr(h, name), value)
            expected = {
                Reg.STATUS: v["busy"] | v["stopped"] << 1 | v["reason"] << 8,
                Reg.FAULT: v["fault"],
                Reg.FAULT_PC: v["fault_pc"] & 0xFFFF_FFFF, Reg.FAULT_PC + 4: v["fault_pc"] >> 32,
                Reg.CYCLES: v["cycles"] & 0xFFFF_FFFF, Reg.CYCLES + 4: v["cycles"] >> 32,
                Reg.RETIRED: v["retired"] & 0xFFFF_FFFF, Reg.RETIRED + 4: v["retired"] >> 32,
            }
            for addr, value in expected.items():
                sel = rng.choice([0xF, rng.randrange(16)])
                got = await b.wb_read(ctx, addr, sel)
                assert got == value & lanes(sel), \
                    f"{addr:#x} sel {sel:#06b}: read {got:#x}, expected {value & lanes(sel):#x}"
                assert b.cycles == REG_LATENCY
                await b.wb_write(ctx, addr, rng.getrandbits(32))           # read-only: ignored
                assert await b.wb_read(ctx, addr) == value
        assert b.key_log == [] and b.pulses == {"start": 0, "clear": 0}

    b.run(testbench)


def test_start_register_and_busy_rule():
    b = Bench(CFG_8, seed=2)
    rng = random.Random(12)
    h = b.host

    async def testbench(ctx):
        start = 0
        for _ in range(60):
            busy = rng.random() < 0.3
            ctx.set(h.busy, busy)
            half = rng.randrange(2)
            sel, value = rng.randrange(16), rng.getrandbits(32)
            await b.wb_write(ctx, Reg.START + 4 * half, value, sel)
            assert b.cycles == REG_LATENCY
            if not busy:
                mask = lanes(sel) << (32 * half)
                start = (start & ~mask) | (value << (32 * half) & mask)
            assert ctx.get(h.start_addr) == start, f"start_addr {ctx.get(h.start_addr):#x}, expected {start:#x}"
            assert await b.wb_read(ctx, Reg.START) == start & 0xFFFF_FFFF
            assert await b.wb_read(ctx, Reg.START + 4) == start >> 32
        assert b.pulses == {"start": 0, "clear": 0}

    b.run(testbench)


def test_ctrl_start_and_clear_pulses():
    b = Bench(CFG_8, seed=3)
    h = b.host

    async def testbench(ctx):
        expected = {"start": 0, "clear": 0}
        cases = [(0, 0b01, 0xF), (0, 0b10, 0xF), (0, 0b11, 0xF), (1, 0b01, 0xF), (1, 0b10, 0xF),
                 (1, 0b11, 0xF), (0, 0b11, 0b1110), (0, 0b01, 0b0001), (0, 0, 0xF), (0, 0x100, 0xF)]
        for busy, value, sel in cases:
            ctx.set(h.busy, busy)
            await b.wb_write(ctx, Reg.CTRL, value, sel)
            assert b.cycles == REG_LATENCY
            start = bool(value & 1 and not busy and sel & 1)
            clear = bool(value & 2 and sel & 1)
            # the pulses come with ack (cycle 2) and last one cycle
            assert b.trace == [(0, 0), (start, clear), (0, 0)], f"busy {busy} CTRL {value:#x} sel {sel:#06b}: {b.trace}"
            expected["start"] += start
            expected["clear"] += clear
            assert await b.wb_read(ctx, Reg.CTRL) == 0                    # write-only
        await ctx.tick()
        assert b.pulses == expected and b.high == expected

    b.run(testbench)


def test_unmapped_registers_read_zero():
    b = Bench(CFG_8, seed=4)
    unmapped = [0x8000_000C, 0x8000_001C, 0x8000_0044, 0x8000_0048, 0x8000_0100, 0x8000_0FFC,
                0x8000_1400, 0x8000_1404, 0x8000_2000, 0x8000_3000, 0x8001_1000, 0xC000_0000,
                0xC000_1000, 0xFFFF_FFFC]

    async def testbench(ctx):
        ctx.set(b.host.cycles, 0x1234)
        for addr in unmapped:
            await b.wb_write(ctx, addr, 0xFFFF_FFFF)
            assert b.cycles == REG_LATENCY
            assert await b.wb_read(ctx, addr) == 0, f"{addr:#x} is not 0"
            assert b.cycles == REG_LATENCY
        # KEY_DEPOSIT and CTRL are write-only
        assert await b.wb_read(ctx, Reg.KEY_DEPOSIT) == 0
        assert b.key_log == [] and b.pulses == {"start": 0, "clear": 0}
        assert ctx.get(b.host.start_addr) == 0
        await b.check_memory(ctx)

    b.run(testbench)


# --- data memory ---------------------------------------------------------------------------

@pytest.mark.parametrize("config,noise", [(CFG_8, False), (CFG_32, False), (CFG_16, True), (CFG_8, True),
                                          (CFG_32_L2, False), (CFG_32_L2, True)],
                         ids=lambda x: getattr(x, "name", str(x)))
def test_memory_random_access(config, noise):
    b = Bench(config, seed=5)
    rng = random.Random(13)

    async def testbench(ctx):
        b.noise = noise
        b.early_drop = 0.3
        waited = 0
        for n in range(250):
            addr = 4 * rng.randrange(config.mem_bytes // 4)
            sel = n % 16 if n < 32 else rng.randrange(16)
            if rng.random() < 0.5:
                value = rng.getrandbits(32)
                await b.wb_write(ctx, addr, value, sel)
                b.model_write(addr, value, sel)
                latency = MEM_WRITE_LATENCY
            else:
                got = await b.wb_read(ctx, addr, sel)
                assert got == b.model_read(addr, sel), \
                    f"read {addr:#x} sel {sel:#06b}: {got:#x}, expected {b.model_read(addr, sel):#x}"
                latency = mem_read_latency(config)
            if noise:
                assert b.cycles >= latency
                waited += b.cycles > latency
            else:
                assert b.cycles == latency, f"access {n} took {b.cycles} cycles, expected {latency}"
            for _ in range(rng.choice([0, 0, 1, 3])):          # idle cycles between accesses
                await ctx.tick()
        if noise:
            assert waited > 20
        await b.check_memory(ctx)
        assert b.mem_errors == 0

    b.run(testbench)


@pytest.mark.parametrize("config", [CFG_8, CFG_16, CFG_32, CFG_32_L2], ids=lambda c: c.name)
def test_unaligned_words_at_row_boundaries(config):
    """A 32-bit value at byte address a (a % 4 != 0) is written as two words with
    complementary byte selects; around every row boundary it reads back exactly."""
    b = Bench(config, seed=6)
    rng = random.Random(14)
    rb = config.row_bytes

    async def testbench(ctx):
        for boundary in range(rb, config.mem_bytes, rb):
            for shift in (1, 2, 3):
                a = boundary - 4 + shift                       # straddles the boundary
                value = rng.getrandbits(32)
                lo_word, hi_word = a - shift, a - shift + 4
                await b.wb_write(ctx, lo_word, value << (8 * shift) & 0xFFFF_FFFF, (0xF << shift) & 0xF)
                await b.wb_write(ctx, hi_word, value >> (32 - 8 * shift), 0xF >> (4 - shift))
                b.mem_model[a:a + 4] = value.to_bytes(4, "little")
                got = (await b.wb_read(ctx, lo_word) >> (8 * shift)
                       | await b.wb_read(ctx, hi_word) << (32 - 8 * shift)) & 0xFFFF_FFFF
                assert got == value, f"value at {a:#x}: {got:#x}, expected {value:#x}"
        for addr in range(0, config.mem_bytes, 4):
            assert await b.wb_read(ctx, addr) == b.model_read(addr)
        await b.check_memory(ctx)

    b.run(testbench)


@pytest.mark.parametrize("config", [CFG_8, CFG_32, CFG_32_L2], ids=lambda c: c.name)
def test_memory_out_of_range_does_not_wrap(config):
    b = Bench(config, seed=7)
    size = config.mem_bytes
    beyond = [size, size + 4, size + config.row_bytes, 2 * size, 2 * size + 8, 4 * size,
              1 << 20, 0x4000_0000, 0x7FFF_FFFC]

    async def testbench(ctx):
        for addr in beyond:
            await b.wb_write(ctx, addr, 0xA5A5_A5A5)
            assert b.cycles == REG_LATENCY
            assert await b.wb_read(ctx, addr) == 0, f"{addr:#x} does not read 0"
            assert b.cycles == REG_LATENCY
        assert await b.wb_read(ctx, size - 4) == b.model_read(size - 4)     # the last word is memory
        await b.check_memory(ctx)
        assert b.mem_errors == 0            # the host does not even ask the memory

    b.run(testbench)


# --- key tables ----------------------------------------------------------------------------

def test_key_table_words():
    b = Bench(CFG_8, seed=8)
    rng = random.Random(15)
    keys = b.keys

    async def testbench(ctx):
        b.early_drop = 0.5
        for n in range(120):
            t, word = rng.randrange(4), rng.randrange(64)
            if n < 8:
                t, word = n % 4, (0, 63)[n // 4]                # first and last words of every table
            addr = 0x8000_1000 + 256 * t + 4 * word
            sel = n % 16 if n < 48 else rng.randrange(16)
            selected = [b_ for b_ in range(4) if sel >> b_ & 1]
            first = len(b.key_log)
            if rng.random() < 0.5:
                expected = sum(keys[t][4 * word + i] << (8 * i) for i in selected)
                got = await b.wb_read(ctx, addr, sel)
                assert got == expected, f"keys {addr:#x} sel {sel:#06b}: {got:#x}, expected {expected:#x}"
                ops = [(KeyHostOp.READ, t, 4 * word + i, 0) for i in selected]
            else:
                value = rng.getrandbits(32)
                await b.wb_write(ctx, addr, value, sel)
                ops = [(KeyHostOp.WRITE, t, 4 * word + i, value >> (8 * i) & 0xFF) for i in selected]
            log = b.key_log[first:]
            # READ requests carry no value; compare it only for writes
            assert [(o, tt, i) + ((v,) if o == KeyHostOp.WRITE else ()) for o, tt, i, v in log] == \
                   [(o, tt, i) + ((v,) if o == KeyHostOp.WRITE else ()) for o, tt, i, v in ops], \
                   f"access {n} to {addr:#x} sel {sel:#06b} issued {log}, expected {ops}"
            assert b.cycles >= 3 + 2 * len(ops) if ops else b.cycles == REG_LATENCY
        assert b.pulses == {"start": 0, "clear": 0}

    b.run(testbench)


def test_key_deposit():
    b = Bench(CFG_8, seed=9)
    rng = random.Random(16)

    async def testbench(ctx):
        b.keys[2][255] = 254
        b.keys[0][0] = 7
        cases = [(0, 0, 0xF), (2, 255, 0xF), (2, 255, 0xF), (2, 255, 0b0011), (3, 17, 0b0011)]
        cases += [(rng.randrange(4), rng.randrange(256), 0xF) for _ in range(20)]
        for t, i, sel in cases:
            before = [row[:] for row in b.keys]
            first = len(b.key_log)
            await b.wb_write(ctx, Reg.KEY_DEPOSIT, rng.getrandbits(22) << 10 | t << 8 | i, sel)
            assert [(op, tt, ii) for op, tt, ii, _ in b.key_log[first:]] == [(KeyHostOp.DEPOSIT, t, i)]
            before[t][i] = min(255, before[t][i] + 1)
            assert b.keys == before
        assert b.keys[2][255] == 255 and b.keys[0][0] == 8
        # byte 0 not selected: nothing; byte 1 not selected: table 0
        first = len(b.key_log)
        await b.wb_write(ctx, Reg.KEY_DEPOSIT, 0x305, 0b1110)
        assert b.key_log[first:] == []
        await b.wb_write(ctx, Reg.KEY_DEPOSIT, 0x305, 0b0001)
        assert [(op, t, i) for op, t, i, _ in b.key_log[first:]] == [(KeyHostOp.DEPOSIT, 0, 5)]
        # and the host reads what it deposited
        got = await b.wb_read(ctx, 0x8000_1000 + 256 * 2 + 252)
        assert got >> 24 == 255

    b.run(testbench)


def test_key_latency_with_a_prompt_responder():
    """A responder that is always ready and answers in the next cycle: 5 cycles for one
    key, 11 for a whole word."""
    b = Bench(CFG_8, seed=10, key_latency=(1, 1), key_ready=1.0)

    async def testbench(ctx):
        await b.wb_read(ctx, 0x8000_1000, 0b0001)
        assert b.cycles == 5
        await b.wb_read(ctx, 0x8000_1000)
        assert b.cycles == 11
        await b.wb_write(ctx, Reg.KEY_DEPOSIT, 3)
        assert b.cycles == 5
        await b.wb_read(ctx, 0x8000_1000, 0)                    # nothing selected: no key operation
        assert b.cycles == REG_LATENCY

    b.run(testbench)


# --- mixed traffic -------------------------------------------------------------------------

def test_mixed_back_to_back_traffic():
    """Random accesses of every kind, back to back, with contention on the memory."""
    b = Bench(CFG_16, seed=11)
    rng = random.Random(17)

    async def testbench(ctx):
        b.noise = True
        b.early_drop = 0.5
        for _ in range(200):
            kind = rng.randrange(4)
            sel = rng.randrange(16)
            if kind == 0:
                addr = 4 * rng.randrange(CFG_16.mem_bytes // 4 + 8)
                value = rng.getrandbits(32)
                await b.wb_write(ctx, addr, value, sel)
                b.model_write(addr, value, sel)
            elif kind == 1:
                addr = 4 * rng.randrange(CFG_16.mem_bytes // 4 + 8)
                assert await b.wb_read(ctx, addr, sel) == b.model_read(addr, sel)
            elif kind == 2:
                t, i = rng.randrange(4), 4 * rng.randrange(64)
                expected = sum(b.keys[t][i + k] << (8 * k) for k in range(4)) & lanes(sel)
                assert await b.wb_read(ctx, 0x8000_1000 + 256 * t + i, sel) == expected
            else:
                assert await b.wb_read(ctx, Reg.ID, sel) == ID_VALUE & lanes(sel)
        await b.check_memory(ctx)

    b.run(testbench)


# --- structure -----------------------------------------------------------------------------

def test_signature_and_verilog():
    cfg = CONFIGS["tiny"]
    host = HostPort(cfg)
    sig = host.signature.members
    assert sig["wb"].flow == wiring.In and sig["wb"].signature.flip() == WishboneSignature()
    wb = WishboneSignature().members
    assert {n: (wb[n].flow, Shape.cast(wb[n].shape).width) for n in wb} == {
        "cyc": (wiring.Out, 1), "stb": (wiring.Out, 1), "we": (wiring.Out, 1), "adr": (wiring.Out, 30),
        "dat_w": (wiring.Out, 32), "sel": (wiring.Out, 4), "dat_r": (wiring.In, 32), "ack": (wiring.In, 1)}
    mem = MemorySystem(cfg, [["host"]], ["host"])
    assert sig["mem_r"].signature == mem.signature.members["r_host"].signature.flip()
    assert sig["mem_w"].signature == mem.signature.members["w_host"].signature.flip()
    ports = [v for _, _, v in host.signature.flatten(host) if isinstance(v, Signal)]
    assert "module host_port" in verilog.convert(host, name="host_port", emit_src=False, ports=ports)


def test_parameter_errors():
    with pytest.raises(TypeError, match="CoreConfig"):
        HostPort("tiny")
    with pytest.raises(ValueError, match="array_n 256"):
        HostPort(CoreConfig("big", mem_bytes=64, array_n=256))
    with pytest.raises(ValueError, match="below the registers"):
        HostPort(CoreConfig("huge", mem_bytes=1 << 32))
