"""A two-entry queue in registers, for cutting a combinational path between a
producer and a consumer without losing throughput.

`RegQueue(shape)`: ``w_valid``/``w_ready``/``w_data`` in, ``r_valid``/``r_ready``/
``r_data`` out, in order. ``w_ready`` is "not full" and ``r_valid`` "not empty",
both from the queue's own count register, and ``r_data`` comes from a register
(a 2:1 multiplexer), so no path runs from one side to the other. ``flush`` empties
the queue (a write in the same cycle is dropped).

Latency: an entry written in cycle t can be read in cycle t + 1. Throughput: one
entry per cycle (with one entry queued, a read and a write in the same cycle keep
it at one).
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["RegQueue"]


class RegQueue(wiring.Component):
    def __init__(self, shape):
        super().__init__({
            "w_valid": In(1), "w_ready": Out(1), "w_data": In(shape),
            "r_valid": Out(1), "r_ready": In(1), "r_data": Out(shape),
            "flush": In(1),
            "empty": Out(1),
        })
        self._shape = shape

    def elaborate(self, platform):
        m = Module()
        slots = [Signal(self._shape, name=f"slot{i}") for i in range(2)]
        head = Signal()                             # the oldest entry's slot
        count = Signal(range(3))
        push = Signal()
        pop = Signal()
        m.d.comb += [
            self.w_ready.eq(count != 2), self.r_valid.eq(count != 0), self.empty.eq(count == 0),
            self.r_data.eq(Mux(head, slots[1], slots[0])),
            push.eq(self.w_valid & self.w_ready & ~self.flush),
            pop.eq(self.r_valid & self.r_ready),
        ]
        tail = head ^ (count == 1)
        with m.If(push):
            with m.If(tail):
                m.d.sync += slots[1].eq(self.w_data)
            with m.Else():
                m.d.sync += slots[0].eq(self.w_data)
        with m.If(self.flush):
            m.d.sync += [count.eq(0), head.eq(0)]
        with m.Else():
            m.d.sync += count.eq(count + push - pop)
            with m.If(pop):
                m.d.sync += head.eq(~head)
        return m
