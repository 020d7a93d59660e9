"""A small queue in registers, for cutting a combinational path between a
producer and a consumer without losing throughput.

`RegQueue(shape, depth=2)`: ``w_valid``/``w_ready``/``w_data`` in, ``r_valid``/
``r_ready``/``r_data`` out, in order. ``w_ready`` is "not full", ``r_valid`` "not
empty" and ``count`` the number of entries, all from the queue's own count
register, and ``r_data`` is a register (the entries move up as the oldest
leaves), so no path runs from one side to the other. ``flush`` empties the queue (a write in the
same cycle is dropped).

``ring=True``: the entries stay in the slot they were written to and ``r_data``
is a multiplexer on a read-pointer register, so ``r_ready`` drives only the
pointer and the count, not the entries' enables (a consumer whose ready comes
late in the cycle, such as a matrix gather's, then has a short path into the
queue), at the cost of a multiplexer on the data.

Latency: an entry written in cycle t can be read in cycle t + 1. Throughput: one
entry per cycle (with one entry queued, a read and a write in the same cycle keep
it at one).

``w_ready_next`` is ``w_ready`` of the next cycle (from this cycle's push, pop and
flush), for a caller that keeps its own registered copies of it; ``r_data_next``
(not with ``ring``) is the head's next value, for a caller that keeps its own copy
of the head (`hw.replicate.replicas`) beside the logic it feeds.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["RegQueue"]


class RegQueue(wiring.Component):
    def __init__(self, shape, depth=2, *, ring=False):
        if not isinstance(depth, int) or depth < 2:
            raise ValueError(f"a RegQueue holds at least 2 entries, not {depth!r}")
        super().__init__({
            "w_valid": In(1), "w_ready": Out(1), "w_data": In(shape),
            "r_valid": Out(1), "r_ready": In(1), "r_data": Out(shape),
            "flush": In(1),
            "empty": Out(1), "count": Out(range(depth + 1)),
            "w_ready_next": Out(1), "r_data_next": Out(shape),
        })
        self._shape = shape
        self.depth = depth
        self.ring = ring

    def elaborate(self, platform):
        m = Module()
        n = self.depth
        # data: an entry is read only while `count` (reset) says it is occupied
        slots = [Signal(self._shape, name=f"slot{i}", reset_less=True) for i in range(n)]     # slot 0: the oldest
        count = Signal(range(n + 1))
        push = Signal()
        pop = Signal()
        m.d.comb += [
            self.count.eq(count),
            self.w_ready.eq(count != n), self.r_valid.eq(count != 0), self.empty.eq(count == 0),
            push.eq(self.w_valid & self.w_ready & ~self.flush),
            pop.eq(self.r_valid & self.r_ready),
        ]
        count_next = Signal(range(n + 1))
        m.d.comb += [count_next.eq(Mux(self.flush, 0, count + push - pop)), self.w_ready_next.eq(count_next != n)]
        m.d.sync += count.eq(count_next)
        if self.ring:
            # write and read pointers: a slot is written only by a push
            wp, rp = Signal(range(n), name="wp"), Signal(range(n), name="rp")
            with m.Switch(rp):
                for i in range(n):
                    with m.Case(i):
                        m.d.comb += self.r_data.eq(slots[i])
            with m.If(push):
                for i in range(n):
                    with m.If(wp == i):
                        m.d.sync += slots[i].eq(self.w_data)
                m.d.sync += wp.eq(Mux(wp == n - 1, 0, wp + 1))
            with m.If(pop):
                m.d.sync += rp.eq(Mux(rp == n - 1, 0, rp + 1))
            with m.If(self.flush):
                m.d.sync += [wp.eq(0), rp.eq(0)]
            return m
        m.d.comb += self.r_data.eq(slots[0])
        # the entries move towards slot 0 as the oldest leaves, so the head is read from a
        # register without a multiplexer
        for i in range(n):
            nxt = Signal(self._shape, name=f"slot{i}_next")
            m.d.comb += nxt.eq(slots[i])
            with m.If(pop):
                with m.If(push & (count == i + 1)):
                    m.d.comb += nxt.eq(self.w_data)
                if i + 1 < n:
                    with m.Elif(count > i + 1):
                        m.d.comb += nxt.eq(slots[i + 1])
            with m.Elif(push & (count == i)):
                m.d.comb += nxt.eq(self.w_data)
            m.d.sync += slots[i].eq(nxt)
            if i == 0:
                m.d.comb += self.r_data_next.eq(nxt)
        return m
