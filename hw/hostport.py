"""The host port: a Wishbone B4 classic slave giving a host the data memory, the
control/status registers of the core and the key tables (docs/architecture.md,
"Host port register map"; user documentation in docs/host-port.md).

Address map (byte address = ``adr << 2``, 32-bit data, ``sel`` byte selects):

* ``0x0000_0000 .. 0x7FFF_FFFF``: data memory. A word lies within one memory row;
  a write changes the bytes selected by ``sel``; a read returns the word (lanes not
  selected by ``sel`` read 0). Words at or beyond ``mem_bytes`` read 0 and ignore
  writes (no wrap-around) without touching the memory.
* ``0x8000_0000 ..``: registers (`Reg`); ``0x8000_1000 .. 0x8000_13FF`` the key
  tables (table ``t`` entry ``i`` is byte ``0x1000 + 256 t + i``).

Registers follow ``sel`` too: a write changes only the selected bytes of a
writable register, and CTRL / KEY_DEPOSIT act only when their byte 0 is selected.
Unmapped registers read 0 and ignore writes. Reads never have side effects.

Timing. ``ack`` and ``dat_r`` are registered; ``ack`` is high for exactly one cycle
per access. Counting the cycle in which the master first presents ``cyc & stb`` as
cycle 0, in which the port only decodes the access into registers (the address ->
the decode -> ``ack`` and the enables of the port's registers crossed the whole
port in one cycle, 14.6-15.4 ns in the placed `base`, session 53), ``ack`` is high
in cycle:

* 2 — register, unmapped and out-of-memory accesses (3 cycles per access);
* 2 + g — data memory writes; g is the number of cycles the host waits for the
  memory's write buffer (0 when no other unit writes);
* 4 + L + g — data memory reads, with the memory's read latency L
  (``config.mem_latency``; the request enters the memory's read buffer in cycle 1,
  the buffer is granted the port in cycle 2 + g, the row returns in cycle 2 + g + L
  and is registered; the word is selected from that register in the next cycle, so
  no block RAM output reaches ``dat_r`` in one cycle -- that path, across the
  memory's block RAMs and the word select, took 18.2 ns in the placed `base`,
  session 34);
* 2 + sum over the n key operations of (1 + w_k + L_k) — key-table accesses: a
  KEYS word issues one key operation per selected byte (n <= 4, lowest byte first,
  one at a time; n = 0 acks in cycle 2), KEY_DEPOSIT one. w_k is the cycles the
  k-th request waits for ``keys_req.ready``, L_k (>= 1) the cycles from its transfer
  to the transfer of its response. With a sync unit that is ready and answers in
  the next cycle: 5 cycles for one key, 11 for a whole word; with the core's sync
  unit (L = 3, `hw.sync`) and no waiting: 7 and 19.

The port is a buffered client of the memory system (`hw.memory`, ``buffered``): its
requests enter one-entry buffers there, whose "empty" is its ``ready``, so neither
the other units' requests reach its state nor its address decoding the memory's
arbitration in one cycle (both were long paths in the placed `base`, sessions
44-45); a write is acknowledged when it enters the buffer, and the memory keeps a
later read behind it. The memory requests are driven from the Wishbone signals
and the registered decode in cycle 1, so the port relies on the B4 classic rule that a master holds
``cyc``, ``stb``, ``adr``, ``we``, ``dat_w`` and ``sel`` until ``ack`` (cycles aborted
by dropping ``cyc`` before ``ack`` are not supported). A master may start the next access in
the cycle after ``ack`` (``stb`` may stay high across accesses).

Control: ``start`` pulses for one cycle (with ``ack``) when CTRL bit 0 is written
while ``busy`` is low, ``clear`` when CTRL bit 1 is written (whatever ``busy``);
both may pulse together. ``start_addr`` is the START register, which ignores
writes while ``busy`` is high. ``busy`` is sampled in cycle 1 of the write.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from .bus import KeyHostOp, KeyHostReq, KeyHostRsp
from .config import CoreConfig
from .memory import read_port_signature, write_port_signature

__all__ = ["WishboneSignature", "HostPort", "Reg", "ID_VALUE", "REG_BASE", "KEYS_BASE", "KEYS_END",
           "features"]

ID_VALUE = 0x7844_5341          # "xDSA" in ASCII, read as a big-endian word
REG_BASE = 0x8000_0000
KEYS_BASE = 0x8000_1000         # = Reg.KEYS
KEYS_END = 0x8000_1400          # exclusive


class Reg:
    """Byte addresses of the registers (docs/architecture.md, "Host port register map")."""
    ID = 0x8000_0000
    MEM_BYTES = 0x8000_0004
    FEATURES = 0x8000_0008
    CTRL = 0x8000_0010
    STATUS = 0x8000_0014
    FAULT = 0x8000_0018
    FAULT_PC = 0x8000_0020      # low half; high half at +4
    START = 0x8000_0028
    CYCLES = 0x8000_0030
    RETIRED = 0x8000_0038
    KEY_DEPOSIT = 0x8000_0040
    KEYS = 0x8000_1000          # key table t entry i at KEYS + 256 t + i


class WishboneSignature(wiring.Signature):
    """A Wishbone B4 classic bus, 32-bit data, 30-bit word address, 4 byte selects,
    from the master's view (a slave takes it as ``In(WishboneSignature())``)."""

    def __init__(self):
        super().__init__({
            "cyc": Out(1),
            "stb": Out(1),
            "we": Out(1),
            "adr": Out(30),
            "dat_w": Out(32),
            "sel": Out(4),
            "dat_r": In(32),
            "ack": In(1),
        })

    def __eq__(self, other):
        return type(other) is type(self)

    def __repr__(self):
        return "WishboneSignature()"


