"""The xDSA core: fetcher, DID router, Unity front end, sync unit, memory system,
host port and engines, sequenced one instruction at a time.

Each instruction goes through the steps of docs/architecture.md ("Execution
model"); the first failing check is its fault, exactly as in the golden model
(D-PRECEDENCE). Instructions for a configured domain port retire in the cycle the
port accepts them (the fetcher's full rate); a Unity instruction takes the decode,
key, table-load and engine cycles plus one cycle to retire (two when a unit -- an
engine, the table loader, the sync unit -- answers with a fault: the answer is
registered first).

Besides the Wishbone host port, the core exposes a retire port (one record per
instruction) and a write monitor (the row and byte enables of every data-memory
write), from which simulation harnesses rebuild the golden model's retire trace.
"""

from amaranth.hdl import Assert, Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from xdsa.golden import isa
from xdsa.golden.isa import DID, Fault, Section

from .bus import RetireRecord, row_addr_bits
from .capabilities import engine_opcodes
from .datamove import DataMoveEngine
from .datamove_micro import DataMoveMicro
from .decode import Decoder
from .fetch import Fetcher
from .fields import reserved_unit
from .matrix import MatrixEngine
from .hostport import HostPort, WishboneSignature
from .memory import MemorySystem
from .oploader import OperandLoader
from .replicate import own_replicas
from .sync import SyncUnit
from .vector import VectorEngine

__all__ = ["Core", "StopReason"]

_SYNC = isa.field_map(isa.SYNC_CTRL_FIELDS)


class StopReason:
    NONE, END, EXIT, FAULT = 0, 1, 2, 3


def DomainItem():
    return data.StructLayout({"pc": unsigned(64), "payload": unsigned(128)})


