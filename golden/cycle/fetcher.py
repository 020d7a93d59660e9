"""Cycle model of the instruction fetcher (`xdsa.hw.fetch.Fetcher`).

`FetcherModel` is a register-transfer description of the RTL fetcher in plain
Python: the same registers, updated by the same rules at every clock edge. Given
the data memory and the per-cycle inputs, it predicts every output of the RTL in
every cycle, including the payloads of streams whose ``valid`` is low (they show
the same stale register contents as the RTL). Tests run both side by side and
compare them cycle by cycle (``tests/hw/test_fetch.py``).

What the fetcher does (the storage format of golden/storage.py, D-PC):

* ``start`` (a one-cycle pulse) with ``start_addr`` begins a program. It reads
  the memory rows from ``start_addr // row_bytes`` upwards, one row per granted
  request, and emits the instructions in order as `FetchItem` {pc, did, payload,
  fault=0} until it has emitted the one whose DID is END; then it is idle.
* A start address that is not 32-byte aligned, or an instruction whose 16-byte
  payload does not lie entirely within ``[0, mem_bytes)``, gives one item
  {pc, did=0, payload=0, fault=FETCH_RANGE} and the fetcher goes idle.
* ``stop`` (a one-cycle pulse) abandons everything (prefetched rows, a response
  still due, a request not yet granted) and goes idle. ``stop`` wins over a
  ``start`` in the same cycle; a ``start`` while busy restarts from scratch.

Microarchitecture (the RTL's registers, mirrored one for one here):

* request side: ``req_row``, the next memory row; a request is offered while
  running, the start was good, ``req_row < rows`` and the buffer has room for
  every response that may still arrive (``count`` plus the responses in flight
  below ``depth``).
* ``pending``: one bit per cycle of the memory's read latency ``L =
  config.mem_latency`` (bus.py): bit 0 marks the response on ``mem.rsp`` now
  (the request transferred ``L`` cycles ago), bit ``L - 1`` the request that
  transferred in the previous cycle; a stop or start cancels them all.
* response parser: ``pos``, the row's position within its 544-byte group; the
  first ``32 // row_bytes`` rows of a group are shifted into ``dids`` (the DID
  pack); each payload row (with row_bytes = 8: each pair of rows, the first one
  kept in ``stage``) becomes one buffer entry of ``per = max(1, row_bytes // 16)``
  instructions, taking its DIDs from the bottom of ``dids``, which then shifts
  down. Responses arrive in order, so a group's DID pack only replaces the
  previous one after every payload row of that group has been parsed.
* buffer: ``depth`` entries {payload, did} with ``wp``, ``rp`` and ``count``.
* output: ``pc`` and ``slot`` (next instruction), ``sub`` (which instruction of
  the head entry), ``bad`` (the start was misaligned or out of range). The output
  is combinational from these registers and the head entry, so ``out.valid`` and
  the payload hold until the transfer.
"""

from dataclasses import dataclass, fields

from ..isa import DID, Fault, GROUP_BYTES, GROUP_SIZE, DID_PACK_BYTES, PAYLOAD_BYTES

__all__ = ["FetcherModel", "FetcherOutputs", "default_depth", "configured_depth"]

M64 = (1 << 64) - 1
M128 = (1 << 128) - 1


def default_depth(row_bytes: int, mem_latency: int = 1) -> int:
    """Buffer entries of the fetcher (the RTL's and this model's default). Three
    entries are the fewest that sustain the full rate with the memory always granted
    and a read latency of 1 (32-byte rows: 1 instruction per cycle); with 32-byte rows
    a fourth one keeps that rate while the arbiter withholds about one grant in five,
    and with a read latency of 2 too. Narrower rows are limited by the memory
    bandwidth, which more entries do not raise, but with a read latency of 2 they need
    a fourth entry to keep it (16-byte rows: 0.71 instead of 0.94 instructions per
    cycle with three; 8-byte rows 0.38 instead of 0.47)."""
    return 4 if row_bytes == 32 else 2 + mem_latency