def features(config: CoreConfig) -> int:
    """The FEATURES register value of `config`."""
    return config.row_bytes | (config.vector_bytes << 8) | (config.array_n << 16)


def _word(addr):
    return (addr - REG_BASE) >> 2


class HostPort(wiring.Component):
    """The Wishbone host/control port of the core (see the module docstring)."""

    def __init__(self, config: CoreConfig):
        if not isinstance(config, CoreConfig):
            raise TypeError(f"config must be a CoreConfig, not {config!r}")
        if config.mem_bytes > REG_BASE:
            raise ValueError(f"mem_bytes {config.mem_bytes:#x} does not fit below the registers "
                             f"at {REG_BASE:#x}")
        for name in ("vector_bytes", "array_n"):
            if not 0 <= getattr(config, name) <= 255:
                raise ValueError(f"{name} {getattr(config, name)!r} does not fit the 8-bit FEATURES field")
        self.config = config
        super().__init__({
            "wb": In(WishboneSignature()),
            "mem_r": Out(read_port_signature(config)),
            "mem_w": Out(write_port_signature(config)),
            "start": Out(1),
            "clear": Out(1),
            "start_addr": Out(64),
            "busy": In(1),
            "stopped": In(1),
            "reason": In(2),
            "fault": In(8),
            "fault_pc": In(64),
            "cycles": In(64),
            "retired": In(64),
            "keys_req": Out(stream.Signature(KeyHostReq)),
            "keys_rsp": In(stream.Signature(KeyHostRsp)),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        wb = self.wb

        word_bits = exact_log2(cfg.row_bytes) - 2           # word index within a row (row_bytes >= 8)
        words_per_row = cfg.row_bytes // 4

        # --- decode (of the access in cycle 0: IDLE & access) -----------------------------
        access = Signal()
        m.d.comb += access.eq(wb.cyc & wb.stb & ~wb.ack)
        is_reg = wb.adr[29]
        in_mem = Signal()
        m.d.comb += in_mem.eq(~is_reg & (wb.adr < cfg.mem_bytes // 4))
        row = wb.adr[word_bits:29]
        word = wb.adr[:word_bits]
        off = wb.adr[:29]                                   # register word offset
        lane_mask = Cat(wb.sel[b].replicate(8) for b in range(4))
        is_keys = is_reg & (off >> 8 == (KEYS_BASE - REG_BASE) >> 10)

        start_q = Signal(64)
        row_q = Signal(cfg.row_bits, reset_less=True)      # a data memory read's row
        m.d.comb += self.start_addr.eq(start_q)

        # --- register read mux ------------------------------------------------------------
        reg_rdata = Signal(32)
        status = Cat(self.busy, self.stopped, Const(0, 6), self.reason)
        reads = {
            Reg.ID: ID_VALUE,
            Reg.MEM_BYTES: cfg.mem_bytes,
            Reg.FEATURES: features(cfg),
            Reg.STATUS: status,
            Reg.FAULT: self.fault,
            Reg.FAULT_PC: self.fault_pc[:32], Reg.FAULT_PC + 4: self.fault_pc[32:],
            Reg.START: start_q[:32], Reg.START + 4: start_q[32:],
            Reg.CYCLES: self.cycles[:32], Reg.CYCLES + 4: self.cycles[32:],
            Reg.RETIRED: self.retired[:32], Reg.RETIRED + 4: self.retired[32:],
        }
        with m.Switch(off):
            for addr, value in reads.items():
                with m.Case(_word(addr)):
                    m.d.comb += reg_rdata.eq(value)

        # --- key operations -------------------------------------------------------------
        key_op = Signal(2)
        key_table = Signal(2)
        key_index = Signal(8)           # entry of byte lane 0
        key_wdata = Signal(32)
        key_rdata = Signal(32)
        pending = Signal(4)             # byte lanes still to do
        lane = Signal(2)                # the lowest pending lane
        for b in reversed(range(4)):
            with m.If(pending[b]):
                m.d.comb += lane.eq(b)
        kreq = self.keys_req.payload
        m.d.comb += [kreq.op.eq(key_op), kreq.table.eq(key_table), kreq.index.eq(key_index + lane),
                     kreq.value.eq(key_wdata.word_select(lane, 8))]

        # --- outputs: one-cycle pulses by default -----------------------------------------
        m.d.sync += [wb.ack.eq(0), wb.dat_r.eq(0), self.start.eq(0), self.clear.eq(0)]

        def finish(data=0):
            m.d.sync += [wb.ack.eq(1), wb.dat_r.eq(data)]

        # The access is decoded in cycle 0 into registers and served from cycle 1 on (the
        # master holds adr, we, dat_w and sel until ack): the address -> the decode -> ack,
        # the key registers' and START's enables and the sync unit's host request was
        # 14.6-15.4 ns over the whole port in the placed `base` (session 53).
        d_out = Signal()            # beyond the memory: no wrap
        d_mem_rd = Signal()
        d_mem_wr = Signal()
        d_keys = Signal()
        d_deposit = Signal()
        d_reg_wr = Signal()         # (a register read: none of these)
        d_ctrl = Signal()           # CTRL with byte 0 selected
        d_start = Signal(2)         # the halves of START
        with m.FSM():
            with m.State("IDLE"):
                with m.If(access):
                    m.d.sync += [d_out.eq(~is_reg & ~in_mem), d_mem_rd.eq(in_mem & ~wb.we),
                                 d_mem_wr.eq(in_mem & wb.we), d_keys.eq(is_keys),
                                 d_deposit.eq(is_reg & wb.we & (off == _word(Reg.KEY_DEPOSIT)) & wb.sel[0]),
                                 d_reg_wr.eq(is_reg & wb.we),
                                 d_ctrl.eq((off == _word(Reg.CTRL)) & wb.sel[0]),
                                 d_start.eq(Cat(off == _word(Reg.START), off == _word(Reg.START + 4)))]
                    m.next = "ACCESS"

            with m.State("ACCESS"):
                with m.If(d_out):
                    finish()
                    m.next = "IDLE"
                with m.Elif(d_mem_rd):
                    m.d.comb += [self.mem_r.req.valid.eq(1), self.mem_r.req.payload.eq(row)]
                    with m.If(self.mem_r.req.ready):
                        m.next = "MEM_READ"
                with m.Elif(d_mem_wr):
                    wr = self.mem_w.req.payload
                    m.d.comb += [self.mem_w.req.valid.eq(1), wr.row.eq(row),
                                 wr.data.eq(wb.dat_w.replicate(words_per_row)),
                                 wr.be.eq(wb.sel << (word * 4))]
                    with m.If(self.mem_w.req.ready):
                        finish()
                        m.next = "IDLE"
                with m.Elif(d_keys):
                    m.d.sync += [key_op.eq(Mux(wb.we, KeyHostOp.WRITE, KeyHostOp.READ)),
                                 key_table.eq(off[6:8]), key_index.eq(off[:6] << 2),
                                 key_wdata.eq(Mux(wb.we, wb.dat_w, 0)), key_rdata.eq(0), pending.eq(wb.sel)]
                    with m.If(wb.sel == 0):
                        finish()
                        m.next = "IDLE"
                    with m.Else():
                        m.next = "KEY_REQ"
                with m.Elif(d_deposit):
                    m.d.sync += [key_op.eq(KeyHostOp.DEPOSIT),
                                 key_table.eq(Mux(wb.sel[1], wb.dat_w[8:10], 0)),
                                 key_index.eq(wb.dat_w[:8]), key_wdata.eq(0), key_rdata.eq(0),
                                 pending.eq(0b0001)]
                    m.next = "KEY_REQ"
                with m.Elif(d_reg_wr):
                    finish()
                    m.next = "IDLE"
                    with m.If(d_ctrl):
                        m.d.sync += [self.start.eq(wb.dat_w[0] & ~self.busy),
                                     self.clear.eq(wb.dat_w[1])]
                    for half in range(2):
                        with m.If(d_start[half] & ~self.busy):
                            for b in range(4):
                                with m.If(wb.sel[b]):
                                    m.d.sync += start_q.word_select(4 * half + b, 8).eq(
                                        wb.dat_w.word_select(b, 8))
                with m.Else():                                  # a register read
                    finish(reg_rdata & lane_mask)
                    m.next = "IDLE"

            with m.State("MEM_READ"):
                # the row requested L cycles ago arrives now and is registered
                with m.If(self.mem_r.rsp.valid):
                    m.d.sync += row_q.eq(self.mem_r.rsp.payload)
                    m.next = "MEM_WORD"

            with m.State("MEM_WORD"):
                finish(row_q.word_select(word, 32) & lane_mask)
                m.next = "IDLE"

            with m.State("KEY_REQ"):
                m.d.comb += self.keys_req.valid.eq(1)
                with m.If(self.keys_req.ready):
                    m.next = "KEY_RSP"

            with m.State("KEY_RSP"):
                m.d.comb += self.keys_rsp.ready.eq(1)
                new_rdata = Signal(32)
                m.d.comb += new_rdata.eq(key_rdata)
                with m.If(key_op == KeyHostOp.READ):
                    m.d.comb += new_rdata.word_select(lane, 8).eq(self.keys_rsp.payload.value)
                remaining = Signal(4)
                m.d.comb += remaining.eq(pending & ~(Const(1, 4) << lane))
                with m.If(self.keys_rsp.valid):
                    m.d.sync += [key_rdata.eq(new_rdata), pending.eq(remaining)]
                    with m.If(remaining == 0):
                        finish(new_rdata)
                        m.next = "IDLE"
                    with m.Else():
                        m.next = "KEY_REQ"

        return m
