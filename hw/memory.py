"""The memory system: the data memory (SRAM rows) shared by the units of the core.

`MemorySystem` holds one `amaranth.lib.memory.Memory` of ``config.rows`` rows of
``config.row_bits`` bits (row ``r`` holds memory bytes ``r * row_bytes`` ..
``r * row_bytes + row_bytes - 1``, little-endian) and gives every unit its own
client port (`bus.ReadPort`, `bus.WritePort`, seen flipped here):

* **Physical read ports.** ``read_clients`` is a list with one list of client
  names per physical read port of the SRAM. The clients of one physical port
  share it with fixed priority: the first name in the list whose ``req.valid``
  is high is granted (its ``req.ready`` is high); the others wait, holding their
  requests. A higher-priority client that requests every cycle starves the lower
  ones; the core's sequencing keeps that from happening.
* **One write port.** ``write_clients`` share the single physical write port
  with fixed priority in the same way. Writes have byte enables
  (``granularity=8``).
* **Exclusive clients.** ``exclusive`` names clients (read or write) of which the
  caller guarantees that no two on one physical port request in the same cycle --
  the core's engines, of which one runs at a time. An exclusive client's
  ``req.ready`` ignores the other exclusive clients above it: it is low only while
  a higher client that is not exclusive requests, so no engine's request logic reaches another engine's
  state through the arbitration (in the placed full core that path, a vector
  reader's request into a matrix gather's state, was the worst, session 22). The
  grants and the address are chosen by the full priority, so under the guarantee
  nothing changes; without it a request can be lost.
* **Clients after the busy flag.** ``after_busy`` names read clients whose
  ``req.ready`` does not look at the exclusive clients above them on their port:
  it is low while the input ``busy`` is high instead (and while a higher client
  that is not exclusive requests). The caller guarantees that ``busy`` (a register)
  is high in every cycle one of those exclusive clients may request -- the core
  raises it for an engine's or the table loader's run. So the engines' requests,
  late in the cycle, reach no other client's state (a matrix gather's request ->
  the fetcher's ready -> its row register, 17.1-19.1 ns in the placed `base`, session
  47); such a client waits for the whole run, not only for the cycles the exclusive
  clients request. Grants and the address are chosen by the full priority; a client
  is granted only when its ``req.ready`` is high. With ``checks``, a simulation-only
  ``Assert`` refuses an exclusive client's request above such a client while ``busy``
  is low.
* **Buffered clients.** ``buffered`` names clients whose requests pass through a
  one-entry buffer of the memory system: the client's ``req.ready`` is the buffer's
  "empty" (a register), the request transfers into the buffer, and the buffer
  requests the port at the client's priority from the next cycle on. The client's
  ``req.ready`` then depends on no other client's request, and its request logic
  reaches only the buffer's registers, not the arbitration (for the host port: the
  other clients' requests -> its ready -> its state, 17.0 ns, and the UART bridge's
  address -> the write row, 18.2 ns, in the placed `base`, sessions 44-45). A read's
  response comes L cycles after the buffer's grant (``L + 1 + g`` after the transfer,
  ``g`` the cycles the buffer waits for the port). A client that both reads and
  writes keeps its order: its buffered read waits while its write buffer is full, and
  its write transfers only while both its buffers are empty.
* **Bounds.** A request for a row ``>= config.rows`` is accepted and dropped: a
  write changes nothing, a read returns 0, and nothing wraps around. ``error``
  pulses high for one cycle, ``L`` cycles after such a request transferred (together
  with the read's response); several out-of-range requests in one cycle give one
  pulse, requests in consecutive cycles keep it high.

Timing (bus.py's protocol), with ``L = config.mem_latency`` (1, 2 or 3):

* read latency: the response is valid on the client's ``rsp`` exactly ``L`` cycles
  after its request transferred; responses are in order and go only to the client
  that issued the request. With ``L = 1`` the granted address goes straight to the
  SRAM (a synchronous read); with ``L = 2`` every request is first registered (the
  granted read address of each physical port, and the write request), so the block
  RAMs see registers only and no client's request logic reaches them in its cycle;
  ``L = 3`` registers the read data of each physical port too, so the block RAMs'
  slow clock-to-output (5.6-5.8 ns on the ECP5) ends in one register instead of
  the clients' (their 16-20 registers per bit were the most frequent end of the
  placed `base`'s worst paths, 16-17 ns, session 50).
* read throughput: one row per physical read port per cycle.
* ``rsp.payload`` is defined only while ``rsp.valid`` is high (the SRAM reads
  every cycle; its read enable is constant).
* write: takes effect at the clock edge that transfers the request (``L = 1``) or
  at the next one (``L = 2, 3``); as the ports see it the two are the same, because a
  read's SRAM access is delayed as much: a read that transfers after the write's
  transfer cycle returns the new data. One write per cycle.
* reads are not transparent: a read transferring in the same cycle as a write to
  the same row returns the old data.
* ``error`` pulses ``L`` cycles after an out-of-range request transferred.
* ``req.ready`` of a client is combinational from the ``req.valid`` of the
  higher-priority clients on its port (not from its own ``valid``; for an exclusive
  client, of the higher clients that are not exclusive; for a client after the busy
  flag, of the higher clients that are not exclusive and ``busy``); of a buffered
  client, a register (its buffers' state).

All ports use ``addr_bits = row_addr_bits(config.rows)`` (`read_port_signature`,
`write_port_signature`). ``init`` (bytes) preloads the memory from byte 0 (the
rest is zero); simulation harnesses read and write the contents through the
`MemoryData` ``data`` (``ctx.get(mem.data[row])``).
"""

