"""The operand-table loader: reads an instruction's operand table out of data memory.

Serves step 5 of the execution model (docs/architecture.md): OPTABLE_RANGE of
D-PRECEDENCE, then the raw table of D-TABLE-ORDER (table bit i is bit i of the
table in memory; table byte j is memory byte ``addr + j``).

A command {addr, nbytes} is answered once, on ``rsp``:

* if any byte of [addr, addr + nbytes) lies outside [0, mem_bytes), with fault
  OPTABLE_RANGE and a zero table, without reading memory (the check has no overflow:
  addr may be anything up to 2**64 - 1); an empty table (nbytes = 0) never faults;
* otherwise with fault 0 and the table: bits [8 nbytes, max_table_bits) are zero.
  A table longer than the port (8 nbytes > max_table_bits) is range-checked in full
  but only the rows holding its first ceil(max_table_bits / 8) bytes are read.

The table may start at any byte address. Each row read (memory port ``mem``, one
request per cycle while the port is ready) is registered as it arrives, then
rotated by the start offset ``addr % row_bytes`` and its bytes are written to their
places in the table register: the bytes from offset on are table bytes of slot k,
the bytes before it complete slot k - 1. So only one row-wide byte rotator is
needed, never a table-wide shifter. (The row register keeps the rotator and the
table's byte enables off the block RAMs' read data, which crosses the chip to reach
the loader: block RAM -> rotator -> table was the placed `base`'s worst path,
21.7 ns, session 33; docs/boards.md.)

Latency (cycles from the ``cmd`` transfer to ``rsp.valid``, with a memory port that
never stalls): ``rows + 2 + L`` where ``rows = ceil((addr % row_bytes + nbytes) /
row_bytes)``, the number of rows the table touches, and ``L`` the memory's read
latency (``config.mem_latency``; the loader counts the responses as they come, so
it works with any); 2 for OPTABLE_RANGE (the check's verdict is registered) and 1
for nbytes = 0. Throughput: one table
at a time; a new command is taken in the cycle the response transfers, so
back-to-back tables take ``rows + 2 + L`` cycles each.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for, exact_log2

from xdsa.golden.isa import Fault

from .bus import ADDR_BITS, FAULT_BITS, ReadPort, row_addr_bits
from .config import CoreConfig
from .thermometer import thermometer

__all__ = ["OperandLoader", "LoaderCmd", "LoaderRsp", "NBYTES_BITS", "past_end"]

NBYTES_BITS = 8

LoaderCmd = data.StructLayout({"addr": unsigned(ADDR_BITS), "nbytes": unsigned(NBYTES_BITS)})


def LoaderRsp(max_table_bits: int):
    return data.StructLayout({"table": unsigned(max_table_bits), "fault": unsigned(FAULT_BITS)})


def past_end(addr, nbytes, mem_bytes: int):
    """``addr + nbytes > mem_bytes`` for ``addr < 2**mem_bytes.bit_length()`` (the caller
    checks the bits above) and an 8-bit ``nbytes``, without a carry chain: with ``addr =
    hi * 256 + lo`` and ``mem_bytes = Mh * 256 + Ml``, the sum ``s = lo + nbytes`` (9 bits)
    and ``hi`` are compared with constants: ``hi > Mh``, or ``hi == Mh`` and ``s > Ml``,
    or ``hi == Mh - 1`` and ``s > 256 + Ml`` (``s`` is at most 510, so a lower ``hi`` never
    reaches the end). The sum and the compares are shallow LUT trees; the 19-bit sum of
    `base` was a carry chain whose column drew the check's LUTs across the chip (the
    command copy -> the chain -> the verdict register was 21.0 ns, 17.4 ns of it wire, in
    the placed `base`, session 53)."""
    assert len(nbytes) <= 8
    k = mem_bytes.bit_length()
    mh, ml = mem_bytes >> 8, mem_bytes & 0xFF
    s = addr[:min(8, k)] + nbytes
    if k <= 8:                                      # hi = 0 = Mh
        return s > ml
    hi = addr[8:k]
    out = (hi > mh) | ((hi == mh) & (s > ml))
    if mh >= 1:
        out |= (hi == mh - 1) & (s > 256 + ml)
    return out


class _State(enum.Enum, shape=2):
    IDLE = 0
    READ = 1
    DONE = 2


class OperandLoader(wiring.Component):
    """Operand-table loader (see the module docstring).

    Parameters: `config` (a `CoreConfig`: `mem_bytes`, `row_bytes`); `max_table_bits`,
    the width of the table on ``rsp`` (`Decoder.max_table_bits`).

    Ports: ``cmd`` (in, `LoaderCmd` stream), ``mem`` (a `ReadPort` into data memory),
    ``rsp`` (out, `LoaderRsp` stream).
    """

    def __init__(self, config, max_table_bits: int):
        if not isinstance(config, CoreConfig):
            raise TypeError(f"config must be a CoreConfig, not {config!r}")
        if not isinstance(max_table_bits, int) or max_table_bits < 1:
            raise TypeError(f"max_table_bits must be a positive integer, not {max_table_bits!r}")
        self.config = config
        self.max_table_bits = max_table_bits
        super().__init__({
            "cmd": In(stream.Signature(LoaderCmd)),
            "mem": Out(ReadPort(addr_bits=row_addr_bits(config.rows), row_bits=config.row_bits)),
            "rsp": Out(stream.Signature(LoaderRsp(max_table_bits))),
        })

    @property
    def table_bytes(self) -> int:
        """Bytes of table the response holds."""
        return (self.max_table_bits + 7) // 8

    def rows_read(self, addr: int, nbytes: int) -> range:
        """The rows a command reads (empty when it faults or nbytes is 0) -- for tests."""
        rb, mem = self.config.row_bytes, self.config.mem_bytes
        if nbytes == 0 or addr + nbytes > mem:
            return range(0)
        end = addr + min(nbytes, self.table_bytes)
        return range(addr // rb, (end + rb - 1) // rb)

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        rb, mem_bytes = cfg.row_bytes, cfg.mem_bytes
        ob = exact_log2(rb)                               # byte-offset bits within a row
        tbytes = self.table_bytes
        slots = (tbytes + rb - 1) // rb                   # row-wide slots of the table register
        max_rows = (rb - 1 + tbytes + rb - 1) // rb       # rows a (clamped) table can touch
        abits = len(self.mem.req.payload)

        state = Signal(_State)
        # Reset-less (data): loaded (buf: cleared) in every cycle a command can be taken
        # (`cmd.ready`) and used only in the READ and DONE states of `state`, which keeps its
        # reset (as does `fault`).
        req_row = Signal(abits, reset_less=True)
        req_left = Signal(bits_for(max_rows), reset_less=True)
        rsp_k = Signal(bits_for(max_rows), reset_less=True)   # index of the next row to arrive
        rsp_left = Signal(bits_for(max_rows), reset_less=True)
        low = Signal(rb, reset_less=True)                 # rotated-row byte c belongs to slot k (else k - 1)
        offset = Signal(ob, reset_less=True)
        nbytes = Signal(NBYTES_BITS, reset_less=True)     # bytes of table to keep (read in READ only)
        fault = Signal(FAULT_BITS)
        outside_r = Signal(reset_less=True)               # the command's range check failed (read in READ)
        buf = Signal(slots * rb * 8, reset_less=True)

        # --- command: range check and row count (combinational from the payload) ----------
        c = self.cmd.payload
        accept = self.cmd.valid & self.cmd.ready
        m.d.comb += self.cmd.ready.eq((state == _State.IDLE) | ((state == _State.DONE) & self.rsp.ready))

        # addr >= 2**k implies addr > mem_bytes; below that, addr + nbytes needs k + 1 bits.
        k = mem_bytes.bit_length()
        outside = (c.nbytes != 0) & ((c.addr[k:] != 0) | past_end(c.addr, c.nbytes, mem_bytes))
        c_off = c.addr[:ob]
        kept = Mux(c.nbytes > tbytes, tbytes, c.nbytes)
        c_rows = (c_off + kept + (rb - 1)) >> ob

        with m.If(self.rsp.valid & self.rsp.ready):
            m.d.sync += state.eq(_State.IDLE)
        # The command's data registers and the table's clear are enabled by `cmd.ready` (of
        # the loader's state and the response's ready, registers), not by the transfer: they
        # are read only after a transfer, which happens in a cycle they load, and hold from
        # then until the response is released. So the core's state -> the command's valid ->
        # the transfer reaches only the state, the fault and the range verdict (the transfer,
        # fan-out 813 over 108 tiles, ended the placed `base`'s worst path, 16.3 ns, session 49).
        with m.If(self.cmd.ready):
            m.d.sync += [
                offset.eq(c_off),
                low.eq(thermometer(m, rb - c_off, rb, "c_low")),    # c_off < rb - i
                req_row.eq(c.addr[ob:ob + abits]),
                req_left.eq(c_rows),
                rsp_left.eq(c_rows),
                rsp_k.eq(0),
                # a faulting command reads no row, so `nbytes` needs no fault in its load (the
                # range check was the synchronous reset of its flip-flops: 17.1 ns placed)
                nbytes.eq(c.nbytes),
                # (read only in READ, where `cmd.ready` is low: through the transfer, the
                # check's carry chain -> the state's LUTs -> the verdict was 16.45 ns in the
                # placed `base`, session 51)
                outside_r.eq(outside),
            ]
        with m.If(accept):
            m.d.sync += [state.eq(Mux(c.nbytes == 0, _State.DONE, _State.READ)), fault.eq(0)]
        # The range check's verdict is a register, read in READ's first cycle, which
        # requests nothing when it is set and answers the fault: the command's payload (the
        # core's descriptor register, 43 tiles away) -> the check's carry chain -> the state
        # was 16.0 ns in the placed `base` (session 48).
        with m.If((state == _State.READ) & outside_r):
            m.d.sync += [state.eq(_State.DONE), fault.eq(Fault.OPTABLE_RANGE)]

        # --- row requests ------------------------------------------------------------------
        m.d.comb += [self.mem.req.valid.eq((state == _State.READ) & (req_left != 0) & ~outside_r),
                     self.mem.req.payload.eq(req_row)]
        with m.If(self.mem.req.valid & self.mem.req.ready):
            m.d.sync += [req_row.eq(req_row + 1), req_left.eq(req_left - 1)]

        # --- row responses: register, rotate by the offset, write into slots k and k - 1 ----
        # (the row is data, used only under its valid bit, which keeps the reset; responses
        # come only in READ, and a command is taken only after the last one has been counted)
        row_v = Signal()
        row = Signal(len(self.mem.rsp.payload), reset_less=True)
        m.d.sync += [row_v.eq(self.mem.rsp.valid), row.eq(self.mem.rsp.payload)]
        rot = Signal(len(row))
        m.d.comb += rot.eq((Cat(row, row) >> Cat(Const(0, 3), offset))[:len(row)])
        hit = [Signal(name=f"slot_{j}_hit") for j in range(slots + 1)]
        m.d.comb += [h.eq(row_v & (rsp_k == j)) for j, h in enumerate(hit)]
        # Table bytes at or beyond nbytes are never written, and the whole register is
        # cleared in every cycle a command can be taken, so the response needs no output mask (each
        # flip-flop takes the rotated row directly, with an enable and a synchronous reset).
        keep = thermometer(m, nbytes, tbytes, "keep")        # keep[t]: t < nbytes
        for j in range(slots):
            for b in range(rb):
                t = j * rb + b
                if t >= tbytes:
                    continue
                with m.If(self.cmd.ready):
                    m.d.sync += buf.word_select(t, 8).eq(0)
                with m.Elif(Mux(low[b], hit[j], hit[j + 1]) & keep[t]):
                    m.d.sync += buf.word_select(t, 8).eq(rot.word_select(b, 8))
        with m.If(row_v):
            m.d.sync += [rsp_k.eq(rsp_k + 1), rsp_left.eq(rsp_left - 1)]
            with m.If(rsp_left == 1):
                m.d.sync += state.eq(_State.DONE)

        # --- response ----------------------------------------------------------------------
        m.d.comb += [self.rsp.valid.eq(state == _State.DONE),
                     self.rsp.payload.fault.eq(fault),
                     self.rsp.payload.table.eq(buf[:self.max_table_bits])]
        return m
