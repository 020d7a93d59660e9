"""An 8N1 UART: a receiver and a transmitter with byte streams, for the host link
of the board tops (`hw/uart_bridge.py`, docs/boards.md).

Both units take ``divisor``, the number of clock cycles per bit (`baud_divisor`
computes it from the clock frequency and the baud rate). Frames are one start bit
(0), eight data bits, least significant first, and one stop bit (1); the line idles
high.

`UARTRx` synchronises ``rx`` with two flip-flops, waits half a bit after the
falling edge of a start bit, checks that the line is still low (a shorter pulse is
a glitch and is ignored) and samples the eight data bits and the stop bit in their
middles. A byte with a good stop bit goes to the ``o`` stream (latency from the
middle of the stop bit: 1 cycle; the receiver is ready for the next start bit at
the same time). The byte is held on ``o`` until it is taken (stream rules); a byte
that completes while the previous one is still held is dropped and ``overrun``
pulses. A stop bit of 0 is a framing error (``frame_error`` pulses, no byte); the
receiver then waits for the line to go high again, so a break (the line held low)
gives one framing error.

`UARTTx` takes a byte from its ``i`` stream when idle and shifts out its frame,
``10 * divisor`` cycles per byte; back to back bytes leave no gap (``i.ready`` is
also high in the last cycle of a stop bit).
"""

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

__all__ = ["UARTRx", "UARTTx", "baud_divisor", "check_divisor", "MIN_DIVISOR"]

MIN_DIVISOR = 4          # cycles per bit: room for the synchroniser and mid-bit sampling
MAX_BAUD_ERROR = 0.02    # 8N1 tolerates a few percent between the two ends; keep ours small


def baud_divisor(clk_freq, baud):
    """Cycles per bit for `baud` at `clk_freq` Hz: the nearest integer, which must be at
    least `MIN_DIVISOR` and give a baud rate within 2 % of the requested one."""
    if clk_freq <= 0 or baud <= 0:
        raise ValueError(f"clock frequency and baud rate must be positive, not {clk_freq!r} and {baud!r}")
    divisor = round(clk_freq / baud)
    if divisor < MIN_DIVISOR:
        raise ValueError(f"a {clk_freq / 1e6:g} MHz clock is too slow for {baud} baud: {clk_freq / baud:.2f} "
                         f"cycles per bit, at least {MIN_DIVISOR} needed")
    error = abs(clk_freq / divisor - baud) / baud
    if error > MAX_BAUD_ERROR:
        raise ValueError(f"{baud} baud cannot be made from a {clk_freq / 1e6:g} MHz clock: the nearest divisor "
                         f"{divisor} gives {clk_freq / divisor:.0f} baud ({100 * error:.1f} % off, at most "
                         f"{100 * MAX_BAUD_ERROR:g} % allowed)")
    return divisor


def check_divisor(divisor):
    """Raise `TypeError`/`ValueError` unless `divisor` is a usable number of cycles per bit."""
    if not isinstance(divisor, int) or isinstance(divisor, bool):
        raise TypeError(f"divisor must be an integer number of cycles per bit, not {divisor!r}")
    if divisor < MIN_DIVISOR:
        raise ValueError(f"divisor must be at least {MIN_DIVISOR} cycles per bit, not {divisor}")


class _Timed(wiring.Component):
    """A UART side with ``divisor`` clock cycles per bit (`check_divisor`)."""

    def __init__(self, divisor):
        check_divisor(divisor)
        self._divisor = divisor
        super().__init__()

    @property
    def divisor(self):
        return self._divisor


class UARTRx(_Timed):
    """8N1 receiver, ``divisor`` cycles per bit (see the module docstring).

    Ports: ``rx`` (the line, asynchronous), ``o`` (received bytes), ``overrun`` and
    ``frame_error`` (one-cycle pulses).
    """

    rx: In(1, init=1)
    o: Out(stream.Signature(8))
    overrun: Out(1)
    frame_error: Out(1)

    def elaborate(self, platform):
        m = Module()
        d = self._divisor

        line = Signal(init=1)
        m.submodules.sync = FFSynchronizer(self.rx, line, init=1)

        timer = Signal(range(d))
        bits = Signal(range(9))
        shift = Signal(8)
        with m.If(timer != 0):
            m.d.sync += timer.eq(timer - 1)

        with m.If(self.o.ready):
            m.d.sync += self.o.valid.eq(0)

        with m.FSM():
            with m.State("IDLE"):
                with m.If(~line):
                    m.d.sync += timer.eq(d // 2 - 1)
                    m.next = "START"
            with m.State("START"):
                with m.If(timer == 0):
                    with m.If(line):
                        m.next = "IDLE"                 # a glitch, not a start bit
                    with m.Else():
                        m.d.sync += [timer.eq(d - 1), bits.eq(0)]
                        m.next = "DATA"
            with m.State("DATA"):
                with m.If(timer == 0):
                    m.d.sync += [shift.eq(Cat(shift[1:], line)), bits.eq(bits + 1), timer.eq(d - 1)]
                    with m.If(bits == 7):
                        m.next = "STOP"
            with m.State("STOP"):
                with m.If(timer == 0):
                    with m.If(line):
                        with m.If(self.o.valid & ~self.o.ready):
                            m.d.comb += self.overrun.eq(1)
                        with m.Else():
                            m.d.sync += [self.o.payload.eq(shift), self.o.valid.eq(1)]
                        m.next = "IDLE"
                    with m.Else():
                        m.d.comb += self.frame_error.eq(1)
                        m.next = "BREAK"
            with m.State("BREAK"):
                with m.If(line):
                    m.next = "IDLE"
        return m


class UARTTx(_Timed):
    """8N1 transmitter, ``divisor`` cycles per bit (see the module docstring).

    Ports: ``i`` (bytes to send), ``tx`` (the line, registered, idles high).
    """

    i: In(stream.Signature(8))
    tx: Out(1, init=1)

    def elaborate(self, platform):
        m = Module()
        d = self._divisor

        timer = Signal(range(d))
        left = Signal(range(11))               # bits of the frame still to send, this one included
        shift = Signal(10, init=0x3FF)          # the frame, next bit at the bottom
        m.d.comb += self.tx.eq(shift[0])

        last = (timer == 0) & (left <= 1)       # the last cycle of a frame (or idle)
        m.d.comb += self.i.ready.eq(last)
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += [shift.eq(Cat(Const(0, 1), self.i.payload, Const(1, 1))),
                         left.eq(10), timer.eq(d - 1)]
        with m.Elif(timer != 0):
            m.d.sync += timer.eq(timer - 1)
        with m.Elif(left != 0):
            m.d.sync += [shift.eq(Cat(shift[1:], Const(1, 1))), left.eq(left - 1)]
            with m.If(left != 1):
                m.d.sync += timer.eq(d - 1)
        return m
