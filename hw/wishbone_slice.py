"""A register slice on a Wishbone B4 classic bus (`hw.hostport.WishboneSignature`):
every signal that crosses it, both ways, leaves a flip-flop of the slice, so no
path runs from the master's registers to the slave's logic or back in one cycle.

`WishboneSlice()`: ``up`` faces the master (a slave port), ``down`` the slave (a
master port). An access that the master presents (``cyc & stb``, without ``ack``)
is copied into the slice's registers, which drive ``down`` from the next cycle until
the slave's ``ack``; the slave's ``dat_r`` is registered with its ``ack``, and
``up.ack`` is high for one cycle, a cycle later. The slice holds ``adr``, ``we``,
``dat_w`` and ``sel`` until ``down.ack`` and drops ``down.stb`` in the cycle after
it, so the slave sees each access once (B4 classic, as the host port expects:
`hw.hostport`).

Latency: counting the cycle in which the master first presents the access as 0, the
slave sees it from cycle 1; if the slave acks in its cycle a (cycle 1 + a), the
master sees ``ack`` in cycle 2 + a: two cycles more than without the slice.
Throughput: one access at a time; the master may present the next one in the cycle
after its ``ack`` (it is taken then).

Why: in the board tops the UART bridge sits by its pins, and its address register
reached the host port's decoding and read multiplexer across the die (the placed
`base`'s bridge address -> host port read data, 16.7 ns, 14.5 of it wire, session
51). The bridge's accesses are bounded by the serial line (thousands of cycles per
word), so two cycles more cost nothing.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .hostport import WishboneSignature

__all__ = ["WishboneSlice"]


class WishboneSlice(wiring.Component):
    up: In(WishboneSignature())
    down: Out(WishboneSignature())

    def elaborate(self, platform):
        m = Module()
        up, down = self.up, self.down
        # the access's fields and read data are data: read only under `down.stb` and
        # `up.ack`, which keep their reset
        adr = Signal.like(up.adr, reset_less=True)
        we = Signal(reset_less=True)
        dat_w = Signal.like(up.dat_w, reset_less=True)
        sel = Signal.like(up.sel, reset_less=True)
        dat_r = Signal.like(up.dat_r, reset_less=True)
        active = Signal()               # an access is on `down`
        ack = Signal()
        m.d.comb += [down.cyc.eq(active), down.stb.eq(active), down.adr.eq(adr), down.we.eq(we),
                     down.dat_w.eq(dat_w), down.sel.eq(sel), up.ack.eq(ack), up.dat_r.eq(dat_r)]

        m.d.sync += ack.eq(0)
        with m.If(~active):
            # taken in its first cycle (the master holds it until `ack`, which excludes
            # the cycle of the previous access's `ack`)
            with m.If(up.cyc & up.stb & ~ack):
                m.d.sync += [active.eq(1), adr.eq(up.adr), we.eq(up.we), dat_w.eq(up.dat_w), sel.eq(up.sel)]
        with m.Elif(down.ack):
            m.d.sync += [active.eq(0), ack.eq(1), dat_r.eq(down.dat_r)]
        return m
