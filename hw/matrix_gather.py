"""Vector gather for the matrix engine: turns one request (a base address, a lane
stride and a lane mask) into a vector of ``lanes`` integer elements read from the
data memory through one read port (bus.ReadPort).

Lane ``i`` reads the element at byte address ``base + i * stride`` (``base2 + i *
stride`` for the lanes set in ``seg2``: a vector made of two runs, as the matrix
engine's tap packing asks; modulo the address width: the engine only requests
addresses it has range-checked), of
``2**lsz`` bytes (1, 2 or 4, at most ``max_bytes``), little-endian, sign- or
zero-extended to ``value_bits``. Lanes outside ``active`` read nothing and give 0.

Microarchitecture
-----------------

* **Byte beats.** An element of ``e`` bytes is gathered in ``e`` beats, byte ``b``
  of every lane in beat ``b`` (lane address + b). Every lane therefore extracts one
  byte per beat from one row: a 32:1 byte multiplexer per lane is the whole
  extraction network (a 2-byte funnel per lane would double it, and an element
  crossing a row boundary needs no special case). 8-bit elements take one beat.
* **Per-lane row cache.** Every lane keeps the last memory row it loaded
  (``row_bytes`` bytes and its row index). A lane whose byte lies in its cached row
  needs no read (a hit): in NCHW every lane walks along its own channel plane and
  hits ``row_bytes / stride`` times in a row. The cache is coherent for a whole
  instruction because D-OVERLAP forbids the destination to overlap anything the
  instruction reads; ``flush`` invalidates it between instructions.
* **Coalescing.** Each cycle the issue stage picks the row of the lowest lane that
  still needs one and reads it once for every lane that needs that same row: the
  lanes of an NHWC vector (consecutive channels) share one read. A beat whose
  lanes need k distinct rows takes k cycles. Which lanes share a row comes from
  pairwise row equalities of the lanes, computed as a vector is loaded, so the beat's
  end is a few LUT levels after the hits.
* **Request slots.** A request is registered as it arrives (``pre``), with its lanes'
  byte 0 rows (and the rows after them), offsets, the bytes at which they cross into
  the next row and pairwise row equalities computed on the way, and moves into one of
  two slots in the next cycle a slot is free (``req.ready``: ``pre`` is empty or a slot
  is free, registers); the issue stage reads the vector in slot ``ptr`` and the byte index ``bi``
  (a lane's row at byte ``bi`` is its byte 0 row or the next one, by its cross bits),
  and the end of a vector only moves ``ptr``. The late end of a beat
  enables no wide register: only the pointer (in copies beside the multiplexers it
  selects), the count, ``bi``, the served lanes and the hits. The row-cache hits of the
  waiting vector are kept as registers too, so the next vector starts with its hits.
* **Stages.** Issue (the slot's lane rows, the read request); response (the
  row goes into the caches of the lanes that asked for it, ``L =
  config.mem_latency`` cycles after the request, as bus.py guarantees: the beat's
  registers pass through ``L`` stages to meet it); extract (per lane the byte out
  of the cached row into the element being assembled, on the ECP5 through `hw.wide_mux`; the last
  byte completes ``out``, combinationally). ``out`` has no back-pressure. The
  response and extract stages' registers load every cycle (they are read only
  under their beat flags, and ``out_vals``/``out_side`` only with ``out_valid``),
  so the beat's end, which the row-cache hits (registers) decide late in the cycle, enables
  only the issue stage's few control registers.

Latency: ``3 + L`` cycles from the ``req`` transfer to ``out_valid`` for 8-bit
elements needing at most one read per beat (read port always ready), one more per
extra byte. Throughput: one beat per cycle while every beat needs at most one row read
(every lane a hit, or all misses in one row): one vector of 8-bit elements per
cycle; otherwise one cycle per distinct row. A request is taken in any cycle a slot
or ``pre`` is free, so vectors follow each other without a gap. ``side`` (any layout) travels with
the request to ``out_side``.
"""

from types import SimpleNamespace

from amaranth.hdl import Assert, Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from .bus import ReadPort, row_addr_bits
from .delay import delayed
from .replicate import own_replicas
from .wide_mux import select_word

__all__ = ["VectorGather", "gather_request"]