def configured_depth(config) -> int:
    """The buffer entries of `config`'s fetcher: its ``fetch_depth`` if set (a
    `CoreConfig` field), else `default_depth` of its row width and read latency."""
    return getattr(config, "fetch_depth", None) or default_depth(config.row_bytes,
                                                                 getattr(config, "mem_latency", 1))


def _row_addr_bits(rows):
    return max(1, (rows - 1).bit_length())


@dataclass(frozen=True)
class FetcherOutputs:
    """The fetcher's outputs during one cycle (all are functions of its registers)."""
    out_valid: int
    out_pc: int
    out_did: int
    out_payload: int
    out_fault: int
    req_valid: int
    req_addr: int
    busy: int

    def items(self):
        """(name, value) pairs, in field order."""
        return [(f.name, getattr(self, f.name)) for f in fields(self)]


class FetcherModel:
    """Cycle model of `xdsa.hw.fetch.Fetcher`.

    Parameters
    ----------
    config : CoreConfig (or any object with ``row_bytes`` and ``mem_bytes``)
    memory : bytes-like of ``config.mem_bytes`` bytes (numpy uint8 array, bytes,
        bytearray). It is read when a request transfers, so a caller may change it
        between cycles, as the memory system's write port would.
    depth : number of buffer entries (default: `configured_depth`); must match
        the RTL's ``Fetcher(config, depth=)``.

    Use
    ---
    Call `step` once per clock cycle with that cycle's inputs::

        model = FetcherModel(cfg, mem)
        o = model.step(start=1, start_addr=0x100)   # cycle 0: the start pulse
        o = model.step(out_ready=1, req_ready=1)    # cycle 1 ...

    `step` returns a `FetcherOutputs` with the outputs *during* that cycle (before
    the clock edge; they do not depend on that cycle's inputs) and then applies
    the clock edge. `outputs()` gives the current cycle's outputs without
    advancing. The memory read port's response is internal: the model answers its
    own granted request (``req_valid and req_ready``) ``config.mem_latency`` cycles
    later, as the memory system does (bus.py); the RTL must see its responses exactly
    then.
    """

    def __init__(self, config, memory, depth=None):
        rb = config.row_bytes
        if rb not in (8, 16, 32):
            raise ValueError(f"row_bytes must be 8, 16 or 32, not {rb!r}")
        if depth is None:
            depth = configured_depth(config)
        if not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth must be a positive number of buffer entries, not {depth!r}")
        if len(memory) != config.mem_bytes:
            raise ValueError(f"memory holds {len(memory)} bytes; expected config.mem_bytes = {config.mem_bytes}")
        self.latency = getattr(config, "mem_latency", 1)
        self.row_bytes, self.mem_bytes, self.depth = rb, config.mem_bytes, depth
        self.rows = config.mem_bytes // rb
        self.addr_bits = _row_addr_bits(self.rows)
        self.per = max(1, rb // PAYLOAD_BYTES)              # instructions per buffer entry
        self.did_rows = DID_PACK_BYTES // rb                # rows of a DID pack
        self.group_rows = GROUP_BYTES // rb                 # rows of a group
        self.memory = memory
        # Registers, at their reset values.
        self.running = self.bad = 0
        self.pc = self.slot = self.sub = 0
        self.req_row = 0
        self.pending = [0] * self.latency                   # bit 0: the response due now
        self.rsp_data = [0] * self.latency                  # the rows those responses bring
        self.pos = 0
        self.dids = 0
        self.stage = 0
        self.fifo = [(0, 0)] * depth                        # (payload, dids) per entry
        self.wp = self.rp = self.count = 0
        self.cycle = 0

    # --- combinational ----------------------------------------------------------------

    def _fault_now(self):
        return self.running and (self.bad or self.pc + PAYLOAD_BYTES > self.mem_bytes)

    def _head(self):
        payload, dids = self.fifo[self.rp]
        return (payload >> (128 * self.sub)) & M128, (dids >> (8 * self.sub)) & 0xFF

    def outputs(self) -> FetcherOutputs:
        fault = self._fault_now()
        payload, did = self._head()
        return FetcherOutputs(
            out_valid=int(bool(self.running and (fault or self.count > 0))),
            out_pc=self.pc,
            out_did=0 if fault else did,
            out_payload=0 if fault else payload,
            out_fault=int(Fault.FETCH_RANGE) if fault else 0,
            req_valid=int(bool(self.running and not self.bad and self.req_row < self.rows
                               and self.count + sum(self.pending) < self.depth)),
            req_addr=self.req_row & ((1 << self.addr_bits) - 1),
            busy=int(bool(self.running)),
        )

    def _read_row(self, row):
        rb = self.row_bytes
        return int.from_bytes(bytes(self.memory[row * rb:(row + 1) * rb]), "little")

    # --- one clock cycle ----------------------------------------------------------------

    def step(self, *, start=0, start_addr=0, stop=0, out_ready=0, req_ready=1) -> FetcherOutputs:
        """Outputs during this cycle given its inputs, then the clock edge.

        ``start``/``start_addr``/``stop`` are the fetcher's inputs, ``out_ready`` is
        ``out.ready`` and ``req_ready`` is ``mem.req.ready`` (the arbiter's grant)."""
        o = self.outputs()
        fault = self._fault_now()
        _, head_did = self._head()
        out_fire = o.out_valid and out_ready
        req_fire = o.req_valid and req_ready
        finish = out_fire and (fault or head_did == DID.END)

        # Response parser (the response to last cycle's request is on mem.rsp).
        push, entry = False, None
        due = self.pending[0]
        if due:
            data, rb = self.rsp_data[0], self.row_bytes
            n_dids, n_pos = self.dids, self.pos + 1
            n_stage = self.stage
            if self.pos < self.did_rows:
                n_dids = (self.dids >> (8 * rb)) | (data << (8 * (DID_PACK_BYTES - rb)))
            elif rb == 8 and (self.pos - self.did_rows) % 2 == 0:
                n_stage = data
            else:
                payload = (data << 64) | self.stage if rb == 8 else data
                push, entry = True, (payload, self.dids & ((1 << (8 * self.per)) - 1))
                n_dids = self.dids >> (8 * self.per)
            if n_pos == self.group_rows:
                n_pos = 0
        read = self._read_row(self.req_row) if req_fire else None

        # The clock edge: the ordinary updates, then `start` and `stop` override
        # (the same order of statements as the RTL, so `stop` wins).
        popped = bool(out_fire and not fault and self.sub == self.per - 1)
        if due:
            self.dids, self.stage, self.pos = n_dids, n_stage, n_pos
            if push:
                self.fifo[self.wp] = entry
                self.wp = (self.wp + 1) % self.depth
        if req_fire:
            self.req_row = (self.req_row + 1) & ((1 << (self.addr_bits + 1)) - 1)
        self.rsp_data = self.rsp_data[1:] + [read]
        if out_fire and not fault:
            self.pc = (self.pc + PAYLOAD_BYTES
                       + (DID_PACK_BYTES if self.slot == GROUP_SIZE - 1 else 0)) & M64
            self.slot = (self.slot + 1) % GROUP_SIZE
            self.sub = 0 if popped else self.sub + 1
            if popped:
                self.rp = (self.rp + 1) % self.depth
        self.count += int(push) - int(popped)
        self.pending = self.pending[1:] + [int(bool(req_fire))]
        if finish:
            self.running = 0
            self.pending = [0] * self.latency
        if start:
            a = int(start_addr) & M64
            self.running = 1
            self.bad = int(a % 32 != 0 or a + DID_PACK_BYTES + PAYLOAD_BYTES > self.mem_bytes)
            self.pc = (a + DID_PACK_BYTES) & M64
            self.slot = self.sub = 0
            self.req_row = (a // self.row_bytes) & ((1 << (self.addr_bits + 1)) - 1)
            self.pending = [0] * self.latency
            self.pos = 0
            self.wp = self.rp = self.count = 0
        if stop:
            self.running = 0
            self.pending = [0] * self.latency
        self.cycle += 1
        return o
