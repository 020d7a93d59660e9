"""The data-move engine: DATA_MOVE (BASE group 12, code 0x0; docs/isa-decisions.md
D-DATAMOVE, D-OVERLAP, D-SNAPSHOT, D-INT4, D-PRECEDENCE).

`DataMoveEngine(config)` takes one command at a time on ``cmd`` (the raw operand
table and its AS), checks every operand exactly as the golden model
(golden/semantics/datamove.py) does, moves the data through its ``rd``/``wr``
memory ports and answers on ``done`` with the fault code (0: completed). A
faulting command writes nothing: every check is made before the first write.

The engine registers the operand fields it needs in the cycle it first sees
``cmd.valid`` (the AS-dependent field multiplexers then end at flip-flops, off
every timing path through the engine) and takes the command (``cmd.ready``) only
when it has finished, one cycle before ``done`` is valid. Of the two 64-bit
addresses it keeps the low bits, a "high bits nonzero" flag, the source in full
(the immediate) and the base difference src - dst, not the raw table.

Microarchitecture
-----------------

* **Setup**: a 50-bit shift-add multiply-accumulate (one cycle per significant
  bit of the multiplier) and a divider (the divisor is first doubled while it
  fits, then one compare-subtract per quotient bit) on one accumulator; the FSM
  drives narrow operand buses, and both sides share the per-side states. The
  divider's tests (the doubling test registered a cycle ahead), the overlap
  compares and the contiguity of each side (its stride tests in two registered
  steps) start at flip-flops, not at the FSM's decode. In the golden order:
  RESERVED_UNIT (data_unit 13..15); per side ``lines = trans_size / width``
  with its remainder, the span ``last + (lines-1)*line_stride + (num-1)*surface_stride`` (exact, < 2**50), the
  D-OVERLAP contiguity and the side's range (base + span > mem_bytes, from the
  low address bits and "high bits nonzero" tests); D-OVERLAP from one 65-bit base
  difference delta = src - dst (overlap iff 0 <= delta < span_d or
  0 < -delta < span_s); normal: n_s*trans_s - n_d*trans_d = 0; upsample: kh, kv
  by division. ILLEGAL_OPERAND (remainders, upsample 1/2-D, the mode's shape rule,
  D-OVERLAP) takes precedence over ADDRESS_RANGE, and everything is decided
  before the first memory request.
* **Address walkers** (adders only): the destination is walked line by line
  (every destination line is contiguous); the source walker gives, in destination
  order, source lines (normal; upsample with kh = 1, each line kv times) or
  single elements (transpose: ``src(s, e, l)``; upsample with kh > 1:
  ``src(l // kv, e // kh)``). A walker latches its inputs at its start and
  counts down, with the limits - 1 and "count at 0" in registers, so its
  decisions start at flip-flops. Each walker hands its runs (position, length in
  bytes) through a two-run queue (`_RunQueue`) to a chunker (`_Chunker`) that
  cuts them ahead into chunks (below) in a two-entry queue; a write chunk is
  decided in one cycle and its data gathered from the stream buffer in the next,
  into a three-entry queue (`hw.reg_queue.RegQueue`) that the write port reads:
  the chunker's decisions reach neither the walkers' counters, nor the funnel
  shifter, nor the memory in the same cycle (docs/boards.md has the Fmax steps).
  ``done`` waits for the write queue to drain, and the nibble path reads a
  destination byte only once the previous element's write has left it.
* **Byte-stream path** (units of 8 bits or more, every mode): a reader takes the
  source chunks (runs cut so that none crosses a ``lanes``-aligned block), one row
  read each, and reserves room for them in a circular buffer of C bytes (stream
  byte j in slot j % C; C = 4 * lanes, 8 * lanes with a memory read latency of 2).
  The response arrives exactly ``config.mem_latency`` cycles after the read and is
  registered (the engine's one row register, shared with the nibble path: the block
  RAMs' read data reach no logic of the engine in their cycle); a cycle later it is
  rotated into its slots (the read's offset and slots follow it through as many
  registers). A writer takes the destination lines' chunks and writes each
  chunk as one row write with byte enables, gathering its bytes with a funnel
  shifter, so source and destination alignments are independent. Immediate mode:
  the reader delivers the replicated immediate instead of reading (lanes = 1: the
  writer takes the immediate's byte directly). Reads never run ahead of the free
  space and writes never ahead of the delivered data, so streaming honours
  D-SNAPSHOT for every overlap D-OVERLAP allows (contiguous normal, dst <= src).
* **Nibble path** (u4/s4): element-serial: read the source row, in the next cycle
  the destination row (both reads in flight at once), and write the merged byte in
  the cycle the destination's response is registered (D-INT4 read-modify-write;
  each read sees every earlier write, so later elements win).

Latency (cycles from ``cmd.valid`` to the transfer of ``done``, no memory stalls):
setup is 15 cycles for a 1-D normal move (9 for immediate; faults are answered
2 cycles after setup, RESERVED_UNIT after 3 cycles in all), plus per side whose
width is neither 0 nor trans_size about 2 * bitlen(lines) + 4 for the division,
plus bitlen(lines - 1) + bitlen(num_trans - 1) for a 2/3-D span, plus two
divisions for upsample, plus one cycle that registers the checks' verdict. The
move follows; ``done`` comes 4 cycles after the last write is decided. Measured
with row_bytes = 32: a one-byte move takes 27 cycles (20 before the queues and
registers that cut the engine's paths), a 2-D move of four 4-byte lines 52, an
empty move 18.

Throughput in steady state (no memory stalls; L = ``config.lanes``; measured
figures for row_bytes = lanes = 32 from tests/hw/test_datamove.py):

* normal and immediate moves, units of 8 bits or more: L bytes per cycle along
  each line at any source and destination alignment (64 KiB unaligned copy:
  32.0 B/cycle; u32 fill: 32.0); a line costs at most one extra partial row on
  each side (2-D, 256-byte source lines into 512-byte destination lines: 25.9);
* upsample with kh = 1: as normal (26.3); upsample with kh > 1 and transpose: one
  element per cycle (an element crossing an L-byte block takes two): u16
  upsample 1.87, u8 transpose 1.0, u32 transpose 3.98 B/cycle;
* int4 (u4/s4), every mode: one nibble per 4 cycles (0.12 B/cycle; the same for
  immediate moves) with a memory read latency of 1, one cycle more per further cycle
  of latency (5 before session 34, 7 with latency 2);
* lanes = 1: 1 byte per cycle for normal and immediate moves (``tiny`` uses the
  micro-coded engine, hw/datamove_micro.py, instead).
"""

from types import SimpleNamespace

from amaranth.hdl import Assert, Cat, Const, Elaboratable, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.utils import ceil_log2, exact_log2

from xdsa.golden import isa
from xdsa.golden.isa import DataUnit, Fault

from . import fields as F
from .bus import engine_answer_states, engine_members, write_request_layout
from .delay import delayed
from .reg_queue import RegQueue
from .replicate import kept_and, mux_sliced, own_replicas, replicas, slices
from .wide_mux import select_word

__all__ = ["OPCODES", "DataMoveEngine"]

OPCODES = ("data_move",)

NORMAL, IMMEDIATE, UPSAMPLE, TRANSPOSE = range(4)      # transfer_mode codes


def _shr_bytes(v, amount):
    """`v` shifted right by `amount` bytes (a Value), same width."""
    return v >> Cat(Const(0, 3), amount)


