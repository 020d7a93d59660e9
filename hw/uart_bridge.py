"""A UART-to-Wishbone bridge: the host link of the board tops. The host reads and
writes words of the core's host port (`hw/hostport.py`) with a small binary
protocol over an 8N1 serial line (docs/boards.md, "UART protocol"; the host side is
`xdsa/hostclient.py`).

Commands (host to bridge; multi-byte fields little-endian; ``addr`` is a byte
address, its two low bits are ignored; ``n`` counts 32-bit words):

====== ============= ===================================== =========================
op     name          then                                   answer
====== ============= ===================================== =========================
0x50   PING          hcheck                                 status
0x57   WRITE         addr[4] hcheck data[4] dcheck          status
0x52   READ          addr[4] hcheck                         status [data[4] dcheck]
0x77   WRITE_BLOCK   addr[4] n[2] hcheck data[4n] dcheck    status
0x72   READ_BLOCK    addr[4] n[2] hcheck                    status [data[4n] dcheck]
====== ============= ===================================== =========================

A check byte makes the bytes it covers plus itself sum to 0xFF modulo 256
(`check_byte`): ``hcheck`` covers the op and the header fields, ``dcheck`` the data
bytes (0xFF when there are none). Every command is answered by exactly one status
byte: `Status.OK` or a NAK code. A write is answered when it is done (after its
``dcheck``); a read is answered at once, and only an OK is followed by the data
and its ``dcheck``. Word ``k`` of a block is at ``addr + 4 k``; every access is a
full word (``sel`` = 0xF). WRITE writes its word only after ``dcheck`` has matched
(and no line error occurred); WRITE_BLOCK writes each word as it arrives, so a NAK
means the block must be written again.

Resynchronisation (the host never has to guess where a frame starts):

* a byte that is not an op code, received between commands, is answered
  BAD_OPCODE and otherwise ignored;
* a header whose ``hcheck`` does not match is answered BAD_HEADER; nothing is done;
* a command whose next byte does not arrive within ``timeout`` bit times is
  abandoned and answered TIMEOUT (words already written by a WRITE_BLOCK stay
  written);
* a framing error or a receiver overrun during a command turns its answer into
  LINE (the command itself runs to its end or to the timeout).

So a host that lost track waits longer than the timeout, discards what it has
received, and sends a PING, which answers OK. The bridge handles one command at a
time: the host sends the next command after the answer of the previous one.

Throughput: one byte per ``10 * divisor`` cycles each way; a Wishbone access (2-3
cycles on an idle core; 2 more through the board tops' register slice,
`hw.wishbone_slice`) per four data bytes, overlapped with the reception of the
next word for WRITE_BLOCK, and between two words for READ_BLOCK.
"""

from amaranth.hdl import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import enum, stream, wiring
from amaranth.lib.wiring import In, Out

from .hostport import WishboneSignature
from .reg_queue import RegQueue
from .uart import UARTRx, UARTTx, check_divisor

__all__ = ["Op", "Status", "check_byte", "BridgeProtocol", "UARTBridge", "DEFAULT_TIMEOUT_BITS",
           "MAX_BLOCK_WORDS", "check_bridge_params"]

DEFAULT_TIMEOUT_BITS = 50_000     # 50 ms at 1 Mbaud, 0.43 s at 115200 baud
MAX_BLOCK_WORDS = 0xFFFF


class Op(enum.IntEnum, shape=8):
    PING = 0x50            # 'P'
    WRITE = 0x57           # 'W'
    READ = 0x52            # 'R'
    WRITE_BLOCK = 0x77     # 'w'
    READ_BLOCK = 0x72      # 'r'


class Status(enum.IntEnum, shape=8):
    OK = 0xAC
    BAD_OPCODE = 0xE0      # not an op code (between commands)
    BAD_HEADER = 0xE1      # hcheck did not match; nothing done
    BAD_DATA = 0xE2        # dcheck did not match (WRITE: not written)
    TIMEOUT = 0xE3         # the command was abandoned: no byte for `timeout` bit times
    LINE = 0xE4            # framing error or overrun while receiving the command


def check_byte(data) -> int:
    """The check byte of `data` (bytes): the bytes plus the check sum to 0xFF mod 256."""
    return ~sum(data) & 0xFF


