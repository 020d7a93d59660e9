"""Cycle model of the vector engine's elementwise pipeline (`xdsa.hw.vector.VectorEngine`).

`VectorModel` is a register-transfer description of the engine's control in plain
Python: the same registers, updated by the same rules at every clock edge. Given
an instruction (mnemonic, operand fields, AS) and the per-cycle inputs (the
``ready`` of both read ports and of the write port, ``done.ready``), it predicts
in every cycle the engine's requests (valid and row of each read port; valid,
row and byte enables of the write port), ``cmd.ready``, ``done`` and the pipeline
state (control state, the valid bits of the beat pipeline's stages and the ALU
iteration counter). Data values do not influence the timing of elementwise
instructions, so the model needs none. Reductions (ASUM, REDUCE_*) are not
modelled.

The pipeline it models (docs in hw/vector.py, hw/vector_pipe.py, hw/vector_stream.py):

* **setup**: one cycle to decode the command (its fields loaded from the table
  registered with it), one for the unit checks, one per source for D-OVERLAP, one per
  operand for the byte ranges (destination first), one to start the streams;
  an odd int4 destination then reads its last byte on port B (request until
  granted, then wait for the response). The checks' verdicts are registers: a range
  verdict is acted on in the cycle after its check (the next RANGE cycle, or PREP,
  which then starts nothing), a D-OVERLAP verdict two cycles after (OVERLAP or
  RANGE; an earlier check's verdict first), so a faulting check reaches DONE one
  (range) or two (D-OVERLAP) cycles later than its own cycle; passing checks cost
  nothing.
* **lanes per beat**: E = 8 W / L elements, L the widest unit of the instruction (at
  least ``config.vector_min_lane``: int4-only instructions in 8-bit lanes on `base`);
  every source delivers ``E * bits / 4`` nibbles per beat (the rest of the vector
  in the last beat), the destination takes ``E * dst_bits / 4``.
* **readers**: row requests in order, at most `reader_slots` - 1 rows (3 with
  ``mem_latency`` 1) ahead of the consumer's row (source 2, MEDIAN's third operand:
  `source2_slots` - 1); a response (``config.mem_latency`` cycles after the request
  transferred) is usable the cycle after it arrives. Port A serves source 0, port B sources 1 and 2 (a request
  holds the port until granted; otherwise source 2 is preferred after a source-1
  grant and vice versa).
* **beat issue** (into A, the aligned windows' register): when every source has the
  beat's nibbles and A is free or advancing, but not in the cycle after a MEDIAN
  beat's issue; sources 0 and 1 are consumed then, MEDIAN's source 2 in that next
  cycle (the engine shares one realignment shifter between sources 1 and 2).
* **A -> S0** when S0 is free or finishing.
* **S0 -> S1**: the ALU holds a beat for ``occ`` cycles (1; MEDIAN 2; MUL 2 for
  64 x 64-bit products, ASL/LSL/ROR 2 for 64-bit lanes; DIV/MOD L per 64-bit
  lane group, W / 8 groups; POW 1 + 2 * bits(y) * passes; every `NARROW` kind but
  DIV/MOD times ``config.narrow_groups``, and every `NARROW` kind times
  ``config.narrow_step_cycles``) and finishes into the ALU's tail
  register T when T is free or advancing; T -> S1 when S1 is free or advancing;
  S1 -> S2 when S2 is free or advancing; S2 -> P (pack) when P is free or
  advancing; P -> writer when the writer's request queue (two entries) is not full.
* **writer**: assembles rows, emits a row request into its queue when the stream
  passes the row's end or ends, and a final partial row one cycle later if needed;
  the queue's head is the write port's request; done when everything has been
  taken, then ``done`` in the next cycle.
"""

from dataclasses import dataclass, fields

from ..isa import DataUnit, Fault

__all__ = ["VectorModel", "VectorOutputs", "plan", "SIGNALS", "NARROW", "NARROW_SCALED", "source2_slots",
           "reader_slots"]