from amaranth.hdl import Assert, Cat, Const, MemoryData, Module, Mux, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .bus import ReadPort, WritePort, row_addr_bits
from .delay import delayed
from .config import CoreConfig

__all__ = ["MemorySystem", "read_port_signature", "write_port_signature", "rows_from_bytes"]


def read_port_signature(config: CoreConfig) -> ReadPort:
    """The `ReadPort` (client view) of the memory system for `config`."""
    return ReadPort(addr_bits=row_addr_bits(config.rows), row_bits=config.row_bits)


def write_port_signature(config: CoreConfig) -> WritePort:
    """The `WritePort` (client view) of the memory system for `config`."""
    return WritePort(addr_bits=row_addr_bits(config.rows), row_bits=config.row_bits)


def rows_from_bytes(config: CoreConfig, init) -> list:
    """Split memory bytes (from byte 0) into little-endian row values, padded with zeros
    to ``config.rows`` rows."""
    init = bytes(init)
    if len(init) > config.mem_bytes:
        raise ValueError(f"init holds {len(init)} bytes, more than the {config.mem_bytes}-byte "
                         f"data memory of configuration {config.name!r}")
    rb = config.row_bytes
    init = init + bytes(-len(init) % rb)
    rows = [int.from_bytes(init[i:i + rb], "little") for i in range(0, len(init), rb)]
    return rows + [0] * (config.rows - len(rows))


def _check_name(name, kind):
    if not isinstance(name, str) or not name.isidentifier():
        raise TypeError(f"{kind} client name must be an identifier string, not {name!r}")


def _by_priority(ports, field):
    """`field` of the granted client: multiplexers selected by the clients' own ``valid``,
    the highest-priority client last (outermost). Its value when no client requests is
    unused. (A chain selected by the grants put the lowest client outermost, so the first
    clients' requests -- the engines' -- passed through every multiplexer and the grants'
    priority logic: a matrix gather's request -> the read address register, 19.2 ns in
    the placed `base`, session 36.)"""
    value = field(ports[-1])
    for port in reversed(ports[:-1]):
        value = Mux(port.req.valid, field(port), value)
    return value


