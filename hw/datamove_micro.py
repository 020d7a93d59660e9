"""The micro-coded data-move engine: DATA_MOVE in the least logic, for the
configurations whose data-move path is one byte wide (``lanes = 1``, `tiny`).

Same interface, checks and results as `DataMoveEngine` (hw/datamove.py; the
decisions D-DATAMOVE, D-OVERLAP, D-SNAPSHOT, D-INT4, D-PRECEDENCE), built as an
accumulator machine that runs the microprogram of `xdsa.golden.cycle.dm_ucode`
(see there for the micro-instruction set) and a copier:

* **sequencer**: the microprogram ROM (1024 x 16 bits, block RAM), the
  micro-PC and a two-entry return stack. A micro-instruction takes two cycles:
  in the first the ROM word is decoded and its scratch register read, in the
  second it executes and the next word is read.
* **datapath**: a 64-bit accumulator, one 64-bit adder (add, subtract, load),
  shifts by 1 and 8, the carry flag; the 64 scratch registers are a 64 x 64-bit
  block RAM preloaded with the constants. The operand table is read a byte at a
  time (``TB``) from the data memory at the command's ``table_addr``, which the
  operand loader has checked: no field is captured and the loader's table register
  is left unread (synthesis removes it). All table bytes are read before the first
  write, so a move over its own operand table is harmless.
* **copier** (``RUN``): moves a run of items from position ``SP`` to ``DP``
  (positions in nibbles). Bytes stream through a 4-entry queue: one read per
  cycle, each response queued, one write per cycle, so a run moves one byte per
  cycle without stalls; reads run at most three bytes ahead of writes, which is
  safe for the only overlap D-OVERLAP allows (contiguous normal, dst <= src).
  The immediate writes its pattern bytes directly from the scratch register SRC
  (read during the run, from the run's second cycle on); int4 items are
  read-modify-written one at a time (5 cycles per nibble).

The microprogram model `xdsa.golden.cycle.dm_micro.MicroModel` executes the same
ROM; tests/hw/test_datamove.py compares the micro-PC trace of every command with
it, and the results (fault, memory, bytes written) with the golden model.

Latency: 2 cycles per micro-instruction plus the copier's runs, plus 2 cycles to
answer. Measured (tests/hw/test_datamove.py, no memory stalls): a one-byte move
takes 811 cycles (u8); over the test moves the microprogram executes 842
micro-instructions on average (tests/golden/test_dm_micro.py), some tens more per
line or run. Throughput: 1 byte per cycle within a run (normal, immediate,
upsample with kh = 1: 1.000 B/cycle measured for a copy and a u16 fill); one
element per run otherwise (transpose, upsample with kh > 1); int4 one nibble per
5 cycles.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.utils import ceil_log2, exact_log2

from xdsa.golden import isa
from xdsa.golden.cycle import dm_ucode as U

from . import fields as F
from .bus import engine_answer_states, engine_members

__all__ = ["DataMoveMicro"]


class DataMoveMicro(wiring.Component):
    """DATA_MOVE by microprogram (see the module docstring); ``upc`` and ``step``
    expose the micro-PC and the cycle in which a micro-instruction executes (for the
    tests' trace comparison)."""

    def __init__(self, config):
        self.config = config
        self._op = isa.by_mnemonic("data_move")
        self.table_bits = F.table_bits([self._op])
        self.upc = Signal(ceil_log2(U.ROM_DEPTH))
        self.step = Signal()
        super().__init__(engine_members(config, self.table_bits, ["rd"]))

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        R = cfg.row_bytes
        lR = exact_log2(R)
        PW = ceil_log2(cfg.mem_bytes) + 1           # nibble positions
        NW = PW + 1                                 # items of a run (<= 2 * mem_bytes)
        op = {name: i for i, name in enumerate(U.OPS)}
        _, words = U.program()
        regions, _ = U.table_regions()

        m.submodules.rom = rom = Memory(shape=U.WORD_BITS, depth=U.ROM_DEPTH, init=words)
        m.submodules.scratch = scratch = Memory(shape=64, depth=U.N_REGS, init=U.scratch_init(cfg.mem_bytes))
        rom_rd = rom.read_port()
        s_wr = scratch.write_port()
        s_rd = scratch.read_port(transparent_for=())

        ins = rom_rd.data
        i_op, i_a, i_t = ins[:5], ins[5:13], ins[5:15]
        upc = self.upc
        # Reset-less (data): the return stack (a RET follows its CALL) and the accumulator
        # (the microprogram loads it first) are written before they are read in a command.
        stack = [Signal(len(upc), name=f"ret{k}", reset_less=True) for k in range(2)]
        acc = Signal(64, reset_less=True)
        carry = Signal()
        side = Signal()
        unit = Signal(6)                            # bits 3:0 element bytes, bit 4 int4
        fault = Signal(8)
        phase = Signal()                            # 0: decode / read, 1: execute
        run = Signal()                              # the copier is busy

        is_op = {name: i_op == code_ for name, code_ in op.items()}
        reg = Mux(i_a[7], Cat(i_a[:4], ~side, side), i_a[:6])
        s_ok = Signal()                             # s_rd.data is M[reg] (not M[SRC] of a run)
        m.d.comb += [s_rd.addr.eq(Mux(run, U.REG["SRC"], reg)), s_wr.addr.eq(reg), s_wr.data.eq(acc)]
        m.d.sync += s_ok.eq(~run)

        # --- the operand table, a byte at a time, read from the data memory --------------
        # (its address comes with the command, checked by the operand loader; the table is
        # read before the first write, so a move over its own table is harmless)
        as_code = self.cmd.payload.as_code
        tb_base = Signal(PW - 1, reset_less=True)   # the table address, registered when taken (IDLE)
        tb_addr = Signal(PW - 1)
        tb_ok = Signal()                            # the byte lies inside its region
        j = i_a[:6]
        for k, as_bits in enumerate(F.AS_BITS):
            with m.If(as_code == k):
                with m.Switch(i_a[6:]):
                    for r, (off, n) in enumerate(regions[as_bits]):
                        with m.Case(r):
                            m.d.comb += [tb_addr.eq(tb_base + off + j), tb_ok.eq(j < n)]
        tb_ok_q = Signal(reset_less=True)           # (set with TB's read, used in its execution)

        # --- ALU ----------------------------------------------------------------------------
        imm = i_a
        b = Mux(is_op["LD"] | is_op["ADD"] | is_op["SUB"], s_rd.data, imm)
        sub = is_op["SUB"] | is_op["SUBI"]
        x = Mux(is_op["LD"] | is_op["LDI"], 0, acc)
        total = Signal(65)
        m.d.comb += total.eq(x + Mux(sub, ~b, b)[:64] + sub)
        info = Signal(6)
        with m.Switch(acc[:4]):
            for code_ in range(16):
                with m.Case(code_):
                    m.d.comb += info.eq(U.unit_info(code_))
        zero = acc == 0

        # --- copier ------------------------------------------------------------------------
        # Reset-less (data): positions, counts and mode loaded by SETP/SETD/RUN and used
        # only while `run` (reset) is high; the queue's bytes under its reset count and
        # pointers; a read's byte offset and the int4 nibble and merged byte under the
        # reset `pend`, `nstate` and FSM.
        sp = Signal(PW, reset_less=True)
        dp = Signal(PW, reset_less=True)
        n_rd = Signal(NW, reset_less=True)          # items still to read
        n_wr = Signal(NW, reset_less=True)          # items still to write
        imm_run = Signal(reset_less=True)
        ph = Signal(3, reset_less=True)             # immediate: byte of the pattern
        is4 = unit[4]
        q = [Signal(8, name=f"q{k}", reset_less=True) for k in range(4)]
        q_wp = Signal(2)
        q_rp = Signal(2)
        q_n = Signal(3)
        pend = Signal()                             # a read response arrives this cycle
        rsp_off = Signal(lR + 1, reset_less=True)   # its byte in the row, and which nibble
        rsp_byte = self.rd.rsp.payload.word_select(rsp_off[1:], 8)
        nib = Signal(4, reset_less=True)
        nstate = Signal(3)                          # int4: 0 read src, 1 src rsp, 2 read dst, 3 dst rsp, 4 write
        merged = Signal(8, reset_less=True)

        def row(pos):
            return pos[1 + lR:]

        wreq = self.wr.req.payload
        m.d.comb += [wreq.row.eq(row(dp)), wreq.be.eq(Const(1, R) << dp[1:1 + lR])]
        m.d.sync += pend.eq(self.rd.req.valid & self.rd.req.ready)
        w_fire = self.wr.req.valid & self.wr.req.ready
        r_fire = self.rd.req.valid & self.rd.req.ready
        with m.If(run & ~is4):
            with m.If(imm_run):
                pat = s_rd.data.word_select(ph, 8)      # the immediate: scratch register SRC
                # (from the run's second cycle on: the scratch read address became SRC in its first)
                m.d.comb += [self.wr.req.valid.eq((n_wr != 0) & ~s_ok), wreq.data.eq(pat.replicate(R))]
                with m.If(w_fire):
                    m.d.sync += [ph.eq(Mux(ph + 1 == unit[:4], 0, ph + 1)), dp.eq(dp + 2), n_wr.eq(n_wr - 1)]
            with m.Else():
                head = Cat(*q).word_select(q_rp, 8)
                m.d.comb += [self.rd.req.valid.eq((n_rd != 0) & (q_n + pend < 3)),
                             self.rd.req.payload.eq(row(sp)),
                             self.wr.req.valid.eq(q_n != 0), wreq.data.eq(head.replicate(R))]
                with m.If(r_fire):
                    m.d.sync += [sp.eq(sp + 2), n_rd.eq(n_rd - 1), rsp_off.eq(sp[:lR + 1])]
                with m.If(pend):
                    for k in range(4):
                        with m.If(q_wp == k):
                            m.d.sync += q[k].eq(rsp_byte)
                    m.d.sync += q_wp.eq(q_wp + 1)
                with m.If(w_fire):
                    m.d.sync += [q_rp.eq(q_rp + 1), dp.eq(dp + 2), n_wr.eq(n_wr - 1)]
                m.d.sync += q_n.eq(q_n + pend - w_fire)
            with m.If(n_wr == 0):
                m.d.sync += run.eq(0)
        with m.If(run & is4):
            with m.Switch(nstate):
                with m.Case(0):
                    with m.If(n_wr == 0):
                        m.d.sync += run.eq(0)
                    with m.Elif(imm_run):
                        with m.If(~s_ok):
                            m.d.sync += [nib.eq(s_rd.data[:4]), nstate.eq(2)]
                    with m.Else():
                        m.d.comb += [self.rd.req.valid.eq(1), self.rd.req.payload.eq(row(sp))]
                        with m.If(self.rd.req.ready):
                            m.d.sync += [rsp_off.eq(sp[:lR + 1]), sp.eq(sp + 1), nstate.eq(1)]
                with m.Case(1):
                    m.d.sync += [nib.eq(Mux(rsp_off[0], rsp_byte[4:], rsp_byte[:4])), nstate.eq(2)]
                with m.Case(2):
                    m.d.comb += [self.rd.req.valid.eq(1), self.rd.req.payload.eq(row(dp))]
                    with m.If(self.rd.req.ready):
                        m.d.sync += [rsp_off.eq(dp[:lR + 1]), nstate.eq(3)]
                with m.Case(3):
                    m.d.sync += [merged.eq(Mux(rsp_off[0], Cat(rsp_byte[:4], nib), Cat(nib, rsp_byte[4:]))),
                                 nstate.eq(4)]
                with m.Case(4):
                    m.d.comb += [self.wr.req.valid.eq(1), wreq.data.eq(merged.replicate(R))]
                    with m.If(self.wr.req.ready):
                        m.d.sync += [dp.eq(dp + 1), n_wr.eq(n_wr - 1), nstate.eq(0)]

        # --- sequencer ------------------------------------------------------------------------
        nxt = Signal(len(upc))
        m.d.comb += [nxt.eq(upc + 1), rom_rd.addr.eq(nxt), self.done.payload.fault.eq(fault)]
        with m.FSM(name="ctl"):
            with m.State("IDLE"):
                m.d.comb += [nxt.eq(0), rom_rd.en.eq(1)]
                m.d.sync += [upc.eq(0), phase.eq(0), tb_base.eq(self.cmd.payload.table_addr)]
                with m.If(self.cmd.valid):
                    m.next = "EXEC"
            with m.State("EXEC"):
                m.d.comb += rom_rd.en.eq(0)
                with m.If(~phase & ~run):
                    with m.If(is_op["TB"]):         # TB: read the table byte's row
                        m.d.comb += [self.rd.req.valid.eq(1), self.rd.req.payload.eq(tb_addr[lR:])]
                        with m.If(self.rd.req.ready):
                            m.d.sync += [phase.eq(1), rsp_off.eq(Cat(0, tb_addr[:lR])), tb_ok_q.eq(tb_ok)]
                    with m.Else():
                        m.d.sync += phase.eq(1)
                with m.Elif(phase & ~run & s_ok):
                    m.d.comb += [self.step.eq(1), rom_rd.en.eq(1)]
                    m.d.sync += [phase.eq(0), upc.eq(nxt)]
                    with m.Switch(i_op):
                        for name in ("LD", "LDI", "ADD", "ADDI", "SUB", "SUBI"):
                            with m.Case(op[name]):
                                m.d.sync += acc.eq(total[:64])
                                if name not in ("LD", "LDI"):
                                    m.d.sync += carry.eq(total[64])
                        with m.Case(op["ST"]):
                            m.d.comb += s_wr.en.eq(1)
                        with m.Case(op["AND"]):
                            m.d.sync += acc.eq(acc & imm)
                        with m.Case(op["SHR"]):
                            m.d.sync += [acc.eq(acc >> 1), carry.eq(acc[0])]
                        with m.Case(op["SHL"]):
                            m.d.sync += [acc.eq(acc << 1), carry.eq(acc[63])]
                        with m.Case(op["RCL"]):
                            m.d.sync += [acc.eq(Cat(carry, acc[:63])), carry.eq(acc[63])]
                        with m.Case(op["TB"]):
                            m.d.sync += acc.eq(Cat(Mux(tb_ok_q, rsp_byte, 0), acc[:56]))
                        with m.Case(op["UINFO"]):
                            m.d.sync += acc.eq(info)
                        with m.Case(op["SIDE"]):
                            m.d.sync += side.eq(imm[0])
                        with m.Case(op["SETU"]):
                            m.d.sync += unit.eq(acc[:6])
                        with m.Case(op["SETP"]):
                            m.d.sync += sp.eq(acc[:PW])
                        with m.Case(op["SETD"]):
                            m.d.sync += dp.eq(acc[:PW])
                        with m.Case(op["RUN"]):
                            m.d.sync += [run.eq(acc != 0), imm_run.eq(imm[0]), n_rd.eq(acc[:NW]),
                                         n_wr.eq(acc[:NW]), ph.eq(0), nstate.eq(0),
                                         q_wp.eq(0), q_rp.eq(0), q_n.eq(0)]
                        with m.Case(op["JMP"]):
                            m.d.comb += nxt.eq(i_t)
                        for name, cond in (("JZ", zero), ("JNZ", ~zero), ("JC", carry), ("JNC", ~carry)):
                            with m.Case(op[name]):
                                with m.If(cond):
                                    m.d.comb += nxt.eq(i_t)
                        with m.Case(op["CALL"]):
                            m.d.comb += nxt.eq(i_t)
                            m.d.sync += [stack[0].eq(upc + 1), stack[1].eq(stack[0])]
                        with m.Case(op["RET"]):
                            m.d.comb += nxt.eq(stack[0])
                            m.d.sync += [stack[0].eq(stack[1]), stack[1].eq(stack[0])]
                        with m.Case(op["FAULT"]):
                            m.d.sync += fault.eq(imm)
                            m.next = "FINISH"
                        with m.Case(op["DONE"]):
                            m.d.sync += fault.eq(0)
                            m.next = "FINISH"
            engine_answer_states(m, self)
        return m