class _Side:
    """The operand fields of one side ("src"/"des") and what setup finds out about it."""

    def __init__(self, m, fld, fld_hi, fld_nz, AW, p):
        self.p = p
        name = "src" if p == "src" else "dst"
        self.base = fld(name) if p == "src" else fld(name, AW + 1)   # src in full: the immediate
        self.base_hi = fld_hi(name)
        self.trans = fld(f"{p}_trans_size")
        self.num = fld(f"{p}_num_trans")
        self.ls = fld(f"{p}_line_stride")
        self.ss = fld(f"{p}_surface_stride")
        self.w = fld(f"{p}_width")
        self.n = Signal(9, name=f"{p}_n")                  # num_trans, 0 read as 1
        self.width = Signal(24, name=f"{p}_width_eff")     # width, 0 read as trans_size
        self.has = fld_nz(f"{p}_trans_size")               # holds at least one element
        self.w_nz = fld_nz(f"{p}_width")
        # (reset-less, data: captured with the command / written by setup before CHECK reads
        # them; `contig` is recomputed every cycle; the verdict flags keep their reset)
        self.multi = Signal(name=f"{p}_multi", reset_less=True)         # num_trans > 1: captured
        self.one_line = Signal(name=f"{p}_one_line", reset_less=True)   # width 0 or trans_size: captured
        # setup results
        self.lines = Signal(24, name=f"{p}_lines", reset_less=True)     # trans_size / width
        # lines != 0, registered from `lines` (valid the cycle after it is set; UP_V's
        # divisor test reads it: the 24-bit compare before the quotient registers' enable
        # was 18.33 ns in the placed `base`, session 50)
        self.lines_nz = Signal(name=f"{p}_lines_nz", reset_less=True)
        self.rem_bad = Signal(name=f"{p}_rem_bad")         # trans_size % width != 0
        self.contig = Signal(name=f"{p}_contig", reset_less=True)       # D-OVERLAP "contiguous"
        self.oor = Signal(name=f"{p}_oor")                 # extent beyond the memory
        self.ovl = Signal(name=f"{p}_ovl")                 # the other base lies in this extent
        m.d.comb += [
            self.n.eq(Mux(self.num == 0, 1, self.num)),
            self.width.eq(Mux(self.w == 0, self.trans, self.w)),
        ]


class _Counter:
    """A walker's count of the runs left before a wrap: down from `lim - 1` to 0, with
    the limit - 1 and "at 0" (``last``) in registers, so that the walker's decisions
    start at flip-flops (no adder or comparator in front of its clock enables). A
    limit of 0 counts 2**width runs, as an up-counter compared with the limit would."""

    def __init__(self, m, name, width):
        self.m = m
        self.lim = Signal(width, name=f"{name}_lim")             # the walker's input
        # (the registers are reset-less, data: loaded by the walker's start, used only while
        # its `valid`, which keeps its reset, is high)
        self.lm1 = Signal(width, name=f"{name}_lm1", reset_less=True)       # limit - 1, latched at start
        self.lm1_last = Signal(name=f"{name}_lm1_last", reset_less=True)     # limit == 1
        self.c = Signal(width, name=f"{name}_c", reset_less=True)
        self.last = Signal(name=f"{name}_last", reset_less=True)             # c == 0

    def start(self):
        lm1 = (self.lim - 1)[:len(self.lim)]
        self.m.d.sync += [self.lm1.eq(lm1), self.lm1_last.eq(self.lim == 1),
                          self.c.eq(lm1), self.last.eq(self.lim == 1)]

    def reload(self):
        self.m.d.sync += [self.c.eq(self.lm1), self.last.eq(self.lm1_last)]

    def step(self):
        self.m.d.sync += [self.c.eq(self.c - 1), self.last.eq(self.c == 1)]


class _Walker(Elaboratable):
    """Enumerates runs (a start position in nibbles and a length in elements).

    Line mode: the lines of `lim_s` surfaces of `lim_l` lines (each line repeated
    `lim_v` times); element mode (only if `elem`): single elements of `lim_e` per
    line, the position advancing by `step_i` every `lim_h` elements. `start` latches
    every input (they may change afterwards); `take` moves to the next run; `valid`
    falls after the last one. Latency: the first run is valid in the cycle after
    `start`; throughput: one run per cycle.
    """

    def __init__(self, name, pw, ew, *, elem, repeat):
        self.name, self.pw, self.elem, self.repeat = name, pw, elem, repeat
        self.start = Signal(name=f"{name}_start")
        self.take = Signal(name=f"{name}_take")
        self.valid = Signal(name=f"{name}_valid")
        self.base = Signal(pw, name=f"{name}_base")
        self.step_l = Signal(pw, name=f"{name}_step_l")
        self.step_s = Signal(pw, name=f"{name}_step_s")
        self.lim_l = Signal(24, name=f"{name}_lim_l")
        self.lim_s = Signal(9, name=f"{name}_lim_s")
        self.line_len = Signal(ew, name=f"{name}_line_len")
        self.pos = Signal(pw, name=f"{name}_pos")
        self.len = Signal(ew, name=f"{name}_len")
        if repeat:
            self.lim_v = Signal(24, name=f"{name}_lim_v")
        if elem:
            self.elem_mode = Signal(name=f"{name}_elem_mode")
            self.step_i = Signal(pw, name=f"{name}_step_i")
            self.lim_e = Signal(ew, name=f"{name}_lim_e")       # elements of a destination line
            self.lim_h = Signal(ew, name=f"{name}_lim_h")

    def elaborate(self, platform):
        m = Module()
        n, pw = self.name, self.pw
        cl, cs = _Counter(m, f"{n}_l", 24), _Counter(m, f"{n}_s", 9)
        m.d.comb += [cl.lim.eq(self.lim_l), cs.lim.eq(self.lim_s)]
        # the latched inputs and the addresses are reset-less (data): loaded by `start`,
        # used only while `valid` (reset) is high
        step_l = Signal(pw, name=f"{n}_q_step_l", reset_less=True)
        step_s = Signal(pw, name=f"{n}_q_step_s", reset_less=True)
        line_len = Signal.like(self.line_len, name=f"{n}_q_line_len", reset_less=True)
        a_surf = Signal(pw, name=f"{n}_a_surf", reset_less=True)
        a_line = Signal(pw, name=f"{n}_a_line", reset_less=True)
        counters = [cl, cs]
        latched = [(step_l, self.step_l), (step_s, self.step_s), (line_len, self.line_len)]
        if self.repeat:
            cv = _Counter(m, f"{n}_v", 24)
            m.d.comb += cv.lim.eq(self.lim_v)
            counters.append(cv)
        if self.elem:
            ce, ch = _Counter(m, f"{n}_e", len(self.lim_e)), _Counter(m, f"{n}_h", len(self.lim_h))
            m.d.comb += [ce.lim.eq(self.lim_e), ch.lim.eq(self.lim_h)]
            counters += [ce, ch]
            elem_mode = Signal(name=f"{n}_q_elem_mode", reset_less=True)
            step_i = Signal(pw, name=f"{n}_q_step_i", reset_less=True)
            latched += [(elem_mode, self.elem_mode), (step_i, self.step_i)]
            a_elem = Signal(pw, name=f"{n}_a_elem", reset_less=True)
            m.d.comb += [self.pos.eq(Mux(elem_mode, a_elem, a_line)), self.len.eq(Mux(elem_mode, 1, line_len))]
        else:
            m.d.comb += [self.pos.eq(a_line), self.len.eq(line_len)]

        def set_line(v):
            m.d.sync += a_line.eq(v)
            if self.elem:
                m.d.sync += a_elem.eq(v)

        def next_line():
            """The run after the last of a line: the next line, surface or the end."""
            if self.elem:
                ce.reload()
                ch.reload()
            with m.If(cl.last):
                cl.reload()
                if self.repeat:
                    cv.reload()
                with m.If(cs.last):
                    m.d.sync += self.valid.eq(0)
                with m.Else():
                    nxt = (a_surf + step_s)[:pw]
                    cs.step()
                    m.d.sync += a_surf.eq(nxt)
                    set_line(nxt)
            with m.Else():
                cl.step()
                nxt = (a_line + step_l)[:pw]
                if self.repeat:
                    with m.If(cv.last):
                        cv.reload()
                        set_line(nxt)
                    with m.Else():
                        cv.step()
                        if self.elem:
                            m.d.sync += a_elem.eq(a_line)
                else:
                    set_line(nxt)

        with m.If(self.start):
            m.d.sync += [self.valid.eq(1), a_surf.eq(self.base)]
            m.d.sync += [q.eq(v) for q, v in latched]
            for c in counters:
                c.start()
            set_line(self.base)
        with m.Elif(self.take & self.valid):
            if self.elem:
                with m.If(elem_mode & ~ce.last):
                    ce.step()
                    with m.If(ch.last):
                        ch.reload()
                        m.d.sync += a_elem.eq(a_elem + step_i)
                    with m.Else():
                        ch.step()
                with m.Else():
                    next_line()
            else:
                next_line()
        return m


