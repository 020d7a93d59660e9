"""The sync unit: the four key tables and the key fetch / deposit of Unity
instructions (docs/isa-decisions.md D-SYNC, D-KEYS; docs/architecture.md, steps 4
and 8 of the execution model).

Storage is one 1024 x 8-bit `Memory` (4 tables x 256 entries, address
``table * 256 + index``), so it maps to a block RAM; every counter starts at 0 and
reset does not touch it. Every operation is a read-modify-write through a
three-stage pipeline:

* stage 0 (the cycle a request is granted): the entry's address goes to the
  memory's synchronous read port;
* stage 1 (the next cycle): the count arrives from the memory and is registered,
  so that no block RAM output reaches the compare and the write data in the same
  cycle (a long path in the placed `base`, session 46);
* stage 2: the new count is computed from that register and written back, and
  the answer is registered on the port's response stream.

An operation's read sees every write but the one of stage 2 in the cycle after it
(the read port is transparent for the write port, which covers the write of its
own cycle); stage 1 takes that count from the write port instead when the entries
match. So the operations take effect one at a time, in stage-2 order, exactly as
the golden model applies them, while one is granted every cycle.

Ports:

* ``fetch`` / ``fetch_done`` (core): wait until the entry holds at least ``n``
  keys, then subtract ``n`` and answer fault 0. A request is taken into a wait
  register at once (``fetch.ready`` only depends on the previous fetch having been
  answered) and the entry is polled — in the acceptance cycle, then every third
  cycle — until a poll sees enough keys. A poll is granted ahead of the other
  ports but only when no other poll is in the pipeline, so host requests and
  deposits proceed while a fetch waits and a host deposit or write made during
  the wait is seen by the next poll. Polls stop when the deadline is within 2
  cycles; if no poll has succeeded ``key_timeout`` cycles after the acceptance
  cycle, the fetch answers ``KEY_TIMEOUT`` and consumes nothing.
* ``deposit`` / ``deposit_done`` (core): add one key and answer 0; an entry that
  already holds 255 keys is left unchanged and the answer is ``KEY_OVERFLOW``.
* ``host`` / ``host_rsp`` (host port, the KEYS and KEY_DEPOSIT registers): one
  response per request. READ answers the count; WRITE sets it to ``value`` and
  answers the previous count (the host port ignores it); DEPOSIT adds one key,
  saturating at 255 without a fault, and answers the new count. Op code 3 is
  treated as READ.
* ``clear`` (the core's CTRL.clear pulse) zeroes nothing: the key tables are the
  host's to set, by writing them. It is accepted so that every unit has the same
  control inputs and has no effect.

Latency and throughput (cycle 0 is the cycle in which the request transfers):

* a fetch that finds its keys at once, a deposit, a host access: the answer is
  valid in cycle 3 (3 cycles); the entry is written at the end of cycle 2;
* a waiting fetch's answer is valid at most 3 cycles after the deposit or write
  that supplied the last key took effect (the polls take every third grant);
* a fetch that times out answers in cycle ``key_timeout + 1`` (``key_timeout``
  cycles after the acceptance edge); with ``key_timeout`` = 1 in cycle 3, when
  the acceptance poll is decided;
* the memory performs one operation per cycle over all ports; each port has one
  request in the pipeline and takes its next request when it has left stage 2
  and its answer is taken, so one operation every 3 cycles per port when the
  answers are taken at once. Between a deposit and a host request competing for
  the memory the grant alternates; a waiting fetch's polls take every third
  cycle.
"""

from amaranth.hdl import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from xdsa.golden.isa import Fault

from .bus import FAULT_BITS, KeyDeposit, KeyFetch, KeyHostOp, KeyHostReq, KeyHostRsp

__all__ = ["SyncUnit", "KeyDone", "KEY_TABLES", "KEY_ENTRIES", "KEY_MAX"]

KEY_TABLES, KEY_ENTRIES, KEY_MAX = 4, 256, 255

# The answer to a key fetch or deposit: 0, KEY_TIMEOUT or KEY_OVERFLOW.
KeyDone = data.StructLayout({"fault": unsigned(FAULT_BITS)})

