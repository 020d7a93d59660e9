"""A small queue in registers, for cutting a combinational path between a
producer and a consumer without losing throughput.

`RegQueue(shape, depth=2)`: ``w_valid``/``w_ready``/``w_data`` in, ``r_valid``/
``r_ready``/``r_data`` out, in order. ``w_ready`` is "not full", ``r_valid`` "not
empty" and ``count`` the number of entries, all from the queue's own count
register, and ``r_data`` comes from a register (a `depth`:1 multiplexer), so no
path runs from one side to the other. ``flush`` empties the queue (a write in the
same cycle is dropped).

Latency: an entry written in cycle t can be read in cycle t + 1. Throughput: one
entry per cycle (with one entry queued, a read and a write in the same cycle keep
it at one).
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["RegQueue"]


class RegQueue(wiring.Component):
    def __init__(self, shape, depth=2):
        if not isinstance(depth, int) or depth < 2:
            raise ValueError(f"a RegQueue holds at least 2 entries, not {depth!r}")
        super().__init__({
            "w_valid": In(1), "w_ready": Out(1), "w_data": In(shape),
            "r_valid": Out(1), "r_ready": In(1), "r_data": Out(shape),
            "flush": In(1),
            "empty": Out(1), "count": Out(range(depth + 1)),
        })
        self._shape = shape
        self.depth = depth

    def elaborate(self, platform):
        m = Module()
        n = self.depth
        slots = [Signal(self._shape, name=f"slot{i}") for i in range(n)]
        head = Signal(range(n))                     # the oldest entry's slot
        count = Signal(range(n + 1))
        push = Signal()
        pop = Signal()
        m.d.comb += [
            self.count.eq(count),
            self.w_ready.eq(count != n), self.r_valid.eq(count != 0), self.empty.eq(count == 0),
            push.eq(self.w_valid & self.w_ready & ~self.flush),
            pop.eq(self.r_valid & self.r_ready),
        ]
        with m.Switch(head):
            for i in range(n):
                with m.Case(i):
                    m.d.comb += self.r_data.eq(slots[i])
        tail = Signal(range(n))                     # (head + count) mod depth
        m.d.comb += tail.eq(head + count - n * (head + count >= n))
        with m.If(push):
            with m.Switch(tail):
                for i in range(n):
                    with m.Case(i):
                        m.d.sync += slots[i].eq(self.w_data)
        with m.If(self.flush):
            m.d.sync += [count.eq(0), head.eq(0)]
        with m.Else():
            m.d.sync += count.eq(count + push - pop)
            with m.If(pop):
                m.d.sync += head.eq(Mux(head == n - 1, 0, head + 1))
        return m