class Core(wiring.Component):
    """The whole core for one `CoreConfig`. `mem_init` (bytes) preloads the data memory
    (simulation); `key_timeout` overrides the configuration's; `checks`: simulation-only
    ``Assert``s on the memory system's guarantees (`MemorySystem.after_busy`) and on the
    core's own register copies (`decoding`, `inst`)."""

    def __init__(self, config, *, mem_init=b"", key_timeout=None, checks=False):
        self.config = config
        self._mem_init = bytes(mem_init)
        self._key_timeout = key_timeout
        self._checks = checks
        members = {
            "wb": In(WishboneSignature()),
            "retire_valid": Out(1),             # one RetireRecord per instruction (no back-pressure)
            "retire": Out(RetireRecord),
            "trace_wr_valid": Out(1),
            "trace_wr_row": Out(row_addr_bits(config.rows)),
            "trace_wr_be": Out(config.row_bytes),
            "busy": Out(1),
            "stopped": Out(1),
        }
        for did in config.domains:
            members[f"domain_{did:02x}"] = Out(stream.Signature(DomainItem()))
        super().__init__(members)
        # Built here so that harnesses can read and preload the data memory (`memory_data`).
        self._memsys = MemorySystem(config, init=self._mem_init, checks=checks, **self._memory_clients(config))
        self.memory_data = self._memsys.data

    @staticmethod
    def _two_reader_engines(config):
        """[(decode name, port prefix, class)] of the engines in `config` that read two
        operand rows per cycle (one table for the port assignment and the wiring)."""
        table = [("vector", "vec", VectorEngine, config.vector_bytes), ("matrix", "mm", MatrixEngine, config.array_n)]
        return [(name, prefix, cls) for name, prefix, cls, present in table if present]

    @staticmethod
    def _memory_clients(config):
        """Port assignment. One engine runs at a time, so the engines share ports freely
        and are the memory system's `exclusive` clients (an engine's ``ready`` does not
        depend on another engine's requests); an engine's two readers sit on different
        physical ports (one row each per cycle), and an engine outranks the fetcher,
        which prefetches only while the core waits for that engine anyway. The table
        loader runs only between an instruction's decode and its engine, so it is
        exclusive too. The fetcher and the host port (used while the core is stopped)
        wait on port 0 while the core's `mem_busy` says an engine or the loader runs
        (`after_busy`): their ready does not depend on the engines' requests. The host's
        requests pass through the memory's buffers (`buffered`), so its ready is a
        register."""
        prefixes = [prefix for _, prefix, _ in Core._two_reader_engines(config)]
        if not prefixes:
            # The data-move engine has one reader: one physical port does (a second
            # port would make the synthesis tools duplicate the whole data memory).
            return {"read_clients": [["dm", "loader", "fetch", "host"]], "write_clients": ["dm", "host"],
                    "buffered": ["host"]}
        return {"read_clients": [[f"{p}_a" for p in prefixes] + ["loader", "fetch", "host"],
                                 ["dm"] + [f"{p}_b" for p in prefixes]],
                "write_clients": ["dm"] + prefixes + ["host"],
                "exclusive": ["dm", "loader"] + [f"{p}{s}" for p in prefixes for s in ("", "_a", "_b")],
                "buffered": ["host"], "after_busy": ["fetch", "host"]}

    def elaborate(self, platform):
        m = Module()
        cfg = self.config

        m.submodules.fetch = fetch = Fetcher(cfg)
        m.submodules.decode = dec = Decoder(cfg)
        m.submodules.loader = loader = OperandLoader(cfg, dec.max_table_bits)
        m.submodules.sync = sync = SyncUnit(cfg, key_timeout=self._key_timeout)
        m.submodules.host = host = HostPort(cfg)
        m.submodules.dm = dm = (DataMoveMicro if cfg.datamove == "micro" else DataMoveEngine)(cfg)
        m.submodules.mem = mem = self._memsys

        wiring.connect(m, fetch.mem, mem.r_fetch)
        wiring.connect(m, loader.mem, mem.r_loader)
        wiring.connect(m, host.mem_r, mem.r_host)
        wiring.connect(m, host.mem_w, mem.w_host)
        wiring.connect(m, dm.rd, mem.r_dm)
        wiring.connect(m, dm.wr, mem.w_dm)
        engines = {"datamove": dm}
        for name, prefix, cls in self._two_reader_engines(cfg):
            m.submodules[prefix] = eng = cls(cfg)
            wiring.connect(m, eng.rd_a, getattr(mem, f"r_{prefix}_a"))
            wiring.connect(m, eng.rd_b, getattr(mem, f"r_{prefix}_b"))
            wiring.connect(m, eng.wr, getattr(mem, f"w_{prefix}"))
            engines[name] = eng
        wiring.connect(m, wiring.flipped(self.wb), host.wb)
        wiring.connect(m, host.keys_req, sync.host)
        wiring.connect(m, sync.host_rsp, host.keys_rsp)

        # write monitor: the write clients never transfer in the same cycle
        for port in [getattr(mem, f"w_{name}") for name in mem.write_clients]:
            with m.If(port.req.valid & port.req.ready):
                m.d.comb += [self.trace_wr_valid.eq(1), self.trace_wr_row.eq(port.req.payload.row),
                             self.trace_wr_be.eq(port.req.payload.be)]

        # --- architectural state ----------------------------------------------------
        # The instruction being executed stays at the fetcher's output (`item`) and its
        # operand table at the loader's response (`table`) until it retires or faults:
        # both are transferred only then, so the core keeps no copy of either -- except
        # the payload the decoder reads where the fetcher selects it through multiplexers
        # (`inst`, loaded in NEXT: the decoder's inputs are then registers, where the
        # fetcher's `sub`, fan-out 214 over 92 tiles, ran through the payload selection and
        # the decode ROM into `has_table` and the decoder's fault, 16.3 ns in the placed
        # `base`, session 47).
        item = fetch.out.payload
        inst_copy = not fetch.head_is_register
        inst = Signal(len(item.payload), name="inst", reset_less=True) if inst_copy else item.payload
        table = loader.rsp.payload.table
        index = Signal(32)
        cycles = Signal(64)
        retired = Signal(64)
        reason = Signal(2)
        fault = Signal(8)
        fault_pc = Signal(64)
        busy = Signal()
        stopped = Signal()
        cur_fault = Signal(8)                 # fault of the instruction being retired
        m.d.comb += [self.busy.eq(busy), self.stopped.eq(stopped),
                     host.busy.eq(busy), host.stopped.eq(stopped), host.reason.eq(reason),
                     host.fault.eq(fault), host.fault_pc.eq(fault_pc), host.cycles.eq(cycles),
                     host.retired.eq(retired)]
        with m.If(busy):
            m.d.sync += cycles.eq(cycles + 1)
        # the memory's `busy` (its `after_busy` clients wait): high from the cycle after the
        # table loader accepts its command, or after a two-reader engine is offered its command
        # (the matrix engine takes it only when it has finished), to the cycle after the
        # answer; none of them requests in that first cycle
        mem_busy = Signal()
        if "busy" in mem.signature.members:
            m.d.comb += mem.busy.eq(mem_busy)
        port0_engines = {name for name, _, _ in self._two_reader_engines(cfg)}

        m.d.comb += dec.payload.eq(inst)
        sync_ctrl = dec.sync

        def sync_field(name):                   # a field of the SYNC_CTRL word (golden/isa)
            f = _SYNC[name]
            return sync_ctrl[f.lo:f.hi + 1]

        fetch_en, deposit_en = sync_field("sync_en")[0], sync_field("sync_en")[1]

        # What the engines are started with, registered when the instruction is decoded:
        # the decode ROM reads the instruction at the fetcher's output, and these
        # registers keep it off the paths into the engines' operand captures.
        engine_is = {name: Signal(name=f"start_{name}") for name in engines}
        op_ai = Signal()
        op_code = Signal.like(dec.op_code)
        as_code = Signal.like(dec.as_code)
        is_exit = Signal()
        dec_fault = Signal.like(dec.fault)
        has_table = Signal()
        descriptor = Signal.like(dec.descriptor)
        table_bytes = Signal.like(dec.table_bytes)
        # The commands' payloads (the engines', the loader's, the sync unit's) are these
        # registers and the instruction's fields in every cycle, only `valid` is the state
        # machine's: no state decode reaches the units' field multiplexers, captures and
        # key-table addresses (session 30: the data-move engine's base difference src - dst,
        # a 65-bit carry chain on fields selected by as_code, was a 19.6 ns path from the
        # state register)
        m.d.comb += [sync.fetch.payload.table.eq(sync_field("keyr_bar")),
                     sync.fetch.payload.index.eq(sync_field("fetch_key_addr")),
                     sync.fetch.payload.n.eq(sync_field("num_key") + 1),
                     sync.deposit.payload.table.eq(sync_field("keyw_bar")),
                     sync.deposit.payload.index.eq(sync_field("deposit_key_addr"))]
        # a copy of as_code for each engine (the registers of DECODE): one register of
        # fan-out 284 selected the fields of every engine, and yosys merged the engines'
        # equal field multiplexers, so the data-move engine's base difference was computed
        # beside the matrix engine (as_code -> the merged `src` field -> src - dst ->
        # `near_d`, 16.6 ns in the placed `base`, session 42)
        decoding = Signal()                     # the state is DECODE (a register: see below)
        as_copies = own_replicas(m, platform, lambda q: Mux(decoding, dec.as_code, q), len(as_code), len(engines),
                                 "as_code")
        # the loader's command: its own copy of the descriptor and the table size (the
        # registers of DECODE), which the placer can put beside the loader's range check (the
        # descriptor, 63 tiles from it -> the check -> its verdict register was 16.3 ns in the
        # placed `base`, session 50)
        ld_desc, = own_replicas(m, platform, lambda q: Mux(decoding, Cat(dec.descriptor, dec.table_bytes), q),
                                len(descriptor) + len(table_bytes), 1, "loader_cmd")
        m.d.comb += [loader.cmd.payload.addr.eq(ld_desc[:len(descriptor)]),
                     loader.cmd.payload.nbytes.eq(ld_desc[len(descriptor):])]
        if self._checks:
            m.d.sync += Assert(ld_desc == Cat(descriptor, table_bytes), "Core: the loader's command copy differs")
        # and a copy of the opcode and its section for each engine: the core's registers
        # (op_ai: fan-out 200 and more) went to the vector engine's captures and to the
        # reserved-unit check alike (op_ai -> the check's register, 16.3 ns, and -> the
        # vector engine's layout registers, 15.8-16.0 ns, in the placed `base`, session 53)
        op_copies = own_replicas(m, platform, lambda q: Mux(decoding, Cat(dec.op_code, dec.section == Section.AI), q),
                                 len(op_code) + 1, len(engines), "op_cmd")
        if self._checks:
            m.d.sync += [Assert(q == Cat(op_code, op_ai), "Core: an engine's copy of the opcode differs")
                         for q in op_copies]
        for eng, eng_as, eng_op in zip(engines.values(), as_copies, op_copies):
            m.d.comb += [eng.cmd.payload.section_ai.eq(eng_op[-1]), eng.cmd.payload.op_code.eq(eng_op[:-1]),
                         eng.cmd.payload.as_code.eq(eng_as), eng.cmd.payload.table.eq(table),
                         eng.cmd.payload.table_addr.eq(descriptor)]
        # The loader's response is released the cycle after the instruction retires (the
        # next table is asked for three cycles later at the earliest), so the retire
        # decisions, which read the table, do not reach the loader's state and its
        # table register's clear.
        release_table = Signal()
        m.d.sync += release_table.eq(0)
        m.d.comb += loader.rsp.ready.eq(release_table)
        executed = [op for ops in engine_opcodes(cfg).values() for op in ops if op.table is not None]
        # RESERVED_UNIT, registered: the check reads the loader's table, which holds from
        # the cycle TABLEDONE sees it until the response is released, so in UNITS the
        # register holds the verdict on this table, off the paths through the retire logic
        bad_unit_now = Signal()
        bad_unit = Signal()
        with m.Switch(Cat(op_code, op_ai)):
            for op in executed:
                with m.Case(op.op_code | ((1 if op.section == Section.AI else 0) << 14)):
                    m.d.comb += bad_unit_now.eq(reserved_unit(table, as_code, op))
        m.d.sync += bad_unit.eq(bad_unit_now)

        def retire(m, fault_code, *, stop_reason=None):
            # (the fetcher's `ready`: `retiring` below)
            m.d.comb += [self.retire_valid.eq(1), cur_fault.eq(fault_code)]
            m.d.sync += release_table.eq(1)
            m.d.sync += [index.eq(index + 1), retired.eq(retired + 1)]
            if stop_reason is not None:
                m.d.sync += reason.eq(stop_reason)

        rp = self.retire
        m.d.comb += [rp.index.eq(index), rp.pc.eq(item.pc), rp.did.eq(item.did),
                     rp.did_valid.eq(item.fault != Fault.FETCH_RANGE), rp.fault.eq(cur_fault),
                     rp.unity.eq((item.did == DID.UNITY) & (item.fault == 0)),
                     rp.section.eq(dec.section), rp.op_code.eq(dec.op_code)]

        def raise_fault(m, code):
            retire(m, code, stop_reason=StopReason.FAULT)
            m.d.sync += [fault.eq(code), fault_pc.eq(item.pc)]
            m.next = "STOP"

        # a unit's faulting answer (an engine's, the loader's, the sync unit's) is registered
        # and retired in the next cycle (state ANSWER_FAULT): the answer's valid and fault
        # reach only this register and the state, not the retire logic and the fetcher's
        # advance (the vector engine's state -> its `done` -> the retire -> the fetcher's
        # next PC and range flag was 18.6 ns in the placed `base`, session 30). A faulting
        # instruction retires one cycle later; passing answers go on as before.
        answer_fault = Signal(8)

        def fault_answered(code):
            m.d.sync += answer_fault.eq(code)
            m.next = "ANSWER_FAULT"

        def goto(state):
            """Enter `state` next; RETIRE with `retiring` set (below)."""
            m.next = state
            if state == "RETIRE":
                m.d.sync += retiring.eq(1)

        def take_done(done, then):
            """Take an answer from `done` (a stream with a ``fault`` payload): stop with its
            fault (one cycle later, `fault_answered`), or go to state `then`."""
            m.d.comb += done.ready.eq(1)
            with m.If(done.valid):
                with m.If(done.payload.fault != 0):
                    fault_answered(done.payload.fault)
                with m.Else():
                    goto(then)

        is_domain = Signal()
        m.d.comb += is_domain.eq(0)
        route_fault = Signal.like(item.fault)
        route_end, route_unity, route_absent = (Signal(name=nm) for nm in ("route_end", "route_unity", "route_absent"))
        domain_ports = {did: getattr(self, f"domain_{did:02x}") for did in cfg.domains}

        # the start address is the host's register in every cycle (the fetcher reads it only
        # at `start`): given only in IDLE, the state's decoding -> the address -> the
        # fetcher's range check (a 64-bit compare) -> its fault was 7.0 ns of cells, 15.9 ns
        # placed (session 43)
        m.d.comb += fetch.start_addr.eq(host.start_addr)
        # `decoding` is a register set on the way into DECODE (one cycle long): as the
        # state's decode, yosys shared its LUT with the state's next value, 64 tiles from
        # the state register (fsm_state -> that LUT -> the sync unit's answer -> fsm_state,
        # 17.06 ns in the placed `base`, session 47)
        m.d.sync += decoding.eq(0)
        # The instruction is taken from the fetcher (its `ready`) by RETIRE alone, from two
        # registers: `retiring`, set on the way into RETIRE like `decoding`, and `is_exit`.
        # An instruction that stops the core (a fault, END, EXIT) is not taken: STOP, next,
        # stops the fetcher, which abandons it with everything else. (The decoder's fault
        # register -> `ready` -> the fetcher's read pointer, count and PC was 16.3-17.8 ns,
        # and the state register -> the same 15.2 ns, in the placed `base`, session 53.)
        # The domain ports set `ready` in NEXT (below).
        retiring = Signal()
        m.d.sync += retiring.eq(0)
        m.d.comb += fetch.out.ready.eq(retiring & ~is_exit)
        with m.FSM() as fsm:
            with m.State("IDLE"):
                with m.If(host.clear):
                    m.d.sync += [stopped.eq(0), reason.eq(0), fault.eq(0), fault_pc.eq(0),
                                 cycles.eq(0), retired.eq(0)]
                with m.If(host.start):
                    m.d.comb += fetch.start.eq(1)
                    m.d.sync += [busy.eq(1), stopped.eq(0), reason.eq(0), fault.eq(0), fault_pc.eq(0),
                                 cycles.eq(0), retired.eq(0), index.eq(0)]
                    m.next = "NEXT"

            with m.State("NEXT"):
                # Take the next instruction; a domain instruction whose port is ready
                # retires in this very cycle.
                fi = fetch.out.payload
                if inst_copy:
                    m.d.sync += inst.eq(fi.payload)      # (it holds from here until the item retires)
                for k, (did, port) in enumerate(domain_ports.items()):
                    # (the fetcher's flag is fi.did == did, a register; asserted there)
                    with m.If(fetch.out.valid & fetch.head_domain[k] & (fi.fault == 0)):
                        m.d.comb += [port.valid.eq(1), port.payload.pc.eq(fi.pc),
                                     port.payload.payload.eq(fi.payload), fetch.out.ready.eq(port.ready),
                                     is_domain.eq(1)]
                        with m.If(port.ready):
                            m.d.comb += [self.retire_valid.eq(1), rp.pc.eq(fi.pc), rp.did.eq(fi.did),
                                         rp.did_valid.eq(1), rp.unity.eq(0)]
                            m.d.sync += [index.eq(index + 1), retired.eq(retired + 1)]
                with m.If(fetch.out.valid & ~is_domain):
                    m.d.sync += [route_fault.eq(fi.fault), route_end.eq(fi.did == DID.END),
                                 route_unity.eq(fi.did == DID.UNITY),
                                 route_absent.eq((fi.did < 7) | (fi.did >= 0x80))]
                    m.next = "ROUTE"

            with m.State("ROUTE"):
                # the item's routing, decided in NEXT from the fetcher's output (which holds
                # until the item retires): registers, so the fetcher's fault and DID reach
                # no retire decision (and no fetcher advance) in one cycle (21.9 ns from
                # the fetcher's range flag through the core back into it, session 27)
                with m.If(route_fault != 0):
                    raise_fault(m, route_fault)
                with m.Elif(route_end):
                    retire(m, 0, stop_reason=StopReason.END)
                    m.next = "STOP"
                with m.Elif(route_unity):
                    # the decoder's verdict, registered: keeps the decode ROM and the
                    # reserved-bit checks off the paths through the retire logic
                    m.d.sync += [dec_fault.eq(dec.fault), decoding.eq(1)]
                    m.next = "DECODE"
                with m.Elif(route_absent):
                    # a STANDARD or CUSTOM domain without a port (ported ones never get here)
                    raise_fault(m, Fault.DOMAIN_ABSENT)
                with m.Else():
                    raise_fault(m, Fault.RESERVED_DID)

            with m.State("DECODE"):
                m.d.sync += [op_ai.eq(dec.section == Section.AI), op_code.eq(dec.op_code),
                             as_code.eq(dec.as_code), is_exit.eq(dec.is_exit),
                             has_table.eq(dec.has_table), descriptor.eq(dec.descriptor),
                             table_bytes.eq(dec.table_bytes)]
                m.d.sync += [engine_is[name].eq(dec.engine_is(name)) for name in engines]
                with m.If(dec_fault != 0):
                    raise_fault(m, dec_fault)
                with m.Elif(fetch_en):
                    m.next = "KEYWAIT"
                with m.Else():
                    m.next = "TABLE"

            with m.State("KEYWAIT"):
                m.d.comb += sync.fetch.valid.eq(1)
                with m.If(sync.fetch.ready):
                    m.next = "KEYDONE"

            with m.State("KEYDONE"):
                take_done(sync.fetch_done, "TABLE")

            with m.State("TABLE"):
                with m.If(~has_table):
                    m.next = "ENGINE"
                with m.Else():
                    m.d.comb += loader.cmd.valid.eq(1)
                    with m.If(loader.cmd.ready):
                        m.d.sync += mem_busy.eq(1)
                        m.next = "TABLEDONE"

            with m.State("TABLEDONE"):
                with m.If(loader.rsp.valid):
                    m.d.sync += mem_busy.eq(0)
                    with m.If(loader.rsp.payload.fault != 0):
                        fault_answered(loader.rsp.payload.fault)
                    with m.Else():
                        m.next = "UNITS"

            with m.State("UNITS"):
                with m.If(bad_unit):
                    raise_fault(m, Fault.RESERVED_UNIT)
                with m.Else():
                    m.next = "ENGINE"

            with m.State("ENGINE"):
                with m.If(is_exit):
                    m.next = "DEPOSIT"
                for name, eng in engines.items():
                    with m.Elif(engine_is[name]):
                        m.d.comb += eng.cmd.valid.eq(1)
                        if name in port0_engines:
                            m.d.sync += mem_busy.eq(1)
                        with m.If(eng.cmd.ready):
                            m.next = f"WAIT_{name}"

            for name, eng in engines.items():
                with m.State(f"WAIT_{name}"):
                    with m.If(eng.done.valid):
                        m.d.sync += mem_busy.eq(0)
                    take_done(eng.done, "DEPOSIT")

            with m.State("DEPOSIT"):
                with m.If(~deposit_en):
                    goto("RETIRE")
                with m.Else():
                    m.d.comb += sync.deposit.valid.eq(1)
                    with m.If(sync.deposit.ready):
                        m.next = "DEPOSITDONE"

            with m.State("DEPOSITDONE"):
                take_done(sync.deposit_done, "RETIRE")

            with m.State("RETIRE"):
                with m.If(is_exit):
                    retire(m, 0, stop_reason=StopReason.EXIT)
                    m.next = "STOP"
                with m.Else():
                    retire(m, 0)
                    m.next = "NEXT"

            with m.State("ANSWER_FAULT"):
                raise_fault(m, answer_fault)

            with m.State("STOP"):
                m.d.comb += fetch.stop.eq(1)
                m.d.sync += [busy.eq(0), stopped.eq(1)]
                m.next = "IDLE"

        if self._checks:
            m.d.sync += Assert(decoding == fsm.ongoing("DECODE"), "Core: decoding differs from the state")
            m.d.sync += Assert(retiring == fsm.ongoing("RETIRE"), "Core: retiring differs from the state")
            if inst_copy:
                holding = ~(fsm.ongoing("IDLE") | fsm.ongoing("NEXT") | fsm.ongoing("STOP"))
                m.d.sync += Assert(~holding | (inst == item.payload), "Core: inst differs from the fetcher's item")
        return m
