"""The host side of the UART bridge (`hw/uart_bridge.py`; protocol in docs/boards.md):
load an image into a core on a board (or in simulation), start it, wait for it
and read its status and memory.

`HostClient(transport)` speaks the protocol over a transport:

* `SerialTransport(path, baud)`: a POSIX serial port (``/dev/ttyUSB1``...), with
  the standard library only (``termios``, ``os``, ``select``);
* `SimTransport(dut, divisor)`: an Amaranth simulation of a design with ``rx`` and
  ``tx`` pins (e.g. `hw.boards.BridgedCore`); the serial line is modelled bit by
  bit inside the simulation, which advances while the client waits for bytes.
  Times (timeouts, `wait`) are simulated time.

A transport has ``write(data)``, ``read(n, timeout) -> bytes`` (fewer bytes on
timeout), ``flush()`` (drop unsent output and unread input), ``clock()`` and
``sleep(seconds)`` (its time), ``byte_time`` (seconds per byte on the line),
``default_timeout``, ``default_poll``, ``timeout_bits`` (the bridge's inter-byte
timeout) and ``close()``.

Every command gets a status byte; a NAK raises `BridgeError` (after one
resynchronisation and retry, see ``retries``), a missing answer `LinkTimeout`.
"""

import math
import os
import select
import time
from dataclasses import dataclass

from xdsa.hw.hostport import ID_VALUE, Reg
from xdsa.hw.uart_bridge import DEFAULT_TIMEOUT_BITS, MAX_BLOCK_WORDS, Op, Status, check_byte

__all__ = ["HostClient", "CoreStatus", "BridgeError", "LinkTimeout", "SerialTransport", "SimTransport"]

_REASONS = {0: None, 1: "end", 2: "exit", 3: "fault"}


