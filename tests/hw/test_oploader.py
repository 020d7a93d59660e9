# amaranth: UnusedElaboratable=no
"""The operand-table loader (hw/oploader.py) against a byte-level model of memory.

A behavioural memory answers each accepted row request exactly `mem_latency` cycles
later (1 or 2) and stalls requests at random; the response side stalls at random
too. Checked: the
table bits, the fault, the exact rows read (none for a fault or an empty table),
and the latency and throughput of the docstring when nothing stalls.
"""

import random

import pytest
from amaranth.back import verilog
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from xdsa.golden import isa
from xdsa.golden.isa import Fault
from xdsa.hw.config import CoreConfig
from xdsa.hw.fields import table_bits
from xdsa.hw.oploader import OperandLoader, past_end

MAX_TABLE_BITS = table_bits(isa.OPCODES)         # the widest table of the ISA (any AS)
A64 = 1 << 64


def model(mem, addr, nbytes, max_table_bits):
    """(table, fault) the loader must answer."""
    if nbytes and addr + nbytes > len(mem):
        return 0, Fault.OPTABLE_RANGE
    return int.from_bytes(mem[addr:addr + nbytes], "little") & ((1 << max_table_bits) - 1), 0


def boundary_cmds(mem_bytes, tbytes):
    """Tables touching the last byte, one byte past it, far away and wrapping near 2**64."""
    out = []
    for n in sorted({1, 2, 3, 7, 8, 9, 31, 33, min(tbytes, 255), 255}):
        out += [(mem_bytes - n, n),                  # ends at the last byte: legal
                (mem_bytes - n + 1, n),              # one byte past the end
                (mem_bytes, n), (mem_bytes + 1, n), (mem_bytes - 1, n),
                (mem_bytes + 300, n),                # addr // 256 above the end's
                (A64 - 1, n), (A64 - n, n),          # addr + nbytes = 2**64 exactly
                (A64 - n + 1, n),                    # wraps to 1 in 64 bits
                (A64 - mem_bytes, n), (1 << 63, n), (1 << mem_bytes.bit_length(), n),
                ((1 << 32) + 5, n)]
    out += [(0, 0), (mem_bytes - 1, 0), (mem_bytes, 0), (mem_bytes + 1, 0), (A64 - 1, 0), (0, 255)]
    return [(a, n) for a, n in out if 0 <= a < A64]


def random_cmds(rng, mem_bytes, tbytes, count):
    out = []
    for _ in range(count):
        n = rng.choice([rng.randint(1, tbytes), rng.randint(1, min(tbytes, 8)), rng.randint(0, 255)])
        n = min(n, mem_bytes)
        out.append((rng.randint(0, mem_bytes - n), n))
    return out


def run(dut, mem, cmds, *, p_mem=0.6, p_rsp=0.6, gap=3, seed=0):
    """Feed `cmds`; returns (responses, rows read, (cmd tick, rsp tick) per command)."""
    rng = random.Random(seed)
    rb = dut.config.row_bytes
    rows = [int.from_bytes(mem[i:i + rb], "little") for i in range(0, len(mem), rb)]
    reads, got, ticks = [], [], []

    async def memory(ctx):
        # the responses of the transfers of the last `mem_latency` - 1 cycles, oldest first
        in_flight = [(0, 0)] * (dut.config.mem_latency - 1)
        async for _, _, valid, ready, row in ctx.tick().sample(dut.mem.req.valid, dut.mem.req.ready,
                                                                  dut.mem.req.payload):
            if valid and ready:
                assert row < len(rows), f"request for row {row} beyond the {len(rows)}-row memory"
                reads.append(row)
            in_flight.append((valid and ready, rows[row] if valid and ready else 0))
            rsp_valid, rsp_data = in_flight.pop(0)
            ctx.set(dut.mem.rsp.payload, rsp_data)
            ctx.set(dut.mem.rsp.valid, rsp_valid)
            ctx.set(dut.mem.req.ready, rng.random() < p_mem)

    async def producer(ctx):
        t = 0
        for addr, nbytes in cmds:
            for _ in range(rng.randrange(gap + 1)):
                await ctx.tick()
                t += 1
            ctx.set(dut.cmd.payload.addr, addr)
            ctx.set(dut.cmd.payload.nbytes, nbytes)
            ctx.set(dut.cmd.valid, 1)
            for _ in range(10_000):
                _, _, ready = await ctx.tick().sample(dut.cmd.ready)
                t += 1
                if ready:
                    break
            else:
                raise AssertionError(f"cmd ({addr:#x}, {nbytes}) not accepted")
            ticks.append(t)
            ctx.set(dut.cmd.valid, 0)

    async def consumer(ctx):
        t = 0
        while len(got) < len(cmds):
            ctx.set(dut.rsp.ready, rng.random() < p_rsp)
            _, _, valid, ready, table, fault = await ctx.tick().sample(
                dut.rsp.valid, dut.rsp.ready, dut.rsp.payload.table, dut.rsp.payload.fault)
            t += 1
            assert t < 100 * (len(cmds) + 10), "the loader stopped answering"
            if valid and ready:
                got.append((table, fault))
                ticks[len(got) - 1] = (ticks[len(got) - 1], t)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_process(memory)
    sim.add_testbench(producer)
    sim.add_testbench(consumer)
    sim.run()
    return got, reads, ticks


def check(dut, mem, cmds, **kw):
    got, reads, ticks = run(dut, mem, cmds, **kw)
    assert len(got) == len(cmds)
    for (addr, nbytes), (table, fault) in zip(cmds, got):
        want = model(mem, addr, nbytes, dut.max_table_bits)
        assert (table, fault) == want, (f"addr {addr:#x} nbytes {nbytes}: got table {table:#x} fault {fault}, "
                                        f"expected table {want[0]:#x} fault {want[1]}")
    assert reads == [r for a, n in cmds for r in dut.rows_read(a, n)], "rows read differ from the table's rows"
    return ticks