class BridgeProtocol(wiring.Component):
    """The protocol engine of the bridge (see the module docstring) on byte streams:
    ``i`` bytes from the host, ``o`` bytes to the host, ``line_error`` a pulse for
    each framing error or overrun of the receiver, ``wb`` the Wishbone B4 classic
    master. ``timeout`` is the inter-byte timeout in cycles."""

    i: In(stream.Signature(8))
    o: Out(stream.Signature(8))
    line_error: In(1)
    wb: Out(WishboneSignature())

    def __init__(self, timeout):
        if not isinstance(timeout, int) or timeout < 1:
            raise ValueError(f"timeout must be a positive number of cycles, not {timeout!r}")
        self._timeout = timeout
        super().__init__()

    def elaborate(self, platform):
        m = Module()

        op = Signal(8)
        addr = Signal(32)
        count = Signal(16)
        data = Signal(32)
        k = Signal(range(6))                     # byte index within the header or a word
        csum = Signal(8)
        status = Signal(8)
        line_err = Signal()
        timer = Signal(range(self._timeout))
        waiting = Signal()                       # in the middle of a command, waiting for a byte

        byte = self.i.payload
        got = self.i.valid & self.i.ready
        sent = self.o.valid & self.o.ready
        is_write = (op == Op.WRITE) | (op == Op.WRITE_BLOCK)
        is_read = (op == Op.READ) | (op == Op.READ_BLOCK)
        is_block = (op == Op.WRITE_BLOCK) | (op == Op.READ_BLOCK)
        header = Cat(addr, count)                # the header bytes shift in here
        status_out = Mux(line_err, Status.LINE, status)
        check_ok = (csum + byte)[:8] == 0xFF

        m.d.comb += [self.wb.adr.eq(addr[2:]), self.wb.dat_w.eq(data), self.wb.sel.eq(0xF)]

        with m.If(got | ~waiting):
            m.d.sync += timer.eq(self._timeout - 1)
        with m.Elif(timer != 0):
            m.d.sync += timer.eq(timer - 1)
        timed_out = waiting & ~self.i.valid & (timer == 0)

        def status_next(code):
            m.d.sync += status.eq(code)
            m.next = "STATUS"

        def goto(cond, if_true, if_false):
            with m.If(cond):
                m.next = if_true
            with m.Else():
                m.next = if_false

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.i.ready.eq(1)
                with m.If(got):
                    m.d.sync += [op.eq(byte), csum.eq(byte), k.eq(0), line_err.eq(0)]
                    with m.Switch(byte):
                        with m.Case(Op.PING):
                            m.next = "HCHECK"
                        with m.Case(Op.WRITE, Op.READ, Op.WRITE_BLOCK, Op.READ_BLOCK):
                            m.next = "HEADER"
                        with m.Default():
                            status_next(Status.BAD_OPCODE)

            with m.State("HEADER"):
                m.d.comb += [self.i.ready.eq(1), waiting.eq(1)]
                with m.If(got):
                    m.d.sync += [csum.eq(csum + byte), k.eq(k + 1), header.eq(Cat(header[8:], byte))]
                    with m.If((k == 5) | ((k == 3) & ~is_block)):
                        m.next = "HCHECK"
                with m.Elif(timed_out):
                    status_next(Status.TIMEOUT)

            with m.State("HCHECK"):
                m.d.comb += [self.i.ready.eq(1), waiting.eq(1)]
                with m.If(got):
                    m.d.sync += [csum.eq(0), k.eq(0)]
                    with m.If(~is_block):               # a 4-byte header sits in the top of `header`
                        m.d.sync += [addr.eq(header[16:]), count.eq(1)]
                    with m.If(~check_ok):
                        status_next(Status.BAD_HEADER)
                    with m.Elif((op == Op.PING) | ~is_write):
                        status_next(Status.OK)          # reads: the status goes first
                    with m.Else():
                        goto(is_block & (count == 0), "DCHECK", "WDATA")
                with m.Elif(timed_out):
                    status_next(Status.TIMEOUT)

            with m.State("WDATA"):
                m.d.comb += [self.i.ready.eq(1), waiting.eq(1)]
                with m.If(got):
                    m.d.sync += [data.eq(Cat(data[8:], byte)), csum.eq(csum + byte), k.eq(k + 1)]
                    with m.If(k == 3):
                        goto(op == Op.WRITE, "DCHECK", "WB_WRITE")
                with m.Elif(timed_out):
                    status_next(Status.TIMEOUT)

            with m.State("WB_WRITE"):
                m.d.comb += [self.wb.cyc.eq(1), self.wb.stb.eq(1), self.wb.we.eq(1)]
                with m.If(self.wb.ack):
                    m.d.sync += [addr.eq(addr + 4), count.eq(count - 1), k.eq(0)]
                    with m.If(op == Op.WRITE):
                        m.next = "STATUS"                # status set by DCHECK
                    with m.Elif(count == 1):
                        m.next = "DCHECK"
                    with m.Else():
                        m.next = "WDATA"

            with m.State("DCHECK"):
                m.d.comb += [self.i.ready.eq(1), waiting.eq(1)]
                with m.If(got):
                    with m.If(~check_ok):
                        status_next(Status.BAD_DATA)
                    with m.Elif((op == Op.WRITE) & ~line_err):
                        m.d.sync += status.eq(Status.OK)
                        m.next = "WB_WRITE"
                    with m.Else():
                        status_next(Status.OK)
                with m.Elif(timed_out):
                    status_next(Status.TIMEOUT)

            with m.State("STATUS"):
                m.d.comb += [self.o.valid.eq(1), self.o.payload.eq(status_out)]
                with m.If(sent):
                    with m.If(is_read & (status_out == Status.OK)):
                        goto(count == 0, "RCHECK", "WB_READ")
                    with m.Else():
                        m.next = "IDLE"

            with m.State("WB_READ"):
                m.d.comb += [self.wb.cyc.eq(1), self.wb.stb.eq(1)]
                with m.If(self.wb.ack):
                    m.d.sync += [data.eq(self.wb.dat_r), k.eq(0)]
                    m.next = "RDATA"

            with m.State("RDATA"):
                m.d.comb += [self.o.valid.eq(1), self.o.payload.eq(data[:8])]
                with m.If(sent):
                    m.d.sync += [data.eq(data[8:]), csum.eq(csum + data[:8]), k.eq(k + 1)]
                    with m.If(k == 3):
                        m.d.sync += [addr.eq(addr + 4), count.eq(count - 1)]
                        goto(count == 1, "RCHECK", "WB_READ")

            with m.State("RCHECK"):
                m.d.comb += [self.o.valid.eq(1), self.o.payload.eq(~csum)]
                with m.If(sent):
                    m.next = "IDLE"

        with m.If(self.line_error):
            m.d.sync += line_err.eq(1)
        return m



