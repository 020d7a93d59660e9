"""The instruction fetcher: reads a program in the storage format from the data
memory and hands its instructions to the core in order, one `FetchItem` each.

The storage format (golden/storage.py, D-PC, D-STORAGE-PAD): groups of 32
instructions, 544 bytes each: a 32-byte DID pack (DID i in byte i), then 16
32-byte rows of two 128-bit payloads. The PC of an instruction is the address of
its payload. A program is contiguous, so the fetcher simply reads consecutive
memory rows from ``start_addr // row_bytes`` upwards and parses them by their
position in the group.

Behaviour (the golden model's ``Machine._fetch``):

* ``start`` (one-cycle pulse) with ``start_addr``: emit the program's
  instructions on ``out`` as {pc, did, payload, fault=0} until the one whose DID is
  END has been emitted; then go idle (``busy`` low).
* A misaligned start (not a multiple of 32), or an instruction whose 16-byte
  payload is not entirely inside ``[0, mem_bytes)``: emit one item {pc, did=0,
  payload=0, fault=FETCH_RANGE} and go idle. For a bad start the PC is
  ``start_addr + 32`` (modulo 2**64). No memory read outside the memory is ever
  requested.
* ``stop`` (one-cycle pulse): abandon everything (buffered instructions, a
  response still due, a request not yet granted) and go idle. ``stop`` wins over
  a ``start`` in the same cycle; a ``start`` may follow in the next cycle, and a
  ``start`` while busy restarts from scratch.

Interfaces: ``out`` follows the stream rules (``valid`` does not depend on
``ready``; once high, ``valid`` and the payload hold until the transfer, except
that ``stop``/``start`` withdraw them). ``mem.req`` holds its request until it is
granted, except when fetching ends (END emitted, a fault, ``stop``, ``start``):
then an ungranted read request is withdrawn, which is harmless because reads have
no side effects and the memory system's grant is combinational. No output
depends combinationally on an input.

Microarchitecture (mirrored register for register by the cycle model
`xdsa.golden.cycle.fetcher.FetcherModel`):

* request side: the next row ``req_row``; a request is offered while ``req_row <
  rows`` and the buffer has room for every response that may still arrive
  (``count`` plus the responses in flight below ``depth``); that verdict is a
  register loaded with its next value (the cycle model computes it from the
  registers it stands for: the same value). Rows after the program's END may be
  read (at most ``depth`` of them).
* response side: ``pending`` has one bit per cycle of the memory's read latency
  ``L = config.mem_latency``; bit 0 marks the response due this cycle. The first ``32 //
  row_bytes`` rows of each group are shifted into the 256-bit DID-pack register;
  each payload row (row_bytes 16 or 32; with 8-byte rows, each pair of rows, the
  first one kept in ``stage``) becomes one buffer entry of ``max(1, row_bytes //
  16)`` instructions with their DIDs, which are then shifted out of the DID-pack
  register. Responses arrive in order, so the next group's DID pack only replaces
  the register once every payload row of the current group has been parsed: the
  DID-pack read is hidden.
* buffer: ``depth`` entries (default: the configuration's ``fetch_depth``, else
  4 with 32-byte rows and 3 otherwise; `tiny` has 1: the core keeps the
  instruction it executes at the output, and the next one is fetched only when
  it retires: slower sequencing, for 250 fewer iCE40 logic cells than 2 entries).
* output: ``pc``/``slot`` of the next instruction and ``sub``, the instruction
  within the head entry; ``out`` is combinational from these registers and the
  head entry. Whether the payload at ``pc`` lies outside the memory is a register
  too, updated with ``pc`` (the cycle model compares ``pc`` itself: the same value),
  and so is "the item is a fault" (it zeroes the output's DID and payload). The
  head's DID is a register too, loaded with the DID at the next read pointer (the
  cycle model reads it from the buffer: the same value); copies of the read
  pointer, one per 64 payload bits, select the payload.

Latency: the first item is valid ``32 // row_bytes + max(1, 16 // row_bytes) + 1 + L``
cycles after the ``start`` cycle (4, 5 and 8 cycles with 32-, 16- and 8-byte rows and
``L = 1``) when every request is granted; a fault item for a bad start 1 cycle after.

Throughput with ``out.ready`` high and every request granted: 1 instruction per
cycle with 32-byte rows, including across group boundaries (17 row reads per 32
instructions); 32/34 with 16-byte rows and 32/68 with 8-byte rows (bound by the
memory: 34 and 68 row reads per group).
"""