def gather_request(lanes, addr_bits, side):
    return data.StructLayout({
        "base": unsigned(addr_bits),
        "stride": unsigned(addr_bits),
        "active": unsigned(lanes),
        "seg2": unsigned(lanes),     # lanes addressed from base2 instead of base
        "base2": unsigned(addr_bits),
        "lsz": unsigned(2),          # element bytes = 2**lsz
        "signed": unsigned(1),
        "side": side,
    })


class VectorGather(wiring.Component):
    """See the module docstring. ``config`` gives the row width and memory size; ``checks``:
    a simulation-only `Assert` that the registered row-cache hits of the active lanes equal
    their tag compares."""

    def __init__(self, config, *, lanes, max_bytes, value_bits, side, checks=False):
        if max_bytes not in (1, 2, 4):
            raise ValueError(f"max_bytes must be 1, 2 or 4, not {max_bytes!r}")
        if value_bits < 8 * max_bytes + 1:
            raise ValueError(f"value_bits ({value_bits}) cannot hold a sign-extended "
                             f"{8 * max_bytes}-bit element")
        self.config, self.lanes, self.max_bytes, self.value_bits = config, lanes, max_bytes, value_bits
        self.side_layout = side
        self.checks = checks
        self.addr_bits = max(ceil_log2(config.mem_bytes), exact_log2(config.row_bytes) + 1)
        super().__init__({
            "flush": In(1),
            "req": In(stream.Signature(gather_request(lanes, self.addr_bits, side))),
            "out_valid": Out(1),
            "out_vals": Out(data.ArrayLayout(signed(value_bits), lanes)),
            "out_side": Out(side),
            "rd": Out(ReadPort(addr_bits=row_addr_bits(config.rows), row_bits=config.row_bits)),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        n, R = self.lanes, self.config.row_bytes
        lR = exact_log2(R)
        AW = self.addr_bits
        RW = AW - lR                                 # row index bits
        MB = self.max_bytes
        BW = max(1, exact_log2(MB))                  # byte index bits
        req = self.req.payload
        pairs = [(i, j) for i in range(n) for j in range(i)]

        # --- request slots: the vector being issued (slot `ptr`) and the next one -----------
        # A request is loaded into a free slot as it arrives, its lanes' rows and offsets and
        # their pairwise row equalities computed on the way; the end of a vector only moves
        # `ptr` and the count. So ``req.ready`` is a register (a free slot), and the late
        # end of a beat (the row-cache hits -> the pair tree -> `beat_end`) enables no wide
        # register: it was the enable of the lane address registers and of every per-vector
        # register, 197 loads 34-89 tiles apart, 17-27 ns in the placed `base` (session 38).
        slot_layout = data.StructLayout({
            "row0": data.ArrayLayout(RW, n),         # each lane's row at byte 0
            "row1": data.ArrayLayout(RW, n),         # and the row after it
            "off": data.ArrayLayout(lR, n),          # each lane's byte 0 offset in its row
            # whether byte b + 1 of each lane's element lies in its row1 (b < max_bytes - 1)
            "cross": data.ArrayLayout(max(1, MB - 1), n),
            "active": unsigned(n),
            "same": unsigned(max(1, len(pairs))),   # row0 equalities of the lane pairs
            "lsz": unsigned(2),
            "sgn": unsigned(1),
            "side": self.side_layout,
        })
        slots = [Signal(slot_layout, name=f"slot{k}", reset_less=True) for k in range(2)]   # data
        v0 = Signal()                                # a vector is being issued (slot `ptr`)
        full = Signal()                              # and the other slot holds the next
        vec_end = Signal()
        # `ptr` in copies, each beside the slot multiplexers it selects: 0 the beat's control
        # (active lanes, row equalities, size), 1 the stage-1 values, 2.. the lanes' rows by
        # groups of four
        groups = [range(g, min(n, g + 4)) for g in range(0, n, 4)]
        ptrs = own_replicas(m, platform, lambda q: q ^ vec_end, 1, 2 + len(groups), "slot_ptr")

        def pick(sel, field, a, b):                  # slots[a] if sel else slots[b], as the field's shape
            value = Mux(sel, slots[a][field], slots[b][field])
            shape = slot_layout.members[field]
            return shape(value) if isinstance(shape, data.Layout) else value

        def cur(k, field):                           # a field of the vector being issued
            return pick(ptrs[k], field, 1, 0)

        def nxt(k, field):                           # a field of the waiting vector
            return pick(ptrs[k], field, 0, 1)

        # the beat's control (the vector being issued: its active lanes, row equalities and
        # size) as registers of their own, loaded below with the values `cur` has after this
        # cycle: read through the slot multiplexer, a slot's `active` 41 tiles away began
        # slot -> match -> the beat's end -> the hits (17.09 ns in the placed `base`, session
        # 48); they are data, read only under v0
        ctl = [("active", Signal(n, name="cur_active", reset_less=True)),
               ("same", Signal(max(1, len(pairs)), name="cur_same", reset_less=True)),
               ("lsz", Signal(2, name="cur_lsz", reset_less=True))]
        active0, same_c, lsz0 = (r for _, r in ctl)
        done0 = Signal(n)                            # lane served in this beat
        bi = Signal(BW)                              # byte of the beat

        # per-lane cache state (data: a lane's tag and row count only under its tvalid, reset)
        tag = [Signal(RW, name=f"tag_{i}", reset_less=True) for i in range(n)]
        tvalid = Signal(n)
        cache = [Signal(8 * R, name=f"cache_{i}", reset_less=True) for i in range(n)]

        # the lanes' rows and offsets at byte `bi`: a lane is in its row1 from the byte its
        # `cross` bits name (bits, not the offset's sum with `bi`: that carry chain was on
        # the path `bi` -> the row -> the read address, 17.8 ns in the placed `base`, session
        # 39); the offset's sum goes only into the response stage's register
        # Whether a lane is in its row1 is a register (`in_row1`), loaded with the value after
        # this cycle: 0 at a vector's end (byte 0 is in row0), the next byte's at a beat's
        # end, else unchanged; the late `beat_end`/`vec_end` only pick (gather B's `bi`,
        # fan-out 31 -> the cross bit's select -> the lane's row -> the read address was
        # 15.5 ns in the placed `base`, session 48). Between vectors `bi` is 0 and so is it.
        row, off, w_row, same_row_next = [], [], [], []
        in_row1 = []
        for g, lanes in enumerate(groups):
            for i in lanes:
                def crossed(b, g=g, i=i):           # the lane is in its row1 at byte b (0 .. MB)
                    if MB == 1:
                        return Const(0, 1)
                    bits = cur(2 + g, "cross")[i]
                    return Cat(Const(0, 1), bits, bits[-1]).bit_select(b, 1)
                now = Signal(name=f"in_row1_{i}")
                in_row1.append((now, crossed))
                r = Signal(RW, name=f"row_{i}")
                m.d.comb += r.eq(Mux(now, cur(2 + g, "row1")[i], cur(2 + g, "row0")[i]))
                row.append(r)
                o = Signal(lR, name=f"off_{i}")
                m.d.comb += o.eq(cur(2 + g, "off")[i] + bi)
                off.append(o)
                # the next byte (within the element) lies in the same row
                same_row_next.append(crossed(Cat(bi, Const(0, 1)) + 1) == now)
                w_row.append(nxt(2 + g, "row0")[i])

        # hit[i] (tvalid[i] and tag[i] == row[i]) is a register loaded with its next value
        # (below): the tag compare was the head of a 20.0 ns path, the hits -> the beat's end
        # -> the issue stage's registers, in the placed `base` (session 28); hit_w is the same
        # for the waiting vector's byte 0
        hit = Signal(n)
        hit_w = Signal(n)
        need = Signal(n)
        for i in range(n):
            m.d.comb += need[i].eq(v0 & active0[i] & ~done0[i] & ~hit[i])
        same = {}
        for k, (i, j) in enumerate(pairs):
            same[i, j] = same[j, i] = same_c[k]
        if self.checks:
            direct = Cat(tvalid[i] & (tag[i] == row[i]) for i in range(n))
            m.d.sync += Assert(~v0 | ((hit ^ direct) & active0 == 0),
                               "VectorGather: a registered hit of an active lane differs from its tag compare")
            direct_w = Cat(tvalid[i] & (tag[i] == w_row[i]) for i in range(n))
            m.d.sync += Assert(~full | ((hit_w ^ direct_w) & nxt(1, "active") == 0),
                               "VectorGather: a waiting vector's registered hit differs from its tag compare")
            m.d.sync += [Assert(~(need[i] & need[j]) | (same[i, j] == (row[i] == row[j])),
                                f"VectorGather: the registered row equality of lanes {j} and {i} differs")
                         for i, j in pairs]
        X = Signal(RW)                               # the row read this cycle
        for i in reversed(range(n)):
            with m.If(need[i]):
                m.d.comb += X.eq(row[i])
        # Which lanes the read serves (match: the row of the lowest lane that needs one) and
        # whether it serves all of them come from pairwise row equalities of the lanes,
        # not from comparing every row with the multiplexed X: the beat's end is a few LUT
        # levels after the hits. The equalities are computed with a vector's byte 0 rows as
        # it is loaded into its slot: they are read only for two lanes that both need a
        # row, and within a vector two lanes need rows after a step only if both crossed
        # into their next rows, which keeps their equality. (The compares of the address
        # registers were on the path active/addr -> one_row -> the beat's end -> `bi`,
        # 19.4-20.1 ns in the placed `base`, session 36.)
        first = Signal(n)                            # the lowest lane that needs a row
        for i in range(n):
            m.d.comb += first[i].eq(need[i] & ~(need[:i].any() if i else 0))
        match = Signal(n)
        for i in range(n):
            m.d.comb += match[i].eq(need[i] & Cat(first[i], *(first[j] & same[i, j]
                                                              for j in range(n) if j != i)).any())
        one_row = Signal()                           # every lane that needs a row needs the same
        m.d.comb += one_row.eq(Cat(1, *(~need[i] | ~need[j] | same[i, j] for i, j in pairs)).all())
        any_need = need.any()
        issue = Signal()
        m.d.comb += [
            self.rd.req.valid.eq(any_need),
            self.rd.req.payload.eq(X),
            issue.eq(any_need & self.rd.req.ready),
        ]
        beat_end = Signal()                          # every lane has its byte of this beat
        # (the same as: no lane needs a row that this cycle's read does not bring)
        m.d.comb += beat_end.eq(v0 & (~any_need | (self.rd.req.ready & one_row)))
        last_byte = bi == ((Const(1, 3) << lsz0) - 1)[:BW]
        m.d.comb += vec_end.eq(beat_end & last_byte)

        # --- response stage registers (the beat as issued); they meet the response
        # L = mem_latency cycles after the request, L - 1 registers later (`at_rsp`) -------
        # (the flags beat and last keep the reset; the beat's values are data, read only under
        # them)
        def stage(p):                               # a beat's registers in stage `p`
            return SimpleNamespace(
                beat=Signal(name=f"{p}_beat"), last=Signal(name=f"{p}_last"),
                bi=Signal(BW, name=f"{p}_bi", reset_less=True),
                off=[Signal(lR, name=f"{p}_off_{i}", reset_less=True) for i in range(n)],
                active=Signal(n, name=f"{p}_active", reset_less=True),
                lsz=Signal(2, name=f"{p}_lsz", reset_less=True), sgn=Signal(name=f"{p}_sgn", reset_less=True),
                side=Signal(self.side_layout, name=f"{p}_side", reset_less=True))

        s1_read = Signal()
        s1_load = Signal(n, reset_less=True)         # data: read only under s1_read
        s1 = stage("s1")

        def at_rsp(value, name, reset_less=False):
            return delayed(m, value, self.config.mem_latency - 1, name, reset_less=reset_less)

        # --- extract stage registers ------------------------------------------------------
        s2 = stage("s2")
        # data: an element's lower bytes, read only with its last byte (s2.last)
        elem = [Signal(max(1, 8 * (MB - 1)), name=f"elem_{i}", reset_less=True) for i in range(n)]

        # --- the slots: a request goes into the free slot (`ptrs[1] ^ v0`: a request is
        # taken only while one is free); the count is v0 and full -----------------------------
        # A request is first registered with its lanes' rows computed (`pre`), and enters a
        # slot from there: the next hits of an arriving vector compare the caches' tags with
        # registers, not with the sums of the request's base and stride (the request queue
        # -> the lane rows -> the hits was 17.4-18.2 ns placed, session 41). One cycle more
        # from a request to its vector when the gather waits for it; none while requests
        # wait in the queue (``req.ready``: `pre` is empty or moves into a slot, registers).
        take = Signal()
        pre = Signal(slot_layout, name="pre", reset_less=True)     # data, under pre_valid
        pre_valid = Signal()
        accept = Signal()
        m.d.comb += [self.req.ready.eq(~pre_valid | ~full), accept.eq(self.req.valid & self.req.ready),
                     take.eq(pre_valid & ~full)]
        m.d.sync += [v0.eq(full | take | (v0 & ~vec_end)),
                     full.eq((full & ~vec_end) | (v0 & take & ~vec_end)),
                     pre_valid.eq((pre_valid & ~take) | accept)]
        offs = _lane_offsets(m, req.stride, n, AW)
        load = Signal(slot_layout)
        new_rows = []
        for i in range(n):
            new = Signal(AW, name=f"new_{i}")
            m.d.comb += new.eq(Mux(req.seg2[i], req.base2, req.base) + offs[i])
            m.d.comb += [load.row0[i].eq(new[lR:]), load.row1[i].eq(new[lR:] + 1), load.off[i].eq(new[:lR])]
            if MB > 1:
                m.d.comb += load.cross[i].eq(Cat(new[:lR] >= R - b for b in range(1, MB)))
            new_rows.append(new[lR:])
        m.d.comb += [load.active.eq(req.active), load.lsz.eq(req.lsz), load.sgn.eq(req.signed),
                     load.side.eq(req.side),
                     load.same.eq(Cat(new_rows[i] == new_rows[j] for i, j in pairs))]
        with m.If(accept):
            m.d.sync += pre.eq(load)
        for k in range(2):
            with m.If(take & ((ptrs[1] ^ v0) == k)):
                m.d.sync += slots[k].eq(pre)

        def after(k, field):                        # slots[k]'s field after this cycle's load
            return Mux(take & ((ptrs[1] ^ v0) == k), pre[field], slots[k][field])
        for field, r in ctl:
            # the slot current after this cycle is ptr ^ vec_end: vec_end picks last
            m.d.sync += r.eq(Mux(vec_end, Mux(ptrs[0], after(0, field), after(1, field)),
                                 Mux(ptrs[0], after(1, field), after(0, field))))
            if self.checks:
                m.d.sync += Assert(~v0 | (r == cur(0, field)),
                                   f"VectorGather: the beat's {field} register differs from its slot")

        # --- the beat -----------------------------------------------------------------------
        with m.If(issue):
            for i in range(n):
                with m.If(match[i]):
                    m.d.sync += [tag[i].eq(row[i]), tvalid[i].eq(1), done0[i].eq(1)]
        with m.If(self.flush):
            m.d.sync += tvalid.eq(0)
        with m.If(beat_end):
            m.d.sync += [bi.eq(Mux(last_byte, 0, bi + 1)), done0.eq(0)]
        for now, crossed in in_row1:
            m.d.sync += now.eq(Mux(vec_end, 0, Mux(beat_end, crossed(Cat(bi, Const(0, 1)) + 1), now)))
            if self.checks:
                m.d.sync += Assert(now == crossed(bi), "VectorGather: a lane's in_row1 register differs from its cross bits")
        # the next hits, from compares beside the late choices: the rows of an arriving
        # vector (hit_in) and of the waiting one against the lanes' tags, or against their
        # rows when this cycle's read serves them; within a beat the row stays (a hit, or
        # served now); at the end of a beat that steps to the next byte every active lane
        # holds its row (a hit or served), so the next byte hits unless it crosses into the
        # next row. (That last case is exact for the active lanes only; `need` reads no other.)
        for i in range(n):
            served = issue & match[i]
            hit_in = Mux(served, row[i] == pre.row0[i], tvalid[i] & (tag[i] == pre.row0[i]))
            hit_w_next = Signal(name=f"hit_w_next_{i}")
            m.d.comb += hit_w_next.eq(Mux(full, Mux(served, row[i] == w_row[i], hit_w[i]), hit_in))
            hit_step = same_row_next[i]
            with m.If(self.flush):
                m.d.sync += [hit[i].eq(0), hit_w[i].eq(0)]
            with m.Else():
                m.d.sync += hit_w[i].eq(hit_w_next)
                with m.If(vec_end):                 # the next vector: the waiting one, or arriving
                    m.d.sync += hit[i].eq(hit_w_next)
                with m.Elif(~v0):
                    m.d.sync += hit[i].eq(hit_in)
                with m.Elif(beat_end):
                    m.d.sync += hit[i].eq(hit_step)
                with m.Else():
                    m.d.sync += hit[i].eq(served | hit[i])

        m.d.sync += [
            s1_read.eq(issue),
            s1_load.eq(Mux(issue, match, 0)),
            s1.beat.eq(beat_end),
            s1.last.eq(vec_end),
        ]
        # the beat's values follow it unconditionally (they are read only under s1.beat and
        # s2.beat): the beat's end, which the row-cache hits decide late in the cycle,
        # enables none of these registers
        m.d.sync += [s1.bi.eq(bi), s1.active.eq(cur(1, "active")), s1.lsz.eq(cur(1, "lsz")),
                     s1.sgn.eq(cur(1, "sgn")), s1.side.eq(cur(1, "side"))]
        m.d.sync += [s1.off[i].eq(off[i]) for i in range(n)]

        # response: fill the caches
        # (r_read, r_beat and r_last keep the reset; the rest is data they qualify)
        r_read, r_load = at_rsp(s1_read, "r_read"), at_rsp(s1_load, "r_load", reset_less=True)
        r_beat = at_rsp(s1.beat, "r_beat")
        for i in range(n):
            with m.If(r_read & r_load[i]):
                m.d.sync += cache[i].eq(self.rd.rsp.payload)
        m.d.sync += [s2.beat.eq(r_beat), s2.last.eq(at_rsp(s1.last, "r_last"))]
        m.d.sync += [s2.bi.eq(at_rsp(s1.bi, "r_bi", True)), s2.active.eq(at_rsp(s1.active, "r_active", True)),
                     s2.lsz.eq(at_rsp(s1.lsz, "r_lsz", True)), s2.sgn.eq(at_rsp(s1.sgn, "r_sgn", True)),
                     s2.side.eq(at_rsp(s1.side, "r_side", True))]
        m.d.sync += [s2.off[i].eq(at_rsp(s1.off[i], f"r_off_{i}", True)) for i in range(n)]

        # extract: one byte per lane per beat
        vb = self.value_bits
        for i in range(n):
            byte = Signal(8, name=f"byte_{i}")
            m.d.comb += byte.eq(select_word(m, cache[i], s2.off[i], 8, f"bytesel_{i}", platform))
            if MB > 1:
                with m.If(s2.beat & ~s2.last):
                    for b in range(MB - 1):
                        with m.If(s2.bi == b):
                            m.d.sync += elem[i][8 * b:8 * b + 8].eq(byte)
            val = Signal(signed(vb), name=f"val_{i}")
            with m.Switch(s2.lsz):
                for k in range(exact_log2(MB) + 1):
                    with m.Case(k):
                        raw = Cat(elem[i][:8 * ((1 << k) - 1)], byte) if k else byte
                        m.d.comb += val.eq(Mux(s2.sgn, raw.as_signed(), raw))
            m.d.comb += self.out_vals[i].eq(Mux(s2.active[i], val, 0))
        m.d.comb += [self.out_valid.eq(s2.last), self.out_side.eq(s2.side),
                     self.busy.eq(pre_valid | v0 | s1.beat | r_beat | s2.beat)]   # (every beat in flight: L <= 2)
        return m


def _lane_offsets(m, stride, n, width):
    """[i * stride mod 2**width for i in range(n)]: each a sum of shifted strides with
    signs, the fewest terms (the non-adjacent form of i: 7 = 8 - 1, so every lane of 8
    is one adder from the stride, not two), added in a balanced tree."""
    offs = []
    for i in range(n):
        terms = [((stride << k)[:width], neg) for k, neg in _naf(i)]
        if not terms:
            offs.append(Const(0, width))
            continue
        while len(terms) > 1:
            pairs = [terms[j:j + 2] for j in range(0, len(terms), 2)]
            terms = [_combine(p, width) for p in pairs]
        v, neg = terms[0]
        s = Signal(width, name=f"lane_off_{i}")
        m.d.comb += s.eq((-v)[:width] if neg else v)
        offs.append(s)
    return offs


def _naf(i):
    """The non-zero digits of `i`'s non-adjacent form, as (position, negative), lowest first."""
    out, k = [], 0
    while i:
        if i & 1:
            d = 2 - (i & 3)                          # 1 or -1
            out.append((k, d < 0))
            i -= d
        i >>= 1
        k += 1
    return out


def _combine(pair, width):
    """One term from one or two signed terms (value, negative)."""
    if len(pair) == 1:
        return pair[0]
    (a, na), (b, nb) = pair
    if na == nb:
        return (a + b)[:width], na
    return ((b - a)[:width], False) if na else ((a - b)[:width], False)