class _RunQueue(Elaboratable):
    """Two runs (`hw.reg_queue.RegQueue`) between a walker and the chunker that
    consumes them, each as its position and its length in bytes (nibbles for int4:
    `is4`; `lsz` is log2 of the element's bytes), so the chunker starts from
    registers. The walker advances when it has a run and the queue has room --
    the queue's own registers, never the chunker's decision of the cycle -- so the
    chunker's transfer decision does not reach the walker's counters (their clock
    enables were the engine's critical path). ``ready``: a run is queued (``pos``/
    ``len``, the oldest); ``take`` drops it; ``have``: a run is queued or still to
    come. For the chunker's first cut of the run into `L`-byte blocks the queue also
    holds ``space`` (the bytes from ``pos`` to its block's end) and ``big`` (the run
    reaches that end), computed as the run is queued. Latency: a run is queued one
    cycle after the walker offers it; throughput one run per cycle."""

    def __init__(self, walker, is4, lsz, L):
        self.w, self.is4, self.lsz, self.L = walker, is4, lsz, L
        lL = exact_log2(L)
        self.space = Signal(lL + 1, name=f"{walker.name}_q_space")
        self.big = Signal(name=f"{walker.name}_q_big")
        self.pos = Signal(len(walker.pos), name=f"{walker.name}_q_pos")
        self.len = Signal(len(walker.len), name=f"{walker.name}_q_len")          # bytes (int4: nibbles)
        self.ready = Signal(name=f"{walker.name}_q_ready")
        self.have = Signal(name=f"{walker.name}_q_have")
        self.take = Signal(name=f"{walker.name}_q_take")

    def elaborate(self, platform):
        m = Module()
        w = self.w
        L, lL = self.L, exact_log2(self.L)
        m.submodules.q = q = RegQueue(data.StructLayout({"pos": len(w.pos), "len": len(w.len),
                                                         "space": lL + 1, "big": 1}))
        nbytes = Signal(len(w.len))
        space = Signal(lL + 1)
        m.d.comb += [
            nbytes.eq(Mux(self.is4, w.len, w.len << self.lsz)),
            space.eq((Const(L, lL + 1) - w.pos[1:lL + 1])[:lL + 1]),
        ]
        m.d.comb += [
            q.flush.eq(w.start), q.w_valid.eq(w.valid), q.w_data.pos.eq(w.pos),
            q.w_data.len.eq(nbytes), q.w_data.space.eq(space),
            q.w_data.big.eq((nbytes[lL + 1:] != 0) | (nbytes[:lL + 1] >= space)),
            self.space.eq(q.r_data.space), self.big.eq(q.r_data.big),
            w.take.eq(w.valid & q.w_ready & ~w.start),
            q.r_ready.eq(self.take),
            self.ready.eq(q.r_valid), self.have.eq(q.r_valid | w.valid),
            self.pos.eq(q.r_data.pos), self.len.eq(q.r_data.len),
        ]
        return m


class _Chunker(Elaboratable):
    """Cuts the runs of a `_RunQueue` into chunks that never cross an `L`-byte block
    (int4, `is4`: single nibbles) and queues them in a `hw.reg_queue.RegQueue`:
    ``valid``, ``pos`` (nibble position of the chunk's first byte or nibble), ``n``
    (its bytes; 1 for a nibble), ``ones`` (``n`` as a thermometer code: its low ``n``
    of `L` bits set; ``n_cmp`` a register copy of ``n`` for the transfer decisions'
    compares), ``take`` drops it. Chunk sizes depend only on the
    runs, not on the stream buffer, so they are cut ahead: the reader's and the
    writer's transfer decisions start at the queue's registers, and the chunker
    advances on the queue's room alone. ``have``: a chunk is queued or still to
    come; ``flush`` drops everything. Latency: a run's first chunk is queued one
    cycle after the run; throughput: one chunk per cycle."""

    def __init__(self, runs, is4, L, pw, rw, *, checks=False):
        self.runs, self.is4, self.L, self.pw, self.rw = runs, is4, L, pw, rw
        self.checks = checks
        name = runs.w.name
        self.valid = Signal(name=f"{name}_c_valid")
        self.pos = Signal(pw, name=f"{name}_c_pos")
        self.n = Signal(exact_log2(L) + 1, name=f"{name}_c_n")
        self.n_cmp = Signal(exact_log2(L) + 1, name=f"{name}_c_n_cmp")
        self.ones = Signal(L, name=f"{name}_c_ones")
        self.take = Signal(name=f"{name}_c_take")
        self.have = Signal(name=f"{name}_c_have")
        self.flush = Signal(name=f"{name}_c_flush")

    def elaborate(self, platform):
        m = Module()
        L, lL, rq, is4 = self.L, exact_log2(self.L), self.runs, self.is4
        m.submodules.q = q = RegQueue(data.StructLayout({"pos": self.pw, "n": lL + 1, "ones": L}))
        # (pos and rem are data, used only while `act`, which keeps its reset)
        pos = Signal(self.pw, reset_less=True)      # the run being cut
        rem = Signal(self.rw, reset_less=True)      # its bytes (nibbles) not yet queued
        act = Signal()                              # rem != 0, kept in a register
        p = Mux(act, pos, rq.pos)
        left = Mux(act, rem, rq.len)
        n = Signal(lL + 1)
        ones = Signal(L)
        p_next = Signal(self.pw)                    # after the chunk
        rem_next = Signal(self.rw)
        act_next = Signal()
        if L == 1:
            m.d.comb += [n.eq(1), ones.eq(1), p_next.eq(p + Mux(is4, 1, 2)), rem_next.eq(left - 1), act_next.eq(left != 1)]
        else:
            # the chunk either fills the block (`big`: up to its end) or ends the run; each
            # outcome's position, remainder and "more to come" are computed beside the
            # choice of one. A run's first chunk takes `space` and `big` from the run queue;
            # later chunks start at a block (the last one was big), so `space` is L
            space = Mux(act, L, rq.space)
            big = Mux(act, rem[lL:] != 0, rq.big)          # rem >= L, without a carry chain
            p_up = Cat(Const(0, lL + 1), p[lL + 1:] + 1)[:self.pw]       # the next block's start

            def therm(v):
                return ~(Const((1 << L) - 1, L) << v)[:L]
            m.d.comb += [
                n.eq(Mux(is4, 1, Mux(big, space, left[:lL + 1]))),
                ones.eq(Mux(is4, 1, Mux(big, therm(space), therm(left[:lL + 1])))),
                p_next.eq(Mux(is4, p + 1, Mux(big, p_up, p + Cat(Const(0, 1), left[:lL + 1])))),
                rem_next.eq(Mux(is4, left - 1, Mux(big, left - space, 0))),
                act_next.eq(Mux(is4, left != 1, big & (left != space))),
            ]
        push = Signal()
        m.d.comb += [
            push.eq((act | rq.ready) & q.w_ready & ~self.flush),
            q.w_valid.eq(push), q.w_data.pos.eq(p), q.w_data.n.eq(n), q.w_data.ones.eq(ones), q.flush.eq(self.flush),
            q.r_ready.eq(self.take),
            self.valid.eq(q.r_valid), self.pos.eq(q.r_data.pos), self.n.eq(q.r_data.n), self.ones.eq(q.r_data.ones),
            self.have.eq(q.r_valid | act | rq.have),
        ]
        # the transfer decisions' own copy of the head's `n` (their compares with the stream
        # buffer's room and bytes): the head fans out to the counts' adders and the byte
        # enables, and its wire across the engine led the decisions' paths on the placed
        # `base` (6.5 ns, 113 tiles, session 37)
        n_cmp, = replicas(m, platform, q.r_data_next.n, 1, f"{self.runs.w.name}_c_n_cmp", reset_less=True)
        m.d.comb += self.n_cmp.eq(n_cmp)
        with m.If(self.flush):
            m.d.sync += [rem.eq(0), act.eq(0)]
        with m.Elif(push):
            m.d.sync += [pos.eq(p_next), rem.eq(rem_next), act.eq(act_next)]
            m.d.comb += rq.take.eq(~act)
        if self.checks:
            m.d.sync += Assert(~q.r_valid | (n_cmp == q.r_data.n), "data-move chunker: the copy of n differs")
        return m


