"""Operand checks and derived constants of the matrix engine (hw/matrix.py) for
Matrix_Mul and CONV2D (docs/isa-decisions.md D-MATMUL, D-CONV, D-MATMUL-READS,
D-PRECEDENCE, D-OVERLAP; golden/semantics/matrix.py `_prepare`).

`MatrixSetup` starts on ``start`` with the instruction's fields (`OperandFields`,
decoded by the engine from the held operand table) and answers ``done`` with
``fault`` (0, UNSUPPORTED_UNIT, ILLEGAL_OPERAND or ADDRESS_RANGE) and, when the
fault is 0, the constants the address generators need (``out``, `SetupOutputs`).

Order (the golden model's):

1. UNSUPPORTED_UNIT: the units `refuses` names (hw/matrix.py): float units
   anywhere, 32/64-bit feature-map or weight units, 64-bit parameter units;
2. ILLEGAL_OPERAND from the field values alone: data format 2/3, padding mode
   2/3, a CONV2D parameter mode 3, int4 in any unit field, a Matrix_Mul result
   that is not 32-bit; then (a cycle later, from a register) a kernel larger than
   the padded map;
3. the geometry: H_out, W_out (serial division), and the byte extents of
   everything the instruction reads and writes (serial multiplications);
4. ILLEGAL_OPERAND for D-OVERLAP (the destination against each range read), then
   ADDRESS_RANGE for every range (one range per cycle through a three-stage
   pipeline: select the range, add its end, compare with one 66-bit comparator
   pair; it runs while the FSM computes the last constants, which no range needs;
   the extents it reads are registers refreshed every cycle, one adder deep each,
   the feature map's four terms in two levels).

Datapath: one radix-4 shift-add multiplier (``a * b`` for a ``b`` of up to 26 bits,
two bits per cycle) and one restoring divider (one quotient bit per cycle) shared
by every step of an FSM generated from the step list below; LUT logic only.

Latency: about 105 cycles for a passing instruction (faults found in step 1 or 2
answer after 2 cycles, a kernel larger than the padded map after 3).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from xdsa.golden.isa import DataUnit, Fault

__all__ = ["OperandFields", "SetupOutputs", "MatrixSetup", "NHWC", "NCHW"]

NHWC, NCHW = 0, 1
IMM, PER_CH, PER_ELEM = 0, 1, 2
PARAMS = ("bias", "mul", "shift", "scale")

# The instruction's fields, zero-extended to their widest AS width (CONV2D's own
# fields are 0 for Matrix_Mul).
OperandFields = data.StructLayout({
    "conv": unsigned(1),
    "fm": unsigned(64), "kernel": unsigned(64), "dst": unsigned(64),
    "fm_unit": unsigned(4), "w_unit": unsigned(4), "result_unit": unsigned(4),
    "bias_unit": unsigned(4), "mul_unit": unsigned(4), "scale_unit": unsigned(4),
    "bias_mode": unsigned(2), "mul_mode": unsigned(2), "shift_mode": unsigned(2), "scale_mode": unsigned(2),
    "data_format": unsigned(2),
    "t_pad": unsigned(4), "b_pad": unsigned(4), "l_pad": unsigned(4), "r_pad": unsigned(4),
    "h_stride": unsigned(4), "v_stride": unsigned(4),
    "padding_mode": unsigned(2), "padding_addr": unsigned(64),
    "bias_addr": unsigned(64), "mul_addr": unsigned(64), "shift_addr": unsigned(64), "scale_o_addr": unsigned(64),
    "fm_surface_stride": unsigned(32), "fm_line_stride": unsigned(16),
    "fm_c": unsigned(12), "fm_h": unsigned(12), "fm_w": unsigned(12),
    "k_h": unsigned(4), "k_w": unsigned(4), "k_line_stride": unsigned(20), "k_num": unsigned(12),
    "clip_max": unsigned(16), "clip_min": unsigned(16),
})


def SetupOutputs(addr_bits):
    A = unsigned(addr_bits)
    return data.StructLayout({
        # geometry
        "C": unsigned(13), "H": unsigned(13), "W": unsigned(13), "K": unsigned(13),
        "KH": unsigned(5), "KW": unsigned(5), "V": unsigned(5), "S": unsigned(5),
        "T": unsigned(4), "L": unsigned(4),
        "Ho": unsigned(14), "Wo": unsigned(14), "n_pos": unsigned(27),
        # units: log2 bytes and signedness
        "fm_lsz": unsigned(2), "fm_signed": unsigned(1), "w_lsz": unsigned(2), "w_signed": unsigned(1),
        "res_lsz": unsigned(2),
        # activation walk (byte addresses modulo 2**addr_bits)
        "act_base0": A,              # fm - T*ls - L*xs
        "act_cs": A,                 # channel stride (lane stride)
        "act_xs": A,                 # pixel stride
        "act_ls": A,                 # line stride
        "act_sxs": A,                # S * xs
        "act_vls": A,                # V * ls
        # weights
        "w_base": A, "w_kls": A,
        "w_pk": A,                   # bytes per kernel position (one step of kx)
        "w_ky": A,                   # bytes per kernel row (one step of ky): KW * w_pk
        "w_cs": A,                   # channel stride (lane stride)
        # outputs (element indices): index(p, k) = p * out_is + k * out_ik
        "out_is": A, "out_ik": A,
        # tap packing (C < N, see hw/matrix_agu.py): a tile is N consecutive indices of
        # the (ky, kx, c) reduction instead of N channels at one kernel position
        "packed": unsigned(1),
        "prow": unsigned(10),        # K_W * C: reduction indices per kernel row
        "p_lo": A,                   # L * xs: the first byte of the map in a padded line
        "p_hi": unsigned(addr_bits + 1),   # (L + W) * xs: the end of the map in a padded line
    })


def _bits(x):
    return max(1, ceil_log2(x + 1))


class MatrixSetup(wiring.Component):
    """See the module docstring."""

    def __init__(self, config):
        self.config = config
        self.addr_bits = max(ceil_log2(config.mem_bytes), exact_log2(config.row_bytes) + 1)
        super().__init__({
            "start": In(1),
            "f": In(OperandFields),
            "done": Out(1),
            "fault": Out(8),
            "go": Out(1),               # done without a fault, as a register
            "go_next": Out(1),          # go of the next cycle (for the engine's copies)
            "out": Out(SetupOutputs(self.addr_bits)),
        })

    def elaborate(self, platform):
        m = Module()
        # the outputs are registers: comb from the fields and the step results (all
        # settled cycles before `done`), so the products and sums below (C * K_W, the
        # padded base) are off the walkers' paths
        # (data, and loaded every cycle: reset-less, through a register of its own, as a port
        # has no reset_less)
        f, o = self.f, Signal(SetupOutputs(self.addr_bits), name="o")
        out = Signal(SetupOutputs(self.addr_bits), reset_less=True)
        m.d.sync += out.eq(o)
        m.d.comb += self.out.eq(out)
        AW = self.addr_bits
        MEM = self.config.mem_bytes
        conv = f.conv

        def unit_info(code):
            """(is_float, is_int4, is_64, is_32, lsz, signed) of a unit code."""
            isf, i4, b64, b32, sgn = (Signal(name=nm) for nm in ("isf", "i4", "b64", "b32", "sgn"))
            lsz = Signal(2)
            with m.Switch(code):
                for u in DataUnit:
                    with m.Case(int(u)):
                        m.d.comb += [isf.eq(u.is_float), i4.eq(u.bits == 4), b64.eq(u.bits == 64),
                                     b32.eq(u.bits == 32), sgn.eq(u.signed),
                                     lsz.eq(exact_log2(u.bits // 8) if u.bits >= 8 else 0)]
            return isf, i4, b64, b32, lsz, sgn

        fm_u = unit_info(f.fm_unit)
        w_u = unit_info(f.w_unit)
        r_u = unit_info(f.result_unit)
        p_u = {p: unit_info(getattr(f, f"{p}_unit")) for p in ("bias", "mul", "scale")}
        plsz = {"bias": p_u["bias"][4], "mul": p_u["mul"][4], "shift": Const(0, 2), "scale": p_u["scale"][4]}
        modes = {p: getattr(f, f"{p}_mode") for p in PARAMS}
        addrs = {"bias": f.bias_addr, "mul": f.mul_addr, "shift": f.shift_addr, "scale": f.scale_o_addr}

        refused = Signal()
        m.d.comb += refused.eq(
            fm_u[0] | fm_u[2] | fm_u[3] | w_u[0] | w_u[2] | w_u[3] | r_u[0]
            | (conv & (p_u["bias"][0] | p_u["bias"][2] | p_u["mul"][0] | p_u["mul"][2]
                       | p_u["scale"][0] | p_u["scale"][2])))

        # geometry
        def one(v, w):
            s = Signal(w)
            m.d.comb += s.eq(Mux(v == 0, 1, v))
            return s
        C, H, W, K = one(f.fm_c, 13), one(f.fm_h, 13), one(f.fm_w, 13), one(f.k_num, 13)
        KH, KW, V, S = one(f.k_h, 5), one(f.k_w, 5), one(f.v_stride, 5), one(f.h_stride, 5)
        Hp = Signal(14)
        Wp = Signal(14)
        m.d.comb += [Hp.eq(H + f.t_pad + f.b_pad), Wp.eq(W + f.l_pad + f.r_pad)]
        nchw = f.data_format == NCHW
        fe = (Const(1, 2) << fm_u[4])[:2]
        cs = Mux(nchw, f.fm_surface_stride, fe)      # channel stride
        xs = Mux(nchw, fe, f.fm_surface_stride)      # pixel stride
        ls = f.fm_line_stride

        illegal0 = Signal()
        int4 = fm_u[1] | w_u[1] | r_u[1] | (conv & (p_u["bias"][1] | p_u["mul"][1] | p_u["scale"][1]))
        m.d.comb += illegal0.eq(
            (f.data_format > 1) | (f.padding_mode > 1)
            | (conv & ((modes["bias"] == 3) | (modes["mul"] == 3) | (modes["shift"] == 3) | (modes["scale"] == 3)))
            | int4 | (~conv & ~r_u[3]))
        # a kernel larger than the padded map (ILLEGAL_OPERAND as well, found one cycle later,
        # in the first step's LOAD state): a register, so the padded sizes' adders and the
        # compares are not in series with the start's state and fault decisions (fields ->
        # Hp -> compare -> fault, 17.3-18.5 ns in the placed `base`, sessions 37-38); the
        # fields are held from the start on (data, read only in that state)
        kernel_big = Signal(reset_less=True)
        m.d.sync += kernel_big.eq((KH > Hp) | (KW > Wp))

        # --- shared serial multiplier / divider ------------------------------------------
        # data: loaded by every step's LOAD state before its RUN state reads them
        ma = Signal(48, reset_less=True)             # multiplicand
        ma3 = Signal(50, reset_less=True)            # 3 * ma
        mb = Signal(26, reset_less=True)             # multiplier, consumed from the top
        macc = Signal(66, reset_less=True)
        dq = Signal(14, reset_less=True)             # quotient
        drem = Signal(15, reset_less=True)
        ddiv = Signal(5, reset_less=True)

        # results (registers; data: every instruction's steps write them before they are read)
        Ho, Wo = (Signal(14, reset_less=True, name=nm) for nm in ("Ho", "Wo"))
        n_pos = Signal(27, reset_less=True)
        n_out = Signal(39, reset_less=True)
        khkw = Signal(8, reset_less=True)
        fm_span = Signal(48)
        k_span = Signal(48)
        regs = {}

        def reg(name, w):
            regs[name] = Signal(w, name=f"r_{name}", reset_less=True)
            return regs[name]
        r_vls, r_sxs, r_tls, r_lxs, r_ckk = (reg(x, 48) for x in ("vls", "sxs", "tls", "lxs", "ckk"))
        r_c1, r_h1, r_w1, r_k1 = (reg(x, 48) for x in ("c1cs", "h1ls", "w1xs", "k1kls"))
        r_wky = reg("wky", 48)
        w_pk = Signal(16)
        m.d.comb += w_pk.eq(Mux(nchw, Const(1, 2) << w_u[4], C << w_u[4]))

        steps = []          # (kind, a, b, multiplier bits, target, post-processing)

        def mul(target, a, b, nbits):
            steps.append(("mul", a, b, nbits, target, lambda v: v))

        def div(target, a, b, post):
            steps.append(("div", a, b, 14, target, post))

        div(Ho, Hp - KH, V, lambda q: q + 1)
        div(Wo, Wp - KW, S, lambda q: q + 1)
        mul(n_pos, Ho, Wo, 14)
        mul(n_out, n_pos, K, 13)
        mul(khkw, KH, KW, 5)
        mul(r_ckk, khkw, C, 13)
        mul(r_c1, cs, C - 1, 12)
        mul(r_h1, ls, H - 1, 12)
        mul(r_w1, xs, W - 1, 12)
        mul(r_k1, f.k_line_stride, K - 1, 12)
        range_step = len(steps)      # the ranges need nothing from this step on
        mul(r_vls, ls, V, 5)
        mul(r_sxs, xs, S, 5)
        mul(r_tls, ls, f.t_pad, 4)
        mul(r_lxs, xs, f.l_pad, 4)
        mul(r_wky, w_pk, KW, 5)

        # --- the checked ranges ------------------------------------------------------------
        # The ranges are checked by a pipeline of their own (select, end address, compare:
        # a register between each, so the range multiplexer, the 66-bit end adder and the
        # comparators are on three separate paths), which runs while the FSM computes the
        # constants no range needs (`range_step` on); VERDICT waits for it to be empty.
        w_lsz, r_lsz = w_u[4], r_u[4]
        dst_n = Signal(42)
        # data, refreshed every cycle (below)
        fm_span_r, k_span_r = (Signal(48, reset_less=True, name=nm) for nm in ("fm_span_r", "k_span_r"))
        dst_end = Signal(66, reset_less=True)
        # registers, refreshed every cycle: their inputs are settled cycles before the
        # pipeline reads them (n_out, r_ckk, r_c1, r_h1, r_w1 come two steps or more before
        # `range_step`, r_k1 the step before it); one adder each (the feature map's four
        # terms in two levels of registers)
        fm_ch, fm_xw = (Signal(48, reset_less=True, name=nm) for nm in ("fm_ch", "fm_xw"))
        m.d.comb += [
            fm_span.eq(fm_ch + fm_xw),
            k_span.eq(r_k1 + (r_ckk << w_lsz)),
            dst_n.eq(n_out << r_lsz),
        ]
        m.d.sync += [fm_ch.eq(r_c1 + r_h1), fm_xw.eq(r_w1 + fe),
                     fm_span_r.eq(fm_span), k_span_r.eq(k_span), dst_end.eq(f.dst + dst_n)]
        ranges = [  # (enable, is a read, address, length)
            (Const(1), 1, f.fm, fm_span_r),
            (Const(1), 1, f.kernel, k_span_r),
            (f.padding_mode == 1, 1, f.padding_addr, (C << fm_u[4])[:16]),
        ]
        for p in PARAMS:
            n_p = Mux(modes[p] == PER_CH, K, n_out) << plsz[p]
            ranges.append((conv & (modes[p] != IMM), 1, addrs[p], n_p))
        ranges.append((Const(1), 0, f.dst, dst_n))
        rk = Signal(range(len(ranges)))
        r_run = Signal()                             # selecting range rk
        # stage 1: the selected range (registers: no decoding of rk on the adder's path)
        # (the valid bits c_v, e_v keep the reset; the range is data, read only under them)
        c_v, c_en, c_rd = Signal(name="c_v"), Signal(reset_less=True, name="c_en"), Signal(reset_less=True, name="c_rd")
        c_a = Signal(64, reset_less=True)
        c_n = Signal(48, reset_less=True)
        # stage 2: its end address
        e_v, e_rd = Signal(name="e_v"), Signal(reset_less=True, name="e_rd")
        e_a = Signal(64, reset_less=True)
        e_end = Signal(66, reset_less=True)
        m.d.sync += c_v.eq(r_run)
        with m.If(r_run):
            with m.Switch(rk):
                for k, (en, rd, a, nbytes) in enumerate(ranges):
                    with m.Case(k):
                        m.d.sync += [c_en.eq(en), c_rd.eq(rd), c_a.eq(a), c_n.eq(nbytes)]
            m.d.sync += rk.eq(rk + 1)
            with m.If(rk == len(ranges) - 1):
                m.d.sync += [r_run.eq(0), rk.eq(0)]
        m.d.sync += [e_v.eq(c_v & c_en), e_rd.eq(c_rd), e_a.eq(c_a), e_end.eq(c_a + c_n)]
        ovl = Signal()
        oor = Signal()
        # stage 3: D-OVERLAP against the destination, and the memory's end
        with m.If(e_v):
            with m.If(e_rd & (e_a < dst_end) & (f.dst < e_end)):
                m.d.sync += ovl.eq(1)
            with m.If(e_end > MEM):
                m.d.sync += oor.eq(1)
        r_busy = r_run | c_v | e_v

        # --- outputs --------------------------------------------------------------------------
        def aw(v):
            return v[:AW]
        m.d.comb += [
            o.C.eq(C), o.H.eq(H), o.W.eq(W), o.K.eq(K), o.KH.eq(KH), o.KW.eq(KW), o.V.eq(V), o.S.eq(S),
            o.T.eq(f.t_pad), o.L.eq(f.l_pad), o.Ho.eq(Ho), o.Wo.eq(Wo), o.n_pos.eq(n_pos),
            o.fm_lsz.eq(fm_u[4]), o.fm_signed.eq(fm_u[5]), o.w_lsz.eq(w_lsz), o.w_signed.eq(w_u[5]),
            o.res_lsz.eq(r_lsz),
            o.act_base0.eq(aw(f.fm[:AW] - r_tls[:AW] - r_lxs[:AW])),
            o.act_cs.eq(aw(cs)), o.act_xs.eq(aw(xs)), o.act_ls.eq(aw(ls)),
            o.act_sxs.eq(aw(r_sxs)), o.act_vls.eq(aw(r_vls)),
            o.w_base.eq(aw(f.kernel)), o.w_kls.eq(aw(f.k_line_stride)),
            o.w_pk.eq(w_pk[:AW]), o.w_ky.eq(aw(r_wky)),
            o.w_cs.eq(Mux(nchw, khkw << w_lsz, Const(1, 2) << w_lsz)[:AW]),
            o.out_is.eq(Mux(nchw, 1, K)[:AW]), o.out_ik.eq(Mux(nchw, n_pos, 1)[:AW]),
        ]
        # Tap packing: NHWC with dense pixels (the K_W * C values of a kernel row are
        # contiguous in the map and in the kernel), fewer channels than lanes, a kernel
        # row of at least N values (a tile spans at most two kernel rows) and one
        # padding value for the layer (per-channel values would not follow the lanes).
        n_arr = self.config.array_n
        prow = Signal(10, reset_less=True)           # data, refreshed every cycle
        # a register: the product is not in series with the compares of `packed` (the
        # fields are held from DECODE on; `out` is read cycles later)
        # in LUT adders, not `*`: synth_ecp5 maps even a 5 x 5-bit product to a multiplier
        # block, and the block was 76 tiles from the fields and 37 from `prow` (17.3 ns placed)
        m.d.sync += prow.eq(sum(Mux(C[i], KW << i, 0) for i in range(5)))
        m.d.comb += [
            o.packed.eq(~nchw & (f.padding_mode == 0) & (C < n_arr) & (prow >= n_arr)
                        & (f.fm_surface_stride == (C << fm_u[4]))),
            o.prow.eq(prow),
            o.p_lo.eq(aw(r_lxs)),
            o.p_hi.eq((r_lxs + r_w1 + xs)[:AW + 1]),
        ]

        # --- FSM -----------------------------------------------------------------------------
        fault = Signal(8)
        m.d.comb += self.fault.eq(fault)
        # the engine starts its units in the DONE cycle of a setup without a fault: that
        # decision as a register (only VERDICT passes to DONE without a fault), so the
        # engine's start, a net to every unit, comes from flip-flops (it came through the
        # fault's compare and the engine's state decode, 15.4 ns in the placed `base`)
        go_n = Signal()
        m.d.sync += self.go.eq(go_n)
        m.d.comb += self.go_next.eq(go_n)
        # one step counter, and the multiplier's operands loaded through one multiplexer and
        # one 3 * a adder for every step (not an adder and a counter per step)
        cnt = Signal(range(16))
        load_mul = Signal()
        ld_a, ld_b = Signal(48, name="ld_a"), Signal(26, name="ld_b")
        with m.If(load_mul):
            m.d.sync += [ma.eq(ld_a), ma3.eq(ld_a + (ld_a << 1)), mb.eq(ld_b), macc.eq(0)]
        with m.FSM(name="setup"):
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [fault.eq(0), ovl.eq(0), oor.eq(0)]
                    with m.If(refused):
                        m.d.sync += fault.eq(int(Fault.UNSUPPORTED_UNIT))
                        m.next = "DONE"
                    with m.Elif(illegal0):
                        m.d.sync += fault.eq(int(Fault.ILLEGAL_OPERAND))
                        m.next = "DONE"
                    with m.Else():
                        m.next = "S0_LOAD"

            for k, step in enumerate(steps):
                nxt = f"S{k + 1}_LOAD" if k + 1 < len(steps) else "VERDICT"
                kind, a, b, nbits, target, post = step
                if kind == "mul":
                    nb2 = nbits + (nbits % 2)
                    with m.State(f"S{k}_LOAD"):
                        if k == range_step:
                            m.d.sync += r_run.eq(1)
                        m.d.comb += [load_mul.eq(1), ld_a.eq(a), ld_b.eq(b << (26 - nb2))]
                        m.d.sync += cnt.eq(nb2 // 2)
                        m.next = f"S{k}_RUN"
                    with m.State(f"S{k}_RUN"):
                        top = mb[24:26]
                        add = Mux(top == 0, 0, Mux(top == 1, ma, Mux(top == 2, ma << 1, ma3)))
                        new = (macc << 2) + add
                        m.d.sync += [macc.eq(new), mb.eq(mb << 2), cnt.eq(cnt - 1)]
                        with m.If(cnt == 1):
                            m.d.sync += target.eq(post(new))
                            m.next = nxt
                else:
                    with m.State(f"S{k}_LOAD"):
                        m.d.sync += [dq.eq(a), drem.eq(0), ddiv.eq(b), cnt.eq(14)]
                        m.next = f"S{k}_RUN"
                        if k == 0:
                            with m.If(kernel_big):
                                m.d.sync += fault.eq(int(Fault.ILLEGAL_OPERAND))
                                m.next = "DONE"
                    with m.State(f"S{k}_RUN"):
                        trial = Cat(dq[13], drem[:14])
                        ge = trial >= ddiv
                        rem_n = Mux(ge, trial - ddiv, trial)
                        q_n = Cat(ge, dq[:13])
                        m.d.sync += [drem.eq(rem_n), dq.eq(q_n), cnt.eq(cnt - 1)]
                        with m.If(cnt == 1):
                            m.d.sync += target.eq(post(q_n))
                            m.next = nxt

            with m.State("VERDICT"):
                with m.If(~r_busy):
                    m.d.comb += go_n.eq(~ovl & ~oor)
                    with m.If(ovl):
                        m.d.sync += fault.eq(int(Fault.ILLEGAL_OPERAND))
                    with m.Elif(oor):
                        m.d.sync += fault.eq(int(Fault.ADDRESS_RANGE))
                    m.next = "DONE"
            with m.State("DONE"):
                m.d.comb += self.done.eq(1)
                m.next = "IDLE"
        return m