from amaranth.hdl import Array, Assert, Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from xdsa.golden.cycle.fetcher import configured_depth
from xdsa.golden.isa import DID, Fault, GROUP_BYTES, GROUP_SIZE, DID_PACK_BYTES, PAYLOAD_BYTES

from .bus import FetchItem, ReadPort, row_addr_bits
from .config import CoreConfig
from .replicate import replicas, slices

__all__ = ["Fetcher"]


class Fetcher(wiring.Component):
    """Instruction fetcher (see the module docstring).

    Parameters
    ----------
    config : CoreConfig
    depth : int
        Buffer entries (default `configured_depth(config)`: ``config.fetch_depth``,
        else 4 with 32-byte rows and 3 otherwise); each holds one payload row of the
        storage format (two instructions with 32-byte rows, one otherwise).
    checks : bool
        Assert every cycle that the registered fault flag equals its direct form and
        the read pointer's copies equal it (simulation only; the tests set it).

    Ports
    -----
    start : In(1)         one-cycle pulse: begin fetching at ``start_addr``
    start_addr : In(64)   byte address of the program (its first DID pack)
    stop : In(1)          one-cycle pulse: abandon everything, go idle
    mem : Out(ReadPort)   read port into the data memory
    out : Out(stream.Signature(FetchItem))   the instructions, in order
    head_domain : Out(max(1, len(config.domains)))   bit i: the head's DID is
                          ``config.domains[i]`` (a register; meaningful with ``out.valid``
                          and no fault; 0 without domains)
    busy : Out(1)         fetching (from the cycle after ``start`` until the cycle
                          after the END or fault item transferred, or ``stop``)
    """

    def __init__(self, config: CoreConfig, depth: int = None, *, checks: bool = False):
        if not isinstance(config, CoreConfig):
            raise TypeError(f"config must be a CoreConfig, not {config!r}")
        if depth is None:
            depth = configured_depth(config)
        if not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth must be a positive number of buffer entries, not {depth!r}")
        self._config, self._depth, self._checks = config, depth, checks
        super().__init__({
            "start": In(1),
            "start_addr": In(64),
            "stop": In(1),
            "mem": Out(ReadPort(addr_bits=row_addr_bits(config.rows), row_bits=config.row_bits)),
            "out": Out(stream.Signature(FetchItem)),
            "head_domain": Out(max(1, len(config.domains))),
            "busy": Out(1),
        })

    @property
    def config(self) -> CoreConfig:
        return self._config

    @property
    def depth(self) -> int:
        return self._depth

    @property
    def head_is_register(self) -> bool:
        """Whether ``out.payload.payload`` is a buffer register as it stands (one entry of
        one instruction); otherwise the read pointer and ``sub`` select it through
        multiplexers."""
        return self._depth == 1 and self._config.row_bytes <= PAYLOAD_BYTES

    def elaborate(self, platform):
        m = Module()
        cfg, depth = self._config, self._depth
        rb, rows, mem_bytes = cfg.row_bytes, cfg.rows, cfg.mem_bytes
        ab = row_addr_bits(rows)
        per = max(1, rb // PAYLOAD_BYTES)           # instructions per buffer entry
        did_rows = DID_PACK_BYTES // rb             # rows of a DID pack
        group_rows = GROUP_BYTES // rb              # rows of a group

        # --- registers --------------------------------------------------------------
        # Reset-less (data): pc, slot and req_row are loaded by `start` and used only while
        # `running`; the DID pack, the staged half row and the buffer entries are read only
        # under `pos`, `count` and the read pointer, which keep their reset.
        running = Signal()                          # = busy
        bad = Signal()                              # the start was misaligned / out of memory
        pc = Signal(64, reset_less=True)            # PC of the next instruction to emit
        slot = Signal(range(GROUP_SIZE), reset_less=True)   # its slot in the group
        sub = Signal(range(max(per, 2)))            # its place in the head entry (1 bit at least)
        req_row = Signal(ab + 1, reset_less=True)   # next row to request
        L = cfg.mem_latency
        pending = Signal(L)                         # responses in flight; bit 0: due this cycle
        pos = Signal(range(group_rows))             # that response's row within its group
        # pos < did_rows (the response is a DID pack's row) as a register loaded with pos:
        # the compare's carry chain, 75 tiles from the push decision that enables the
        # buffer's 241 entry registers, began the placed `base`'s worst path (pos -> the
        # push -> the write pointer -> the head's DID, 17.31 ns, session 51)
        in_dids = Signal(init=1)
        dids = Signal(8 * DID_PACK_BYTES, reset_less=True)          # DID pack (shifted out as used)
        stage = Signal(64, reset_less=True, name="stage") if rb == 8 else None  # first half of a payload (8-byte rows)
        buf_payload = Array(Signal(128 * per, name=f"buf_payload_{i}", reset_less=True) for i in range(depth))
        buf_did = Array(Signal(8 * per, name=f"buf_did_{i}", reset_less=True) for i in range(depth))
        wp = Signal(range(max(depth, 2)))           # (1 bit at least: no zero-width signals
        rp = Signal(range(max(depth, 2)))           # in the Verilog of a 1-entry buffer)
        count = Signal(range(depth + 1))

        # --- output -----------------------------------------------------------------
        head_payload = Signal(128)
        head_did = Signal(8)
        # rp selects the head's DID (which the core decodes at once: a domain instruction
        # retires in the cycle it is offered) and copies of rp, one per 64 bits, select
        # its payload: the DID's select is not the 128-bit multiplexer's spread net
        # (session 30: rp, fan-out 401 over 70 tiles, began a 20.4 ns path through the
        # core's routing back into the fetcher)
        rp_n = Signal.like(rp)                      # rp's next value (set below)
        m.d.comb += rp_n.eq(rp)
        m.d.sync += rp.eq(rp_n)
        rp_copies = replicas(m, platform, rp_n, slices(128), "fetch_rp")
        pieces = 128 // len(rp_copies)
        if per == 1:
            m.d.comb += head_payload.eq(Cat(buf_payload[r][pieces * j:pieces * (j + 1)]
                                            for j, r in enumerate(rp_copies)))
        else:
            m.d.comb += head_payload.eq(Cat(buf_payload[r].word_select(sub, 128)[pieces * j:pieces * (j + 1)]
                                            for j, r in enumerate(rp_copies)))
        # The head's DID is a register loaded with its next value (`buf_did[rp][sub]` after
        # this cycle, the entry written in this cycle included), so the core decodes a
        # register: rp's select and the buffer's multiplexers were the head of the placed
        # `base`'s path rp -> the DID -> the core's retire -> the fetcher's pc (18.7 ns,
        # session 36). The transfer (`out_fire`, late from the core) picks the next value
        # last among candidates computed from registers.
        head_did = Signal(8, reset_less=True)         # (read under out.valid, as the model's)
        # the payload at pc is not all in memory: a register, set with pc (a good start's
        # first pc is in range; a bad start faults whatever it holds), so the fault
        # item's multiplexers do not wait for a 64-bit compare
        out_of_range = Signal()
        # pc only advances while it is in range (pc <= mem_bytes - 16), so the advance
        # (at most + 48) never carries out of the low `pc_lo_bits` bits, and the high
        # bits (nonzero only for a bad start) are loaded by `start` alone
        pc_lo_bits = min(64, (mem_bytes + DID_PACK_BYTES + PAYLOAD_BYTES).bit_length())
        # the item is a fault (running & (bad | out_of_range)), as a register loaded with
        # that next value: it zeroes the output's 136 payload and DID bits, whose
        # multiplexers then wait for no logic (session 29: the range flag through this
        # AND, fan-out 106, into the core's decoder was a 21.8 ns path of the placed `base`)
        fault = Signal()
        # the request's valid (running & ~bad & req_row < rows & the buffer has room for
        # every response in flight) as a register loaded with its next value: the room
        # test's sum of `count` and `pending` ran into the memory's request multiplexers
        # and on to its address register by the block RAMs (18.1 ns, 14 ns of it wire, on
        # two placements of `base`, session 53)
        req_valid = Signal()

        m.d.comb += [
            self.out.valid.eq(running & (fault | (count != 0))),
            self.out.payload.pc.eq(pc),
            self.out.payload.did.eq(Mux(fault, 0, head_did)),
            self.out.payload.payload.eq(Mux(fault, 0, head_payload)),
            self.out.payload.fault.eq(Mux(fault, Fault.FETCH_RANGE, 0)),
            self.mem.req.valid.eq(req_valid),
            self.mem.req.payload.eq(req_row[:ab]),
            self.busy.eq(running),
        ]

        out_fire = Signal()
        req_fire = Signal()
        finish = Signal()                           # the last item (END or fault) transfers
        popped = Signal()
        pushed = Signal()
        last_sub = sub == per - 1                   # the head entry's last instruction
        rp_inc = Mux(rp == depth - 1, 0, rp + 1)    # the entry after the head
        m.d.comb += [
            out_fire.eq(self.out.valid & self.out.ready),
            req_fire.eq(self.mem.req.valid & self.mem.req.ready),
            finish.eq(out_fire & (fault | (head_did == DID.END))),
            popped.eq(out_fire & ~fault & last_sub),
        ]

        # --- response parser --------------------------------------------------------
        rsp = self.mem.rsp.payload
        with m.If(pending[0] & self.mem.rsp.valid):
            m.d.sync += [pos.eq(Mux(pos == group_rows - 1, 0, pos + 1)),
                         in_dids.eq(Mux(pos == group_rows - 1, 1, pos + 1 < did_rows))]
            with m.If(in_dids):
                m.d.sync += dids.eq(Cat(dids[8 * rb:], rsp))
            if stage is not None:
                with m.Elif(~pos[0]):               # first half of a payload (did_rows is even)
                    m.d.sync += stage.eq(rsp)
            with m.Else():
                m.d.comb += pushed.eq(1)
                payload = Cat(stage, rsp) if stage is not None else rsp
                for i in range(depth):
                    with m.If(wp == i):
                        m.d.sync += [buf_payload[i].eq(payload), buf_did[i].eq(dids[:8 * per])]
                m.d.sync += [dids.eq(dids >> (8 * per)),
                             wp.eq(Mux(wp == depth - 1, 0, wp + 1))]

        # --- requests, output advance -------------------------------------------------
        with m.If(req_fire):
            m.d.sync += req_row.eq(req_row + 1)
        # the next PC and its range check come from registers only (assigned outside the
        # output's If, so that the transfer is just their load enable: inside it, the
        # core's `ready` ran through the adder and the compare, 20.5 ns in the placed `base`
        # of session 32)
        pc_next = Signal(pc_lo_bits)
        m.d.comb += pc_next.eq(pc[:pc_lo_bits] + Mux(slot == GROUP_SIZE - 1,
                                                      PAYLOAD_BYTES + DID_PACK_BYTES, PAYLOAD_BYTES))
        past_end = pc_next > mem_bytes - PAYLOAD_BYTES if mem_bytes >= PAYLOAD_BYTES else Const(1)
        with m.If(out_fire & ~fault):
            # (running, as the item transferred; bad is 0, as it was no fault)
            m.d.sync += [pc[:pc_lo_bits].eq(pc_next), slot.eq(slot + 1),
                         out_of_range.eq(past_end), fault.eq(past_end)]
            if per > 1:
                m.d.sync += sub.eq(Mux(popped, 0, sub + 1))
        with m.If(popped):
            m.d.comb += rp_n.eq(rp_inc)

        def did_after(r, s):                        # buf_did[r][s] after this cycle's push
            entry = Mux(pushed & (wp == r), dids[:8 * per], buf_did[r])
            return entry.word_select(s, 8) if per > 1 else entry
        advance = Mux(last_sub, did_after(rp_inc, 0), did_after(rp, sub + 1)) if per > 1 else did_after(rp_inc, 0)
        head_next = Signal(8)
        m.d.comb += head_next.eq(Mux(self.start, did_after(0, 0), Mux(out_fire & ~fault, advance, did_after(rp, sub))))
        m.d.sync += head_did.eq(head_next)
        # whether the head is a domain instruction with a port, per DID, as registers with
        # it: the core takes such an instruction in the cycle it sees it, and the DID's
        # compare there was on the path head_did -> the core's domain decision -> the
        # fetcher's read pointer copies (16.35 ns in the placed `base`, session 54)
        if cfg.domains:
            m.d.sync += self.head_domain.eq(Cat(head_next == d for d in cfg.domains))
        m.d.sync += [count.eq(count + pushed - popped), pending.eq(Cat(pending[1:], req_fire))]
        # req_valid's next value: the room test is `ahead + req_fire - popped < depth` with
        # `ahead` (the responses still due after this cycle's plus the buffer after this
        # cycle's push) from registers; its three outcomes are computed before the late
        # grant and transfer pick one (`popped` implies count >= 1, so ahead >= 1 then)
        ahead = Signal(range(L + depth + 2))
        m.d.comb += ahead.eq(sum((pending[k] for k in range(1, L)), count + pushed))
        room_n = Mux(req_fire, Mux(popped, ahead < depth, ahead + 1 < depth),
                     Mux(popped, ahead - 1 < depth, ahead < depth))
        rows_n = Mux(req_fire, req_row < rows - 1, req_row < rows)
        m.d.sync += req_valid.eq(running & ~bad & rows_n & room_n)

        # --- end of fetching, start, stop (later statements win) -------------------------
        with m.If(finish):
            m.d.sync += [running.eq(0), pending.eq(0), fault.eq(0), req_valid.eq(0)]
        with m.If(self.start):
            a = self.start_addr
            start_bad = (a[:5] != 0) | (a > mem_bytes - DID_PACK_BYTES - PAYLOAD_BYTES
                                        if mem_bytes >= DID_PACK_BYTES + PAYLOAD_BYTES else Const(1))
            m.d.sync += [running.eq(1), bad.eq(start_bad), fault.eq(start_bad),
                         pc.eq(a + DID_PACK_BYTES), out_of_range.eq(0),
                         slot.eq(0), sub.eq(0), req_row.eq(a[exact_log2(rb):]),
                         pending.eq(0), pos.eq(0), in_dids.eq(1), wp.eq(0), count.eq(0),
                         # (a good start's rows are in memory, and the buffer is empty)
                         req_valid.eq(~start_bad)]
            m.d.comb += rp_n.eq(0)
        with m.If(self.stop):
            m.d.sync += [running.eq(0), pending.eq(0), fault.eq(0), req_valid.eq(0)]
        if self._checks:
            m.d.sync += Assert(fault == (running & (bad | out_of_range)), "Fetcher: fault differs")
            m.d.sync += Assert(in_dids == (pos < did_rows), "Fetcher: in_dids differs from pos < did_rows")
            room = sum((pending[k] for k in range(L)), count) < depth
            m.d.sync += Assert(req_valid == (running & ~bad & (req_row < rows) & room),
                               "Fetcher: the request's valid register differs from its direct form")
            m.d.sync += [Assert(r == rp, "Fetcher: a copy of rp differs") for r in rp_copies]
            direct = buf_did[rp].word_select(sub, 8) if per > 1 else buf_did[rp]
            m.d.sync += Assert(head_did == direct, "Fetcher: the head's DID register differs")
            if cfg.domains:
                m.d.sync += Assert(self.head_domain == Cat(head_did == d for d in cfg.domains),
                                   "Fetcher: the head's domain flags differ from its DID")

        return m