class MemorySystem(wiring.Component):
    """The data memory with per-client ports (see the module docstring).

    Parameters
    ----------
    config : CoreConfig
    read_clients : list of list of str
        One inner list per physical read port, client names in priority order.
        Client ``name`` gets the port ``r_{name}``.
    write_clients : list of str
        Clients of the single write port, in priority order; port ``w_{name}``.
    init : bytes
        Initial memory contents from byte 0 (at most ``config.mem_bytes``).
    exclusive : iterable of str
        Clients of which no two on one port request in the same cycle (see above).
    buffered : iterable of str
        Clients whose requests pass through a one-entry buffer (see above).
    after_busy : iterable of str
        Read clients whose ready sees the input ``busy`` instead of the exclusive
        clients above them (see above).
    checks : bool
        Simulation-only ``Assert``s on the callers' guarantees (`after_busy`).
    """

    def __init__(self, config: CoreConfig, read_clients, write_clients, init=b"", exclusive=(), buffered=(),
                 after_busy=(), checks=False):
        if not isinstance(config, CoreConfig):
            raise TypeError(f"config must be a CoreConfig, not {config!r}")
        read_clients = [list(port) for port in read_clients]
        write_clients = list(write_clients)
        if not read_clients or any(not port for port in read_clients):
            raise ValueError(f"read_clients must be a non-empty list of non-empty lists of names, "
                             f"not {read_clients!r}")
        names = [n for port in read_clients for n in port]
        for n in names:
            _check_name(n, "read")
        for n in write_clients:
            _check_name(n, "write")
        for kind, lst in (("read", names), ("write", write_clients)):
            dup = sorted({n for n in lst if lst.count(n) > 1})
            if dup:
                raise ValueError(f"{kind} client names must be unique; repeated: {', '.join(dup)}")
        exclusive = frozenset(exclusive)
        unknown = sorted(exclusive - set(names) - set(write_clients))
        if unknown:
            raise ValueError(f"exclusive clients must be read or write clients; unknown: {', '.join(unknown)}")
        self.exclusive = exclusive
        buffered = frozenset(buffered)
        unknown = sorted(buffered - set(names) - set(write_clients))
        if unknown:
            raise ValueError(f"buffered clients must be read or write clients; unknown: {', '.join(unknown)}")
        self.buffered = buffered
        after_busy = frozenset(after_busy)
        unknown = sorted(after_busy - set(names))
        if unknown:
            raise ValueError(f"after_busy clients must be read clients; unknown: {', '.join(unknown)}")
        self.after_busy = after_busy
        self.checks = checks

        self.config = config
        self.read_clients = read_clients
        self.write_clients = write_clients
        self.data = MemoryData(shape=unsigned(config.row_bits), depth=config.rows,
                               init=rows_from_bytes(config, init))

        members = {}
        for n in names:
            members[f"r_{n}"] = In(read_port_signature(config))
        for n in write_clients:
            members[f"w_{n}"] = In(write_port_signature(config))
        members["error"] = Out(1)
        if after_busy:
            members["busy"] = In(1)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        rows = cfg.rows

        m.submodules.storage = storage = Memory(data=self.data)
        # One write port; the read ports are not transparent for it (old data on a
        # same-row read/write).
        wp = storage.write_port(granularity=8)
        error = Signal()            # an out-of-range request transfers this cycle

        L = cfg.mem_latency
        at_sram = min(L, 2)         # the SRAM's data comes this many cycles after the grant

        def request_stage(value, name, reset_less=False):
            """`value` as the SRAM sees it: itself (L = 1) or registered (L = 2, 3)."""
            return delayed(m, value, at_sram - 1, f"{name}_q", reset_less=reset_less)

        # --- buffered clients: the arbitration sees the buffers' ports ------------------
        inner = {}                  # (kind, name) -> the port the arbitration serves
        r_full = {n: Signal(name=f"rbuf_{n}_full") for port in self.read_clients for n in port if n in self.buffered}
        w_full = {n: Signal(name=f"wbuf_{n}_full") for n in self.write_clients if n in self.buffered}
        for n, full in w_full.items():
            inner["w", n] = self._write_buffer(m, n, getattr(self, f"w_{n}"), full, r_full.get(n, Const(0)))
        for n, full in r_full.items():
            inner["r", n] = self._read_buffer(m, n, getattr(self, f"r_{n}"), full, w_full.get(n, Const(0)))

        # --- read ports ---------------------------------------------------------------
        for p, clients in enumerate(self.read_clients):
            rp = storage.read_port(transparent_for=())
            ports = [inner.get(("r", n), getattr(self, f"r_{n}")) for n in clients]
            granted = [Signal(name=f"rd{p}_grant_{n}") for n in clients]
            any_higher = Const(0)
            for n, port, g in zip(clients, ports, granted):
                m.d.comb += [port.req.ready.eq(~self._blocking(n, clients, ports, n in self.after_busy)),
                             g.eq(port.req.valid & port.req.ready & ~any_higher)]
                any_higher = any_higher | port.req.valid
            if self.checks:
                for i, n in enumerate(clients):
                    above = [q.req.valid for c, q in zip(clients[:i], ports) if c in self.exclusive]
                    if n in self.after_busy and above:
                        m.d.sync += Assert(self.busy | ~Cat(*above).any(),
                                           f"MemorySystem: an exclusive client above {n} requests while busy is low")
            addr = Signal(row_addr_bits(rows), name=f"rd{p}_addr")
            m.d.comb += addr.eq(_by_priority(ports, lambda port: port.req.payload))
            in_range = addr < rows
            transfer = Cat(*granted).any()          # some client on this port transfers
            # The SRAM reads every cycle (its read enable is left high): ``rsp.payload`` means
            # something only while ``rsp.valid``, and an enable would be one more late net
            # from the requests to every block RAM of the port.
            # (the address is data: the SRAM reads every cycle and only the reset valid bits
            # below say which reads matter)
            m.d.comb += rp.addr.eq(request_stage(addr, f"rd{p}_addr", reset_less=True))
            with m.If(transfer & ~in_range):
                m.d.comb += error.eq(1)
            # the response is due L cycles after the grant: one register per cycle of latency;
            # with L = 3 the SRAM's data (after the block RAMs' depth multiplexer and the
            # range's zero) is registered once more before the clients
            oob_q = delayed(m, transfer & ~in_range, at_sram, f"rd{p}_oob")
            data = delayed(m, Mux(oob_q, 0, rp.data), L - at_sram, f"rd{p}_data", reset_less=True)
            for n, port, g in zip(clients, ports, granted):
                m.d.comb += [port.rsp.valid.eq(delayed(m, g, L, f"rd{p}_rsp_{n}")),
                             port.rsp.payload.eq(data)]

        # --- write port ---------------------------------------------------------------
        w_row = Signal(row_addr_bits(rows))
        w_data = Signal(cfg.row_bits)
        w_be = Signal(cfg.row_bytes)
        w_ports = [inner.get(("w", n), getattr(self, f"w_{n}")) for n in self.write_clients]
        for n, port in zip(self.write_clients, w_ports):
            m.d.comb += port.req.ready.eq(~self._blocking(n, self.write_clients, w_ports))
        m.d.comb += [w_row.eq(_by_priority(w_ports, lambda port: port.req.payload.row)),
                     w_data.eq(_by_priority(w_ports, lambda port: port.req.payload.data)),
                     w_be.eq(_by_priority(w_ports, lambda port: port.req.payload.be))]
        w_transfer = Cat(port.req.valid for port in w_ports).any()     # some client transfers
        w_in_range = w_row < rows
        w_en = Signal(cfg.row_bytes)
        with m.If(w_transfer & w_in_range):
            m.d.comb += w_en.eq(w_be)
        # row and data are used only under the write enables, which keep their reset
        m.d.comb += [wp.addr.eq(request_stage(w_row, "wr_row", reset_less=True)),
                     wp.data.eq(request_stage(w_data, "wr_data", reset_less=True)),
                     wp.en.eq(request_stage(w_en, "wr_en"))]
        with m.If(w_transfer & ~w_in_range):
            m.d.comb += error.eq(1)

        m.d.sync += self.error.eq(delayed(m, error, L - 1, "error"))
        return m

    def _write_buffer(self, m, name, port, full, r_full):
        """The one-entry write buffer of client `name` (full bit `full`): returns the port
        the arbitration serves. The client transfers while both its buffers are empty
        (`r_full`: its read buffer's full bit)."""
        buf = write_port_signature(self.config).create(path=(f"wbuf_{name}",))
        req = Signal.like(port.req.payload, name=f"wbuf_{name}_req", reset_less=True)   # (data: under full)
        m.d.comb += [port.req.ready.eq(~full & ~r_full), buf.req.valid.eq(full), buf.req.payload.eq(req)]
        with m.If(port.req.valid & ~full & ~r_full):
            m.d.sync += [full.eq(1), req.eq(port.req.payload)]
        with m.Elif(full & buf.req.ready):
            m.d.sync += full.eq(0)
        return buf

    def _read_buffer(self, m, name, port, full, w_full):
        """The one-entry read buffer of client `name` (full bit `full`; its request waits
        while `w_full`, the client's write buffer, holds a write): returns the port the
        arbitration serves, whose response is the client's."""
        buf = read_port_signature(self.config).create(path=(f"rbuf_{name}",))
        row = Signal.like(port.req.payload, name=f"rbuf_{name}_row", reset_less=True)   # (data: under full)
        m.d.comb += [port.req.ready.eq(~full), buf.req.valid.eq(full & ~w_full), buf.req.payload.eq(row),
                     port.rsp.valid.eq(buf.rsp.valid), port.rsp.payload.eq(buf.rsp.payload)]
        with m.If(port.req.valid & ~full):
            m.d.sync += [full.eq(1), row.eq(port.req.payload)]
        with m.Elif(buf.req.valid & buf.req.ready):
            m.d.sync += full.eq(0)
        return buf

    def _blocking(self, name, clients, ports, after_busy=False):
        """Whether a higher client of `name`'s port requests: every higher client, or for an
        exclusive client the higher ones that are not exclusive; for a client `after_busy`
        the higher ones that are not exclusive, and ``busy`` if any higher one is."""
        higher = list(zip(clients, ports))[:clients.index(name)]
        ignored = [n in self.exclusive and (after_busy or name in self.exclusive) for n, _ in higher]
        valids = [p.req.valid for (n, p), ign in zip(higher, ignored) if not ign]
        if after_busy and any(ignored):
            valids.append(self.busy)
        return Cat(*valids).any() if valids else Const(0)
