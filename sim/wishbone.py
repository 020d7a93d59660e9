"""A Wishbone B4 classic bus master for Amaranth testbenches (the host's side of
`hw.hostport.HostPort`): single 32-bit reads and writes, one at a time."""

__all__ = ["wb_write", "wb_read"]

TIMEOUT = 1000


async def _cycle(ctx, bus, addr, we, value=0, sel=0xF):
    ctx.set(bus.cyc, 1)
    ctx.set(bus.stb, 1)
    ctx.set(bus.we, we)
    ctx.set(bus.adr, addr >> 2)
    ctx.set(bus.dat_w, value)
    ctx.set(bus.sel, sel)
    for _ in range(TIMEOUT):
        await ctx.tick()
        if ctx.get(bus.ack):
            data = ctx.get(bus.dat_r)
            ctx.set(bus.cyc, 0)
            ctx.set(bus.stb, 0)
            ctx.set(bus.we, 0)
            return data
    raise TimeoutError(f"no Wishbone ack for {'write' if we else 'read'} at {addr:#x}")


async def wb_write(ctx, bus, addr, value, sel=0xF):
    await _cycle(ctx, bus, addr, 1, value, sel)


async def wb_read(ctx, bus, addr):
    return await _cycle(ctx, bus, addr, 0)