def memory_of(mem_bytes, seed):
    return random.Random(seed).randbytes(mem_bytes)


@pytest.mark.parametrize("row_bytes, mem_bytes, max_table_bits", [
    (8, 256, MAX_TABLE_BITS), (16, 512, MAX_TABLE_BITS), (32, 1024, MAX_TABLE_BITS),
    (8, 8 * 37, MAX_TABLE_BITS),            # a row count that is not a power of two
    (32, 32 * 5, MAX_TABLE_BITS),           # a memory smaller than some tables
    (16, 256, 20),                          # a narrow port: tables truncated, fewer rows read
    (32, 1024, 1),
])
def test_tables(row_bytes, mem_bytes, max_table_bits):
    cfg = CoreConfig("t", mem_bytes=mem_bytes, row_bytes=row_bytes)
    dut = OperandLoader(cfg, max_table_bits)
    rng = random.Random(row_bytes * 1000 + mem_bytes + max_table_bits)
    tb = dut.table_bytes
    cmds = random_cmds(rng, mem_bytes, tb, 120) + boundary_cmds(mem_bytes, tb)
    rng.shuffle(cmds)
    check(dut, memory_of(mem_bytes, row_bytes), cmds, seed=row_bytes)


@pytest.mark.parametrize("latency", [1, 2])
@pytest.mark.parametrize("row_bytes", [8, 16, 32])
def test_every_offset_and_length(row_bytes, latency):
    """Every start offset within a row x every length up to a row and a bit, and lengths
    around two and three rows; with either memory read latency."""
    mem_bytes = 8 * row_bytes
    dut = OperandLoader(CoreConfig("t", mem_bytes=mem_bytes, row_bytes=row_bytes, mem_latency=latency),
                        MAX_TABLE_BITS)
    cmds = [(row_bytes * 2 + o, n) for o in range(row_bytes)
            for n in [*range(row_bytes + 2), 2 * row_bytes - 1, 2 * row_bytes, 2 * row_bytes + 1, 3 * row_bytes]]
    check(dut, memory_of(mem_bytes, 7), cmds, p_mem=0.8, p_rsp=0.8, gap=0, seed=row_bytes)


@pytest.mark.parametrize("latency", [1, 2])
@pytest.mark.parametrize("row_bytes", [8, 16, 32])
def test_latency_and_throughput(row_bytes, latency):
    """Without stalls: rows + 2 + L cycles per table with the memory read latency L (2
    for a fault, 1 for an empty table), back to back."""
    mem_bytes = 1024
    dut = OperandLoader(CoreConfig("t", mem_bytes=mem_bytes, row_bytes=row_bytes, mem_latency=latency),
                        MAX_TABLE_BITS)
    rng = random.Random(row_bytes)
    cmds = random_cmds(rng, mem_bytes, dut.table_bytes, 40) + [(mem_bytes, 4), (0, 0), (A64 - 1, 2)]
    ticks = check(dut, memory_of(mem_bytes, 1), cmds, p_mem=1, p_rsp=1, gap=0)
    for (addr, nbytes), (t_cmd, t_rsp) in zip(cmds, ticks):
        rows = len(dut.rows_read(addr, nbytes))
        assert t_rsp - t_cmd == (rows + 2 + latency if rows else 1 if nbytes == 0 else 2), (addr, nbytes)
    for (t0, r0), (t1, _) in zip(ticks, ticks[1:]):
        assert t1 == r0, "the next command is taken in the cycle the response transfers"


@pytest.mark.parametrize("mem_bytes", [160, 256, 8 * 37, 1000, 1024, 128 << 10, (128 << 10) + 32 * 5])
def test_past_end(mem_bytes):
    """The range check's end test without a carry chain equals addr + nbytes > mem_bytes
    for every address within 700 bytes of the end (and every hi/lo split around it), the
    highest address it is given, and lengths across the 8-bit range."""
    k = mem_bytes.bit_length()
    addr, nbytes, out = Signal(k), Signal(8), Signal()
    m = Module()
    m.d.comb += out.eq(past_end(addr, nbytes, mem_bytes))
    addrs = sorted({a for a in range(mem_bytes - 700, mem_bytes + 300) if 0 <= a < 1 << k} | {(1 << k) - 1, 0})
    lengths = [0, 1, 2, 3, 100, 127, 128, 129, 200, 254, 255]
    sim = Simulator(m)
    wrong = []

    async def bench(ctx):
        for a in addrs:
            ctx.set(addr, a)
            for n in lengths:
                ctx.set(nbytes, n)
                if ctx.get(out) != (a + n > mem_bytes):
                    wrong.append((a, n))

    sim.add_testbench(bench)
    sim.run()
    assert not wrong, f"past_end differs from addr + nbytes > {mem_bytes} at (addr, nbytes) {wrong[:5]}"


def test_convert():
    dut = OperandLoader(CoreConfig("t", mem_bytes=8 << 10, row_bytes=8), MAX_TABLE_BITS)
    ports = [v for _, _, v in dut.signature.flatten(dut) if isinstance(v, Signal)]   # not rsp.ready = 1
    assert "module oploader" in verilog.convert(dut, name="oploader", emit_src=False, ports=ports)


def test_bad_parameters():
    cfg = CoreConfig("t", mem_bytes=256, row_bytes=8)
    with pytest.raises(TypeError, match="max_table_bits must be a positive integer, not 0"):
        OperandLoader(cfg, 0)
    with pytest.raises(TypeError, match="CoreConfig"):
        OperandLoader("tiny", 8)