# Who owns the memory pipeline's stage 1.
_NONE, _FETCH, _DEPOSIT, _HOST = range(4)


class SyncUnit(wiring.Component):
    """Key tables with key fetch (waiting, with timeout), key deposit and host access.

    Parameters
    ----------
    config : CoreConfig
        The core configuration.
    key_timeout : int or None
        Cycles a key fetch may wait before it answers KEY_TIMEOUT; ``None`` takes
        ``config.key_timeout``.
    """

    def __init__(self, config, *, key_timeout=None):
        if key_timeout is None:
            key_timeout = config.key_timeout
        if not isinstance(key_timeout, int) or isinstance(key_timeout, bool):
            raise TypeError(f"key_timeout must be an integer number of cycles, not {key_timeout!r}")
        if key_timeout < 1:
            raise ValueError(f"key_timeout must be at least 1 cycle, not {key_timeout!r}")
        self._config = config
        self._key_timeout = key_timeout
        super().__init__({
            "fetch": In(stream.Signature(KeyFetch)),
            "fetch_done": Out(stream.Signature(KeyDone)),
            "deposit": In(stream.Signature(KeyDeposit)),
            "deposit_done": Out(stream.Signature(KeyDone)),
            "host": In(stream.Signature(KeyHostReq)),
            "host_rsp": Out(stream.Signature(KeyHostRsp)),
            "clear": In(1),
        })

    @property
    def config(self):
        return self._config

    @property
    def key_timeout(self) -> int:
        return self._key_timeout

    def elaborate(self, platform):
        m = Module()

        m.submodules.keys = keys = Memory(shape=unsigned(8), depth=KEY_TABLES * KEY_ENTRIES, init=[])
        wr = keys.write_port()
        rd = keys.read_port(transparent_for=(wr,))

        def entry(p):
            return Cat(p.index, p.table)

        # --- response registers: cleared when taken, set by stage 1 below ----------
        for rsp in (self.fetch_done, self.deposit_done, self.host_rsp):
            with m.If(rsp.ready):
                m.d.sync += rsp.valid.eq(0)
        fetch_free = ~self.fetch_done.valid | self.fetch_done.ready
        deposit_free = ~self.deposit_done.valid | self.deposit_done.ready
        host_free = ~self.host_rsp.valid | self.host_rsp.ready

        # --- the waiting fetch -----------------------------------------------------
        waiting = Signal()                                   # a fetch was accepted, not yet answered
        w_entry = Signal(10)
        w_n = Signal.like(self.fetch.payload.n)
        timer = Signal(range(self._key_timeout + 1))         # cycles since the acceptance cycle
        expired = Signal()
        m.d.comb += expired.eq(timer >= self._key_timeout)
        with m.If(waiting & ~expired):
            m.d.sync += timer.eq(timer + 1)
        # A poll granted while timer <= key_timeout - 2 is decided by the deadline. The
        # verdict is a register loaded with the next timer's (the timer's compare -> the
        # grant -> the host port's ready, 94 tiles away, was 15.9 ns in the placed `base`,
        # session 50).
        T = self._key_timeout
        poll_open = Signal(init=2 <= T)
        timer_step = waiting & ~expired
        new_fetch = Signal()
        m.d.sync += poll_open.eq(Mux(new_fetch, 3 <= T, Mux(timer_step, timer + 3 <= T, timer + 2 <= T)))

        # --- stage 1 and stage 2 registers -----------------------------------------
        s1, s2 = (Signal(range(4), name=f"s{k}") for k in (1, 2))     # _NONE/_FETCH/_DEPOSIT/_HOST
        s1_entry, s2_entry = (Signal(10, name=f"s{k}_entry") for k in (1, 2))
        s1_op, s2_op = (Signal(2, name=f"s{k}_op") for k in (1, 2))
        s1_value, s2_value = (Signal(8, name=f"s{k}_value") for k in (1, 2))
        count = Signal(8)                                    # stage 2's count (forwarded)

        def owns(unit):
            return (s1 == unit) | (s2 == unit)

        # --- stage 0: accept and arbitrate -----------------------------------------
        m.d.comb += self.fetch.ready.eq(~waiting & fetch_free)
        m.d.comb += new_fetch.eq(self.fetch.valid & self.fetch.ready)
        with m.If(new_fetch):
            m.d.sync += [waiting.eq(1), w_entry.eq(entry(self.fetch.payload)),
                         w_n.eq(self.fetch.payload.n), timer.eq(1)]
        poll = new_fetch | (waiting & poll_open & ~owns(_FETCH))
        want_deposit = self.deposit.valid & ~owns(_DEPOSIT) & deposit_free
        want_host = self.host.valid & ~owns(_HOST) & host_free
        prefer_host = Signal()                               # alternates deposit / host

        grant = Signal(range(4))
        with m.If(poll):
            m.d.comb += [grant.eq(_FETCH), rd.addr.eq(Mux(waiting, w_entry, entry(self.fetch.payload)))]
        with m.Elif(want_deposit & ~(want_host & prefer_host)):
            m.d.comb += [grant.eq(_DEPOSIT), rd.addr.eq(entry(self.deposit.payload)),
                         self.deposit.ready.eq(1)]
            m.d.sync += prefer_host.eq(1)
        with m.Elif(want_host):
            m.d.comb += [grant.eq(_HOST), rd.addr.eq(entry(self.host.payload)), self.host.ready.eq(1)]
            m.d.sync += prefer_host.eq(0)
        m.d.sync += [s1.eq(grant), s1_entry.eq(rd.addr),
                     s1_op.eq(self.host.payload.op), s1_value.eq(self.host.payload.value)]

        # --- stage 1: the count is on rd.data; register it -------------------------
        # The read missed only stage 2's write of this cycle (an older write reached
        # the memory; the one of the read's own cycle was forwarded by the port).
        same_entry = Signal()
        m.d.comb += same_entry.eq(s1_entry == s2_entry)
        m.d.sync += [s2.eq(s1), s2_entry.eq(s1_entry), s2_op.eq(s1_op), s2_value.eq(s1_value),
                     count.eq(Mux(wr.en & same_entry, wr.data, rd.data))]

        # --- stage 2: write back and answer ----------------------------------------
        m.d.comb += wr.addr.eq(s2_entry)
        enough = Signal()
        m.d.comb += enough.eq(count >= w_n)
        with m.Switch(s2):
            with m.Case(_FETCH):
                with m.If(enough):
                    m.d.comb += [wr.data.eq(count - w_n), wr.en.eq(1)]
                    m.d.sync += [waiting.eq(0), self.fetch_done.valid.eq(1),
                                 self.fetch_done.payload.fault.eq(0)]
            with m.Case(_DEPOSIT):
                m.d.sync += self.deposit_done.valid.eq(1)
                with m.If(count == KEY_MAX):
                    m.d.sync += self.deposit_done.payload.fault.eq(Fault.KEY_OVERFLOW.value)
                with m.Else():
                    m.d.comb += [wr.data.eq(count + 1), wr.en.eq(1)]
                    m.d.sync += self.deposit_done.payload.fault.eq(0)
            with m.Case(_HOST):
                m.d.sync += [self.host_rsp.valid.eq(1), self.host_rsp.payload.value.eq(count)]
                with m.Switch(s2_op):
                    with m.Case(KeyHostOp.WRITE):
                        m.d.comb += [wr.data.eq(s2_value), wr.en.eq(1)]
                    with m.Case(KeyHostOp.DEPOSIT):
                        new = Mux(count == KEY_MAX, KEY_MAX, count + 1)
                        m.d.comb += [wr.data.eq(new), wr.en.eq(1)]
                        m.d.sync += self.host_rsp.payload.value.eq(new)
        # No poll found the keys by the deadline (a poll in flight is decided first).
        timeout = Signal()
        m.d.comb += timeout.eq(waiting & expired & (s1 != _FETCH) & ((s2 != _FETCH) | ~enough))
        with m.If(timeout):
            m.d.sync += [waiting.eq(0), self.fetch_done.valid.eq(1),
                         self.fetch_done.payload.fault.eq(Fault.KEY_TIMEOUT.value)]

        return m