_BINARY = {"add", "sub", "max", "min", "maxsi", "minsi", "mul", "div", "mod", "pow", "seq", "sne", "sle",
           "slt", "sge", "sgt", "lsl", "lsr", "ror", "asl", "asr", "nsr"}
_LOGIC = {"and", "or", "xor", "inv", "bclr", "bset"}
_UNARY = {"thres", "abs", "sign", "sxt", "uxt", "round", "ceil", "floor", "clip", "data_convert"}
ELEMENTWISE = _BINARY | _LOGIC | _UNARY | {"median"}
# the kinds on the ALU's narrow path (`CoreConfig.vector_narrow_bits`): one lane group of
# the beat after the other, each taking the cycles a whole beat takes on a full-width ALU
NARROW = frozenset({"pow", "median", "clip", "mul", "lsl", "lsr", "ror", "asl", "asr", "nsr", "div", "mod"})
# those whose occupancy grows by ``narrow_groups`` (division is one 64-bit group at a time either way)
NARROW_SCALED = NARROW - {"div", "mod"}

IDLE, DECODE, UNIT, RED_DIMS, OVERLAP, RANGE, PREP, TAIL_REQ, TAIL_RSP, RUN, RED, DONE = range(12)
S0, S1, S2, D = range(4)


def _unit(fields, *names):
    for n in names:
        if n in fields:
            return DataUnit(fields[n])
    return None


@dataclass
class Plan:
    """What the engine derives from an instruction (the model's view)."""
    sources: tuple          # slots read
    units: dict             # slot -> DataUnit
    addr: dict              # slot -> byte address
    n: int
    lane_bits: int
    occ: int
    unit_fault: bool


def plan(mnemonic, f, groups=1, narrow_groups=1, min_lane=4, narrow_step=1):
    """The instruction's operand roles, units, lane width and ALU occupancy (`groups`:
    64-bit lane groups per beat; `narrow_groups`: lane groups of the narrow path;
    `min_lane`: the narrowest lane in bits, ``CoreConfig.vector_min_lane``;
    `narrow_step`: cycles per step of the narrow path, ``CoreConfig.narrow_step_cycles``)."""
    if mnemonic not in ELEMENTWISE:
        raise ValueError(f"{mnemonic} is not an elementwise instruction of the vector engine")
    if mnemonic in _LOGIC:
        units = {S0: DataUnit.U8, S1: DataUnit.U8, D: DataUnit.U8}
        sources = (S0,) if mnemonic == "inv" else (S0, S1)
    else:
        units = {S0: _unit(f, "src0_unit", "src_unit"), D: _unit(f, "dst_unit")}
        if mnemonic in _BINARY or mnemonic == "median":
            units[S1] = _unit(f, "src1_unit")
        if mnemonic == "median":
            units[S2] = _unit(f, "src2_unit")
        sources = tuple(s for s in (S0, S1, S2) if s in units)
    fault = any(u.is_float for u in units.values())
    b0, bd = units[S0].bits, units[D].bits
    if mnemonic == "abs":
        fault |= not units[S0].signed
    if mnemonic == "asr":
        fault |= b0 > 32
    if mnemonic == "nsr":
        fault |= b0 not in (8, 16, 32, 64) or 2 * bd != b0
    if mnemonic in ("sxt", "uxt"):
        fault |= b0 not in (4, 8, 16, 32) or bd not in (8, 16, 32, 64) or bd <= b0
    if mnemonic in ("sxt", "uxt") and S1 in units:
        del units[S1]
    L = max([min_lane] + [u.bits for u in units.values()])
    occ = 1
    if mnemonic == "mul" and units[S0].bits == 64 and units[S1].bits == 64:
        occ = 2
    elif mnemonic in ("asl", "lsl", "ror") and L == 64:
        occ = 2
    elif mnemonic == "pow":
        occ = 1 + 2 * units[S1].bits * (2 if L == 64 else 1)
    elif mnemonic in ("div", "mod"):
        occ = groups * L                # one 64-bit lane group (of N / 64) at a time
    elif mnemonic == "median":
        occ = 2
    if mnemonic in NARROW_SCALED:
        occ *= narrow_groups
    if mnemonic in NARROW and narrow_groups > 1:
        occ *= narrow_step              # cycles per step of the narrow path
    addr = {S0: f.get("src0", f.get("src", 0)), S1: f.get("src1", 0), S2: f.get("src2", 0), D: f.get("dst", 0)}
    return Plan(sources, units, addr, f.get("len", 0), L, occ, fault)


