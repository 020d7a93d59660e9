"""The data-move engine: DATA_MOVE (BASE group 12, code 0x0; docs/isa-decisions.md
D-DATAMOVE, D-OVERLAP, D-SNAPSHOT, D-INT4, D-PRECEDENCE).

`DataMoveEngine(config)` takes one command at a time on ``cmd`` (the raw operand
table and its AS), checks every operand exactly as the golden model
(golden/semantics/datamove.py) does, moves the data through its ``rd``/``wr``
memory ports and answers on ``done`` with the fault code (0: completed). A
faulting command writes nothing: every check is made before the first write.

Microarchitecture
-----------------

* **Setup** (sequential, one shared shift-add multiplier / restoring divider):
  RESERVED_UNIT (data_unit 13..15); per side ``lines = trans_size / width`` (a
  24-step divider, skipped when width is 0 or equals trans_size) and the remainder
  check; the exact byte extent ``base + (num-1)*surface_stride +
  (lines-1)*line_stride + last`` in 65 bits (early-out multiplier: as many steps as
  the multiplier has significant bits); normal: both element counts (multiplier);
  upsample: ``kh, kv`` and their remainders (two divisions); then in one cycle the
  golden order of checks: ILLEGAL_OPERAND (remainders, upsample 1/2-D, the mode's
  shape rule, D-OVERLAP) before ADDRESS_RANGE (each non-empty extent beyond
  ``mem_bytes``). Setup takes about 12 cycles for a 1-D move, plus 24 per side
  whose lines need a division, plus ``ceil(log2(lines))`` and
  ``ceil(log2(num_trans))`` per side for 2/3-D extents (and 50 more for upsample).
* **Address walkers**: the destination is walked line by line (every destination
  line is contiguous); the source walker gives, in destination order, source lines
  (normal, and upsample with kh = 1, each line repeated kv times) or single
  elements (transpose: ``src(s, e, l)``; upsample with kh > 1:
  ``src(l // kv, e // kh)``). Walkers only add strides (no multiplier).
* **Byte-stream path** (every unit of 8 bits or more, every mode): a reader cuts
  the source runs into chunks that never cross a ``lanes``-aligned block (one row
  read per chunk) and reserves room for them in a circular byte buffer of
  ``4 * lanes`` bytes; the response (exactly one cycle later) is rotated into the
  buffer. A writer cuts the destination lines likewise and writes each chunk as one
  row write with byte enables, gathering its bytes from the buffer with a funnel
  shifter; the source and destination byte alignments are independent. Immediate
  mode writes a rotated copy of the replicated immediate instead. Reads never run
  ahead of the buffer's free space and writes never ahead of the data, so the
  streaming order honours D-SNAPSHOT for every overlap D-OVERLAP allows
  (contiguous normal moves with dst <= src).
* **Nibble path** (u4/s4): element-serial: read the source row, read the
  destination row, write the merged byte (D-INT4 read-modify-write; the reads see
  every earlier write, so later elements win).

Throughput in steady state (no memory stalls; L = ``config.lanes``):

* normal and immediate moves, units of 8 bits or more: L bytes per cycle along
  each line (one row read and one row write per cycle with L = row_bytes), at any
  source and destination alignment; each line costs one extra partial row at
  most, plus one cycle between lines when the lines are shorter than L;
* upsample with kh = 1: as normal; upsample with kh > 1 and transpose: one element
  per cycle (an element that crosses an L-byte block takes two), so ``size``
  bytes per cycle for ``size <= L``;
* int4 (u4/s4), every mode: one nibble per 5 cycles (4 for immediate).

Done follows the last write by one cycle.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from xdsa.golden import isa
from xdsa.golden.isa import DataUnit, Fault

from . import fields as F
from .bus import EngineCmd, EngineDone, ReadPort, WritePort, row_addr_bits

__all__ = ["OPCODES", "DataMoveEngine"]

OPCODES = ("data_move",)

NORMAL, IMMEDIATE, UPSAMPLE, TRANSPOSE = range(4)      # transfer_mode codes
_DIV_STEPS = 24                                        # trans_size / width are 24-bit values


def _min(a, b):
    return Mux(a < b, a, b)


def _shr_bytes(v, amount):
    """`v` shifted right by `amount` bytes (a Value), same width."""
    return v >> Cat(Const(0, 3), amount)


class _Side:
    """The operand fields and setup results of one side ("src"/"des")."""

    def __init__(self, m, fld, p, is4, lsz):
        self.base = fld(f"{'src' if p == 'src' else 'dst'}")
        self.trans = fld(f"{p}_trans_size")
        self.num = fld(f"{p}_num_trans")
        self.ls = fld(f"{p}_line_stride")
        self.ss = fld(f"{p}_surface_stride")
        self.w = fld(f"{p}_width")
        self.n = Signal(9, name=f"{p}_n")                  # num_trans, 0 read as 1
        self.width = Signal(24, name=f"{p}_width_eff")     # width, 0 read as trans_size
        self.last = Signal(28, name=f"{p}_last")           # bytes of one line
        self.lines = Signal(24, name=f"{p}_lines")         # trans_size / width (setup)
        self.rem_bad = Signal(name=f"{p}_rem_bad")         # trans_size % width != 0
        self.end = Signal(66, name=f"{p}_end")             # base + span (setup)
        self.has = Signal(name=f"{p}_has")                 # holds at least one element
        self.contig = Signal(name=f"{p}_contig")           # D-OVERLAP "contiguous"
        m.d.comb += [
            self.n.eq(Mux(self.num == 0, 1, self.num)),
            self.width.eq(Mux(self.w == 0, self.trans, self.w)),
            self.last.eq(Mux(is4, (self.width + 1) >> 1, self.width << lsz)),
            self.has.eq(self.trans != 0),
            self.contig.eq(
                ((self.lines <= 1) | Mux(is4, (self.ls << 1) == self.width, self.ls == (self.width << lsz)))
                & ((self.n <= 1) | Mux(is4, (self.ss << 1) == self.trans, self.ss == (self.trans << lsz)))),
        ]


class _Walker:
    """Enumerates runs (a start position in nibbles and a length in elements).

    Line mode: the lines of `lim_s` surfaces of `lim_l` lines (each line repeated
    `lim_v` times); element mode (only if `elem`): single elements of `lim_e` per
    line, the position advancing by `step_i` every `lim_h` elements. `take` moves to
    the next run; `valid` falls after the last one. The limits are given minus one.
    """

    def __init__(self, name, pw, *, elem, repeat):
        self.name, self.pw, self.elem, self.repeat = name, pw, elem, repeat
        self.start = Signal(name=f"{name}_start")
        self.take = Signal(name=f"{name}_take")
        self.valid = Signal(name=f"{name}_valid")
        self.base = Signal(pw, name=f"{name}_base")
        self.step_l = Signal(pw, name=f"{name}_step_l")
        self.step_s = Signal(pw, name=f"{name}_step_s")
        self.last_l = Signal(24, name=f"{name}_last_l")
        self.last_s = Signal(8, name=f"{name}_last_s")
        self.line_len = Signal(24, name=f"{name}_line_len")
        self.pos = Signal(pw, name=f"{name}_pos")
        self.len = Signal(24, name=f"{name}_len")
        self.a_surf = Signal(pw, name=f"{name}_a_surf")
        self.a_line = Signal(pw, name=f"{name}_a_line")
        self.c_l = Signal(24, name=f"{name}_c_l")
        self.c_s = Signal(8, name=f"{name}_c_s")
        if repeat:
            self.last_v = Signal(24, name=f"{name}_last_v")
            self.c_v = Signal(24, name=f"{name}_c_v")
        if elem:
            self.elem_mode = Signal(name=f"{name}_elem_mode")
            self.step_i = Signal(pw, name=f"{name}_step_i")
            self.last_e = Signal(24, name=f"{name}_last_e")
            self.last_h = Signal(24, name=f"{name}_last_h")
            self.a_elem = Signal(pw, name=f"{name}_a_elem")
            self.c_e = Signal(24, name=f"{name}_c_e")
            self.c_h = Signal(24, name=f"{name}_c_h")

    def elaborate(self, m):
        if self.elem:
            m.d.comb += [self.pos.eq(Mux(self.elem_mode, self.a_elem, self.a_line)),
                         self.len.eq(Mux(self.elem_mode, 1, self.line_len))]
        else:
            m.d.comb += [self.pos.eq(self.a_line), self.len.eq(self.line_len)]

        def set_line(v):
            m.d.sync += self.a_line.eq(v)
            if self.elem:
                m.d.sync += self.a_elem.eq(v)

        with m.If(self.start):
            m.d.sync += [self.valid.eq(1), self.a_surf.eq(self.base), self.c_l.eq(0), self.c_s.eq(0)]
            set_line(self.base)
            if self.repeat:
                m.d.sync += self.c_v.eq(0)
            if self.elem:
                m.d.sync += [self.c_e.eq(0), self.c_h.eq(0)]
        with m.Elif(self.take & self.valid):
            if self.elem:
                with m.If(self.elem_mode & (self.c_e != self.last_e)):
                    m.d.sync += self.c_e.eq(self.c_e + 1)
                    with m.If(self.c_h == self.last_h):
                        m.d.sync += [self.c_h.eq(0), self.a_elem.eq(self.a_elem + self.step_i)]
                    with m.Else():
                        m.d.sync += self.c_h.eq(self.c_h + 1)
                with m.Else():
                    self._next_line(m, set_line)
            else:
                self._next_line(m, set_line)

    def _next_line(self, m, set_line):
        """The run after the last of a line: the next line, surface or the end."""
        if self.elem:
            m.d.sync += [self.c_e.eq(0), self.c_h.eq(0)]
        with m.If(self.c_l == self.last_l):
            m.d.sync += self.c_l.eq(0)
            if self.repeat:
                m.d.sync += self.c_v.eq(0)
            with m.If(self.c_s == self.last_s):
                m.d.sync += self.valid.eq(0)
            with m.Else():
                nxt = (self.a_surf + self.step_s)[:self.pw]
                m.d.sync += [self.c_s.eq(self.c_s + 1), self.a_surf.eq(nxt)]
                set_line(nxt)
        with m.Else():
            m.d.sync += self.c_l.eq(self.c_l + 1)
            nxt = (self.a_line + self.step_l)[:self.pw]
            if self.repeat:
                with m.If(self.c_v == self.last_v):
                    m.d.sync += self.c_v.eq(0)
                    set_line(nxt)
                with m.Else():
                    m.d.sync += self.c_v.eq(self.c_v + 1)
                    if self.elem:
                        m.d.sync += self.a_elem.eq(self.a_line)
            else:
                set_line(nxt)


class DataMoveEngine(wiring.Component):
    """DATA_MOVE for one `CoreConfig` (see the module docstring for the
    microarchitecture, latency and throughput). ``table_bits`` is the width of the
    raw operand table it takes."""

    def __init__(self, config):
        lanes = config.lanes
        if lanes < 1 or lanes & (lanes - 1) or config.row_bytes % lanes:
            raise ValueError(f"datamove lanes must be a power of two dividing row_bytes "
                             f"({config.row_bytes}), not {lanes!r}")
        self.config = config
        self._op = isa.by_mnemonic("data_move")
        self.table_bits = F.table_bits([self._op])
        abits = row_addr_bits(config.rows)
        super().__init__({
            "cmd": In(stream.Signature(EngineCmd(self.table_bits))),
            "done": Out(stream.Signature(EngineDone)),
            "rd": Out(ReadPort(addr_bits=abits, row_bits=config.row_bits)),
            "wr": Out(WritePort(addr_bits=abits, row_bits=config.row_bits)),
        })

    def elaborate(self, platform):
        m = Module()
        cfg, op = self.config, self._op
        R, L = cfg.row_bytes, cfg.lanes
        C = 4 * L                                   # stream buffer bytes
        lR, lL, lC = exact_log2(R), exact_log2(L), exact_log2(C)
        AW = max(ceil_log2(cfg.mem_bytes), lR + 1)  # byte address bits inside memory
        PW = AW + 1                                 # nibble position bits
        RW = AW + 2                                 # run remainder bits (bytes or nibbles)

        # --- the command and its fields ---------------------------------------------
        table = Signal(self.table_bits)
        as_code = Signal(2)

        def fld(name):
            s = Signal(F.field_width(op, name), name=f"f_{name}")
            m.d.comb += s.eq(F.field(table, as_code, op, name))
            return s

        unit = fld("data_unit")
        mode = fld("transfer_mode")
        is4 = Signal()
        lsz = Signal(2)                             # log2(element bytes)
        with m.Switch(unit):
            for u in DataUnit:
                with m.Case(int(u)):
                    m.d.comb += [is4.eq(u.bits == 4), lsz.eq(exact_log2(u.bits // 8) if u.bits >= 8 else 0)]
        imm = mode == IMMEDIATE
        normal, upsample, transpose = mode == NORMAL, mode == UPSAMPLE, mode == TRANSPOSE
        d = _Side(m, fld, "des", is4, lsz)
        s = _Side(m, fld, "src", is4, lsz)
        pattern = s.base                            # the immediate (64-bit, zero-extended)

        # --- setup: shared shift-add multiplier / restoring divider -----------------
        busy = Signal()
        ma = Signal(24)                             # multiplier / dividend, quotient
        mb = Signal(48)                             # multiplicand / divisor
        acc = Signal(49)                            # product / remainder
        steps = Signal(range(_DIV_STEPS + 1))
        kh = Signal(24)
        kv = Signal(24)
        kh_ok = Signal()
        kv_ok = Signal()
        cnt_s = Signal(33)
        cnt_eq = Signal()
        fault = Signal(8)
        d_end_acc = Signal(66)
        s_end_acc = Signal(66)
        m.d.comb += [d_end_acc.eq(d.end + acc), s_end_acc.eq(s.end + acc)]

        r2 = Cat(ma[-1], acc[:24])
        ge = r2 >= mb[:24]

        def mul_state(name, a, b, then):
            with m.State(name):
                with m.If(~busy):
                    m.d.sync += [ma.eq(a), mb.eq(b), acc.eq(0), busy.eq(1)]
                with m.Elif(ma != 0):
                    m.d.sync += [acc.eq(acc + Mux(ma[0], mb, 0)), ma.eq(ma >> 1), mb.eq(mb << 1)]
                with m.Else():
                    m.d.sync += busy.eq(0)
                    then()

        def div_state(name, a, b, then, skip=None):
            with m.State(name):
                with m.If(~busy):
                    m.d.sync += [ma.eq(a), mb.eq(b), acc.eq(0), steps.eq(_DIV_STEPS), busy.eq(1)]
                    if skip is not None:
                        skip()
                with m.Elif(steps != 0):
                    m.d.sync += [acc.eq(Mux(ge, r2 - mb[:24], r2)), ma.eq(Cat(ge, ma[:-1])),
                             steps.eq(steps - 1)]
                with m.Else():
                    m.d.sync += busy.eq(0)
                    then()

        def lines_states(x, prefix, after):
            """lines = trans_size / width, then the extent: end = base + last
            + (lines - 1) * line_stride + (n - 1) * surface_stride."""
            end_acc = d_end_acc if x is d else s_end_acc

            def skip():
                m.d.sync += x.end.eq(x.base + x.last)
                with m.If(x.w == 0):
                    m.d.sync += [x.lines.eq(x.trans != 0), x.rem_bad.eq(0), busy.eq(0)]
                    m.next = f"{prefix}_SPAN_L"
                with m.Elif(x.w == x.trans):
                    m.d.sync += [x.lines.eq(1), x.rem_bad.eq(0), busy.eq(0)]
                    m.next = f"{prefix}_SPAN_L"

            def got_lines():
                m.d.sync += [x.lines.eq(ma), x.rem_bad.eq(acc != 0)]
                m.next = f"{prefix}_SPAN_L"

            def got_span_l():
                m.d.sync += x.end.eq(end_acc)
                m.next = f"{prefix}_SPAN_S"

            def got_span_s():
                m.d.sync += x.end.eq(end_acc)
                after()

            div_state(f"{prefix}_LINES", x.trans, x.w, got_lines, skip)
            mul_state(f"{prefix}_SPAN_L", Mux(x.lines == 0, 0, x.lines - 1), x.ls, got_span_l)
            mul_state(f"{prefix}_SPAN_S", x.n - 1, x.ss, got_span_s)

        # --- checks (D-PRECEDENCE) ------------------------------------------------------
        empty = ~d.has & (imm | ~s.has)
        shape_bad = Signal()
        with m.Switch(mode):
            with m.Case(NORMAL):
                m.d.comb += shape_bad.eq(~cnt_eq)
            with m.Case(UPSAMPLE):
                m.d.comb += shape_bad.eq(~(s.has & d.has & kh_ok & kv_ok))
            with m.Case(TRANSPOSE):
                m.d.comb += shape_bad.eq(~((d.n == s.n) & (d.trans == s.trans) & (d.width == s.lines)))
        overlap = ~imm & s.has & d.has & (s.base < d.end) & (d.base < s.end)
        overlap_ok = normal & s.contig & d.contig & (d.base <= s.base)
        illegal = Signal()
        out_of_range = Signal()
        m.d.comb += [
            illegal.eq(d.rem_bad | (~imm & s.rem_bad) | (upsample & ((s.num > 1) | (d.num > 1)))
                       | (~empty & shape_bad) | (overlap & ~overlap_ok)),
            out_of_range.eq((~imm & s.has & (s.end > cfg.mem_bytes)) | (d.has & (d.end > cfg.mem_bytes))),
        ]

        # --- walkers ----------------------------------------------------------------------
        sw = _Walker("sw", PW, elem=True, repeat=True)      # source runs, destination order
        dw = _Walker("dw", PW, elem=False, repeat=False)    # destination lines
        sw.elaborate(m)
        dw.elaborate(m)
        estep = Mux(is4, 1, Const(2, 5) << lsz)[:PW]       # one element, in nibbles
        up_lines = upsample & (kh == 1)
        m.d.comb += [
            dw.base.eq(Cat(Const(0, 1), d.base)[:PW]), dw.step_l.eq(Cat(Const(0, 1), d.ls)[:PW]),
            dw.step_s.eq(Cat(Const(0, 1), d.ss)[:PW]), dw.last_l.eq(d.lines - 1),
            dw.last_s.eq(d.n - 1), dw.line_len.eq(d.width),
            sw.base.eq(Cat(Const(0, 1), s.base)[:PW]), sw.step_s.eq(Cat(Const(0, 1), s.ss)[:PW]),
            sw.line_len.eq(s.width), sw.last_e.eq(d.width - 1),
            sw.elem_mode.eq(transpose | (upsample & ~up_lines)),
            sw.step_l.eq(Mux(transpose, estep, Cat(Const(0, 1), s.ls)[:PW])),
            sw.step_i.eq(Mux(transpose, Cat(Const(0, 1), s.ls)[:PW], estep)),
            sw.last_h.eq(Mux(upsample, kh - 1, 0)),
            sw.last_v.eq(Mux(upsample, kv - 1, 0)),
            sw.last_l.eq(Mux(normal, s.lines, d.lines) - 1),
            sw.last_s.eq(Mux(upsample, 0, s.n - 1)),
        ]

        # --- run state shared by both paths: the current source / destination run -----
        r_pos = Signal(PW)
        r_rem = Signal(RW)
        w_pos = Signal(PW)
        w_rem = Signal(RW)
        r_act, w_act = r_rem != 0, w_rem != 0
        r_p = Mux(r_act, r_pos, sw.pos)
        w_p = Mux(w_act, w_pos, dw.pos)
        r_left = Mux(r_act, r_rem, Mux(is4, sw.len, sw.len << lsz)[:RW])
        w_left = Mux(w_act, w_rem, Mux(is4, dw.len, dw.len << lsz)[:RW])
        r_have = r_act | sw.valid
        w_have = w_act | dw.valid
        r_addr = r_p[1:]                            # byte addresses
        w_addr = w_p[1:]

        # --- byte-stream path -------------------------------------------------------------
        st_on = Signal()
        wres = Signal(lC + 1)                       # bytes reserved by reads
        wdel = Signal(lC + 1)                       # bytes delivered into the buffer
        rptr = Signal(lC + 1)                       # bytes written out
        buf = Signal(8 * C)
        inf_v = Signal()                            # a read response arrives this cycle
        inf_o = Signal(lR)                          # its first byte in the row
        inf_n = Signal(lL + 1)                      # its byte count
        ph = Signal(3)                              # immediate: stream bytes mod 8

        r_n = Signal(lL + 1)
        m.d.comb += r_n.eq(_min(r_left, L - r_addr[:lL]))
        r_go = st_on & ~imm & r_have & ((wres - rptr)[:lC + 1] + r_n <= C)
        w_m = Signal(lL + 1)
        m.d.comb += w_m.eq(_min(w_left, L - w_addr[:lL]))
        w_go = st_on & w_have & (imm | ((wdel - rptr)[:lC + 1] >= w_m))
        st_rd = Signal()
        st_wr = Signal()

        with m.If(r_go & self.rd.req.ready):
            m.d.comb += st_rd.eq(1)
        with m.If(w_go & self.wr.req.ready):
            m.d.comb += st_wr.eq(1)

        # response -> buffer: rotate the chunk so that stream byte j lands in slot j % C
        blk_in = self.rd.rsp.payload if L == R else self.rd.rsp.payload.word_select(inf_o[lL:], 8 * L)
        rr = Signal(8 * L)
        m.d.comb += rr.eq(_shr_bytes(Cat(blk_in, blk_in), (inf_o - wdel)[:lL] if L > 1 else Const(0, 1))[:8 * L])
        ones = ((Const(1, C + 1) << inf_n) - 1)[:C]
        wsl = wdel[:lC]
        bmask = Signal(C)
        m.d.comb += bmask.eq((Cat(ones, ones) >> ((C - wsl)[:lC]))[:C])
        with m.If(inf_v):
            m.d.sync += wdel.eq(wdel + inf_n)
            for i in range(C):
                with m.If(bmask[i]):
                    m.d.sync += buf[8 * i:8 * i + 8].eq(rr[8 * (i % L):8 * (i % L) + 8])
        m.d.sync += inf_v.eq(st_rd)
        with m.If(st_rd):
            m.d.sync += [inf_o.eq(r_addr[:lR]), inf_n.eq(r_n), wres.eq(wres + r_n),
                     r_pos.eq(r_p + (r_n << 1)), r_rem.eq(r_left - r_n)]
            m.d.comb += sw.take.eq(~r_act)

        # buffer -> write data: bytes rptr.. go to row offsets w_addr % R ..
        gbase = (rptr - w_addr[:lL])[:lC] if L > 1 else rptr[:lC]
        blk0 = buf.word_select(gbase[lL:], 8 * L)
        blk1 = buf.word_select((gbase[lL:] + 1)[:2], 8 * L)
        g = _shr_bytes(Cat(blk0, blk1), gbase[:lL] if L > 1 else Const(0, 1))[:8 * L]
        g_row = Cat(*([g] * (R // L)))
        pat = Signal(64)
        with m.Switch(lsz):
            for k in range(4):
                with m.Case(k):
                    m.d.comb += pat.eq(Cat(*([pattern[:8 << k]] * (8 >> k))))
        pat_row = Cat(*([pat] * (R // 8)))
        imm_row = _shr_bytes(Cat(pat_row, pat), ((ph - w_addr[:3]) & ((Const(1, 4) << lsz) - 1))[:3])[:8 * R]
        be_st = (((Const(1, R + 1) << w_m) - 1) << w_addr[:lR])[:R]
        with m.If(st_wr):
            m.d.sync += [rptr.eq(rptr + w_m), ph.eq(ph + w_m), w_pos.eq(w_p + (w_m << 1)),
                     w_rem.eq(w_left - w_m)]
            m.d.comb += dw.take.eq(~w_act)

        # --- nibble path (u4/s4) -----------------------------------------------------
        i_rd_v = Signal()
        i_rd_row = Signal(len(self.rd.req.payload))
        i_wr_v = Signal()
        nib = Signal(4)
        i_off = Signal(lR)
        i_hi = Signal()
        merged = Signal(8)
        rsp_byte = self.rd.rsp.payload.word_select(i_off, 8)

        # --- port multiplexing ------------------------------------------------------------
        with m.If(st_on):
            m.d.comb += [self.rd.req.valid.eq(r_go), self.rd.req.payload.eq(r_addr[lR:]),
                     self.wr.req.valid.eq(w_go), self.wr.req.payload.row.eq(w_addr[lR:]),
                     self.wr.req.payload.be.eq(be_st),
                     self.wr.req.payload.data.eq(Mux(imm, imm_row, g_row))]
        with m.Else():
            m.d.comb += [self.rd.req.valid.eq(i_rd_v), self.rd.req.payload.eq(i_rd_row),
                     self.wr.req.valid.eq(i_wr_v), self.wr.req.payload.row.eq(w_addr[lR:]),
                     self.wr.req.payload.be.eq((Const(1, R) << i_off)[:R]),
                     self.wr.req.payload.data.eq(merged.replicate(R))]

        # --- control ----------------------------------------------------------------------
        m.d.comb += self.done.payload.fault.eq(fault)
        with m.FSM(name="ctl"):
            with m.State("IDLE"):
                m.d.comb += self.cmd.ready.eq(1)
                with m.If(self.cmd.valid):
                    m.d.sync += [table.eq(self.cmd.payload.table), as_code.eq(self.cmd.payload.as_code),
                             busy.eq(0)]
                    m.next = "UNIT"

            with m.State("UNIT"):
                with m.If(unit > int(max(DataUnit))):
                    m.d.sync += fault.eq(int(Fault.RESERVED_UNIT))
                    m.next = "DONE"
                with m.Else():
                    m.next = "D_LINES"

            def after_dst():
                m.next = "S_LINES"
                with m.If(imm):
                    m.next = "CHECK"

            def after_src():
                m.next = "CHECK"
                with m.If(normal):
                    m.next = "CNT_S"
                with m.If(upsample):
                    m.next = "UP_H"

            lines_states(d, "D", after_dst)
            lines_states(s, "S", after_src)

            def got_cnt_s():
                m.d.sync += cnt_s.eq(acc)
                m.next = "CNT_D"

            def got_cnt_d():
                m.d.sync += cnt_eq.eq(acc == cnt_s)
                m.next = "CHECK"

            mul_state("CNT_S", s.n, s.trans, got_cnt_s)
            mul_state("CNT_D", d.n, d.trans, got_cnt_d)

            def got_kh():
                m.d.sync += [kh.eq(ma), kh_ok.eq(acc == 0)]
                m.next = "UP_V"

            def got_kv():
                m.d.sync += [kv.eq(ma), kv_ok.eq(acc == 0)]
                m.next = "CHECK"

            div_state("UP_H", d.width, s.width, got_kh)
            div_state("UP_V", d.lines, s.lines, got_kv)

            with m.State("CHECK"):
                m.d.sync += [r_rem.eq(0), w_rem.eq(0), wres.eq(0), wdel.eq(0), rptr.eq(0), ph.eq(0)]
                with m.If(illegal):
                    m.d.sync += fault.eq(int(Fault.ILLEGAL_OPERAND))
                    m.next = "DONE"
                with m.Elif(out_of_range):
                    m.d.sync += fault.eq(int(Fault.ADDRESS_RANGE))
                    m.next = "DONE"
                with m.Elif(~d.has):
                    m.d.sync += fault.eq(0)
                    m.next = "DONE"
                with m.Else():
                    m.d.sync += fault.eq(0)
                    m.d.comb += [sw.start.eq(~imm), dw.start.eq(1)]
                    with m.If(is4):
                        m.next = "I_SRC"
                    with m.Else():
                        m.next = "STREAM"

            with m.State("STREAM"):
                m.d.comb += st_on.eq(1)
                with m.If(~w_have):
                    m.next = "DONE"

            # nibble path: one element at a time
            with m.State("I_SRC"):
                with m.If(~w_have):
                    m.next = "DONE"
                with m.Elif(imm):
                    m.d.sync += nib.eq(pattern[:4])
                    m.next = "I_DRD"
                with m.Else():
                    m.d.comb += [i_rd_v.eq(1), i_rd_row.eq(r_addr[lR:])]
                    with m.If(self.rd.req.ready):
                        m.d.sync += [i_off.eq(r_addr[:lR]), i_hi.eq(r_p[0]),
                                 r_pos.eq(r_p + 1), r_rem.eq(r_left - 1)]
                        m.d.comb += sw.take.eq(~r_act)
                        m.next = "I_SRSP"

            with m.State("I_SRSP"):
                m.d.sync += nib.eq(Mux(i_hi, rsp_byte[4:], rsp_byte[:4]))
                m.next = "I_DRD"

            with m.State("I_DRD"):
                m.d.comb += [i_rd_v.eq(1), i_rd_row.eq(w_addr[lR:])]
                with m.If(self.rd.req.ready):
                    m.d.sync += [i_off.eq(w_addr[:lR]), i_hi.eq(w_p[0])]
                    m.next = "I_DRSP"

            with m.State("I_DRSP"):
                m.d.sync += merged.eq(Mux(i_hi, Cat(rsp_byte[:4], nib), Cat(nib, rsp_byte[4:])))
                m.next = "I_WR"

            with m.State("I_WR"):
                m.d.comb += i_wr_v.eq(1)
                with m.If(self.wr.req.ready):
                    m.d.sync += [w_pos.eq(w_p + 1), w_rem.eq(w_left - 1)]
                    m.d.comb += dw.take.eq(~w_act)
                    m.next = "I_SRC"

            with m.State("DONE"):
                m.d.comb += self.done.valid.eq(1)
                with m.If(self.done.ready):
                    m.next = "IDLE"

        return m
