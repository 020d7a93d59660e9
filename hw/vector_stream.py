"""Operand streams of the vector engine: the realigning reader and the row writer.

Both work in *nibbles* (4-bit units), so that int4 operands and odd element counts
need no special path; nibble address ``2 * byte_address (+1 for the high nibble)``.
The datapath width W equals the memory row width R (``row_bytes``): one row per
cycle and port is exactly one beat of the widest operand.

`StreamReader` -- one source operand (a contiguous run of nibbles at any nibble
address). It requests the run's rows in order, at most ``slots - 1`` rows ahead of
the row the consumer is in, and keeps them in a ring of ``slots`` rows (4 by
default, 2 to 6; a response is stored without rotation in the next slot),
read at the consumer's row and the next one (two slot pointers, registers). The consumer
sees a ``2R``-nibble *window* that starts at its current position (its two rows
funnel-shifted by the nibble offset) and ``has``: the nibbles it would take have
arrived. It advances by ``take`` nibbles (at most one row per cycle), or to the
run's end with ``take_rest`` (at most one row away), when ``take_en`` is high (the
amount comes early, the enable late: the next position is computed before the
consumer decides). With ``realign=False`` the reader has no funnel shifter of its own: it
offers the two rows and the nibble offset (``rows``, ``offset``) and the consumer
realigns them with `funnel` (the engine shares one shifter between sources 1 and
2). A response is written into the buffer at the end of the cycle it arrives in,
so data requested in cycle t is visible to the consumer in cycle t + L + 1, L the
memory's read latency. One row request per cycle sustains one full window per
cycle at any alignment with L + 3 slots (4 with L = 1, 5 with L = 2:
`golden.cycle.vector.reader_slots`); a consumer that takes windows less often
needs fewer (the engine's source 2, see hw/vector.py). The reader works with any
latency: responses arrive in order and each row has its slot. `start` begins a new
run (the buffer is reused; nothing of
an earlier run is pending when a run ends).

`StreamWriter` -- the destination (a contiguous run of nibbles starting on a
byte). It accepts beats of up to ``2R`` nibbles, assembles them in a one-row
accumulator at their memory alignment and writes a row (with byte enables for
exactly the bytes it holds) as soon as the stream has passed its end (the beat's
nibbles beyond it start the accumulator's next row), or at the end of the stream.
Row write requests wait in a queue of two registers (a ring: the head is offered
and holds until the memory takes it). The writer accepts a beat when the queue is
not full and the stream has not ended -- both registers: the memory's ``wr_ready``
enables only the queue's read pointer, none of the writer's or its producer's
registers (session 20, docs/boards.md). The queue's free entry loads the cycle's
row request whether or not one is emitted (its enable is the write pointer and
"full", registers; the emit decision moves only the pointers), and ``done`` is a
register loaded with its next value (session 28). One beat per cycle is sustained while the
memory takes one write per cycle (the queue then holds at most one request); when
the memory stalls, the queue takes one more row before the writer stops. An odd int4
destination ends in the low nibble of a byte: the caller provides that byte's old
high nibble (`tail_*`), which is written back unchanged with the last row.
"""

from amaranth.hdl import Assert, Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from .replicate import mux_sliced, own_replicas, replicas, slice_bounds, slices

__all__ = ["StreamReader", "StreamWriter", "funnel"]


def funnel(m, x, amount, out_bits, unit, name):
    """``(x >> amount * unit)[:out_bits]`` as explicit multiplexer stages, largest
    shift first, each stage only as wide as the later stages still need. `amount` may
    be a list of equal values (`hw.replicate.replicas`): copy ``j`` then selects in the
    ``j``-th of as many equal slices of every stage."""
    amounts = amount if isinstance(amount, (list, tuple)) else [amount]
    for k in reversed(range(len(amounts[0]))):
        d = unit << k
        keep = out_bits + (unit << k) - unit
        y = Signal(keep, name=f"{name}_{k}")
        m.d.comb += y.eq(mux_sliced([a[k] for a in amounts], x[d:d + keep], x[:keep]))
        x = y
    return x[:out_bits]