def _nbytes(unit, n):
    return (n * unit.bits + 7) // 8


@dataclass(frozen=True)
class VectorOutputs:
    """The engine's outputs (and pipeline state) during one cycle."""
    cmd_ready: int
    done_valid: int
    done_fault: int
    rd_a_valid: int
    rd_a_row: int
    rd_b_valid: int
    rd_b_row: int
    wr_valid: int
    wr_row: int
    wr_be: int
    state: int
    va: int
    v0: int
    vt: int
    v1: int
    v2: int
    vp: int
    it: int

    def items(self):
        return [(f.name, getattr(self, f.name)) for f in fields(self)]


SIGNALS = {  # model field -> the RTL signal it predicts
    "cmd_ready": "cmd.ready", "done_valid": "done.valid", "done_fault": "done.payload.fault",
    "rd_a_valid": "rd_a.req.valid", "rd_a_row": "rd_a.req.payload", "rd_b_valid": "rd_b.req.valid",
    "rd_b_row": "rd_b.req.payload", "wr_valid": "wr.req.valid", "wr_row": "wr.req.payload.row",
    "wr_be": "wr.req.payload.be", "state": "dbg_state",
    "va": "dbg_va", "v0": "dbg_v0", "vt": "dbg_vt", "v1": "dbg_v1", "v2": "dbg_v2", "vp": "dbg_vp",
    "it": "dbg_it",
}


def source2_slots(config):
    """Rows buffered by the reader of source 2 (MEDIAN's third operand). MEDIAN takes a
    beat every 2 cycles on a full-width ALU, which 3 rows sustain at any alignment, and
    every 2 * ``narrow_groups`` cycles or more on a narrow path, which 2 rows sustain (2
    on a full-width ALU would halve MEDIAN's rate; fewer rows than the other readers'
    save their registers and multiplexers); each cycle of memory read latency beyond
    the first adds one row on a full-width ALU."""
    latency = getattr(config, "mem_latency", 1)
    return 2 if config.narrow_groups > 1 else 2 + latency


def reader_slots(config):
    """Rows buffered by the readers of sources 0 and 1: 4 with a memory read latency
    of 1, one more per further cycle of latency. A row requested in cycle t is usable
    in cycle t + L + 1; a consumer taking one unaligned window (its row and the next)
    per cycle needs the row after next requested L + 1 cycles ahead, so ``L + 3`` rows."""
    return 3 + getattr(config, "mem_latency", 1)


class _Reader:
    def __init__(self, rn, slots=4):
        self.rn = rn
        self.ahead = slots - 1
        self.end = self.pos = self.irow = self.lrow = self.rrow = 0
        self.on = False

    def start(self, nib, length):
        self.pos, self.end = nib, nib + length
        self.irow = self.rrow = nib // self.rn
        self.lrow = (nib + length - 1) // self.rn
        self.on = length != 0

    @property
    def req_valid(self):
        return self.on and self.irow <= self.lrow and self.irow <= self.pos // self.rn + self.ahead

    @property
    def avail(self):
        return max(0, min(self.rrow * self.rn, self.end) - self.pos)

    @property
    def left(self):
        return self.end - self.pos