def check_bridge_params(divisor, timeout_bits):
    """Raise `TypeError`/`ValueError` unless `UARTBridge(divisor, timeout_bits=...)` can be built."""
    check_divisor(divisor)
    if not isinstance(timeout_bits, int) or timeout_bits < 20:
        raise ValueError(f"timeout_bits must be an integer of at least 20 bit times (two bytes), "
                         f"not {timeout_bits!r}")


class UARTBridge(wiring.Component):
    """`UARTRx` + `BridgeProtocol` + `UARTTx`: the bridge on a serial line. ``rx`` and
    ``tx`` are the FPGA's pins (``rx`` asynchronous), ``wb`` the Wishbone master.
    A received byte reaches the protocol a cycle after the receiver delivers it,
    through a two-entry register queue.

    ``divisor`` is the number of cycles per bit (`hw.uart.baud_divisor`),
    ``timeout_bits`` the inter-byte timeout in bit times (default
    `DEFAULT_TIMEOUT_BITS`)."""

    rx: In(1, init=1)
    tx: Out(1, init=1)
    wb: Out(WishboneSignature())

    def __init__(self, divisor, *, timeout_bits=DEFAULT_TIMEOUT_BITS):
        check_bridge_params(divisor, timeout_bits)
        self.divisor = divisor
        self.timeout_bits = timeout_bits
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.rx = rx = UARTRx(self.divisor)
        m.submodules.tx = tx = UARTTx(self.divisor)
        m.submodules.proto = proto = BridgeProtocol(self.timeout_bits * self.divisor)
        m.d.comb += [rx.rx.eq(self.rx), self.tx.eq(tx.tx),
                     proto.line_error.eq(rx.overrun | rx.frame_error)]
        # the received bytes reach the protocol through a register queue: the protocol's
        # `ready` (its state) and the receiver's `valid` do not meet in one cycle's logic
        # (the receiver sits by its pin: the protocol's state -> a LUT beside the receiver ->
        # the protocol's state was 14.4 ns, 160 tiles there and back, in the placed `base`)
        m.submodules.rx_q = rx_q = RegQueue(unsigned(8))
        m.d.comb += [rx_q.w_valid.eq(rx.o.valid), rx_q.w_data.eq(rx.o.payload), rx.o.ready.eq(rx_q.w_ready),
                     proto.i.valid.eq(rx_q.r_valid), proto.i.payload.eq(rx_q.r_data),
                     rx_q.r_ready.eq(proto.i.ready)]
        wiring.connect(m, proto.o, tx.i)
        wiring.connect(m, proto.wb, wiring.flipped(self.wb))
        return m
