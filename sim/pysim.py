"""Run an image on the RTL core in Amaranth's simulator (pysim).

The data memory is preloaded from the image; key presets, the start address and
the start command go through the Wishbone host port, as a host would send them.
Every cycle the harness records the retire port and the write monitor; after the
core stops it reads the memory back and the key tables through the host port.
"""

import time

import numpy as np
from amaranth.hdl import ClockDomain, Module
from amaranth.sim import Simulator

from xdsa.golden.image import ImageError
from xdsa.golden.isa import Fault
from xdsa.hw.core import Core, StopReason
from xdsa.hw.hostport import Reg

from .trace import TraceEntry, RunOutcome, ranges_from_rows
from .wishbone import wb_read, wb_write

__all__ = ["run_pysim", "load_image_memory"]

_REASON = {StopReason.END: "end", StopReason.EXIT: "exit", StopReason.FAULT: "fault"}


def load_image_memory(image, config) -> bytes:
    try:
        return bytes(image.memory(config.mem_bytes))
    except ImageError as e:
        raise ImageError(f"the image does not fit the {config.name} configuration: {e}") from None


async def load_keys_and_start(ctx, bus, image):
    """Preset the key tables and start the core at the image's start address."""
    words = {}
    for (t, i), n in image.keys.items():
        addr = Reg.KEYS + 256 * t + i
        words.setdefault(addr & ~3, {})[addr & 3] = n
    for addr, lanes in sorted(words.items()):
        value = sum(v << (8 * lane) for lane, v in lanes.items())
        sel = sum(1 << lane for lane in lanes)
        await wb_write(ctx, bus, addr, value, sel)
    await wb_write(ctx, bus, Reg.START, image.start & 0xFFFF_FFFF)
    await wb_write(ctx, bus, Reg.START + 4, image.start >> 32)
    await wb_write(ctx, bus, Reg.CTRL, 1)


async def read_keys(ctx, bus):
    keys = np.zeros((4, 256), dtype=np.uint8)
    for w in range(256):
        v = await wb_read(ctx, bus, Reg.KEYS + 4 * w)
        for lane in range(4):
            k = 4 * w + lane
            keys[k // 256, k % 256] = (v >> (8 * lane)) & 0xFF
    return keys


def run_pysim(image, config, *, max_cycles=200_000, key_timeout=None, vcd=None, read_keys_back=True,
              resets_at=()):
    """Run `image` on a `Core(config)` in pysim; returns a RunOutcome.

    `resets_at` tests the reset: for each ``t`` in it the image is started and the
    ``sync`` domain's reset is asserted for one cycle ``t`` cycles later (the memory
    keeps what the interrupted run wrote, registers without a reset keep their
    values); the run that is recorded is the one after the last reset."""
    mem_init = load_image_memory(image, config)
    core = Core(config, mem_init=mem_init, key_timeout=key_timeout, checks=True)
    top = core
    if resets_at:
        top = Module()
        top.domains.sync = cd_sync = ClockDomain("sync")
        top.submodules.core = core
    out = {}

    async def bench(ctx):
        for did in config.domains:                 # the domain ports accept at once
            ctx.set(getattr(core, f"domain_{did:02x}").ready, 1)
        for t in resets_at:
            await load_keys_and_start(ctx, core.wb, image)
            if t:
                await ctx.tick().repeat(t)
            ctx.set(cd_sync.rst, 1)
            await ctx.tick()
            ctx.set(cd_sync.rst, 0)
        await load_keys_and_start(ctx, core.wb, image)
        t0 = time.perf_counter()
        trace, rows, cycles = [], [], 0
        while cycles < max_cycles:
            if ctx.get(core.trace_wr_valid):
                rows.append((ctx.get(core.trace_wr_row), ctx.get(core.trace_wr_be)))
            if ctx.get(core.retire_valid):
                r = ctx.get(core.retire)
                trace.append(TraceEntry(
                    index=r.index, pc=r.pc, did=r.did if r.did_valid else None,
                    section=r.section if r.unity else None, op_code=r.op_code if r.unity else None,
                    fault=Fault(r.fault), writes=ranges_from_rows(rows, config.row_bytes)))
                rows = []
            if ctx.get(core.stopped):
                break
            await ctx.tick()
            cycles += 1
        out["trace"], out["cycles"], out["run_seconds"] = trace, cycles, time.perf_counter() - t0
        stopped = ctx.get(core.stopped)
        status = await wb_read(ctx, core.wb, Reg.STATUS)
        reason = (status >> 8) & 3
        out["status"] = _REASON.get(reason, "limit") if stopped else "limit"
        out["fault"] = Fault(await wb_read(ctx, core.wb, Reg.FAULT))
        lo = await wb_read(ctx, core.wb, Reg.FAULT_PC)
        hi = await wb_read(ctx, core.wb, Reg.FAULT_PC + 4)
        out["fault_pc"] = (hi << 32 | lo) if out["status"] == "fault" else None
        if read_keys_back:
            out["keys"] = await read_keys(ctx, core.wb)
        data = core.memory_data
        row_bytes = config.row_bytes
        mem = bytearray(config.mem_bytes)
        for i in range(config.rows):
            mem[i * row_bytes:(i + 1) * row_bytes] = int(ctx.get(data[i])).to_bytes(row_bytes, "little")
        out["memory"] = bytes(mem)

    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    if vcd:
        with sim.write_vcd(vcd):
            sim.run()
    else:
        sim.run()
    keys = out.get("keys")
    return RunOutcome(out["status"], out["fault"], out["fault_pc"], out["trace"], out["memory"],
                      keys=None if keys is None else keys.ravel().tolist(), cycles=out["cycles"],
                      backend="pysim", run_seconds=out["run_seconds"])