class StreamReader(wiring.Component):
    """One realigning operand reader (see the module docstring).

    `nib_bits`: width of nibble addresses and counts; `row_addr_bits`: width of
    row indices; `realign`: build the funnel shifter and offer ``window`` (else the
    consumer realigns ``rows`` by ``offset`` with `funnel`); `offset_copies` (without
    `realign`): offer ``offsets`` too, the offset's register copies for the consumer's
    funnel, one per 64-bit slice of the window; `slots`: rows buffered; `has_copies`:
    offer ``has_rest_copies`` and ``has_take_copies``, that many register copies each of
    ``has_rest`` and ``has_take`` (kept flip-flops on the ECP5), one for each consumer of
    the outcome, which the placer can put beside it."""

    def __init__(self, row_bytes, nib_bits, row_addr_bits, *, realign=True, offset_copies=False, slots=4,
                 has_copies=0, checks=False):
        if slots not in (2, 3, 4, 5, 6):
            raise ValueError(f"a stream reader buffers 2 to 6 rows, not {slots!r}")
        self.R = row_bytes
        self.nib_bits = nib_bits
        self.ra_bits = row_addr_bits
        self.realign = realign
        self.offset_copies = offset_copies and not realign
        self.slots = slots
        self.has_copies = has_copies
        self.checks = checks
        optional = {"window": Out(8 * row_bytes)} if realign else {}
        if has_copies:
            optional.update(has_rest_copies=Out(has_copies), has_take_copies=Out(has_copies))
        if self.offset_copies:
            optional["offsets"] = Out(exact_log2(2 * row_bytes) * slices(8 * row_bytes))
        super().__init__({
            "start": In(1),
            "start_nib": In(nib_bits),           # first nibble of the run
            "start_len": In(nib_bits),           # nibbles in the run (0: nothing)
            "req_valid": Out(1),
            "req_row": Out(row_addr_bits),
            "req_ready": In(1),                  # the request transfers this cycle
            "rsp_valid": In(1),                  # this cycle's response is ours
            "rsp_data": In(8 * row_bytes),
            "rows": Out(16 * row_bytes),         # the consumer's row and the next one
            "offset": Out(exact_log2(2 * row_bytes)),   # the consumer's nibble within its row
            **optional,
            "has": Out(1),                       # the nibbles to take have arrived
            "has_rest": Out(1),                  # `has` if take_rest were high
            "has_take": Out(1),                  # `has` if take_rest were low
            "take": In(nib_bits),                # nibbles consumed this cycle if take_en
            "take_rest": In(1),                  # take everything left instead of `take`
            "take_en": In(1),
            "left": Out(nib_bits),               # nibbles of the run not yet consumed
            "left_zero": Out(1),                 # left == 0, a register
        })

    def elaborate(self, platform):
        m = Module()
        R = self.R
        RN = 2 * R                                  # nibbles per row
        lrn = exact_log2(RN)
        nb = self.nib_bits
        # (reset-less: the run's position, end and rows, and what is computed from them alone
        # (rows_more, cross_*, the offset's copies), loaded by `start` and read only while
        # `on` or the consumer's run (both reset) says a run is going. `left`, `avail` and
        # their `has_*` keep the reset: the reducer starts reader 0's first run on left == 0)
        end = Signal(nb + 1, reset_less=True)
        pos = Signal(nb + 1, reset_less=True)       # absolute nibble address of the consumer
        irow = Signal(nb, reset_less=True)          # next row to request
        lrow = Signal(nb, reset_less=True)          # last row of the run
        # the nibbles that have arrived beyond the position (negative while the run's first
        # row is on its way) and those left in the run, registers kept with the position, so
        # `has` compares the amount with registers instead of adding it to the position
        # first (the adder and two compares were the head of the placed core's worst path
        # into every reader's `take_en`, session 25). `avail` stays within -(RN - 1) ..
        # (S + 1) RN (the slots hold at most S rows from the position's row), so it is a few
        # bits wide, not an address: short carry chains (in `base`, 10 bits for 21; 55 LUT4s
        # fewer per reader in yosys alone)
        AV = (self.slots + 1) * RN
        avail = Signal(signed((AV + RN).bit_length() + 1))
        left = Signal(nb + 1)
        on = Signal()
        # the buffer: a ring of S slots, written in row order from slot 0 at the start of a
        # run (`wslot`: the next response's slot) and read at the consumer's row (`cslot`)
        # and the next (`nslot`). Every select is a register, so the consumer's late
        # `take_en` reaches only `pos` and the two read pointers, not the buffer's 8 R S
        # flip-flops (it did when the buffer shifted down a slot at each row, session 11:
        # the engine's worst placed path, session 19)
        S = self.slots
        buf = [Signal(8 * R, name=f"buf{i}", reset_less=True) for i in range(S)]     # data: read at rows requested

        def ring_next(x):
            return Mux(x == S - 1, 0, x + 1)

        wslot, cslot, nslot = (Signal(range(S), name=nm) for nm in ("wslot", "cslot", "nslot"))

        # how many rows the requests are ahead of the consumer's row (irow - pos / 2 R), a
        # register, so the request is not computed from the position (the position's row
        # and a compare were the head of the placed core's path from a reader into the
        # memory's address register, session 25). It stays within 0 .. S (a request waits
        # while it is S - 1 or more, and the consumer never passes the rows requested), so
        # it is four bits wide and its compare one LUT; `irow <= lrow` is a register too
        # (`rows_more`), both outcomes of a request compared first: the two compares' carry
        # chains headed the path from reader 0 into the memory's address (19.6 ns, session 26)
        ahead = Signal(signed(4))
        rows_more = Signal(reset_less=True)         # irow <= lrow
        # the request's valid (on & rows_more & ahead <= S - 1) is a register of its own,
        # loaded with the next values (`ahead`'s three outcomes compared from the register,
        # the late `adv` and `req_fire` picking one): the three registers' LUT, 14 tiles from
        # them, was the head of reader 0's path into the memory's read address (15.3 ns in
        # the placed `base`, session 48)
        req_v = Signal(name="req_v")
        m.d.comb += [
            self.req_valid.eq(req_v),
            self.req_row.eq(irow),
        ]
        req_fire = Signal()
        m.d.comb += req_fire.eq(req_v & self.req_ready)
        with m.If(req_fire):
            m.d.sync += irow.eq(irow + 1)
        rows_more_n = Mux(req_fire, irow < lrow, irow <= lrow)
        m.d.sync += rows_more.eq(rows_more_n)
        if self.checks:
            m.d.sync += Assert(req_v == (on & rows_more & (ahead <= S - 1)),
                               "StreamReader: req_valid differs from on & rows_more & ahead <= S - 1")

        npos = Signal(nb + 1)
        m.d.comb += npos.eq(Mux(self.take_rest, end, pos + self.take))    # (no subtraction from the end)
        # whether taking enters the next row (at most one row), for both kinds of take, as
        # registers loaded with the next position's compares (`take_en` picks late), so the
        # consumer's `take_en` is the last input of every next value it reaches (it went
        # through the compares' LUTs and one more hop, session 27); like `has_take`,
        # `cross_take` uses the present `take`, which changes only between runs
        def cross_take_at(p):
            return (p[:lrn] + self.take[:lrn + 1])[lrn]
        # Copies of the pair: one for `ahead`, one per (up to) four of the read pointers'
        # copies, each the input of the `adv` that every pointer copy computes beside its
        # flip-flops (`adv` for `ahead` was placed among the pointer copies, 52-87 tiles
        # from `ahead`: the engine's `load` -> reader 1's `ahead`, 18.7-20.1 ns in the placed
        # `base`, session 33; one `adv` for all the pointer copies was a hop of 54 tiles
        # before them, 17.7 ns, session 40). The pair's next value is no longer a part of
        # each pointer copy: one multiplexer fanned out to the nine registers over 113 tiles
        # (reader 0's start address -> the pointer copies, 19.49 ns, session 50); now its
        # loads are a few registers, and a register's output crosses to the pointer copies.
        # The start's row crossing: (start + len) / RN != start / RN is "len >= RN, or the
        # offset in the row plus len's low bits carries out" -- a carry chain of lrn bits,
        # not of the address's width
        start_cross = (self.start_len[lrn:] != 0) | (self.start_nib[:lrn] + self.start_len[:lrn])[lrn]
        cross_next = Mux(self.start,
                         Cat(cross_take_at(self.start_nib), start_cross),
                         Mux(self.take_en, Cat(cross_take_at(npos), end[lrn:] != npos[lrn:]),
                             Cat(cross_take_at(pos), end[lrn:] != pos[lrn:])))
        pointer_copies = max(1, 8 * R // 32)
        per_cross = 4                               # pointer copies per copy of the pair
        cross_copies = replicas(m, platform, cross_next, 1 + -(-pointer_copies // per_cross), "cross")  # (reset)
        cross_for_ahead = cross_copies[0]

        def advances(pair):                         # the consumer enters the next row
            return ~self.start & self.take_en & Mux(self.take_rest, pair[1], pair[0])
        adv_ahead = Signal()
        m.d.comb += adv_ahead.eq(advances(cross_for_ahead))
        m.d.sync += ahead.eq(Mux(adv_ahead, ahead + req_fire - 1, ahead + req_fire))   # (adv late)
        room_next = Mux(adv_ahead, Mux(req_fire, ahead <= S - 1, ahead <= S),
                        Mux(req_fire, ahead <= S - 2, ahead <= S - 1))                  # ahead's next <= S - 1
        m.d.sync += req_v.eq(on & rows_more_n & room_next)
        # the position as a next value, and copies of the read pointers and the offset, one
        # per slice of the rows (the pointers select in 2 x 8 R multiplexers, the
        # offset in the funnel's every stage: the placed engine's hot nets, fan-out 300 to
        # 650, session 23). Each copy computes its next value from its own
        # (`own_replicas`), so `take_en` reaches every copy in one hop: through one shared
        # next value it was two hops of 60-70 tiles (the engine's `load` -> reader 1's
        # pointer copies, 20.1 ns in the placed `base`, session 27). The pointers are used
        # only as copies (`cslot`/`nslot`, the pair as one register, are the checks' reference).
        pos_n = Signal.like(pos)
        m.d.comb += pos_n.eq(Mux(self.start, self.start_nib, Mux(self.take_en, npos, pos)))
        m.d.sync += pos.eq(pos_n)
        pw = len(cslot)

        def slots_next(q, x):                       # (cslot, nslot) after this cycle, x the cross pair
            c, n = q[:pw], q[pw:]
            adv = advances(x)
            return Cat(Mux(self.start, 0, Mux(adv, n, c))[:pw], Mux(self.start, 1, Mux(adv, ring_next(n), n))[:pw])
        # the pointers: a copy per 32 bits of the rows (one per 64 bits fanned out to 127
        # multiplexer inputs over 70 tiles: reader 0's pointer -> the reducer's element
        # queue, 16.2 ns in the placed `base`, session 43), four to each copy of the cross
        # pair; the offset: a copy per 64 bits
        copies = slices(8 * R)
        pairs = []
        for g, x in enumerate(cross_copies[1:]):
            pairs += own_replicas(m, platform, lambda q, x=x: slots_next(q, x), 2 * pw,
                                  min(per_cross, pointer_copies - per_cross * g), f"slots{g}")
        cslots, nslots = [q[:pw] for q in pairs], [q[pw:] for q in pairs]
        if self.checks:
            m.d.sync += Cat(cslot, nslot).eq(slots_next(Cat(cslot, nslot), cross_for_ahead))
            m.d.sync += [Assert(q == Cat(cslot, nslot), "StreamReader: a pointer copy differs") for q in pairs]
            m.d.sync += [Assert(x == cross_for_ahead, "StreamReader: a copy of the cross pair differs")
                         for x in cross_copies[1:]]
        with m.If(self.rsp_valid):
            m.d.sync += wslot.eq(ring_next(wslot))
        for k in range(S):
            with m.If(self.rsp_valid & (wslot == k)):
                m.d.sync += buf[k].eq(self.rsp_data)

        def pick(b, sel):                           # b[sel] as a tree of 2:1 multiplexers, top bit last
            if len(b) == 1:
                return b[0]
            top = (len(b) - 1).bit_length() - 1
            return Mux(sel[top], pick(b[1 << top:], sel), pick(b[:1 << top], sel))

        def read(sel, lo, hi):                      # buf[sel][lo:hi]: an S-way multiplexer
            return pick([x[lo:hi] for x in buf], sel)

        # the window's two rows, crow and crow + 1, each slice read through its own pointers
        sl = 8 * R // len(pairs)

        def sliced(sels):
            return Cat(read(s, j * sl, (j + 1) * sl) for j, s in enumerate(sels))
        m.d.comb += [self.rows.eq(Cat(sliced(cslots), sliced(nslots))), self.offset.eq(pos[:lrn])]
        if self.realign or self.offset_copies:
            # (copies of the offset only for a funnel: on the ECP5 copies are kept instances,
            # which a reader without one would keep unused)
            offsets = own_replicas(m, platform, lambda q: Mux(self.start, self.start_nib[:lrn],
                                                              Mux(self.take_en, npos[:lrn], q)),
                                   lrn, copies, "offset", reset_less=True)
            if self.checks:
                m.d.sync += [Assert(o == pos[:lrn], "StreamReader: an offset copy differs") for o in offsets]
            if self.realign:
                m.d.comb += self.window.eq(funnel(m, self.rows, offsets, 8 * R, 4, "win"))
            else:
                m.d.comb += self.offsets.eq(Cat(offsets))

        # has = (step <= avail) & (step <= left), step the nibbles a take consumes: for
        # `take_rest` (step = left) left <= avail, else both compares with `take`. Both
        # outcomes are registers (`has_rest`, `has_take`), computed from the next cycle's
        # avail and left, so `has` is a 2:1 multiplexer of registers under `take_rest`:
        # the compares' carry chains were the head of the placed core's worst path (a
        # reader's `left` -> `has` -> the engine's `load` -> the readers' `take_en`, 22.5 ns,
        # session 26). `take_en` picks between the compares of both outcomes of the take,
        # late (as for pos); left <= avail does not change with a take (both lose the
        # step). `has_take` is computed with this cycle's `take`, so in a cycle where `take`
        # changes `has` is stale: the consumer must not take then (`take` changes only
        # between runs: an instruction's beat amount at its setup, reader 0's at the switch
        # to the reducer's element); with `checks`, `Assert`s compare `has` with the direct
        # compares in every other cycle and refuse a take in such a cycle.
        # Both kinds of take are computed (step = left or `take`) and `take_rest` chooses
        # between the results: through `step` it led a subtraction and two compares (a copy
        # of the engine's `full` -> reader 0's `has_take`, 16.6 ns in the placed `base`,
        # session 41). A rest leaves nothing (left - left = 0).
        # The response adds RN nibbles to `avail` (`rsp_valid` is a late input: the memory's
        # response arbitration; through `avail + RN` it led two carry chains and the compares,
        # reader 2's `has_take`, 17.4-18.0 ns in the placed `base`, session 42): every value
        # that depends on `avail` is computed for both outcomes from registers, and
        # `rsp_valid` picks the result, with `take_en`, in the last LUT.
        # After a take of `take` (which the consumer makes only with take <= avail and take <=
        # left), take <= avail + got - take and take <= left - take are 2 take <= avail + got
        # and 2 take <= left: no subtraction of `take` before the compares (the engine's
        # beat size -> the subtraction -> the compare -> reader 2's `has_take` copies was
        # 15.66 ns in the placed `base`, session 49).
        left_tt = Signal.like(left, name="left_tt")
        m.d.comb += left_tt.eq(left - self.take)
        take2 = Cat(Const(0, 1), self.take)

        def after(got):
            """avail's next value if taken / not taken, has_rest's and has_take's next values."""
            ag, atr, att = (Signal.like(avail, name=f"{nm}_{got}") for nm in ("avail_g", "avail_tr", "avail_tt"))
            m.d.comb += [ag.eq(avail + got), atr.eq(ag - left), att.eq(ag - self.take)]
            taken = Mux(self.take_rest, (self.take <= atr) & (self.take == 0),
                        (take2 <= ag) & (take2 <= left))
            kept = (self.take <= ag) & (self.take <= left)
            return Mux(self.take_rest, atr, att), ag, left <= ag, Mux(self.take_en, taken, kept)
        avail_t, avail_g, rest_n, take_n = (Mux(self.rsp_valid, x1, x0) for x1, x0 in zip(after(RN), after(0)))
        left_t = Mux(self.take_rest, 0, left_tt)                        # a rest leaves nothing
        # (set at reset: left = avail = take = 0)
        has_rest, has_take = (Signal(init=1, name=nm) for nm in ("has_rest", "has_take"))
        # `has` after a start: avail is then minus the start's offset in its row (0 or less),
        # so step <= avail only for a step of 0 at offset 0 -- no compare of the offset with
        # the run's length or `take` (the engine's start addresses -> those compares' carry
        # chains -> the copies of `has_take` / `has_rest` were 14.5-16.9 ns in the placed
        # `base`, sessions 48-49)
        at_row = self.start_nib[:lrn] == 0
        has_rest_n, has_take_n = (Signal(name=f"{nm}_next") for nm in ("has_rest", "has_take"))
        m.d.comb += [has_rest_n.eq(Mux(self.start, at_row & (self.start_len == 0), rest_n)),
                     has_take_n.eq(Mux(self.start, at_row & (self.take == 0), take_n))]
        m.d.sync += [has_rest.eq(has_rest_n), has_take.eq(has_take_n)]
        if self.has_copies:
            # the copies for the consumer's decisions (the engine's `load` and the other
            # readers' take enables): one register net into each, where one `has_take` fed
            # them all, 74 tiles from reader 0's take enable (reader 1's `has_take` ->
            # reader 0's pointer copies, 16.9 ns in the placed `base`, session 46)
            k = self.has_copies
            m.d.comb += [self.has_rest_copies.eq(Cat(replicas(m, platform, has_rest_n, k, "has_rest_c", init=1))),
                         self.has_take_copies.eq(Cat(replicas(m, platform, has_take_n, k, "has_take_c", init=1)))]
            if self.checks:
                m.d.sync += Assert((self.has_rest_copies == has_rest.replicate(k))
                                   & (self.has_take_copies == has_take.replicate(k)),
                                   "StreamReader: a copy of has_rest / has_take differs")
        m.d.comb += [self.has.eq(Mux(self.take_rest, has_rest, has_take)), self.left.eq(left),
                     self.has_rest.eq(has_rest), self.has_take.eq(has_take)]
        if self.checks:
            direct = Mux(self.take_rest, left <= avail, (self.take <= avail) & (self.take <= left))
            take_q = Signal.like(self.take, name="take_q")
            m.d.sync += take_q.eq(self.take)
            changed = self.take != take_q
            cross_direct = Mux(self.take_rest, end[lrn:] != pos[lrn:], cross_take_at(pos))
            cross = Mux(self.take_rest, cross_for_ahead[1], cross_for_ahead[0])
            m.d.sync += [Assert(changed | (cross == cross_direct), "StreamReader: `cross` differs from the compares"),
                         Assert(changed | (self.has == direct), "StreamReader: `has` differs from the compares"),
                         Assert(~(changed & self.take_en), "StreamReader: a take in the cycle `take` changes")]
        m.d.sync += [avail.eq(Mux(self.take_en, avail_t, avail_g)),
                     left.eq(Mux(self.take_en, left_t, left))]
        # left == 0 as a register, for the consumer's next start (the reducer's: reader 0's
        # `left` -> its compare -> `start`, fan-out 158 -> the pointer copies, 16.2 ns in the
        # placed `base`, session 47): the outcomes of both kinds of take from compares of
        # registers (left - take == 0 is left == take), `take_en` picking late
        left_zero = Signal(init=1)
        with m.If(self.start):
            m.d.sync += left_zero.eq(self.start_len == 0)
        with m.Else():
            m.d.sync += left_zero.eq(Mux(self.take_en, self.take_rest | (left == self.take), left == 0))
        m.d.comb += self.left_zero.eq(left_zero)
        if self.checks:
            m.d.sync += Assert(left_zero == (left == 0), "StreamReader: left_zero differs from left == 0")

        if self.checks:
            m.d.sync += Assert((ahead >= 0) & (ahead <= S), "StreamReader: requests ahead out of 0 .. slots")
            m.d.sync += Assert((avail > -RN) & (avail <= AV), "StreamReader: avail out of -(RN - 1) .. (slots + 1) RN")
        # (the run's first and last rows from the start fields alone, outside the If: inside
        # it, `start` gated their adder and compare)
        first, last = Signal.like(irow, name="first"), Signal.like(lrow, name="last")
        m.d.comb += [first.eq(self.start_nib >> lrn), last.eq((self.start_nib + self.start_len - 1) >> lrn)]
        # rows_more (first <= last) is `start_len != 0` for a run inside the nibble address
        # space (a zero-length run requests nothing, whatever rows_more holds): the compare
        # after the last row's adder was the tail of the engine's address -> reader 0's
        # start -> rows_more (16.32 ns in the placed `base`, session 47)
        with m.If(self.start):
            m.d.sync += [
                end.eq(self.start_nib + self.start_len),
                irow.eq(first), ahead.eq(0), avail.eq(-self.start_nib[:lrn]), left.eq(self.start_len),
                wslot.eq(0),
                lrow.eq(last), rows_more.eq(self.start_len != 0),
                on.eq(self.start_len != 0), req_v.eq(self.start_len != 0),
            ]
        if self.checks:
            m.d.sync += Assert(~self.start | (self.start_len == 0) | (first <= last),
                               "StreamReader: a run wraps around the nibble address space")
        return m


class StreamWriter(wiring.Component):
    """The destination row writer (see the module docstring)."""

    def __init__(self, row_bytes, nib_bits, row_addr_bits, *, checks=False):
        self.R = row_bytes
        self.nib_bits = nib_bits
        self.ra_bits = row_addr_bits
        self.checks = checks
        R = row_bytes
        super().__init__({
            "start": In(1),
            "start_nib": In(nib_bits),           # first nibble (even)
            "start_len": In(nib_bits),           # nibbles in the stream
            "tail_en": In(1),                    # the stream ends in a low nibble: the old
            "tail_nib": In(4),                   #   high nibble of its byte (held by the caller)
            "in_valid": In(1),
            "in_ready": Out(1),
            "in_data": In(8 * R),
            "in_cnt": In(range(2 * R + 1)),      # nibbles of this beat
            "in_mask": In(2 * R),                # the same as a mask: its low in_cnt bits set
            "wr_valid": Out(1),
            "wr_ready": In(1),
            "wr_row": Out(row_addr_bits),
            "wr_data": Out(8 * R),
            "wr_be": Out(R),
            "done": Out(1),                      # everything written (and taken)
        })

    def elaborate(self, platform):
        m = Module()
        R = self.R
        RN = 2 * R
        lrn = exact_log2(RN)
        nb = self.nib_bits
        # (reset-less: the stream's position, length and rows, the accumulator's data (its
        # mask `accm` keeps the reset, like accm_zero) and the queue's entries, with their
        # copies (wrot_amount, w_ctl_*): loaded by `start` (the entries when free) and read
        # only under `take`, `at_end` or q_n, which are reset)
        pos = Signal(nb + 1, reset_less=True)       # absolute nibble address of the next nibble
        at_end = Signal(name="w_at_end")            # left == 0, as a register
        arow = Signal(nb, reset_less=True)          # row of the accumulator
        acc = Signal(8 * R, reset_less=True)        # one row of data
        accm = Signal(RN)                           # its nibble valid mask
        tail_row = Signal(nb, reset_less=True)
        tail_en, tail_nib = self.tail_en, self.tail_nib
        tail_off = Signal(lrn, reset_less=True)
        # the request queue: two entries, a ring (`wp` the next entry written, `rp` the head)
        q_row = [Signal(self.ra_bits, name=f"q{i}_row", reset_less=True) for i in range(2)]
        q_data = [Signal(8 * R, name=f"q{i}_data", reset_less=True) for i in range(2)]
        q_be = [Signal(R, name=f"q{i}_be", reset_less=True) for i in range(2)]
        wp, rp = Signal(name="q_wp"), Signal(name="q_rp")
        q_n = Signal(range(3), name="q_n")          # requests queued
        q_any = Signal(name="q_any")                # q_n != 0
        q_full = Signal(name="q_full")              # q_n == 2
        accm_zero = Signal(name="accm_zero", init=1)    # accm == 0, as a register
        done = Signal(name="w_done")                # the `done` output, as a register
        m.d.comb += [self.wr_valid.eq(q_any), self.wr_row.eq(Mux(rp, q_row[1], q_row[0])),
                     self.wr_data.eq(Mux(rp, q_data[1], q_data[0])), self.wr_be.eq(Mux(rp, q_be[1], q_be[0]))]

        can = ~q_full
        pop = q_any & self.wr_ready
        push = Signal()                             # a row request is emitted in this cycle
        take = self.in_valid & self.in_ready
        # `in_ready` (~q_full & ~at_end) as a register of its own, loaded with the next
        # values: the LUT of the two, beside neither, fed the pipeline's stall (`w_at_end`,
        # fan-out 179 -> that LUT 46 tiles away -> the pipeline's advance -> its output
        # registers, 15.5 ns in the placed `base`, session 48)
        ready = Signal(name="w_in_ready", init=1)
        at_end_n = Signal(name="at_end_n")
        m.d.comb += [self.in_ready.eq(ready), self.done.eq(done)]
        q_next = q_n + push - pop
        m.d.sync += [q_n.eq(q_next), q_any.eq(q_next != 0), q_full.eq(q_next == 2),
                     ready.eq((q_next != 2) & ~at_end_n)]
        if self.checks:
            m.d.sync += Assert(ready == (can & ~at_end), "StreamWriter: in_ready differs from ~q_full & ~at_end")
        with m.If(pop):
            m.d.sync += rp.eq(~rp)
        with m.If(push):
            m.d.sync += wp.eq(~wp)

        off = pos[:lrn]
        cnt_mask = self.in_mask                     # (the producers register it: no decoding here)
        nmask = Signal(4 * R)
        ndata = Signal(16 * R)
        # the beat rotated to its memory alignment (one row-wide rotator, not a two-row
        # shifter); the shifted nibble mask says which row each nibble belongs to: the
        # accumulator's (low half) or the next (high half, only when the beat completes
        # the accumulator's row, which is then written: the accumulator is one row)
        # (its amount, RN - off, in one register per 64-bit slice: `hw.replicate`)
        rot = Signal(8 * R)
        pos_n = Signal.like(pos)                    # (pos's next value)
        m.d.comb += pos_n.eq(Mux(self.start, self.start_nib, Mux(take, pos + self.in_cnt, pos)))
        m.d.sync += pos.eq(pos_n)
        # (each copy steps its own amount, RN - pos: a take subtracts the beat's count, so
        # `take` reaches every copy in one hop; `hw.replicate.own_replicas`)
        amounts = own_replicas(m, platform,
                               lambda q: Mux(self.start, RN - self.start_nib[:lrn],
                                             Mux(take, q - self.in_cnt, q))[:lrn],
                               lrn, slices(8 * R), "wrot_amount", reset_less=True)
        m.d.comb += rot.eq(funnel(m, Cat(self.in_data, self.in_data), amounts, 8 * R, 4, "wrot"))
        if self.checks:
            m.d.sync += [Assert(a == (RN - pos[:lrn])[:lrn], "StreamWriter: a rotation amount differs")
                         for a in amounts]
        bmask = Signal(4 * R)
        m.d.comb += bmask.eq(cnt_mask << off)
        m.d.comb += [
            nmask.eq(Cat(accm | bmask[:RN], bmask[RN:])),
            ndata.eq(Cat(acc, Const(0, 8 * R))
                     | (Cat(rot, rot) & Cat(*(bmask[i].replicate(4) for i in range(2 * RN))))),
        ]

        # The queue's free entry (`wp`; with q_n == 2 it holds the oldest request) loads the
        # row request of this cycle whether or not one is emitted: its load enable is two
        # registers, not the beat's count compares (session 28: that enable of 300 flip-flops
        # ended the worst path of the placed `base`). A request comes from a beat while the
        # stream has not ended and from the accumulator once it has (no beat is taken then),
        # so `at_end` picks its content.
        tail = tail_en & (arow == tail_row)
        tail_mask = Signal(RN, name="tail_mask")
        m.d.comb += tail_mask.eq(Mux(tail, Const(1, RN) << tail_off, 0))
        tail_data = Cat(*(tail_mask[i].replicate(4) & tail_nib for i in range(RN)))
        req_data = Mux(at_end, acc, ndata[:8 * R]) | tail_data
        req_mask = Mux(at_end, accm, nmask[:RN])
        req_be = Cat(*(req_mask[2 * i] | req_mask[2 * i + 1] for i in range(R)))
        for i in range(2):
            with m.If((wp == i) & ~q_full):
                m.d.sync += [q_row[i].eq(arow), q_data[i].eq(req_data), q_be[i].eq(req_be)]

        # The beat completes the accumulator's row or ends the stream (a compare of the
        # registered count, not of an added position). The control registers (at_end,
        # accm_zero, done, the queue's pointers) take that decision from a copy of the offset
        # of their own and from the nibbles left, so abc builds them apart from the
        # accumulator and the control does not wait for the accumulator's select nets
        # (session 30: shared, it was the 24.55 ns worst path of the placed `base`, from the
        # pipeline's count through that net into `done`)
        c_off, = own_replicas(m, platform,
                              lambda q: Mux(self.start, self.start_nib, Mux(take, q + self.in_cnt, q))[:lrn],
                              lrn, 1, "w_ctl_off", reset_less=True)
        left = Signal(nb + 1, name="w_left", reset_less=True)     # nibbles still to come
        m.d.sync += left.eq(Mux(self.start, self.start_len, Mux(take, left - self.in_cnt, left)))
        c_fill = c_off + self.in_cnt
        c_last = left == self.in_cnt
        if self.checks:
            m.d.sync += Assert(c_off == off, "StreamWriter: the control's offset copy differs")

        # The accumulator (its data, 256 flip-flops in `base`, its nibble mask and its row)
        # takes the row-end decision per 64-bit slice, each slice from the rotator's copy of
        # RN - offset for that slice (`amounts`: the beat reaches the next row when
        # in_cnt >= RN - off, RN itself at offset 0), so the compare sits beside the slice
        # it selects for: one shared decision crossed the die twice (to its LUT, then as the
        # select of 256 multiplexers over 92 tiles: the worst path of the placed `base`,
        # 20.0 ns, session 36; as the select of the mask's 64 and the row's enable, 21.0 ns,
        # session 39). The decision is the fill alone: a beat that ends the stream inside
        # the row leaves the accumulator as it is, stale but never read again (the control
        # pushes it in that cycle and sets accm_zero; `start` clears it). (Copies of the
        # offset of their own, each computing its next value, cost 180 LUT4s more in the
        # writer alone; these compares about 150.)
        ends_rows = [self.in_cnt >= Cat(a, a == 0) for a in amounts]
        with m.If(self.start):
            m.d.sync += [
                arow.eq(self.start_nib >> lrn), acc.eq(0), accm.eq(0),
                tail_row.eq((self.start_nib + self.start_len) >> lrn),
                tail_off.eq((self.start_nib + self.start_len)[:lrn]),
            ]
        with m.Elif(take):
            with m.If(ends_rows[0]):
                m.d.sync += arow.eq(arow + 1)
            for ends_row, (lo, hi) in zip(ends_rows, slice_bounds(8 * R, len(amounts))):
                m.d.sync += acc[lo:hi].eq(Mux(ends_row, ndata[8 * R + lo:8 * R + hi], ndata[lo:hi]))
                m.d.sync += accm[lo // 4:hi // 4].eq(Mux(ends_row, nmask[RN + lo // 4:RN + hi // 4],
                                                         nmask[lo // 4:hi // 4]))
        with m.Elif(at_end & ~accm_zero & can):
            m.d.sync += [acc.eq(0), accm.eq(0), arow.eq(arow + 1)]

        # `accm_zero` and `done` follow accm, at_end and the queue: the engine's control
        # (which ends a reduction's stream on `done`) reads registers, not a 64-bit compare
        accm_zero_n = Signal(name="accm_zero_n")
        m.d.comb += [at_end_n.eq(at_end), accm_zero_n.eq(accm_zero)]
        with m.If(self.start):
            m.d.comb += [at_end_n.eq(self.start_len == 0), accm_zero_n.eq(1)]
        with m.Elif(take):
            m.d.comb += at_end_n.eq(c_last)
            with m.If((c_fill >= RN) | c_last):
                m.d.comb += [push.eq(1), accm_zero_n.eq(c_fill <= RN)]
            with m.Else():
                m.d.comb += accm_zero_n.eq(accm_zero & (self.in_cnt == 0))
        with m.Elif(at_end & ~accm_zero & can):
            m.d.comb += [push.eq(1), accm_zero_n.eq(1)]
        m.d.sync += [at_end.eq(at_end_n), accm_zero.eq(accm_zero_n),
                     done.eq(at_end_n & accm_zero_n & (q_next == 0))]
        if self.checks:
            # (at the stream's end the mask may be stale, but it is never 0 while accm_zero is low)
            m.d.sync += [Assert(Mux(at_end, accm_zero | accm.any(), accm_zero == (accm == 0)),
                                "StreamWriter: accm_zero differs from accm == 0"),
                         Assert(done == (at_end & accm_zero & ~q_any), "StreamWriter: done differs")]
        return m
