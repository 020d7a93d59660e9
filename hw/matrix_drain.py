"""The matrix engine's drain: empties a full accumulator bank into the destination
(hw/matrix.py; D-MATMUL output layout, D-CONV requantisation).

For each block (in the order the activation walk filled the banks) the drain
reads the bank one position at a time (``n`` exact accumulators, one per kernel of
the group) and

* Matrix_Mul: hands the low 32 bits of each accumulator (the s32/u32 wrap) to the
  writer as one vector, one position per cycle;
* CONV2D: feeds the accumulators ``rq_lanes`` (RQ, default 2) per cycle (lanes j ..
  j + RQ - 1) through RQ `Requantiser` pipelines in lockstep with their parameters, collects the
  results into one vector per position and hands it to the writer. Two lanes keep
  the drain of a block (Pb x N elements) no longer than its compute when the
  reduction is only N/2 passes long (tap-packed layers with few channels, such as
  a 3-channel stem: 4 passes of 8 at N = 8). Parameters: IMM values are decoded by the engine; per-channel
  arrays are fetched once per block (one gather request per parameter, kernels
  k0.. in the lanes); per-element arrays once per position (lane stride: the
  output index stride between kernels).

Output element ``(p, k)`` has index ``p * out_is + k * out_ik`` (NHWC: ``K``, 1; NCHW:
1, ``H_out * W_out``); its byte address is ``dst + index * esize``, and a
per-element parameter's is ``addr + index * psize``.

Position i of a bank is read once the array has made it final (``final``, a count per
bank), from registers of the cycle before: a cycle after ``final`` counts it when the
drain has caught up with the array. The bank is released (``free``) as soon as its
last position has been read into the pipeline, so the array can fill it again while
the last results are still being requantised and written. The vectors reach the
writer through a two-entry register queue (`hw.reg_queue.RegQueue`), so the writer's
``ready`` drives no path to the requantisers' stall or to the accumulator memory in
the same cycle.
Throughput: one position per cycle for Matrix_Mul (bounded by the writer), RQ
accumulators per cycle for CONV2D (the pipelines advance when, a cycle before, the
collector and the queue held at most one vector: blocks of at most 2 * RQ kernels, a
vector every cycle or every other, can lose cycles to that; larger blocks do not).
"""

from amaranth.hdl import Assert, Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from .matrix_acc import memories
from .matrix_agu import BlockDesc, KIND_PARAM, WSide
from .matrix_gather import gather_request
from .matrix_writer import WriteVector, contiguous
from .reg_queue import RegQueue
from .replicate import replicas
from .requant import ACC_BITS, PARAM_BITS, OUT_BITS, Requantiser
from .thermometer import thermometer

__all__ = ["DrainParams", "MatrixDrain"]

IMM, PER_CH, PER_ELEM = 0, 1, 2
PARAMS = ("bias", "mul", "shift", "scale")


def DrainParams(addr_bits):
    A = unsigned(addr_bits)
    p = {}
    for name in PARAMS:
        p[f"{name}_mode"] = unsigned(2)
        p[f"{name}_addr"] = A
        p[f"{name}_lsz"] = unsigned(2)
        p[f"{name}_signed"] = unsigned(1)
        p[f"{name}_imm"] = signed(PARAM_BITS)
    return data.StructLayout({
        "conv": unsigned(1), "dst": A, "res_lsz": unsigned(2), "out_is": A, "out_ik": A,
        "clip_min": signed(16), "clip_max": signed(16), "sat_lo": signed(OUT_BITS), "sat_hi": signed(OUT_BITS),
        **p,
    })