class _Writer:
    def __init__(self, rn):
        self.rn = rn
        self.pos = self.end = self.arow = self.accm = 0
        self.q = []                 # the request queue, head first: (row, byte enables)

    def start(self, nib, length):
        self.pos, self.end = nib, nib + length
        self.arow = nib // self.rn
        self.accm = 0

    @property
    def can(self):
        return len(self.q) < 2

    @property
    def in_ready(self):
        return self.can and self.pos != self.end

    @property
    def wv(self):
        return bool(self.q)

    @property
    def done(self):
        return self.pos == self.end and self.accm == 0 and not self.q

    def _emit(self, mask, row):
        self.q.append((row, sum(1 << i for i in range(self.rn // 2) if (mask >> (2 * i)) & 3)))

    def edge(self, in_valid, cnt, wr_ready):
        can, at_end = self.can, self.pos == self.end
        ready = can and not at_end
        if self.q and wr_ready:
            self.q.pop(0)
        rn = self.rn
        if in_valid and ready:
            off = self.pos % rn
            npos = self.pos + cnt
            nmask = self.accm | (((1 << cnt) - 1) << off)
            if off + cnt >= rn or npos == self.end:
                self._emit(nmask & ((1 << rn) - 1), self.arow)
                self.accm, self.arow = nmask >> rn, self.arow + 1
            else:
                self.accm = nmask
            self.pos = npos
        elif at_end and self.accm and can:
            self._emit(self.accm & ((1 << rn) - 1), self.arow)
            self.accm, self.arow = 0, self.arow + 1


class VectorModel:
    """The engine's control, cycle by cycle (see the module docstring)."""

    def __init__(self, config):
        if config.vector_bytes != config.row_bytes:
            raise ValueError("the vector engine needs vector_bytes == row_bytes")
        self.cfg = config
        self.W = config.vector_bytes
        self.R = config.row_bytes
        self.rn = 2 * self.R
        self.state = IDLE
        self.fault = 0
        self.ck = 0
        self.ov_1 = self.ov_hit = self.rg_hit = False     # the checks' verdict registers
        self.p = None
        self.readers = [_Reader(self.rn, reader_slots(config)), _Reader(self.rn, reader_slots(config)),
                        _Reader(self.rn, source2_slots(config))]
        self.writer = _Writer(self.rn)
        self.b_hold = self.b_hold_own = self.b_prio = self.b_pend_own = False
        # the memory's read latency L: per port the transfers of the last L cycles (index 0:
        # its response is due now), and b_pend_own's values of the last L - 1 cycles
        self.latency = getattr(config, "mem_latency", 1)
        self.a_pend = [False] * self.latency
        self.b_pend = [False] * self.latency
        self.b_own_q = [False] * (self.latency - 1)
        self.eleft = self.dleft = 0
        self.v0 = self.vt = self.v1 = self.v2 = self.vp = False
        self.a = []                 # stage A: a ring of two slots; the beats' destination nibbles
        self.c_due = False          # the cycle after a MEDIAN beat entered A: source 2's window
        self.it = 0
        self.d0 = self.dt = self.d1 = self.d2 = self.o_cnt = 0
        self.need_c = 0
        self.tail_row = 0
        self.pending_cmd = None

    # --- per-instruction derived values -----------------------------------------------------

    def _beat(self):
        p = self.p
        e = 8 * self.W // p.lane_bits
        nib = {s: e * u.bits // 4 for s, u in p.units.items()}
        return e, nib

    def _ov_bad(self, s):
        p = self.p
        n = p.n
        if n <= 1:
            return False
        ud, us = p.units[D], p.units[s]
        dst, src = p.addr[D], p.addr[s]
        d_end, s_end = dst + _nbytes(ud, n), src + _nbytes(us, n)
        if src >= d_end or dst >= s_end:
            return False
        d, sb, b, a = 8 * dst, 8 * src, ud.bits, us.bits
        return not all(d + k * b <= sb + k * a for k in (1, n - 1))

    def _range_bad(self, s):
        p = self.p
        nb = _nbytes(p.units[s], p.n)
        return nb != 0 and p.addr[s] + nb > self.cfg.mem_bytes

    # --- one cycle ----------------------------------------------------------------------------------

    def outputs(self, cmd_valid=False):
        """The outputs during the current cycle (functions of the registers)."""
        st = self.state
        run = st == RUN
        r0, r1, r2 = self.readers
        a_valid = r0.req_valid and run
        own2 = self._own2()
        b_valid, b_row = False, 0
        if run:
            b_valid = r2.req_valid if own2 else r1.req_valid
            b_row = (r2 if own2 else r1).irow if b_valid else 0
        elif st == TAIL_REQ:
            b_valid, b_row = True, self.tail_row
        w = self.writer
        return VectorOutputs(
            cmd_ready=int(st == IDLE), done_valid=int(st == DONE), done_fault=self.fault if st == DONE else 0,
            rd_a_valid=int(a_valid), rd_a_row=r0.irow if a_valid else 0,
            rd_b_valid=int(b_valid), rd_b_row=b_row,
            wr_valid=int(w.wv), wr_row=w.q[0][0] if w.wv else 0, wr_be=w.q[0][1] if w.wv else 0,
            state=st, va=int(bool(self.a)), v0=int(self.v0), vt=int(self.vt), v1=int(self.v1), v2=int(self.v2), vp=int(self.vp), it=self.it)

    def _own2(self):
        r1, r2 = self.readers[1], self.readers[2]
        if self.b_hold:
            return self.b_hold_own
        return r2.req_valid and (not r1.req_valid or self.b_prio)

    def edge(self, *, ready_a=1, ready_b=1, ready_w=1, done_ready=1, cmd=None):
        """Advance one clock edge. `cmd` = (mnemonic, fields) when ``cmd.valid`` is
        high in this cycle."""
        st = self.state
        run = st == RUN
        r0, r1, r2 = self.readers
        w = self.writer
        p = self.p

        # port A / B transfers this cycle, responses due this cycle
        a_valid = r0.req_valid and run
        a_fire = a_valid and ready_a
        own2 = self._own2()
        want1, want2 = r1.req_valid, r2.req_valid
        b_valid = (want2 if own2 else want1) if run else False
        b_fire = b_valid and ready_b
        rsp_a, rsp_b = self.a_pend[0], self.b_pend[0]
        rsp_own = self.b_own_q[0] if self.b_own_q else self.b_pend_own     # the response's reader
        rsp1 = rsp_b and run and not rsp_own
        rsp2 = rsp_b and run and rsp_own

        # pipeline
        out_ready = w.in_ready and run
        takep = self.vp and out_ready
        adv2 = self.v2 and (not self.vp or takep)
        adv1 = self.v1 and (not self.v2 or adv2)
        advt = self.vt and (not self.v1 or adv1)
        occ = p.occ if p else 1
        last_it = self.it == occ - 1
        fin = self.v0 and last_it and (not self.vt or advt)
        step = self.v0 and not last_it
        s0_free = not self.v0 or fin
        load0 = bool(self.a) and s0_free            # A -> S0
        c_due = self.c_due
        # A takes a beat while a slot is free (from registers only); MEDIAN keeps one beat in
        # A (source 2's window is a single register)
        median = p is not None and S2 in p.sources
        in_free = (not self.a if median else len(self.a) < 2) and not c_due

        load, takes, dnib = False, [0, 0, 0], 0
        if c_due:
            takes[S2] = self.need_c
        if run and self.eleft:
            e, nib = self._beat()
            full = self.eleft >= e
            need = {s: nib[s] if full else self.readers[s].left for s in p.sources}
            have = all(self.readers[s].avail >= need[s] for s in p.sources)
            if have and in_free:
                load = True
                for s in p.sources:
                    if s == S2:
                        self.need_c = need[s]
                    else:
                        takes[s] = need[s]
                dnib = nib[D] if full else self.dleft
                self.eleft = self.eleft - e if full else 0
                self.dleft -= dnib

        # writer edge (uses the P register as it is this cycle)
        w_in_valid, w_cnt = self.vp and run, self.o_cnt
        starts = {}

        # the checks' verdicts: registers, read one (range) or two (D-OVERLAP) cycles after the
        # cycle that checks the slot
        ov_hit, rg_hit = self.ov_hit, self.rg_hit
        self.ov_hit, self.ov_1 = self.ov_1, st == OVERLAP and self._ov_bad(self.ck)
        self.rg_hit = st == RANGE and self._range_bad(self.ck)

        # control FSM
        nxt = st
        if st == IDLE:
            if cmd is not None:
                self.pending_cmd = cmd
                self.p = plan(*cmd, groups=self.W // 8, narrow_groups=self.cfg.narrow_groups,
                              min_lane=self.cfg.vector_min_lane,
                              narrow_step=self.cfg.narrow_step_cycles)
                self.fault = 0
                nxt = DECODE
        elif st == DECODE:
            nxt = UNIT
        elif st == UNIT:
            if p.unit_fault:
                nxt, self.fault = DONE, int(Fault.UNSUPPORTED_UNIT)
            else:
                nxt, self.ck = OVERLAP, p.sources[0]
        elif st == OVERLAP:
            later = [s for s in p.sources if s > self.ck]
            if ov_hit:
                nxt, self.fault = DONE, int(Fault.ILLEGAL_OPERAND)
            elif later:
                self.ck = later[0]
            else:
                nxt, self.ck = RANGE, D
        elif st == RANGE:
            later = [s for s in p.sources if self.ck == D or s > self.ck]
            if ov_hit:
                nxt, self.fault = DONE, int(Fault.ILLEGAL_OPERAND)
            elif rg_hit:
                nxt, self.fault = DONE, int(Fault.ADDRESS_RANGE)
            elif later:
                self.ck = later[0]
            else:
                nxt = PREP
        elif st == PREP and rg_hit:
            nxt, self.fault = DONE, int(Fault.ADDRESS_RANGE)
        elif st == PREP:
            for s in p.sources:
                starts[s] = (2 * p.addr[s], p.n * p.units[s].bits // 4)
            dst_nib = p.n * p.units[D].bits // 4
            starts["w"] = (2 * p.addr[D], dst_nib)
            self.eleft, self.dleft = p.n, dst_nib
            odd = p.units[D].bits == 4 and p.n % 2
            self.tail_row = (p.addr[D] + p.n // 2) // self.R
            nxt = TAIL_REQ if odd else RUN
        elif st == TAIL_REQ:
            if ready_b:
                nxt = TAIL_RSP
        elif st == TAIL_RSP:
            if rsp_b:
                nxt = RUN
        elif st == RUN:
            if w.done:
                nxt = DONE
        elif st == DONE:
            if done_ready:
                nxt = IDLE

        # port B arbitration registers
        if self.b_own_q:
            self.b_own_q = self.b_own_q[1:] + [self.b_pend_own]
        if run:
            self.b_hold, self.b_hold_own = b_valid and not ready_b, own2
            if b_fire:
                self.b_prio, self.b_pend_own = not own2, own2
        else:
            self.b_hold = self.b_prio = False
        self.a_pend = self.a_pend[1:] + [a_fire]
        self.b_pend = self.b_pend[1:] + [b_fire or (st == TAIL_REQ and ready_b)]

        # readers
        for s, (r, fire, rsp) in enumerate(((r0, a_fire, rsp_a),
                                            (r1, b_fire and not own2, rsp1), (r2, b_fire and own2, rsp2))):
            if fire:
                r.irow += 1
            if rsp:
                r.rrow += 1
            if s in starts:
                r.start(*starts[s])
            else:
                r.pos += takes[s]

        # writer
        if "w" in starts:
            w.edge(False, 0, ready_w)
            w.start(*starts["w"])
        else:
            w.edge(w_in_valid, w_cnt, ready_w)

        # pipeline registers (every right-hand side is this cycle's value)
        d0, dt, d1, d2 = self.d0, self.dt, self.d1, self.d2
        if adv2:
            self.vp, self.o_cnt = True, d2
        elif takep:
            self.vp = False
        if adv1:
            self.v2, self.d2 = True, d1
        elif adv2:
            self.v2 = False
        if advt:
            self.v1, self.d1 = True, dt
        elif adv1:
            self.v1 = False
        if fin:
            self.it, self.vt, self.dt = 0, True, d0
        else:
            if step:
                self.it += 1
            if advt:
                self.vt = False
        if load0:
            self.v0, self.d0 = True, self.a.pop(0)
        elif fin:
            self.v0 = False
        if load:
            self.a.append(dnib)
        self.c_due = load and S2 in p.sources
        self.state = nxt
