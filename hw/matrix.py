"""The matrix engine: Matrix_Mul (BASE group 0b1011, code 0) and CONV2D (AI group
0b10, code 0); docs/isa-decisions.md D-MATMUL, D-CONV, D-CONV-IMM, D-MATMUL-READS,
D-PRECEDENCE, D-OVERLAP; golden/semantics/matrix.py; the design is described in
docs/matrix-unit.md.

`MatrixEngine(config)` takes one command at a time on ``cmd`` (the raw operand
table and its AS; it works from the held command and takes it when finished, like
the data-move engine), checks every operand as the golden model does, computes
the convolution on an ``N x N`` weight-stationary systolic array (``N =
config.array_n``) and answers on ``done`` with the fault code. Memory ports:
``rd_a`` (activations; one row per cycle), ``rd_b`` (weights, padding values,
CONV2D parameters) and ``wr`` (results). ``rd_a`` and ``rd_b`` must be on
different physical read ports of the memory system for full speed.

Units (`refuses`): feature map and weights s8, u8, s16, u16 (held exactly as
17-bit operands of one 18 x 18 multiplier per PE); Matrix_Mul results s32/u32;
CONV2D results any integer unit, parameter units 8/16/32-bit integers. Floats,
32/64-bit feature-map or weight units and 64-bit parameter units are refused
(UNSUPPORTED_UNIT, before any other check). int4 is not refused: the golden model
makes it ILLEGAL_OPERAND in every unit field of both instructions, and so does the
engine.

Structure (one unit per file):

* `MatrixSetup` (hw/matrix_setup.py): the checks in the golden order and the
  constants of the walk (about 105 cycles);
* `ActivationAGU`, `WeightLoader` (hw/matrix_agu.py): im2col on the fly, the
  loop nest block of positions / kernel group / tile (ky, kx, c0) / position, or
  with tap packing (C < N, NHWC) tiles of N consecutive (ky, kx, c) indices;
* two `VectorGather` (hw/matrix_gather.py): memory rows to lane vectors, with a
  per-lane row cache (A) and coalescing; each takes its requests through a
  two-entry register queue (hw/reg_queue.py, a ring: the gather's ready moves only
  its read pointer), so its ready reaches no walker and no queue entry's enable;
* `SystolicArray` (hw/systolic.py): PEs ``pe_<r>_<c>``, two weight banks, so the
  next tile loads while the current one computes;
* `Accumulators` (hw/matrix_acc.py): two banks of ``pb`` positions x N exact
  53-bit sums, read-modify-written one position per cycle at the array's output
  (written 2 cycles after the vector leaves the array);
* `MatrixDrain` (hw/matrix_drain.py) with ``rq_lanes`` `Requantiser`s (hw/requant.py);
  it drains a block while its last pass still runs (the positions of the last pass
  become final in order; a counter per bank tells the drain how many are);
* `VectorWriter` (hw/matrix_writer.py).

Double buffering: the PEs' shadow weights (tile t + 1 loads while tile t computes
from the active ones; the bank tag travels with every vector and swaps the tile
in PE by PE, so there is no bubble between tiles) and the accumulator banks
(block b + 1 accumulates while block b drains).

Latency: one cycle to register the command's fields, setup (about 105 cycles), then the first tile load (about N + 5 cycles),
then the passes; the last block drains after the array (2N + 1 cycles) and the
accumulator stage. Throughput: N * N MACs per cycle while every activation vector
needs at most one memory row (NHWC with channels in one row; see
docs/matrix-unit.md for the measured utilisation).
"""

from amaranth.hdl import Assert, Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.utils import exact_log2

from xdsa.golden import isa
from xdsa.golden.isa import DataUnit

from . import fields as F
from .bus import engine_answer_states, engine_members
from .matrix_acc import Accumulators
from .matrix_agu import ActivationAGU, KIND_PAD, KIND_PARAM, KIND_WEIGHT, WeightLoader
from .matrix_drain import MatrixDrain
from .matrix_gather import VectorGather
from .matrix_setup import MatrixSetup, OperandFields
from .matrix_writer import VectorWriter
from .reg_queue import RegQueue
from .replicate import replicas
from .requant import PARAM_BITS, sat_bounds
from .systolic import OP_BITS, SystolicArray

__all__ = ["OPCODES", "refuses", "MatrixEngine"]

OPCODES = ("matrix_mul", "conv2d")

_OPERAND_UNITS = {DataUnit.U8, DataUnit.S8, DataUnit.U16, DataUnit.S16, DataUnit.U4, DataUnit.S4}