class DataMoveEngine(wiring.Component):
    """DATA_MOVE for one `CoreConfig` (see the module docstring for the
    microarchitecture, latency and throughput). ``table_bits`` is the width of the
    raw operand table it takes.

    The engine registers the fields it needs from ``cmd.payload`` in the first cycle
    of ``cmd.valid`` and takes the command (``cmd.ready``) only when it has finished,
    one cycle before ``done``; the producer holds the command meanwhile (stream rules).
    ``checks``: simulation-only `Assert`s on the engine's register copies of its state
    (the unit tests set it)."""

    def __init__(self, config, *, checks=False):
        lanes = config.lanes
        if lanes < 1 or lanes & (lanes - 1) or config.row_bytes % lanes:
            raise ValueError(f"datamove lanes must be a power of two dividing row_bytes "
                             f"({config.row_bytes}), not {lanes!r}")
        self.config, self.checks = config, checks
        self._op = isa.by_mnemonic("data_move")
        self.table_bits = F.table_bits([self._op])
        super().__init__(engine_members(config, self.table_bits, ["rd"]))

    def elaborate(self, platform):
        m = Module()
        cfg, op = self.config, self._op
        R, L = cfg.row_bytes, cfg.lanes
        # stream buffer bytes: L-byte blocks for the reads of one round trip (a read's
        # delivery lands mem_latency + 1 cycles after it, and the write that frees its room
        # is decided then) and one more for a write chunk that straddles two deliveries,
        # rounded up to a power of two: 4 blocks with a memory read latency of 1, 8 with 2
        C = (1 << ceil_log2(cfg.mem_latency + 3)) * L
        lR, lL, lC = exact_log2(R), exact_log2(L), exact_log2(C)
        AW = max(ceil_log2(cfg.mem_bytes), lR + 1)  # byte address bits inside memory
        PW = AW + 1                                 # nibble position bits
        RW = AW + 2                                 # run remainder bits (bytes or nibbles)
        MEM = cfg.mem_bytes

        # --- the command's fields, registered in the cycle the command is seen (IDLE) ----
        # Registering them keeps the AS field multiplexers and the core's decode out of
        # every path through the engine; of the 64-bit addresses only what the checks
        # and walkers use is kept: the low AW + 1 bits, "high bits nonzero", the source
        # in full (the immediate) and the base difference src - dst (65 bits) reduced to
        # its low 50 bits, its sign and "within 2**50". The difference is computed from
        # the command's fields, whose multiplexers the carry cells absorb (from the
        # captured addresses a cycle later: 634 more LUT4s). (Smaller too: in the flattened
        # `tiny` on an iCE40, 330 more flip-flops but about 400 fewer LUT4s and 330 fewer
        # logic cells, as the field multiplexers are no longer merged into their users.)
        # The captured registers are reset-less (data): they are loaded in IDLE before the
        # FSM (reset) leaves it, and read only in the states after.
        table = self.cmd.payload.table
        as_code = self.cmd.payload.as_code
        capture = Signal()                          # IDLE with a command

        def comb_fld(name):
            return F.field(table, as_code, op, name)

        def keep(s, v):
            with m.If(capture):
                m.d.sync += s.eq(v)
            return s

        def fld(name, width=None):
            s = Signal(width or F.field_width(op, name), name=f"f_{name}", reset_less=True)
            return keep(s, comb_fld(name)[:len(s)])

        def fld_hi(name):                           # field bits AW + 1 and up nonzero
            return keep(Signal(name=f"f_{name}_hi", reset_less=True), comb_fld(name)[AW + 1:] != 0)

        mode = fld("transfer_mode")
        is4 = Signal(reset_less=True)               # the data unit, decoded as it is captured
        lsz = Signal(2, reset_less=True)            # log2(element bytes)
        with m.If(capture):
            with m.Switch(comb_fld("data_unit")):
                for u in DataUnit:
                    with m.Case(int(u)):
                        m.d.sync += [is4.eq(u.bits == 4),
                                     lsz.eq(exact_log2(u.bits // 8) if u.bits >= 8 else 0)]
        mode_now = comb_fld("transfer_mode")         # decoded as it is captured
        imm, normal, upsample, transpose = (keep(Signal(name=f"mode_{k}", reset_less=True), mode_now == v)
                                            for k, v in (("imm", IMMEDIATE), ("normal", NORMAL),
                                                         ("upsample", UPSAMPLE), ("transpose", TRANSPOSE)))
        def fld_nz(name):                           # field nonzero
            return keep(Signal(name=f"f_{name}_nz", reset_less=True), comb_fld(name) != 0)

        d = _Side(m, fld, fld_hi, fld_nz, AW, "des")
        s = _Side(m, fld, fld_hi, fld_nz, AW, "src")
        for side in (d, s):
            keep(side.multi, comb_fld(f"{side.p}_num_trans") > 1)
            w_now = comb_fld(f"{side.p}_width")
            keep(side.one_line, (w_now == 0) | (w_now == comb_fld(f"{side.p}_trans_size")))
        pattern = s.base                            # the immediate (zero-extended)

        # --- setup datapath: one 50-bit adder for multiply-accumulate, divide, compare -----
        # The FSM drives narrow operand buses and strobes; the wide registers are updated
        # in one place below. Both sides share the per-side states through `sd`.
        # (ma, mb, acc, steps and the registered tests are reset-less, data: loaded by a
        # mac or division state before it reads them; busy, in_div and phase keep the reset)
        sd = Signal()                               # side in setup: 0 destination, 1 source
        busy = Signal()
        ma = Signal(24, reset_less=True)            # multiplier / quotient
        mb = Signal(48, reset_less=True)            # multiplicand / divisor
        acc = Signal(50, reset_less=True)           # accumulator / remainder
        steps = Signal(5, reset_less=True)
        op_a = Signal(24)                           # multiplier to load
        op_b = Signal(24)                           # multiplicand / divisor to load
        op_c = Signal(24)                           # dividend to load
        ld_mac, ld_div, clr_acc, ld_bl = (Signal(name=nm) for nm in ("ld_mac", "ld_div", "clr_acc", "ld_bl"))
        mac_step, norm_step, div_step = (Signal(name=nm) for nm in ("mac_step", "norm_step", "div_step"))
        alu_sub = Signal()                          # the mac subtracts: set as it loads
        alu_b = Signal(50)
        alu = Signal(51)                            # acc +- alu_b; alu[50]: carry (acc >= b)
        dlt = Signal(65, reset_less=True)           # src - dst ([64]: the borrow; captured)
        acc_zero = Signal()
        m.d.comb += acc_zero.eq(acc == 0)
        m.d.comb += alu_b.eq(Mux(ma[0], mb, 0))
        m.d.comb += alu.eq(acc + Mux(alu_sub, ~alu_b, alu_b) + alu_sub)
        # the divider's tests on registers only (no FSM decode or operand multiplexer in
        # front of the carries that enable the 48-bit divisor register)
        div_sub = Signal(51)                        # acc - mb; [50]: acc >= mb
        # acc >= mb << 1 for the registers of this cycle, computed in the last one: after a
        # normalisation step (mb doubled, acc kept) that is acc >= (old mb) << 2
        div_norm = Signal(reset_less=True)
        m.d.comb += div_sub.eq(Cat(acc, Const(1, 1)) - mb)
        m.d.sync += div_norm.eq(Mux(norm_step, acc >= (mb << 2), acc >= (mb << 1)))

        # the side being set up
        x = SimpleNamespace(
            trans=Mux(sd, s.trans, d.trans), w=Mux(sd, s.w, d.w), ls=Mux(sd, s.ls, d.ls),
            ss=Mux(sd, s.ss, d.ss), lines=Mux(sd, s.lines, d.lines),
            base_lo=Mux(sd, s.base[:AW + 1], d.base[:AW + 1]),
            base_hi=Mux(sd, s.base_hi, d.base_hi))
        x_n = Signal(9)
        m.d.comb += x_n.eq(Mux(sd, s.n, d.n))

        def set_side(reg_d, reg_s, v):
            with m.If(sd):
                m.d.sync += reg_s.eq(v)
            with m.Else():
                m.d.sync += reg_d.eq(v)

        def byte_count(side, count, tag):
            """The bytes of `count` elements of `side` (an odd int4 count rounded up) and
            whether the count is an odd int4 one, registered from captured fields (valid
            from the FIELDS state on)."""
            b = Signal(28, name=f"{side.p}_bytes_{tag}", reset_less=True)
            odd = Signal(name=f"{side.p}_odd_{tag}", reset_less=True)
            m.d.sync += [b.eq(Mux(is4, (count + 1) >> 1, count << lsz)), odd.eq(is4 & count[0])]
            return b, odd

        line_bytes = {}                             # per side: a line's bytes (the span's last line)

        def contiguous(side):
            """D-OVERLAP "contiguous" for `side` (``side.contig``), from its fields and
            lines, registered (valid two cycles after its lines are known, long before
            CHECK reads it): every line follows the last, and every surface too. An odd
            int4 count never is. The stride tests read only the registered byte counts
            and are registered on their own."""
            def spans(count, stride, tag):
                b, odd = byte_count(side, count, tag)
                q = Signal(name=f"{side.p}_spans_{tag}", reset_less=True)
                m.d.sync += q.eq((stride == b) & ~odd)
                return b, q
            line_bytes[side.p], span_l = spans(side.width, side.ls, "line")
            _, span_s = spans(side.trans, side.ss, "surface")
            m.d.sync += side.contig.eq(((side.lines <= 1) | span_l) & ((side.n <= 1) | span_s))
            m.d.sync += side.lines_nz.eq(side.lines != 0)

        contiguous(d)
        contiguous(s)

        with m.If(ld_mac):
            m.d.sync += [ma.eq(op_a), mb.eq(op_b)]
        with m.If(clr_acc):
            m.d.sync += acc.eq(0)
        with m.If(ld_div):
            m.d.sync += [acc.eq(op_c), mb.eq(op_b), ma.eq(0), steps.eq(0)]
        with m.If(ld_bl):
            m.d.sync += acc.eq(Mux(sd, line_bytes["src"], line_bytes["des"]))
        with m.If(mac_step):
            m.d.sync += [acc.eq(alu[:50]), ma.eq(ma >> 1), mb.eq(mb << 1)]
        with m.If(norm_step):
            m.d.sync += [mb.eq(mb << 1), steps.eq(steps + 1)]
        with m.If(div_step):
            m.d.sync += [ma.eq(Cat(div_sub[50], ma[:-1])), mb.eq(mb >> 1), steps.eq(steps - 1)]
            with m.If(div_sub[50]):
                m.d.sync += acc.eq(div_sub[:50])

        # D-OVERLAP: the extents [base, base + span) of the two sides intersect iff, with
        # delta = src - dst, either delta >= 0 and span_d - delta > 0, or delta < 0 and
        # span_s + delta > 0 (EVAL of each side, comparing registers only: -delta is
        # captured too).
        near_d = Signal(reset_less=True)                      # delta in [0, 2**50) (captured)
        near_s = Signal(reset_less=True)                      # delta in [-2**50, 0)
        dlt_now = Signal(65)
        ndlt = Signal(51, reset_less=True)                    # -delta, when near_s
        m.d.comb += dlt_now.eq(comb_fld("src") - comb_fld("dst"))
        keep(dlt[:50], dlt_now[:50])
        keep(ndlt, (comb_fld("dst") - comb_fld("src"))[:51])
        keep(dlt[64], dlt_now[64])
        keep(near_d, ~dlt_now[64] & (dlt_now[50:64] == 0))
        keep(near_s, dlt_now[64] & (dlt_now[50:64] == (1 << 14) - 1))
        kh = Signal(AW + 2, reset_less=True)        # <= des width (elements) when legal; 1 unless upsample
        kv = Signal(24, reset_less=True)            # (kh, kv: set to 1 in IDLE)
        kh_ok = Signal()
        kv_ok = Signal()
        fault = Signal(8)
        phase = Signal(2)                           # division: normalise, divide, finish, load
        in_div = Signal()                           # the busy operation is a division
        # the datapath's steps from registers only (busy is high in a mac or division
        # state alone), not from the FSM's decode: yosys shares the mac's and the
        # divider's adders, so the step choice is an operand choice of the carry chain
        m.d.comb += [mac_step.eq(busy & ~in_div),
                     norm_step.eq(busy & in_div & (phase == 0) & div_norm & (steps != 23)),
                     div_step.eq(busy & in_div & (phase == 1))]

        def goto(state):
            def then():
                m.next = state
            return then

        def mac_state(name, a, b, then, *, sub=False, clear=False, a_zero=None):
            """acc (+/-)= a * b, one cycle per significant bit of `a` (a = 0: one cycle);
            then() runs in the last cycle (acc is final in the next state). The operands
            are loaded even when a = 0 (no later state reads them), so that the enables of
            the wide operand registers do not wait for the test of a."""
            with m.State(name):
                with m.If(~busy):
                    m.d.comb += [op_a.eq(a), op_b.eq(b), clr_acc.eq(clear), ld_mac.eq(1)]
                    m.d.sync += [alu_sub.eq(sub), in_div.eq(0)]
                    with m.If((a == 0) if a_zero is None else a_zero):
                        then()
                    with m.Else():
                        m.d.sync += busy.eq(1)
                with m.Else():
                    with m.If(ma[1:] == 0):
                        m.d.sync += busy.eq(0)
                        then()

        def div_state(name, a, b, then, shortcut=None, b_zero=None):
            """ma, acc = a // b, a % b (b = 0: then() at once, results meaningless): the
            divisor is first doubled while it fits under the dividend, then one
            compare-subtract per quotient bit; then() runs with the results. A cycle after
            the load lets the registered doubling test see the loaded operands."""
            with m.State(name):
                with m.If(~busy):
                    m.d.comb += [op_c.eq(a), op_b.eq(b), ld_div.eq(1)]
                    m.d.sync += [phase.eq(3), busy.eq(1), in_div.eq(1)]
                    with m.If((b == 0) if b_zero is None else b_zero):
                        m.d.sync += busy.eq(0)
                        then()
                    if shortcut is not None:
                        shortcut()
                with m.Elif(phase == 3):
                    m.d.sync += phase.eq(0)
                with m.Elif(phase == 0):
                    with m.If(~(div_norm & (steps != 23))):
                        m.d.sync += phase.eq(1)
                with m.Elif(phase == 1):
                    with m.If(steps == 0):
                        m.d.sync += phase.eq(2)
                with m.Else():
                    m.d.sync += busy.eq(0)
                    then()

        def side_states(after):
            """For side `sd`: lines, then the extent: acc = last + (lines-1) *
            line_stride + (n-1) * surface_stride, then the side's flags from it."""
            def last():
                m.d.comb += ld_bl.eq(1)

            def shortcut():                 # width 0 or width = trans_size: one line
                with m.If(Mux(sd, s.one_line, d.one_line)):
                    m.d.sync += busy.eq(0)
                    set_side(d.lines, s.lines, x.trans != 0)
                    set_side(d.rem_bad, s.rem_bad, 0)
                    last()
                    m.next = "SPAN_L"

            def got_lines():
                set_side(d.lines, s.lines, ma)
                set_side(d.rem_bad, s.rem_bad, ~acc_zero)
                m.next = "LAST"

            div_state("LINES", x.trans, x.w, got_lines, shortcut, b_zero=~Mux(sd, s.w_nz, d.w_nz))
            with m.State("LAST"):
                last()
                m.next = "SPAN_L"
            mac_state("SPAN_L", Mux(x.lines == 0, 0, x.lines - 1), x.ls, goto("SPAN_S"),
                      a_zero=x.lines[1:] == 0)
            mac_state("SPAN_S", x_n - 1, x.ss, goto("EVAL"), a_zero=~Mux(sd, s.multi, d.multi))
            with m.State("EVAL"):
                # acc is the span: the side's pattern lies in [base, base + span)
                set_side(d.oor, s.oor, x.base_hi | (acc[AW + 1:] != 0) | (x.base_lo + acc[:AW + 1] > MEM))
                set_side(d.ovl, s.ovl, Mux(sd, near_s & (acc > ndlt), near_d & (acc > dlt[:50])))
                after()

        # --- checks, in D-PRECEDENCE order (the CHECK state) --------------------------------
        empty = ~d.has & (imm | ~s.has)
        shape_bad = Signal()
        with m.Switch(mode):
            with m.Case(NORMAL):
                m.d.comb += shape_bad.eq(~acc_zero)         # n_s*trans_s - n_d*trans_d
            with m.Case(UPSAMPLE):
                m.d.comb += shape_bad.eq(~(s.has & d.has & kh_ok & kv_ok))
            with m.Case(TRANSPOSE):
                m.d.comb += shape_bad.eq(~((d.n == s.n) & (d.trans == s.trans) & (d.width == s.lines)))
        overlap = ~imm & s.has & d.has & (d.ovl | s.ovl)
        overlap_ok = normal & s.contig & d.contig & ~dlt[64]
        illegal = Signal()
        out_of_range = Signal()
        m.d.comb += [
            illegal.eq(d.rem_bad | (~imm & s.rem_bad) | (upsample & ((s.num > 1) | (d.num > 1)))
                       | (~empty & shape_bad) | (overlap & ~overlap_ok)),
            out_of_range.eq((~imm & s.has & s.oor) | (d.has & d.oor)),
        ]
        illegal_q, out_of_range_q = (Signal(name=nm) for nm in ("illegal_q", "out_of_range_q"))
        m.d.sync += [illegal_q.eq(illegal), out_of_range_q.eq(out_of_range)]

        # --- walkers ------------------------------------------------------------------------
        sw = _Walker("sw", PW, AW + 2, elem=True, repeat=True)     # source runs, destination order
        dw = _Walker("dw", PW, AW + 2, elem=False, repeat=False)   # destination lines
        m.submodules.sw = sw
        m.submodules.dw = dw

        def nib(v):                                 # a byte quantity in nibbles, PW bits
            return Cat(Const(0, 1), v)[:PW]

        estep = Mux(is4, 1, Const(2, 5) << lsz)[:PW]               # one element, in nibbles
        up_lines = upsample & (kh == 1)
        m.d.comb += [
            dw.base.eq(nib(d.base)), dw.step_l.eq(nib(d.ls)), dw.step_s.eq(nib(d.ss)),
            dw.lim_l.eq(d.lines), dw.lim_s.eq(d.n), dw.line_len.eq(d.width[:AW + 2]),
            sw.base.eq(nib(s.base)), sw.step_s.eq(nib(s.ss)), sw.line_len.eq(s.width[:AW + 2]),
            sw.lim_e.eq(d.width),
            sw.elem_mode.eq(transpose | (upsample & ~up_lines)),
            sw.step_l.eq(Mux(transpose, estep, nib(s.ls))),
            sw.step_i.eq(Mux(transpose, nib(s.ls), estep)),
            sw.lim_h.eq(kh),                                       # 1 unless upsample
            sw.lim_v.eq(kv),
            sw.lim_l.eq(Mux(normal, s.lines, d.lines)),
            sw.lim_s.eq(Mux(upsample, 1, s.n)),
        ]

        # --- the current source / destination run (shared by both paths) ------------------
        # A write chunk is decided in one cycle (`st_wr`: its row and byte enables are
        # registered as the pending chunk, `pv`) and its data gathered from the buffer in
        # the next, into a three-entry register queue (`RegQueue`) that the write port
        # reads: the decision reaches neither the funnel shifter nor the memory in its
        # cycle, and the memory's ready does not reach the decision. A chunk is decided
        # only when the queue will have room for it (its count plus the pending chunk
        # below 3); `done` waits until both are empty.
        m.submodules.wq = wq = RegQueue(write_request_layout(len(self.wr.req.payload.row), 8 * R), depth=3)
        pv = Signal()                               # a chunk was decided in the last cycle
        # (the pending chunk's row and enables are data, loaded every cycle and used only under `pv`,
        # which is reset)
        p_row = Signal(len(self.wr.req.payload.row), reset_less=True)
        wr_be = Signal(R, reset_less=True)          # its byte enables
        w_space = Signal()
        m.d.comb += w_space.eq(wq.count + pv < 3)
        m.d.comb += [self.wr.req.valid.eq(wq.r_valid), self.wr.req.payload.eq(wq.r_data),
                     wq.r_ready.eq(self.wr.req.ready)]
        m.submodules.sq = sq = _RunQueue(sw, is4, lsz, L)
        m.submodules.dq = dq = _RunQueue(dw, is4, lsz, L)
        m.submodules.sc = sc = _Chunker(sq, is4, L, PW, RW, checks=self.checks)
        m.submodules.dc = dc = _Chunker(dq, is4, L, PW, RW, checks=self.checks)
        r_p, w_p = sc.pos, dc.pos                   # the next source / destination chunk
        r_rdy, w_rdy = sc.valid, dc.valid
        w_have = dc.have                            # a destination chunk now or later
        r_addr = r_p[1:]                            # byte addresses
        w_addr = w_p[1:]
        r_n, w_m = sc.n, dc.n                       # their bytes
        r_take = Signal()                           # the chunk/nibble is done
        w_take = Signal()
        m.d.comb += [sc.take.eq(r_take), dc.take.eq(w_take)]

        # The response row is registered as it arrives (`rsp_row`, valid `rsp_v`), and both
        # paths take their bytes from the register: the block RAMs' read data crosses the
        # chip to the engine, and block RAM -> the byte selection -> the stream buffer (or
        # the nibble) was the placed `base`'s worst path (22.2 ns, session 34). A read's
        # bookkeeping, registered in the cycle of the read, reaches the registered response
        # L = config.mem_latency cycles later through `at_rsp` (L more registers)
        # (reset_less for the row and the bookkeeping data, used only under `rsp_v`)
        L_mem = self.config.mem_latency
        rsp_v = Signal()
        rsp_row = Signal(len(self.rd.rsp.payload), reset_less=True)
        m.d.sync += [rsp_v.eq(self.rd.rsp.valid), rsp_row.eq(self.rd.rsp.payload)]

        def at_rsp(value, name, reset_less=False):
            return delayed(m, value, L_mem, name, reset_less=reset_less)

        rsp_off = Signal(lR, reset_less=True)       # the byte of interest in the next read's response
        rsp_off_at = at_rsp(rsp_off, "rsp_off_q", reset_less=True)  # ... in the response registered now
        rsp_byte = select_word(m, rsp_row, rsp_off_at, 8, "rsp_byte", platform)

        # --- byte-stream path -----------------------------------------------------------------
        # A circular buffer of C bytes (4 or 8 blocks of `lanes`) between the reader and the writer:
        # stream byte j lives in slot j % C. Reads reserve room before they are issued
        # (the response cannot wait); the writer takes delivered bytes only.
        # The buffer's bytes and a delivery's size, rotation and slots are reset-less (data:
        # read only under the reset counts and `inf_v`); the counts keep their reset.
        # the control is in STREAM: a register set on the way in and cleared on the way out
        # (decoded from the state, it led the placed `base`'s paths into the read request
        # and the write queue, 17-19.3 ns, session 37); asserted equal to the state under
        # `checks`
        st_on = Signal()
        # CHECK likewise: it flushes the chunkers (the state -> `flush`, fan-out 49 -> the
        # chunkers' pushes -> their queues' enables, 18.15 ns on cf0b714 seed 2)
        chk_on = Signal()
        m.d.comb += [sc.flush.eq(chk_on), dc.flush.eq(chk_on)]
        wres = Signal(lC + 1)                       # bytes reserved by reads
        wdel = Signal(lC + 1)                       # bytes delivered into the buffer
        rptr = Signal(lC + 1)                       # bytes written out
        buf = Signal(8 * C, reset_less=True)
        inf_v = Signal()                            # a delivery lands this cycle
        inf_n = Signal(lL + 1)                      # its byte count
        inf_v_r = Signal()                          # a delivery was scheduled in the previous cycle
        inf_n_r = Signal(lL + 1, reset_less=True)   # (it lands L - 1 cycles later)
        pmask = ((Const(1, 4) << lsz) - 1)[:3]      # byte index within an element

        room = Signal(lC + 1)                       # C - (wres - rptr), kept in a register
        avail = Signal(lC + 1)                      # wdel - rptr, kept in a register
        r_go = st_on & ~imm & r_rdy & (sc.n_cmp <= room)
        st_rd = Signal()                            # a delivery is scheduled (read or immediate)
        w_data = Signal()                           # the buffer holds the destination chunk's bytes
        if L == 1:
            # the immediate bypasses the buffer: byte (stream position mod size) of it
            ph = Signal(3, reset_less=True)         # stream bytes written, mod 8 (cleared by dw.start)
            m.d.comb += w_data.eq(imm | (wdel != rptr))
            m.d.comb += st_rd.eq(r_go & self.rd.req.ready)
        else:
            # immediate: the reader delivers `lanes` bytes of the replicated immediate per
            # cycle instead of reading, so the buffer holds the periodic pattern
            m.d.comb += w_data.eq(avail >= dc.n_cmp)
            m.d.comb += st_rd.eq((r_go & self.rd.req.ready) | (st_on & imm & (room >= L)))
        # the write decision, one kept LUT for the counts and `pv` (`st_wr`) and one for the
        # chunker's take (`st_wr_take`); the pending chunk's row, enables and slot are
        # loaded every cycle (used only under `pv`). As one net (fan-out 74 over 86 tiles)
        # the decision was the placed `base`'s worst path, 19.56 ns (session 54)
        w_terms = [st_on, w_rdy, w_data, w_space]
        st_wr, st_wr_take = (kept_and(m, platform, w_terms, nm) for nm in ("st_wr", "st_wr_take"))
        # the counts' next values for each outcome are summed beside the decisions, which
        # only pick one (the decisions are the engine's longest paths)
        rd_n = Mux(imm, L, r_n)
        room_rd = Signal(lC + 1)
        m.d.comb += room_rd.eq(Mux(st_rd, room - rd_n, room))
        room_both = Signal(lC + 1)
        m.d.comb += room_both.eq(room - rd_n + w_m)
        m.d.sync += room.eq(Mux(st_wr, Mux(st_rd, room_both, room + w_m), room_rd))
        # A delivery counts as available from the cycle it lands in: a write decided then
        # gathers its bytes from the buffer in the next cycle, after the landing's edge.
        # So `avail` takes it at the edge before the landing, from the registers of the
        # read's cycle L_mem - 1 cycles later (the delivery lands from the registered
        # response, L_mem + 1 cycles after the read): a read in cycle t allows a write
        # decision in cycle t + L_mem + 1, which frees room for a read in t + L_mem + 2.
        inf_v_a = delayed(m, inf_v_r, L_mem - 1, "inf_v_a")
        inf_n_a = delayed(m, inf_n_r, L_mem - 1, "inf_n_a", reset_less=True)
        avail_in = Signal(lC + 1)
        m.d.comb += avail_in.eq(avail + Mux(inf_v_a, inf_n_a, 0))
        m.d.sync += avail.eq(Mux(st_wr, avail_in - w_m, avail_in))

        # copies of `imm` for the buffer's side (the delivery's slots and, with L > 1, its
        # bytes, one copy per 64 bits): `mode_imm`, fan-out 122 over 149 tiles, was 8.3 ns
        # of wire to the slots' register in the placed `base` (session 48)
        imm_dp = own_replicas(m, platform, lambda q: Mux(capture, mode_now == IMMEDIATE, q), 1,
                              1 + (slices(8 * L) if L > 1 else 0), "mode_imm_dp", reset_less=True)
        if self.checks:
            m.d.sync += Assert(Cat(imm_dp) == imm.replicate(len(imm_dp)),
                               "DataMoveEngine: a copy of mode_imm differs from it")
        # delivery -> buffer
        if L == 1:
            rr = rsp_byte
        else:
            pat = Signal(64)                        # the immediate repeated over 8 bytes
            with m.Switch(lsz):
                for k in range(4):
                    with m.Case(k):
                        m.d.comb += pat.eq(pattern[:8 << k].replicate(8 >> k))
            if L >= 8:                              # deliveries start at multiples of 8
                imm_blk = pat.replicate(L // 8)
            else:
                imm_blk = _shr_bytes(Cat(pat, pat), (wdel[:3] & pmask))[:8 * L]
            blk_in = rsp_row if L == R else rsp_row.word_select(rsp_off_at[lL:], 8 * L)
            rr = Signal(8 * L)
            rot = Signal(lL, reset_less=True)       # (rsp_off - wdel) % L of the delivery
            m.d.sync += rot.eq((r_addr[:lR] - wres)[:lL])
            m.d.comb += rr.eq(mux_sliced(imm_dp[1:], imm_blk,
                                         _shr_bytes(Cat(blk_in, blk_in), at_rsp(rot, "rot_q", reset_less=True))[:8 * L]))
        # the slots a delivery fills, computed in the cycle of its read (deliveries come
        # in order L_mem + 1 cycles after their reads, so wdel then is wres now): registered
        # every cycle, used when the read's delivery lands (`at_rsp`) and only if one does
        ones = Cat(Mux(imm_dp[0], (1 << L) - 1, sc.ones), Const(0, C - L))      # from the chunk's register
        bmask_r = Signal(C, reset_less=True)
        m.d.sync += bmask_r.eq((Cat(ones, ones) << wres[:lC])[C:2 * C])          # rotated left
        bmask = at_rsp(bmask_r, "bmask", reset_less=True)
        with m.If(inf_v):
            m.d.sync += wdel.eq(wdel + inf_n)
            for i in range(C):
                with m.If(bmask[i]):
                    m.d.sync += buf[8 * i:8 * i + 8].eq(rr[8 * (i % L):8 * (i % L) + 8])
        # the delivery's offset and size are captured every cycle (used only when inf_v
        # says a read was issued), so the read decision enables only wres and the queue
        m.d.sync += [inf_v_r.eq(st_rd), inf_n_r.eq(rd_n)]
        m.d.comb += [inf_v.eq(at_rsp(inf_v_r, "inf_v_q")), inf_n.eq(at_rsp(inf_n_r, "inf_n_q", reset_less=True))]
        with m.If(st_on):
            m.d.sync += rsp_off.eq(r_addr[:lR])
        with m.If(st_rd):
            m.d.sync += wres.eq(wres + rd_n)
            m.d.comb += r_take.eq(~imm)

        # buffer -> write data: stream bytes rptr.. go to row offsets w_addr % R ..
        # The pending chunk's bytes stay in the buffer in the cycle after its decision:
        # the room it frees lets a read be issued in that cycle at the earliest, whose
        # response lands in the buffer a cycle later.
        m.d.sync += [pv.eq(st_wr), p_row.eq(w_addr[lR:]),
                     wr_be.eq((~(Const((1 << R) - 1, R) << w_m)[:R] << w_addr[:lR])[:R])]
        if L == 1:
            p_byte = Signal(8, reset_less=True)
            with m.If(st_wr):
                m.d.sync += [ph.eq(ph + 1),
                             p_byte.eq(Mux(imm, pattern.word_select(ph & pmask, 8), buf.word_select(rptr[:lC], 8)))]
            with m.If(dw.start):
                m.d.sync += ph.eq(0)
            st_data = p_byte.replicate(R)
        else:
            p_gb = Signal(lC, reset_less=True)      # the buffer slot of the chunk's first row byte
            m.d.sync += p_gb.eq((rptr - w_addr[:lL])[:lC])
            blk0 = select_word(m, buf, p_gb[lL:], 8 * L, "blk0", platform)
            blk1 = select_word(m, buf, (p_gb[lL:] + 1)[:lC - lL], 8 * L, "blk1", platform)
            g = _shr_bytes(Cat(blk0, blk1), p_gb[:lL])[:8 * L]
            # bytes outside the enables are zero (the memory's write data are defined)
            be_bits = Cat(*(be_b.replicate(8) for be_b in wr_be))
            st_data = g.replicate(R // L) & be_bits
        with m.If(st_wr):
            m.d.sync += rptr.eq(rptr + w_m)
        with m.If(st_wr_take):
            m.d.comb += w_take.eq(1)

        # --- nibble path (u4/s4) ------------------------------------------------------------
        # An element reads its source row, then in the next cycle its destination row, so
        # the two reads overlap; a response is the source's or the destination's by `i_dst`
        # of its read (and its nibble by `i_hi`), which follow it through `at_rsp`.
        # (nibble, i_hi and i_dst are data, each loaded before its use)
        i_rd_v = Signal()
        i_rd_row = Signal(len(self.rd.req.payload))
        i_wr_v = Signal()
        # the control is in I_DRSP: a register set on the way in and cleared on the way out,
        # like st_on (decoded from the state, it led the path state -> i_wr_v -> the write
        # queue's push, fan-out 300, 17.7 ns in the placed `base`, session 37); asserted
        # equal to the state under `checks`
        drsp_on = Signal()
        # I_SRC and I_DRD likewise: the element's reads are requested from these (the state
        # -> i_rd_v -> the memory's arbitration -> its read address, 17.5 ns, cf0b714 seed 2)
        isrc_on, idrd_on = Signal(name="isrc_on"), Signal(name="idrd_on")
        nibble = Signal(4, reset_less=True)
        i_hi = Signal(reset_less=True)              # the read's nibble is the byte's high one
        i_dst = Signal(reset_less=True)             # the read is the destination's
        merged_now = Signal(8)                      # the destination byte with the element's nibble
        i_wr_byte = Signal(8)                       # the byte the nibble path writes
        i_hi_at = at_rsp(i_hi, "i_hi_q", reset_less=True)
        i_dst_at = at_rsp(i_dst, "i_dst_q", reset_less=True)
        with m.If(rsp_v & ~i_dst_at):               # a source nibble (only the nibble path uses it)
            m.d.sync += nibble.eq(Mux(i_hi_at, rsp_byte[4:], rsp_byte[:4]))
        m.d.comb += merged_now.eq(Mux(i_hi_at, Cat(rsp_byte[:4], nibble), Cat(nibble, rsp_byte[4:])))
        # I_DRSP writes the merged byte in the cycle of the response (from the row register,
        # through the byte selection, into the write queue's registers). The queue has room:
        # the destination is read only once the queue is empty, and nothing else writes
        # before its response (asserted under `checks`).
        m.d.comb += [i_wr_v.eq(drsp_on & rsp_v & i_dst_at), i_wr_byte.eq(merged_now)]

        def read_destination():
            """Read the element's destination row once the previous element's write has
            left the queue (the destination byte may be the one it wrote)."""
            with m.If(wq.empty & self.rd.req.ready):
                m.d.sync += [rsp_off.eq(w_addr[:lR]), i_hi.eq(w_p[0]), i_dst.eq(1), drsp_on.eq(1),
                             isrc_on.eq(0), idrd_on.eq(0)]
                m.next = "I_DRSP"

        # the element's reads (the FSM's I_SRC and I_DRD below take the same decisions): its
        # source row in I_SRC, its destination row in I_DRD, or in I_SRC for an immediate
        src_rd = w_have & w_rdy & ~imm & r_rdy
        dst_rd = (idrd_on | (w_have & w_rdy & imm)) & wq.empty
        m.d.comb += [i_rd_v.eq((isrc_on & src_rd) | ((isrc_on | idrd_on) & dst_rd)),
                     i_rd_row.eq(Mux(isrc_on & ~imm, r_addr[lR:], w_addr[lR:]))]

        # --- port multiplexing ----------------------------------------------------------------
        wreq = wq.w_data
        with m.If(st_on):
            m.d.comb += [self.rd.req.valid.eq(r_go), self.rd.req.payload.eq(r_addr[lR:])]
        with m.Else():
            m.d.comb += [self.rd.req.valid.eq(i_rd_v), self.rd.req.payload.eq(i_rd_row)]
        with m.If(pv):
            m.d.comb += [wq.w_valid.eq(1), wreq.row.eq(p_row), wreq.be.eq(wr_be), wreq.data.eq(st_data)]
        with m.Else():                              # the nibble path (pv is 0 outside STREAM)
            m.d.comb += [wq.w_valid.eq(i_wr_v), wreq.row.eq(w_addr[lR:]),
                         wreq.be.eq((Const(1, R) << w_addr[:lR])[:R]), wreq.data.eq(i_wr_byte.replicate(R))]

        # --- control ----------------------------------------------------------------------
        m.d.comb += self.done.payload.fault.eq(fault)
        with m.FSM(name="ctl") as ctl:
            with m.State("IDLE"):
                m.d.sync += busy.eq(0)
                m.d.sync += sd.eq(0)
                m.d.comb += capture.eq(self.cmd.valid)
                m.d.sync += [kh.eq(1), kv.eq(1)]           # upsample's factors (UP_H/UP_V) or 1
                with m.If(self.cmd.valid):
                    with m.If(comb_fld("data_unit") > int(max(DataUnit))):
                        m.d.sync += fault.eq(int(Fault.RESERVED_UNIT))
                        m.next = "FINISH"
                    with m.Else():
                        m.next = "FIELDS"

            # a cycle for the registers computed from the captured fields (byte counts)
            with m.State("FIELDS"):
                m.next = "LINES"

            def after_side():
                with m.If(~sd & ~imm):
                    m.d.sync += sd.eq(1)
                    m.next = "LINES"
                with m.Elif(~sd | transpose):
                    m.next = "SETTLE"
                with m.Elif(normal):
                    m.next = "CNT_S"
                with m.Elif(s.has & d.has):             # upsample
                    m.next = "UP_H"
                with m.Else():
                    m.next = "SETTLE"

            side_states(after_side)

            # normal: the element counts must agree (acc = n_s*trans_s - n_d*trans_d)
            def cnt_d():
                m.d.sync += sd.eq(0)
                m.next = "CNT_D"

            mac_state("CNT_S", x_n, x.trans, cnt_d, clear=True, a_zero=Const(0))        # x_n >= 1
            mac_state("CNT_D", x_n, x.trans, goto("SETTLE"), sub=True, a_zero=Const(0))

            def got_kh():
                m.d.sync += [kh.eq(ma), kh_ok.eq(acc_zero)]
                m.next = "UP_V"

            def got_kv():
                m.d.sync += [kv.eq(ma), kv_ok.eq(acc_zero)]
                m.next = "SETTLE"

            div_state("UP_H", d.width, s.width, got_kh, b_zero=~s.w_nz & ~s.has)
            div_state("UP_V", d.lines, s.lines, got_kv, b_zero=~s.lines_nz)     # (lines set in the sides' states)

            # the verdicts are registered (`illegal_q`, `out_of_range_q`) in SETTLE, off the
            # path into the walkers' starts
            with m.State("SETTLE"):
                m.d.sync += chk_on.eq(1)
                m.next = "CHECK"

            sw_go, dw_go = (Signal(name=nm) for nm in ("sw_go", "dw_go"))       # the walkers' start: high in START only
            m.d.comb += [sw.start.eq(sw_go), dw.start.eq(dw_go)]
            with m.State("CHECK"):
                m.d.sync += [wres.eq(0), wdel.eq(0), rptr.eq(0), room.eq(C), avail.eq(0), fault.eq(0),
                             chk_on.eq(0)]
                with m.If(illegal_q):
                    m.d.sync += fault.eq(int(Fault.ILLEGAL_OPERAND))
                    m.next = "FINISH"
                with m.Elif(out_of_range_q):
                    m.d.sync += fault.eq(int(Fault.ADDRESS_RANGE))
                    m.next = "FINISH"
                with m.Elif(~d.has):
                    m.next = "FINISH"
                with m.Else():
                    m.d.sync += [sw_go.eq(~imm), dw_go.eq(1)]
                    m.next = "START"

            # the walkers start in a state of their own, from registers set on the way in
            # (their start fans out to every counter's enable)
            with m.State("START"):
                m.d.sync += [sw_go.eq(0), dw_go.eq(0)]
                with m.If(is4):
                    m.d.sync += isrc_on.eq(1)
                    m.next = "I_SRC"
                with m.Else():
                    m.d.sync += st_on.eq(1)
                    m.next = "STREAM"

            with m.State("STREAM"):
                with m.If(~w_have & ~pv & wq.empty):
                    m.d.sync += st_on.eq(0)
                    m.next = "FINISH"

            # nibble path: one element at a time, read-modify-write of the destination byte
            with m.State("I_SRC"):
                with m.If(~w_have):
                    with m.If(wq.empty):
                        m.d.sync += isrc_on.eq(0)
                        m.next = "FINISH"
                with m.Elif(~w_rdy | ~(imm | r_rdy)):
                    pass                            # the runs are still on their way to the queues
                with m.Elif(imm):                   # no source read: the destination's now
                    m.d.sync += nibble.eq(pattern[:4])
                    read_destination()
                with m.Else():
                    with m.If(self.rd.req.ready):
                        m.d.sync += [rsp_off.eq(r_addr[:lR]), i_hi.eq(r_p[0]), i_dst.eq(0),
                                     isrc_on.eq(0), idrd_on.eq(1)]
                        m.d.comb += r_take.eq(1)
                        m.next = "I_DRD"

            with m.State("I_DRD"):
                read_destination()

            with m.State("I_DRSP"):                # the source's response has come before it
                # (the merged byte is written in this cycle, above)
                with m.If(rsp_v & i_dst_at):
                    m.d.comb += w_take.eq(1)
                    m.d.sync += [drsp_on.eq(0), isrc_on.eq(1)]
                    m.next = "I_SRC"

            engine_answer_states(m, self)

        if self.checks:
            m.d.sync += [Assert(st_on == ctl.ongoing("STREAM"), "data-move engine: st_on disagrees with the state"),
                         Assert(drsp_on == ctl.ongoing("I_DRSP"), "data-move engine: drsp_on disagrees with the state"),
                         Assert(isrc_on == ctl.ongoing("I_SRC"), "data-move engine: isrc_on disagrees with the state"),
                         Assert(idrd_on == ctl.ongoing("I_DRD"), "data-move engine: idrd_on disagrees with the state"),
                         Assert(chk_on == ctl.ongoing("CHECK"), "data-move engine: chk_on disagrees with the state"),
                         Assert(~i_wr_v | wq.w_ready, "data-move engine: the nibble path's write found the queue full"),
                         Assert(~ctl.ongoing("UP_V") | (s.lines_nz == (s.lines != 0)),
                                "data-move engine: src_lines_nz differs from src_lines != 0 in UP_V")]
        return m