class BridgeError(Exception):
    """The bridge answered a NAK (``status``) or an answer was malformed."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class LinkTimeout(BridgeError, TimeoutError):
    """No (complete) answer within the timeout."""


@dataclass(frozen=True)
class CoreStatus:
    busy: bool
    stopped: bool
    reason: str            # None (not stopped), "end", "exit" or "fault"
    fault: int             # fault code (docs/isa-reference.md, "Fault codes"); 0 if none
    fault_pc: int          # PC of the faulting instruction (meaningful when reason == "fault")
    cycles: int
    retired: int

    @property
    def fault_name(self):
        from xdsa.golden.isa import Fault
        try:
            return Fault(self.fault).name
        except ValueError:
            return f"{self.fault:#x}"

    def __str__(self):
        if not self.stopped:
            return f"{'busy' if self.busy else 'idle'}, {self.cycles} cycles, {self.retired} retired"
        what = f"fault {self.fault_name} at {self.fault_pc:#x}" if self.reason == "fault" else self.reason
        return f"stopped: {what}; {self.cycles} cycles, {self.retired} instructions retired"


class HostClient:
    """A client of the UART bridge over `transport`.

    ``timeout`` (seconds) bounds the wait for an answer beyond its transfer time
    (default: the transport's ``default_timeout``). ``retries``: how often a
    command answered with a NAK or not answered is resent after `resync` (reads
    and writes are idempotent; `start` is never retried). ``resync_wait`` must
    exceed the bridge's inter-byte timeout (default: 2.5 times the transport's
    ``timeout_bits`` bit times)."""

    def __init__(self, transport, *, timeout=None, retries=1, resync_wait=None):
        self.t = transport
        self.timeout = transport.default_timeout if timeout is None else timeout
        self.retries = retries
        bit = transport.byte_time / 10
        self.resync_wait = resync_wait if resync_wait is not None else 2.5 * transport.timeout_bits * bit
        self.stats = {"commands": 0, "retries": 0, "bytes_out": 0, "bytes_in": 0}
        self._in_flight = 0

    # --- protocol ---------------------------------------------------------------------

    @staticmethod
    def _header(op, addr=None, n=None):
        h = bytes([op])
        if addr is not None:
            if addr % 4 or not 0 <= addr < 1 << 32:
                raise ValueError(f"address {addr:#x} is not a 32-bit word address (a multiple of 4)")
            h += addr.to_bytes(4, "little")
        if n is not None:
            h += n.to_bytes(2, "little")
        return h + bytes([check_byte(h)])

    def _send(self, data):
        self.t.write(data)
        self.stats["bytes_out"] += len(data)
        self._in_flight = len(data)

    def _recv(self, n, what):
        # the answer comes after the rest of the command has gone out
        timeout = self.timeout + (2 * n + self._in_flight) * self.t.byte_time
        self._in_flight = 0
        data = self.t.read(n, timeout)
        self.stats["bytes_in"] += len(data)
        if len(data) < n:
            raise LinkTimeout(f"{what}: {len(data)} of {n} answer bytes within {timeout:.3g} s"
                              + (f" (got {data.hex()})" if data else ""))
        return data

    def _status(self, what):
        s = self._recv(1, what)[0]
        if s != Status.OK:
            name = Status(s).name if s in Status._value2member_map_ else f"unknown status {s:#04x}"
            raise BridgeError(f"{what}: the bridge answered {name}", s)

    def _command(self, fn, what, retry=True):
        self.stats["commands"] += 1
        attempts = 1 + (self.retries if retry else 0)
        for attempt in range(attempts):
            try:
                return fn()
            except BridgeError:
                if attempt + 1 == attempts:
                    raise
                self.stats["retries"] += 1
                self.resync()

    def resync(self):
        """Bring the bridge back to the start of a command: drop what has not been
        sent yet, wait longer than its inter-byte timeout, discard what has arrived,
        and check with a PING."""
        self.t.flush()
        self.t.sleep(self.resync_wait)
        self.t.flush()
        self._send(self._header(Op.PING))
        self._status("ping after resynchronisation")

    def ping(self):
        def do():
            self._send(self._header(Op.PING))
            self._status("ping")
        self._command(do, "ping")

    def write32(self, addr, value, *, retry=True):
        """Write the 32-bit word `value` at byte address `addr` (a multiple of 4)."""
        data = (value & 0xFFFF_FFFF).to_bytes(4, "little")
        frame = self._header(Op.WRITE, addr) + data + bytes([check_byte(data)])

        def do():
            self._send(frame)
            self._status(f"write {addr:#010x}")
        self._command(do, "write", retry)

    def read32(self, addr):
        """The 32-bit word at byte address `addr` (a multiple of 4)."""
        return self._read(Op.READ, addr, 1)[0]

    def write_block(self, addr, words):
        """Write consecutive words (ints, or bytes of a multiple of 4 bytes) from `addr`."""
        if isinstance(words, (bytes, bytearray, memoryview)):
            if len(words) % 4:
                raise ValueError(f"a block of {len(words)} bytes is not a whole number of words")
            data = bytes(words)
        else:
            data = b"".join((w & 0xFFFF_FFFF).to_bytes(4, "little") for w in words)
        for i in range(0, len(data), 4 * MAX_BLOCK_WORDS):
            chunk = data[i:i + 4 * MAX_BLOCK_WORDS]
            a = addr + i
            frame = self._header(Op.WRITE_BLOCK, a, len(chunk) // 4) + chunk + bytes([check_byte(chunk)])

            def do(frame=frame, a=a, n=len(chunk) // 4):
                self._send(frame)
                self._status(f"block write of {n} words at {a:#010x}")
            self._command(do, "write block")

    def read_block(self, addr, n):
        """`n` consecutive words from `addr`, as a list of ints."""
        words = []
        for i in range(0, n, MAX_BLOCK_WORDS):
            words += self._read(Op.READ_BLOCK, addr + 4 * i, min(MAX_BLOCK_WORDS, n - i))
        return words

    def _read(self, op, addr, n):
        frame = self._header(op, addr, n if op == Op.READ_BLOCK else None)

        def do():
            what = f"read of {n} words at {addr:#010x}"
            self._send(frame)
            self._status(what)
            data = self._recv(4 * n + 1, what)
            if check_byte(data[:-1]) != data[-1]:
                raise BridgeError(f"{what}: the data check byte does not match")
            return [int.from_bytes(data[4 * i:4 * i + 4], "little") for i in range(n)]
        return self._command(do, "read")

    # --- memory -----------------------------------------------------------------------

    def read_memory(self, addr, n):
        """`n` bytes of the data memory (or of any byte range of the host port) from `addr`."""
        if n <= 0:
            return b""
        lo, hi = addr & ~3, (addr + n + 3) & ~3
        data = b"".join(w.to_bytes(4, "little") for w in self.read_block(lo, (hi - lo) // 4))
        return data[addr - lo:addr - lo + n]

    def write_memory(self, addr, data):
        """Write bytes at any address; partial words at the ends are read, merged and
        written back (the bridge writes whole words)."""
        data = bytes(data)
        if not data:
            return
        lo, hi = addr & ~3, (addr + len(data) + 3) & ~3
        if lo != addr or hi != addr + len(data):
            buf = bytearray(hi - lo)
            if lo != addr:
                buf[:4] = self.read_memory(lo, 4)
            if hi != addr + len(data):
                buf[-4:] = self.read_memory(hi - 4, 4)
            buf[addr - lo:addr - lo + len(data)] = data
            data = bytes(buf)
        self.write_block(lo, data)

    # --- the core ---------------------------------------------------------------------

    def identify(self):
        """(MEM_BYTES, FEATURES) after checking the ID register."""
        ident = self.read32(Reg.ID)
        if ident != ID_VALUE:
            raise BridgeError(f"the ID register reads {ident:#010x}, not {ID_VALUE:#010x}: not an xDSA core")
        return self.read32(Reg.MEM_BYTES), self.read32(Reg.FEATURES)

    def load_image(self, image, *, full=True):
        """Load `image` (a golden `Image`): the data memory, the key tables and START.
        With ``full`` (default) the whole data memory and all key tables are written
        (zeros where the image has nothing), so the core starts from the state the
        golden model starts from; otherwise only the image's segments and the key
        table words holding presets."""
        mem_bytes, _ = self.identify()
        if image.end > mem_bytes:
            raise ValueError(f"the image ends at {image.end:#x}, beyond the core's {mem_bytes} bytes of memory")
        if full:
            self.write_block(0, bytes(image.memory(mem_bytes)))
        else:
            for seg in image.segments:
                self.write_memory(seg.address, seg.data)
        keys = {}
        for (t, i), n in image.keys.items():
            keys[256 * t + i] = n
        if full:
            table = bytes(keys.get(j, 0) for j in range(1024))
            self.write_block(Reg.KEYS, table)
        else:
            for w in sorted({j & ~3 for j in keys}):
                old = self.read32(Reg.KEYS + w).to_bytes(4, "little")
                new = bytes(keys.get(w + b, old[b]) for b in range(4))
                self.write32(Reg.KEYS + w, int.from_bytes(new, "little"))
        self.write32(Reg.START, image.start & 0xFFFF_FFFF)
        self.write32(Reg.START + 4, image.start >> 32)

    def start(self):
        """Start the core at START (ignored by the core while it is busy). Not retried:
        a start is not idempotent."""
        self.write32(Reg.CTRL, 1, retry=False)

    def clear(self):
        """Clear the status and the counters (CTRL bit 1)."""
        self.write32(Reg.CTRL, 2)

    def _read64(self, addr):
        for _ in range(4):
            hi = self.read32(addr + 4)
            lo = self.read32(addr)
            if self.read32(addr + 4) == hi:
                return hi << 32 | lo
        raise BridgeError(f"the 64-bit register at {addr:#x} keeps changing")

    def status(self):
        """The core's `CoreStatus` (STATUS, FAULT, FAULT_PC, CYCLES, RETIRED)."""
        st = self.read32(Reg.STATUS)
        return CoreStatus(busy=bool(st & 1), stopped=bool(st & 2), reason=_REASONS[(st >> 8) & 3] if st & 2 else None,
                          fault=self.read32(Reg.FAULT) & 0xFF, fault_pc=self._read64(Reg.FAULT_PC),
                          cycles=self._read64(Reg.CYCLES), retired=self._read64(Reg.RETIRED))

    def wait(self, timeout=10.0, poll=None):
        """Poll STATUS (every `poll` seconds; default: the transport's) until the core
        has stopped; returns its `CoreStatus`. Raises `TimeoutError` if it is still
        running after `timeout` seconds."""
        poll = self.t.default_poll if poll is None else poll
        deadline = self.t.clock() + timeout
        while True:
            st = self.read32(Reg.STATUS)
            if st & 2:
                return self.status()
            if self.t.clock() > deadline:
                raise TimeoutError(f"the core is still {'busy' if st & 1 else 'idle (not started?)'} "
                                   f"after {timeout} s: {self.status()}")
            if poll:
                self.t.sleep(poll)

    def run(self, image, *, timeout=10.0, full=True):
        """`load_image`, `start`, `wait`: returns the `CoreStatus`."""
        self.load_image(image, full=full)
        self.start()
        return self.wait(timeout)


