"""A Wishbone B4 classic bus master for Amaranth testbenches (the host's side of
`hw.hostport.HostPort`): single 32-bit reads and writes, one at a time."""

__all__ = ["wb_write", "wb_read", "wb_access"]

TIMEOUT = 1000


async def wb_access(ctx, bus, addr, we, value=0, sel=0xF):
    """One access (``we``: a write of ``value``); returns ``(c, dat_r)``: ``ack`` was high
    in cycle ``c``, cycle 0 being the first in which the access is presented."""
    ctx.set(bus.cyc, 1)
    ctx.set(bus.stb, 1)
    ctx.set(bus.we, we)
    ctx.set(bus.adr, addr >> 2)
    ctx.set(bus.dat_w, value)
    ctx.set(bus.sel, sel)
    for cycle in range(1, TIMEOUT + 1):
        await ctx.tick()
        if ctx.get(bus.ack):
            data = ctx.get(bus.dat_r)
            ctx.set(bus.cyc, 0)
            ctx.set(bus.stb, 0)
            ctx.set(bus.we, 0)
            return cycle, data
    raise TimeoutError(f"no Wishbone ack for {'write' if we else 'read'} at {addr:#x}")


async def wb_write(ctx, bus, addr, value, sel=0xF):
    await wb_access(ctx, bus, addr, 1, value, sel)


async def wb_read(ctx, bus, addr):
    return (await wb_access(ctx, bus, addr, 0))[1]