class MatrixDrain(wiring.Component):
    """See the module docstring. ``acc_addr``/``acc_en`` drive a synchronous read port
    of the accumulator memory (``acc_data`` holds while ``acc_en`` is low). ``acc_en``
    is equal register copies, one per memory of the accumulators
    (`hw.matrix_acc.memories`), high whenever the held word is not needed, not only
    when a position is read; ``acc_use`` says the read is a position's. With `checks`,
    `Assert`s compare the lane registers and the enable with what they stand for."""

    def __init__(self, *, n, pb, addr_bits, rq_lanes=2, checks=False):
        self.n, self.pb, self.addr_bits, self.rq_lanes, self.checks = n, pb, addr_bits, rq_lanes, checks
        super().__init__({
            "start": In(1),
            "p": In(DrainParams(addr_bits)),
            "full": In(2),
            "final": In(data.ArrayLayout(unsigned(exact_log2(pb) + 1), 2)),   # positions final per bank
            "desc": In(data.ArrayLayout(BlockDesc(n, pb, addr_bits), 2)),
            "free": Out(2),
            "acc_addr": Out(exact_log2(pb) + 1),
            "acc_en": Out(memories(n)),
            "acc_use": Out(1),
            "acc_data": In(data.ArrayLayout(signed(ACC_BITS), n)),
            "preq": Out(stream.Signature(gather_request(n, addr_bits, WSide(n)))),
            "pdel_valid": In(1),
            "pdel_vals": In(data.ArrayLayout(signed(PARAM_BITS), n)),
            "pdel_side": In(WSide(n)),
            "wvec": Out(stream.Signature(WriteVector(n, addr_bits))),
            "drained": Out(32),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        n, pb, AW = self.n, self.pb, self.addr_bits
        P = self.p
        lpb = exact_log2(pb)
        RQ = self.rq_lanes
        NKW = ceil_log2(n + 1)                       # kernels in a group (BlockDesc.nk)
        rqs = []
        for r in range(RQ):
            rqs.append(Requantiser(tag_bits=ceil_log2(n) + 1 + NKW + AW, stage_enables=True))
            m.submodules[f"rq{r}"] = rqs[-1]
        rq_busy = Cat(*(rq.busy for rq in rqs)).any()

        ad = Signal()                                # bank being drained
        # desc and idx: loaded when a block begins (the FSM leaves WAIT), used only after
        desc = Signal(BlockDesc(n, pb, AW), reset_less=True)
        i = Signal(lpb + 1)
        idx = Signal(AW, reset_less=True)            # output index of (position i, k0)
        q = Signal(3)                                # parameter request iterator
        pending = Signal(4)                          # parameter deliveries outstanding
        pel_ok = Signal()                            # per-element parameters of position i loaded
        drained = Signal(32)
        m.d.comb += self.drained.eq(drained)
        # data: a parameter is delivered before the state that requested it is left
        preg = [[Signal(signed(PARAM_BITS), name=f"preg_{p}_{j}", reset_less=True) for j in range(n)]
                for p in PARAMS]

        modes = [getattr(P, f"{p}_mode") for p in PARAMS]
        any_pel = P.conv & Cat(*(md == PER_ELEM for md in modes)).any()
        lanes = thermometer(m, desc.nk, n, "drain_lanes")

        # D1: the accumulator word read for position i (held by the read port)
        d1_valid = Signal()
        d1_idx = Signal(AW, reset_less=True)         # data: only under d1_valid (reset)
        d1_base = Signal(AW, reset_less=True)        # its output address, dst + index * esize
        d1_take = Signal()

        # parameter requests (one per parameter and block or position)
        r = self.preq.payload
        qs = Signal(3)                               # the parameter requested this cycle
        q_lsz = Signal(2)                            # its element size
        # Each parameter's request address is a register, so no adder is on the path from the
        # choice of the parameter to gather B's queue: per channel (kernel k0 of the block)
        # loaded when a block begins (`begin` below), per element (the position's index)
        # overwritten in every cycle. Its stride (lane step) is a register too, loaded in every
        # cycle from the instruction's fields, which hold still from its start, many cycles
        # before the first request. So the payload is the requested parameter's registers,
        # chosen by `qs` alone: the mode compares, the mode's choice of base and the stride's
        # shifter were between the engine's fields and gather B's queue (19.4 ns in the placed
        # `base`, session 32). (data: read only by requests)
        pbase = [Signal(AW, name=f"pbase_{p}", reset_less=True) for p in PARAMS]
        pstride = [Signal.like(r.stride, name=f"pstride_{p}", reset_less=True) for p in PARAMS]
        for k, p in enumerate(PARAMS):
            lsz_k = getattr(P, f"{p}_lsz")
            m.d.sync += pstride[k].eq(Mux(modes[k] == PER_ELEM, P.out_ik << lsz_k, Const(1, 4) << lsz_k))
        with m.Switch(qs):
            for k, p in enumerate(PARAMS):
                with m.Case(k):
                    m.d.comb += [r.base.eq(pbase[k]), r.stride.eq(pstride[k]), q_lsz.eq(getattr(P, f"{p}_lsz")),
                                 r.signed.eq(getattr(P, f"{p}_signed"))]
        m.d.comb += r.lsz.eq(q_lsz)
        # every payload bit is driven by a signal (bank and last are ignored for parameters):
        # a constant-only part becomes an empty `always @*` in the Verilog, which Verilator rejects
        m.d.comb += [r.active.eq(lanes), r.side.kind.eq(Mux(self.preq.valid, KIND_PARAM, 0)), r.side.col.eq(qs),
                     r.side.bank.eq(ad), r.side.last.eq(q[0]),
                     r.base2.eq(r.base), r.seg2.eq(lanes)]     # one run: both bases are the same
        param_del = self.pdel_valid & (self.pdel_side.kind == KIND_PARAM)
        with m.If(param_del):
            for k in range(len(PARAMS)):
                with m.If(self.pdel_side.col == k):
                    m.d.sync += [preg[k][j].eq(self.pdel_vals[j]) for j in range(n)]
        req_done = self.preq.valid & self.preq.ready
        m.d.sync += pending.eq(pending + req_done - param_del)

        # whether each parameter is in a mode, as registers loaded in every cycle (the fields
        # hold still from the instruction's start, like the strides'), so the choice of the
        # next parameter does not decode the fields: the modes' compares (one LUT of fan-out
        # 37) -> the choice -> the payload -> gather B's queue was 17.5-17.7 ns in the placed
        # `base` (session 39)
        in_mode = {}
        for mode, mname in ((PER_CH, "per_ch"), (PER_ELEM, "per_elem")):
            in_mode[mode] = Signal(len(PARAMS), name=f"params_{mname}", reset_less=True)
            now = Cat(md == mode for md in modes)
            m.d.sync += in_mode[mode].eq(now)
            if self.checks:
                m.d.sync += Assert(~self.preq.valid | (in_mode[mode] == now),
                                   "MatrixDrain: a parameter mode register differs from the fields")

        def param_state(name, want_mode, after):
            """Request the parameters in `want_mode` (from q on, skipping the others in
            no time), then wait for their deliveries (the last one may arrive in the
            cycle `after` is taken: it is written at that edge)."""
            nq = Signal(3, name=f"nq_{name.lower()}")
            with m.State(name):
                m.d.comb += nq.eq(len(PARAMS))
                for k in reversed(range(len(PARAMS))):
                    with m.If((q <= k) & in_mode[want_mode][k]):
                        m.d.comb += nq.eq(k)
                m.d.comb += qs.eq(nq)
                with m.If(nq == len(PARAMS)):
                    with m.If(pending == param_del):
                        after()
                with m.Else():
                    m.d.comb += self.preq.valid.eq(1)
                    with m.If(self.preq.ready):
                        m.d.sync += q.eq(nq + 1)

        col_full = Signal()                          # the collector holds a complete vector

        # --- sequencing ----------------------------------------------------------------------
        issue = Signal()
        # whether position i is final (i < final[ad]) as registers from the cycle before, for
        # i and i + 1 (an issue steps i; `begin` sets i and ad in a cycle without an issue,
        # and PCH follows): the bank select `ad` (fan-out 79) -> the compare's carry chain ->
        # `issue` -> the read enables was 16.97 ns in the placed `base` (session 45). `final`
        # only grows while its bank drains, so a verdict a cycle old is safe: a position is
        # read at most a cycle after it became final.
        issued = Signal(name="drain_issued")
        m.d.sync += issued.eq(issue)

        def at_i(name, of):
            """``of(i)`` from registers of the cycle before, one for i and one for i + 1."""
            now, nxt = Signal(name=f"drain_{name}_i"), Signal(name=f"drain_{name}_i1")
            m.d.sync += [now.eq(of(i)), nxt.eq(of(i + 1))]
            return Mux(issued, nxt, now)
        is_final = at_i("fin", lambda j: j < self.final[ad])
        # likewise whether i is the block's end (i == desc.nb; `desc` changes only at `begin`),
        # and whether the instruction has per-element parameters as a register (the fields
        # hold still from its start): i (fan-out 15) -> the compare -> `issue` -> the read
        # enable copies was 15.84 ns in the placed `base` (session 49)
        at_end = at_i("end", lambda j: j == desc.nb)
        pel_any = Signal(name="drain_pel_any")
        m.d.sync += pel_any.eq(any_pel)
        nk_next = Signal.like(desc.nk)               # desc.nk's next value (for the lane registers)
        m.d.comb += nk_next.eq(desc.nk)
        with m.FSM(name="drain") as drain_fsm:
            def begin(bank):
                m.d.sync += [desc.eq(self.desc[bank]), i.eq(0), idx.eq(self.desc[bank].idx), q.eq(0),
                             pel_ok.eq(0)]
                m.d.comb += nk_next.eq(self.desc[bank].nk)
                m.d.sync += [pbase[k].eq(getattr(P, f"{p}_addr") + (self.desc[bank].k0 << getattr(P, f"{p}_lsz")))
                             for k, p in enumerate(PARAMS)]
                m.next = "PCH"

            with m.State("WAIT"):
                with m.If(self.full.bit_select(ad, 1)):
                    begin(ad)

            def to_pos():
                m.next = "POS"
            param_state("PCH", PER_CH, to_pos)

            with m.State("POS"):
                with m.If(at_end):
                    m.next = "END"
                with m.Elif(pel_any & ~pel_ok):
                    with m.If(~d1_valid):
                        m.d.sync += q.eq(0)
                        m.next = "PEL"
                with m.Elif((~d1_valid | d1_take) & is_final):
                    m.d.comb += issue.eq(1)
                    m.d.sync += [i.eq(i + 1), idx.eq(idx + P.out_is), pel_ok.eq(0)]

            def pel_done():
                m.d.sync += pel_ok.eq(1)
                m.next = "POS"
            param_state("PEL", PER_ELEM, pel_done)

            with m.State("END"):
                with m.If(~d1_valid):
                    m.d.comb += self.free.eq(Mux(ad, 0b10, 0b01))
                    m.d.sync += [ad.eq(~ad), drained.eq(drained + 1)]
                    with m.If(self.full.bit_select(~ad, 1)):
                        begin(~ad)                   # the next block is ready: no WAIT cycle
                    with m.Else():
                        m.next = "WAIT"
            # (the block's last elements may still be in the requantisers and the
            # collector: each carries its own kernel count, so the next block can start)

        # a per-element parameter's base follows the position's index in every cycle (idx
        # changes at an issue, two cycles or more before the position's first request; after
        # the FSM, so it wins over `begin`'s per-channel load)
        for k, p in enumerate(PARAMS):
            with m.If(modes[k] == PER_ELEM):
                m.d.sync += pbase[k].eq(getattr(P, f"{p}_addr") + (idx << getattr(P, f"{p}_lsz")))

        if self.checks:
            m.d.sync += Assert(~issue | (i < self.final[ad]), "MatrixDrain: position i read before it is final")
            with m.If(drain_fsm.ongoing("POS")):
                m.d.sync += Assert((at_end == (i == desc.nb)) & (pel_any == any_pel),
                                   "MatrixDrain: the end or per-element register differs from i and the fields")

        # the FSM is back in WAIT when the engine starts an instruction
        with m.If(self.start):
            m.d.sync += [ad.eq(0), drained.eq(0)]

        m.d.comb += [self.acc_use.eq(issue), self.acc_addr.eq(Cat(i[:lpb], ad))]
        d1_valid_next = Signal()
        m.d.comb += d1_valid_next.eq(issue | (d1_valid & ~d1_take))
        m.d.sync += d1_valid.eq(d1_valid_next)
        with m.If(issue):
            m.d.sync += [d1_idx.eq(idx), d1_base.eq(P.dst + (idx << P.res_lsz))]

        # --- Matrix_Mul: the accumulators' low 32 bits, one vector per position -------------
        # --- CONV2D: requantise RQ lanes per cycle, collect, write ------------------------------
        # the vectors leave through a register queue: the writer's ready reaches neither the
        # requantisers' stall nor the accumulator memory's read enable in the same cycle
        m.submodules.wq = wq = RegQueue(WriteVector(n, AW), depth=2)
        # the collected vector: data, only under col_full (reset)
        col_vals = [Signal(signed(OUT_BITS), name=f"col_{j}", reset_less=True) for j in range(n)]
        col_base = Signal(AW, reset_less=True)       # the vector's output address (as d1_base)
        col_nk = Signal(NKW, reset_less=True)
        col_take = Signal()
        # the lanes are fed in groups of RQ: group jg, requantiser r takes lane jg * RQ + r, so
        # each requantiser's lane multiplexers have n / RQ inputs, not n
        lrq = exact_log2(RQ)
        jg = Signal(range(n // RQ + 1))              # the group fed next
        lane_w = ceil_log2(n) if n > 1 else 1
        # The pipelines advance (`en`) in a cycle when, a cycle before, the collector and the
        # queue held at most one vector between them (`room`, of registers only): they hold
        # three, at most one vector completes per cycle, so a vector or lane leaving the
        # pipelines always finds the collector empty or moving into the queue. `en` and each
        # requantiser stage's own copy of it (no single net reaches the pipelines' 4,000
        # flip-flops) are registers loaded with `room`. (Stalling only when the collector was
        # full and the queue would not take it, `en` came from this cycle's completion: the
        # queue's count -> the last lane's exit -> the collector's next state -> 20 copies
        # over 84 tiles was 16.5-16.8 ns in the placed `base`, session 48.) A vector per
        # cycle or every other cycle (at most 4 kernels) can lose a cycle to this rule; with
        # more kernels it does not stall.
        col_done = Signal()                          # a vector completes this cycle
        room = Signal()
        en = Signal(init=1)
        m.d.comb += room.eq(col_full + wq.count <= 1)
        m.d.sync += [col_full.eq(col_done | (col_full & ~col_take)), en.eq(room)]
        en_copies = replicas(m, platform, room, RQ * Requantiser.LATENCY, "rq_en", init=1)
        if self.checks:
            m.d.sync += Assert(Cat(en_copies) == Mux(en, (1 << len(en_copies)) - 1, 0),
                               "MatrixDrain: the stage enable copies differ from en")
        # whether group jg is the last and which of its lanes hold a kernel, as registers
        # loaded with jg's and desc.nk's next values: compared in the cycle, jg -> the
        # compares -> d1_take -> issue -> the accumulator memory's read enable (48 block
        # RAMs over 117 tiles) was 18.9 ns in the placed `base` (session 36)
        feed = P.conv & d1_valid
        jg_next = Signal.like(jg)
        last_lane = Signal(name="drain_last_lane", reset_less=True)
        lane_ok = Signal(RQ, name="drain_lane_ok", reset_less=True)
        m.d.sync += jg.eq(jg_next)
        m.d.sync += [last_lane.eq((jg_next + 1) << lrq >= nk_next),
                     lane_ok.eq(Cat(((jg_next << lrq) | r) < nk_next for r in range(RQ)))]
        if self.checks:
            # (used only under `feed`; before the first block, desc is not loaded)
            m.d.sync += Assert(~feed | ((last_lane == ((jg + 1) << lrq >= desc.nk))
                                        & (lane_ok == Cat(((jg << lrq) | r) < desc.nk for r in range(RQ)))),
                               "MatrixDrain: the lane registers differ from jg and desc.nk")
        for r, rq in enumerate(rqs):
            lane = Signal(lane_w + 1, name=f"rq{r}_lane")
            m.d.comb += lane.eq((jg << lrq) | r)
            vals = {}
            for k, pname in enumerate(PARAMS):
                sel = Signal(signed(PARAM_BITS), name=f"sel{r}_{pname}")
                with m.Switch(lane):
                    for j in range(n):
                        with m.Case(j):
                            m.d.comb += sel.eq(preg[k][j])
                vals[pname] = Mux(modes[k] == IMM, getattr(P, f"{pname}_imm"), sel)
            acc_lane = Signal(signed(ACC_BITS), name=f"rq{r}_acc")
            with m.Switch(lane):
                for j in range(n):
                    with m.Case(j):
                        m.d.comb += acc_lane.eq(self.acc_data[j])
            tag = Signal(rq.tag_bits, name=f"rq{r}_tag")
            t_lane, t_last = tag[:lane_w], tag[lane_w]
            t_nk, t_idx = tag[lane_w + 1:lane_w + 1 + NKW], tag[lane_w + 1 + NKW:]
            m.d.comb += [
                rq.en.eq(Cat(en_copies[r * Requantiser.LATENCY:(r + 1) * Requantiser.LATENCY])),
                rq.i_valid.eq(feed & lane_ok[r]), rq.acc.eq(acc_lane),
                rq.bias.eq(vals["bias"]), rq.mul.eq(vals["mul"]), rq.shift.eq(vals["shift"][:8]),
                rq.scale.eq(vals["scale"]),
                rq.clip_min.eq(P.clip_min), rq.clip_max.eq(P.clip_max), rq.sat_lo.eq(P.sat_lo),
                rq.sat_hi.eq(P.sat_hi),
                rq.i_tag.eq(Cat(lane[:lane_w], last_lane, desc.nk, d1_idx)),
                tag.eq(rq.o_tag),
            ]
            if self.checks:
                m.d.sync += Assert(~(en & rq.o_valid) | ~col_full | col_take,
                                   "MatrixDrain: a requantised lane meets a collected vector the queue does not take")
            with m.If(en & rq.o_valid):
                for j in range(r, n, RQ):            # the lanes this requantiser serves
                    with m.If(t_lane == j):
                        m.d.sync += col_vals[j].eq(rq.value)
                # the lanes of a position leave the pipelines together; the last group
                # completes the vector
                with m.If(t_last):
                    m.d.comb += col_done.eq(1)
                    m.d.sync += [col_base.eq(P.dst + (t_idx << P.res_lsz)), col_nk.eq(t_nk)]
        m.d.comb += jg_next.eq(jg)
        with m.If(feed & en):
            with m.If(last_lane):
                m.d.comb += [d1_take.eq(1), jg_next.eq(0)]
            with m.Else():
                m.d.comb += jg_next.eq(jg + 1)
        # The read enable: the word in D1 must hold while it is not taken, and a position is
        # read only when D1 is empty or taken (`issue`), so the enable is ~d1_valid | d1_take,
        # a read whose data nobody uses otherwise. As registers loaded with the next cycle's
        # value (D1's next valid bit and its take's inputs: the queue's ready, the pipelines'
        # enable and the last lane group, each a register loaded from this cycle), one copy
        # per memory: the drain's index -> `issue` -> 24 block RAMs' enables over 79
        # tiles was the placed `base`'s worst path (16.1 ns, session 43). The fields (`conv`)
        # hold still while D1 is valid.
        take_next = Mux(P.conv, room & ((jg_next + 1) << lrq >= nk_next), wq.w_ready_next)
        acc_en = replicas(m, platform, ~d1_valid_next | take_next, memories(n), "drain_acc_en", init=1)
        m.d.comb += self.acc_en.eq(Cat(acc_en))
        if self.checks:
            m.d.sync += Assert(self.acc_en == Mux(~d1_valid | d1_take, (1 << memories(n)) - 1, 0),
                               "MatrixDrain: the read enable copies differ from ~d1_valid | d1_take")
        m.d.comb += [self.wvec.valid.eq(wq.r_valid), self.wvec.payload.eq(wq.r_data),
                     wq.r_ready.eq(self.wvec.ready)]
        # the output addresses are registers, computed with the index: the command fields ->
        # the shift and the adder -> the queue was the matrix unit's longest placed path
        # (19.4 ns in `base`, session 30)
        w = wq.w_data
        m.d.comb += [w.lsz.eq(P.res_lsz), w.count.eq(Mux(P.conv, col_nk, desc.nk)),
                     w.stride.eq(P.out_ik << P.res_lsz), w.contig.eq(contiguous(w.stride, w.lsz))]
        with m.If(P.conv):
            m.d.comb += [wq.w_valid.eq(col_full), w.base.eq(col_base),
                         col_take.eq(col_full & wq.w_ready)]
            for j in range(n):
                m.d.comb += w.data[j].eq(col_vals[j].as_signed())
        with m.Else():
            m.d.comb += [wq.w_valid.eq(d1_valid), w.base.eq(d1_base),
                         d1_take.eq(d1_valid & wq.w_ready)]
            for j in range(n):
                m.d.comb += w.data[j].eq(self.acc_data[j][:32])
        m.d.comb += self.busy.eq(d1_valid | rq_busy | col_full | ~wq.empty)
        return m