# --- transports -----------------------------------------------------------------------------

class SerialTransport:
    """A POSIX serial port in raw 8N1 mode at `baud` (a rate termios knows: B115200,
    B1000000, B3000000...)."""

    default_timeout = 1.0
    default_poll = 0.001

    def __init__(self, path, baud=1_000_000, *, timeout_bits=DEFAULT_TIMEOUT_BITS):
        import termios
        speed = getattr(termios, f"B{baud}", None)
        if speed is None:
            raise ValueError(f"{baud} baud is not a standard termios rate on this system")
        self.path, self.baud = path, baud
        self.byte_time = 10 / baud
        self.timeout_bits = timeout_bits
        self.fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        try:
            attrs = termios.tcgetattr(self.fd)
            iflag, oflag, cflag, lflag, _, _, cc = attrs
            iflag &= ~(termios.IGNBRK | termios.BRKINT | termios.PARMRK | termios.ISTRIP | termios.INLCR |
                       termios.IGNCR | termios.ICRNL | termios.IXON | termios.IXOFF | termios.IXANY)
            oflag &= ~termios.OPOST
            lflag &= ~(termios.ECHO | termios.ECHONL | termios.ICANON | termios.ISIG | termios.IEXTEN)
            cflag &= ~(termios.CSIZE | termios.PARENB | termios.CSTOPB | getattr(termios, "CRTSCTS", 0))
            cflag |= termios.CS8 | termios.CREAD | termios.CLOCAL
            cc[termios.VMIN], cc[termios.VTIME] = 0, 0
            termios.tcsetattr(self.fd, termios.TCSANOW, [iflag, oflag, cflag, lflag, speed, speed, cc])
            termios.tcflush(self.fd, termios.TCIOFLUSH)
        except Exception:
            os.close(self.fd)
            raise

    def write(self, data):
        view = memoryview(bytes(data))
        while view:
            _, w, _ = select.select([], [self.fd], [], 5.0)
            if not w:
                raise LinkTimeout(f"{self.path}: cannot write")
            n = os.write(self.fd, view)
            view = view[n:]

    def read(self, n, timeout):
        out = bytearray()
        deadline = time.monotonic() + timeout
        while len(out) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                out += os.read(self.fd, n - len(out))
        return bytes(out)

    def flush(self):
        import termios
        termios.tcflush(self.fd, termios.TCIOFLUSH)

    def clock(self):
        return time.monotonic()

    def sleep(self, seconds):
        time.sleep(seconds)

    def close(self):
        os.close(self.fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class SimTransport:
    """The serial line to `dut` (an Amaranth component with ``rx``/``tx`` ports, the
    bridge's pins) in an Amaranth simulation with a `clock_period` (seconds) clock,
    `divisor` cycles per bit. ``vcd``: a waveform file. `inject` puts raw levels
    on the line (breaks, glitches, framing errors). The bridge's inter-byte timeout
    is taken from ``dut.timeout_bits`` if it has one."""

    default_poll = 0

    def __init__(self, dut, divisor, *, clock_period=1e-8, vcd=None):
        from amaranth.sim import Simulator
        self.dut = dut
        self.bit = divisor * clock_period
        self.byte_time = 10 * self.bit
        self.default_timeout = 200 * self.byte_time
        self.timeout_bits = getattr(dut, "timeout_bits", DEFAULT_TIMEOUT_BITS)
        self.period = clock_period
        self.tx_queue = bytearray()        # host -> device, bytes still to send
        self.rx_buffer = bytearray()       # device -> host, bytes received
        self.injections = []               # (after this many bytes, line levels, replace a byte)
        self.bytes_sent = 0
        self.cycles = 0
        self.frame_errors = 0
        self.sim = Simulator(dut)
        self.sim.add_clock(clock_period)
        self.sim.add_testbench(self._drive, background=True)
        self.sim.add_testbench(self._receive, background=True)
        self._vcd = self.sim.write_vcd(vcd) if vcd else None
        if self._vcd:
            self._vcd.__enter__()

    async def _drive(self, ctx):
        ctx.set(self.dut.rx, 1)
        while True:
            if self.injections and self.injections[0][0] <= self.bytes_sent:
                _, levels, replace = self.injections.pop(0)
                if replace and self.tx_queue:
                    self.tx_queue.pop(0)
                    self.bytes_sent += 1
                for level in levels:
                    ctx.set(self.dut.rx, level)
                    await ctx.delay(self.bit)
                ctx.set(self.dut.rx, 1)
            elif self.tx_queue:
                byte = self.tx_queue.pop(0)
                self.bytes_sent += 1
                for level in [0] + [(byte >> i) & 1 for i in range(8)] + [1]:
                    ctx.set(self.dut.rx, level)
                    await ctx.delay(self.bit)
            else:
                await ctx.delay(self.bit)

    async def _receive(self, ctx):
        while True:
            await ctx.negedge(self.dut.tx)
            await ctx.delay(1.5 * self.bit)
            byte = 0
            for i in range(8):
                byte |= ctx.get(self.dut.tx) << i
                await ctx.delay(self.bit)
            if ctx.get(self.dut.tx):
                self.rx_buffer.append(byte)
            else:
                self.frame_errors += 1
            await ctx.delay(0.25 * self.bit)       # leave the stop bit before looking for an edge

    @property
    def now(self):
        return self.cycles * self.period

    def _advance(self, seconds):
        self.cycles += max(1, math.ceil(seconds / self.period - 1e-6))     # whole cycles
        self.sim.run_until(self.now)

    def write(self, data):
        self.tx_queue += bytes(data)

    def inject(self, levels, after=0, replace=False):
        """Put raw line levels (one per bit time: a break, a glitch, a bad frame) on
        the line once `after` more bytes have been sent; with `replace`, instead of
        the next byte (``inject([], after, replace=True)`` loses a byte)."""
        self.injections.append((self.bytes_sent + after, list(levels), replace))

    def read(self, n, timeout):
        deadline = self.now + timeout
        while len(self.rx_buffer) < n and self.now < deadline:
            self._advance(min(self.byte_time, deadline - self.now))
        out, self.rx_buffer[:] = bytes(self.rx_buffer[:n]), self.rx_buffer[n:]
        return out

    def flush(self):
        self.tx_queue.clear()
        self.rx_buffer.clear()

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self._advance(seconds)

    def close(self):
        if self._vcd:
            self._vcd.__exit__(None, None, None)
            self._vcd = None


def main(argv=None):
    """``python -m xdsa.hostclient PORT IMAGE``: run an image on a board and compare
    its end state with the golden model."""
    import argparse
    import sys
    from xdsa.golden.image import Image, ImageError
    from xdsa.golden.machine import Machine
    p = argparse.ArgumentParser(prog="python -m xdsa.hostclient",
                                description="run an xDSA image on a board through the UART bridge")
    p.add_argument("port", help="serial device, e.g. /dev/ttyUSB0 (ULX3S) or /dev/ttyUSB1 (iCEBreaker)")
    p.add_argument("image")
    p.add_argument("--baud", type=int, default=1_000_000)
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the program")
    p.add_argument("--no-compare", action="store_true", help="do not compare with the golden model")
    args = p.parse_args(argv)
    try:
        image = Image.load(args.image)
        with SerialTransport(args.port, args.baud) as t:
            c = HostClient(t)
            c.resync()
            mem_bytes, features = c.identify()
            print(f"core: {mem_bytes} bytes of memory, FEATURES {features:#08x}")
            st = c.run(image, timeout=args.timeout)
            print(st)
            status = 0 if st.reason in ("end", "exit") else 2
            if not args.no_compare:
                from xdsa.hw.config import CONFIGS
                from xdsa.hw.hostport import features as features_of
                from xdsa.sim.cosim import run_golden
                config = next((cfg for cfg in CONFIGS.values()
                               if (cfg.mem_bytes, features_of(cfg)) == (mem_bytes, features)), None)
                if config is None:
                    print("no known configuration has these features; comparing with a full golden model")
                    m = Machine(mem_bytes)
                    m.load(image)
                    g = m.run()
                    g_mem = bytes(m.mem)
                else:
                    print(f"configuration {config.name}")
                    g = run_golden(image, config)
                    g_mem = g.memory
                mem = c.read_memory(0, mem_bytes)
                diffs = [a for a in range(mem_bytes) if mem[a] != g_mem[a]]
                same = g.status == st.reason and (g.status != "fault" or (int(g.fault), g.fault_pc) ==
                                                  (st.fault, st.fault_pc))
                print(f"golden model: {g.status}; " + ("same stop" if same else "DIFFERENT stop") +
                      (f", memory differs at {len(diffs)} bytes (first {diffs[0]:#x})" if diffs else
                       ", same memory"))
                if diffs or not same:
                    status = 4
            return status
    except (OSError, ImageError, BridgeError, TimeoutError, ValueError) as e:
        print(f"xdsa.hostclient: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    import sys
    sys.exit(main())