def refuses(config, op, fields):
    """The reason the engine refuses an instruction's units (UNSUPPORTED_UNIT), or None."""
    def unit(name):
        code = fields.get(name, 0)
        return DataUnit(code) if code <= max(DataUnit) else None

    for name in ("fm_unit", "w_unit"):
        u = unit(name)
        if u is not None and u not in _OPERAND_UNITS:
            return (f"{name} = {u.mnemonic}: the {config.array_n} x {config.array_n} array multiplies "
                    f"8- and 16-bit integers only")
    u = unit("result_unit")
    if u is not None and u.is_float:
        return f"result_unit = {u.mnemonic}: the matrix engine writes integer results only"
    if op.mnemonic == "conv2d":
        for name in ("bias_unit", "mul_unit", "scale_unit"):
            u = unit(name)
            if u is not None and (u.is_float or u.bits == 64):
                return (f"{name} = {u.mnemonic}: the requantisation takes 8-, 16- and 32-bit integer "
                        f"parameters only")
    return None


class MatrixEngine(wiring.Component):
    """Matrix_Mul and CONV2D for one `CoreConfig` (module docstring). ``pb`` is the
    number of output positions per accumulator bank (a power of two; default 8 N);
    ``rq_lanes`` the number of requantisers (CONV2D results per cycle, 1 or 2; default
    ``config.matrix_rq_lanes``; the second costs about 3,000 LUT4 sites on ECP5 and buys
    the ResNet-20 stem about twice its rate, see docs/matrix-unit.md)."""

    def __init__(self, config, *, pb=None, rq_lanes=None, checks=False):
        n = config.array_n
        if n < 1 or n & (n - 1):
            raise ValueError(f"array_n must be a power of two, not {n!r}")
        pb = pb if pb is not None else 8 * n
        if pb < 2 or pb & (pb - 1):
            raise ValueError(f"pb must be a power of two of at least 2, not {pb!r}")
        rq_lanes = config.matrix_rq_lanes if rq_lanes is None else rq_lanes
        if rq_lanes not in (1, 2):
            raise ValueError(f"rq_lanes must be 1 or 2, not {rq_lanes!r}")
        self.config, self.n, self.pb, self.rq_lanes = config, n, pb, rq_lanes
        self.checks = checks
        self._ops = [isa.by_mnemonic(mn) for mn in OPCODES]
        self.table_bits = F.table_bits(self._ops)
        super().__init__(engine_members(config, self.table_bits, ["rd_a", "rd_b"]))

    def elaborate(self, platform):
        m = Module()
        cfg, n, pb = self.config, self.n, self.pb
        lpb = exact_log2(pb)

        m.submodules.setup = setup = MatrixSetup(cfg)
        AW = setup.addr_bits
        m.submodules.agu = agu = ActivationAGU(n=n, pb=pb, addr_bits=AW, checks=self.checks)
        m.submodules.wload = wl = WeightLoader(n=n, pb=pb, addr_bits=AW, checks=self.checks)
        m.submodules.gather_a = ga = VectorGather(cfg, lanes=n, max_bytes=2, value_bits=OP_BITS,
                                                  side=agu.side_layout, checks=self.checks)
        m.submodules.gather_b = gb = VectorGather(cfg, lanes=n, max_bytes=4, value_bits=PARAM_BITS,
                                                  side=wl.side_layout, checks=self.checks)
        m.submodules.array = arr = SystolicArray(n)
        m.submodules.drain = dr = MatrixDrain(n=n, pb=pb, addr_bits=AW, rq_lanes=self.rq_lanes, checks=self.checks)
        m.submodules.writer = wrt = VectorWriter(cfg, lanes=n, addr_bits=AW, checks=self.checks)
        m.submodules.acc = accs = Accumulators(n=n, pb=pb, psum_width=arr.psum_width, tag_bits=2,
                                               checks=self.checks)

        # --- the command's fields ------------------------------------------------------------
        cmd = self.cmd.payload
        conv = cmd.section_ai
        mm_op, cv_op = self._ops
        # decoded from the held command, then registered: the table's layout by its AS and
        # the Matrix_Mul / CONV2D choice stay off every path of the setup and the walk
        # (the DECODE state waits for the register)
        fd = Signal(OperandFields)
        for name in OperandFields.members:
            if name == "conv":
                m.d.comb += fd.conv.eq(conv)
                continue
            vals = []
            for op in (mm_op, cv_op):
                names = {x.name for x in op.table.resolve(32).fields}
                vals.append(F.field(cmd.table, cmd.as_code, op, name) if name in names else Const(0, 1))
            m.d.comb += getattr(fd, name).eq(Mux(conv, vals[1], vals[0]))
        f = Signal(OperandFields, reset_less=True)   # data: loaded every cycle
        m.d.sync += f.eq(fd)
        conv = f.conv
        m.d.comb += setup.f.eq(f)
        g = setup.out

        # --- memory ports ----------------------------------------------------------------------
        wiring.connect(m, ga.rd, wiring.flipped(self.rd_a))
        wiring.connect(m, gb.rd, wiring.flipped(self.rd_b))
        wiring.connect(m, wrt.wr, wiring.flipped(self.wr))
        wiring.connect(m, dr.wvec, wrt.vec)

        # --- walkers -------------------------------------------------------------------------
        m.d.comb += [agu.geo.eq(g), wl.geo.eq(g), wl.pad_pc.eq(f.padding_mode == 1),
                     wl.pad_addr.eq(f.padding_addr[:AW])]
        # The requests reach the gathers through two-entry register queues: a gather's
        # ready (its row-cache hits and the read port's ready) moves only the queue, not the
        # activation walk's counters and bank handshakes, the weight loader or the drain's
        # parameter sequencing, and the gathers compute their lane addresses from a register.
        # (Shifting queues, the head a register: a gather's ready is registers of its own,
        # so it may drive the entries' enables; a ring's read pointer (fan-out 89) selected
        # the head in front of the gather's lane adders: the pointer -> the head -> the
        # adders -> gather B's `pre` was 16.7 ns in the placed `base`, session 49.)
        m.submodules.aq = aq = RegQueue(ga.req.payload.shape(), depth=2)
        m.submodules.bq = bq = RegQueue(gb.req.payload.shape(), depth=2)
        m.d.comb += [aq.w_valid.eq(agu.req.valid), aq.w_data.eq(agu.req.payload), agu.req.ready.eq(aq.w_ready),
                     ga.req.valid.eq(aq.r_valid), ga.req.payload.eq(aq.r_data), aq.r_ready.eq(ga.req.ready),
                     gb.req.valid.eq(bq.r_valid), gb.req.payload.eq(bq.r_data), bq.r_ready.eq(gb.req.ready)]

        # gather B serves the weight loader first, then the drain's parameter requests
        with m.If(wl.req.valid):
            m.d.comb += [bq.w_valid.eq(1), bq.w_data.eq(wl.req.payload), wl.req.ready.eq(bq.w_ready)]
        with m.Else():
            m.d.comb += [bq.w_valid.eq(dr.preq.valid), bq.w_data.eq(dr.preq.payload),
                         dr.preq.ready.eq(bq.w_ready)]

        # --- weight banks: FREE -> LOADING (loader) -> READY (last vector in) -> FREE (pass issued).
        # A bank is a tag: its tile goes into the array's shadow weights, and the pass's first
        # vector swaps it in, PE by PE. `swapping[b]`: tile b is being loaded into the shadows or
        # some PE has not swapped it in yet (until a vector tagged b leaves the array); the
        # shadows take the next tile only after that.
        FREE, LOADING, READY = 0, 1, 2
        wstate = [Signal(2, name=f"wbank{b}_state") for b in range(2)]
        swapping = [Signal(name=f"wbank{b}_swapping") for b in range(2)]
        # data: a bank's padding values are loaded with its tile, before the bank is READY
        pad_bank = [[Signal(signed(OP_BITS), name=f"pad{b}_{i}", reset_less=True) for i in range(n)]
                    for b in range(2)]
        # Gather B's output is registered before its consumers: the byte select at the end of
        # the gather fanned out to every PE's shadow weights of its column, the padding banks
        # and the drain's parameter registers, across the array (gather B's offset -> the
        # byte -> a PE's `ws`, 16.6-18.4 ns on the placed `base`, session 37). A weight or
        # parameter vector reaches its consumers one cycle later; nothing waits on them
        # within that cycle (the banks' READY and the drain's count of parameters in flight
        # follow the registered vector). (vals and side are data, read only under `gb_valid`)
        gb_valid = Signal()
        gb_vals = Signal(gb.out_vals.shape(), reset_less=True)
        bside = Signal(gb.out_side.shape(), reset_less=True)
        m.d.sync += [gb_valid.eq(gb.out_valid), gb_vals.eq(gb.out_vals), bside.eq(gb.out_side)]
        for b in range(2):
            m.d.comb += [agu.w_ready[b].eq(wstate[b] == READY),
                         wl.w_free[b].eq((wstate[b] == FREE) & ~swapping[1 - b])]
            with m.If(wl.w_load[b]):
                m.d.sync += wstate[b].eq(LOADING)
            with m.If(gb_valid & (bside.kind != KIND_PARAM) & bside.last & (bside.bank == b)):
                m.d.sync += wstate[b].eq(READY)
            with m.If(agu.w_done[b]):
                m.d.sync += wstate[b].eq(FREE)
            with m.If(gb_valid & (bside.kind == KIND_PAD) & (bside.bank == b)):
                m.d.sync += [pad_bank[b][i].eq(gb_vals[i]) for i in range(n)]
        m.d.comb += [
            arr.w_we.eq(gb_valid & (bside.kind == KIND_WEIGHT)),
            arr.w_col.eq(bside.col),
        ]
        for i in range(n):
            m.d.comb += arr.w_data[i].eq(gb_vals[i])
        m.d.comb += [dr.pdel_valid.eq(gb_valid), dr.pdel_vals.eq(gb_vals), dr.pdel_side.eq(bside)]

        # --- activations into the array --------------------------------------------------------
        aside = ga.out_side
        pad_imm = Signal(signed(OP_BITS))
        with m.Switch(f.fm_unit):
            for u in (DataUnit.U8, DataUnit.S8, DataUnit.U16, DataUnit.S16):
                with m.Case(int(u)):
                    raw = f.padding_addr[:u.bits]
                    m.d.comb += pad_imm.eq(raw.as_signed() if u.signed else raw)
        for i in range(n):
            pad = Mux(f.padding_mode == 1, Mux(aside.wbank, pad_bank[1][i], pad_bank[0][i]), pad_imm)
            m.d.comb += arr.x[i].eq(Mux(ga.out_valid, Mux(aside.fill[i], pad, ga.out_vals[i]), 0))
        m.d.comb += [arr.x_bank.eq(aside.wbank), arr.x_valid.eq(ga.out_valid)]

        # the vector's bookkeeping follows it through the array
        SB = data.StructLayout({"valid": 1, "wbank": 1, "abank": 1, "idx": lpb, "first": 1, "last": 1,
                                "lastpass": 1})
        sb_in = Signal(SB)
        m.d.comb += [sb_in.valid.eq(ga.out_valid), sb_in.wbank.eq(aside.wbank), sb_in.abank.eq(aside.abank),
                     sb_in.idx.eq(aside.idx), sb_in.first.eq(aside.first), sb_in.last.eq(aside.last),
                     sb_in.lastpass.eq(aside.lastpass)]
        sb = sb_in
        for k in range(arr.latency):
            # data: the bookkeeping counts only under its valid bit, a register of its own
            # with the reset (the struct's `valid` field is replaced by it)
            d = Signal(SB, name=f"sb_{k}", reset_less=True)
            v = Signal(name=f"sb_{k}_valid")
            m.d.sync += [d.eq(sb), v.eq(sb.valid)]
            sb = SB(Cat(v, d.as_value()[1:]))

        for b in range(2):
            with m.If(wl.w_load[b]):
                m.d.sync += swapping[b].eq(1)
            with m.Elif(sb.valid & (sb.wbank == b)):        # every PE has swapped tile b in
                m.d.sync += swapping[b].eq(0)

        # --- accumulate (hw/matrix_acc.py) -----------------------------------------------------
        m.d.comb += [accs.in_valid.eq(sb.valid), accs.in_addr.eq(Cat(sb.idx, sb.abank)), accs.in_first.eq(sb.first),
                     accs.in_sums.eq(arr.sums), accs.in_tag.eq(Cat(sb.lastpass, sb.abank))]
        w_lastpass, w_abank = accs.w_tag[0], accs.w_tag[1]

        # --- accumulator banks: FREE -> COMPUTE (block starts) -> FULL (the last pass has begun to
        # write its sums) -> FREE (drained). The positions of the last pass are final in order;
        # ``final`` counts them, and the drain reads position i once i < final, so it starts while
        # the last pass is still running.
        AFREE, COMPUTE, FULL = 0, 1, 2
        astate = [Signal(2, name=f"abank{b}_state") for b in range(2)]
        final = [Signal(lpb + 1, name=f"abank{b}_final") for b in range(2)]
        # data: a bank's block descriptor, loaded when the block takes the bank (astate, reset)
        desc = [Signal(agu.desc.shape(), name=f"abank{b}_desc", reset_less=True) for b in range(2)]
        for b in range(2):
            m.d.comb += [agu.acc_free[b].eq(astate[b] == AFREE), dr.full[b].eq(astate[b] == FULL),
                         dr.final[b].eq(final[b]), dr.desc[b].eq(desc[b])]
            with m.If(agu.acc_take[b]):
                m.d.sync += [astate[b].eq(COMPUTE), desc[b].eq(agu.desc), final[b].eq(0)]
            with m.If(accs.w_valid & w_lastpass & (w_abank == b)):
                m.d.sync += [astate[b].eq(FULL), final[b].eq(final[b] + 1)]
            with m.If(dr.free[b]):
                m.d.sync += astate[b].eq(AFREE)
        m.d.comb += [accs.rd_addr.eq(dr.acc_addr), accs.rd_en.eq(dr.acc_en), accs.rd_use.eq(dr.acc_use),
                     dr.acc_data.eq(accs.rd_data)]

        # --- drain parameters --------------------------------------------------------------------
        P = dr.p
        m.d.comb += [
            P.conv.eq(conv), P.dst.eq(f.dst[:AW]), P.res_lsz.eq(g.res_lsz), P.out_is.eq(g.out_is),
            P.out_ik.eq(g.out_ik), P.clip_min.eq(f.clip_min.as_signed()), P.clip_max.eq(f.clip_max.as_signed()),
        ]
        with m.Switch(f.result_unit):
            for u in DataUnit:
                if u.is_int and u.bits >= 8:
                    lo, hi = sat_bounds(u)
                    with m.Case(int(u)):
                        m.d.comb += [P.sat_lo.eq(lo), P.sat_hi.eq(hi)]
        units = {"bias": f.bias_unit, "mul": f.mul_unit, "scale": f.scale_unit}
        addrs = {"bias": f.bias_addr, "mul": f.mul_addr, "shift": f.shift_addr, "scale": f.scale_o_addr}
        for p in ("bias", "mul", "shift", "scale"):
            m.d.comb += [getattr(P, f"{p}_mode").eq(Mux(conv, getattr(f, f"{p}_mode"), 0)),
                         getattr(P, f"{p}_addr").eq(addrs[p][:AW])]
            if p == "shift":
                m.d.comb += [P.shift_lsz.eq(0), P.shift_signed.eq(0), P.shift_imm.eq(addrs[p][:8])]
                continue
            with m.Switch(units[p]):
                for u in DataUnit:
                    if u.is_int and 8 <= u.bits <= 32:
                        with m.Case(int(u)):
                            raw = addrs[p][:u.bits]
                            m.d.comb += [getattr(P, f"{p}_lsz").eq(exact_log2(u.bits // 8)),
                                         getattr(P, f"{p}_signed").eq(u.signed),
                                         getattr(P, f"{p}_imm").eq(raw.as_signed() if u.signed else raw)]

        # --- control -----------------------------------------------------------------------------
        fault = Signal(8)
        m.d.comb += self.done.payload.fault.eq(fault)
        ctl_setup = Signal()                        # the control is in SETUP
        # the units start in the cycle the setup is done without a fault (SETUP -> RUN below);
        # each reads its own register copy of that (`setup.go`), so the start is no one net
        # across the engine from the setup's fault compare (fan-out 224, 15.4 ns, session 26)
        starts = replicas(m, platform, setup.go_next, 8, "mm_start")
        for k, port in enumerate((agu.start, wl.start, dr.start, ga.flush, gb.flush, arr.w_flush,
                                  aq.flush, bq.flush)):
            m.d.comb += port.eq(starts[k])
        finished = (agu.done & wl.done & (dr.drained == agu.blocks) & ~dr.busy & ~wrt.busy
                    & (astate[0] == AFREE) & (astate[1] == AFREE))
        with m.FSM(name="ctl"):
            with m.State("IDLE"):
                with m.If(self.cmd.valid):
                    m.next = "DECODE"
            with m.State("DECODE"):                 # the fields' register loads
                m.d.comb += setup.start.eq(1)
                m.next = "SETUP"
            with m.State("SETUP"):
                m.d.comb += ctl_setup.eq(1)
                with m.If(setup.done):
                    m.d.sync += fault.eq(setup.fault)
                    with m.If(setup.fault != 0):
                        m.next = "FINISH"
                    with m.Else():
                        m.d.sync += [wstate[0].eq(FREE), wstate[1].eq(FREE), swapping[0].eq(0),
                                     swapping[1].eq(0), astate[0].eq(AFREE), astate[1].eq(AFREE)]
                        m.next = "RUN"
            with m.State("RUN"):
                with m.If(finished):
                    m.next = "FINISH"
            engine_answer_states(m, self)
        if self.checks:
            # the units' start copies are SETUP's "done without a fault"
            m.d.sync += Assert(setup.go == (ctl_setup & setup.done & (setup.fault == 0)),
                               "matrix engine: the start copies disagree with the setup's verdict")
        return m
