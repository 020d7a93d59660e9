"""Interfaces between the hardware units (docs/architecture.md, "Interfaces").

Memory client ports (the client's view; the memory system sees them flipped):

* `ReadPort`: the client sends row addresses on ``req``; the memory system
  returns the row's data on ``rsp`` in request order, exactly
  ``config.mem_latency`` (1, 2 or 3) cycles after the request transferred
  (``req.valid & req.ready``). ``rsp`` has no back-pressure:
  a client issues only requests whose responses it can take. ``rsp.payload`` is
  defined only while ``rsp.valid`` is high (as the stream rules have it).
* `WritePort`: the client sends {row, data, byte enables} on ``req``; the write
  takes effect at the clock edge that transfers the request. A read that
  transfers in the same cycle as a write to the same row returns the old data.

Addresses on these ports are row indices (byte address // row_bytes). Clients
check byte ranges against the memory size *before* they issue requests (precise
ADDRESS_RANGE faults); the memory system additionally refuses a row beyond the
memory and raises its error flag instead of wrapping.

Engines receive an `EngineCmd` (opcode and the raw operand table) and answer with
an `EngineDone` carrying a fault code (0 when the instruction completed).
"""

from amaranth.hdl import unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

__all__ = ["ReadPort", "WritePort", "row_addr_bits", "EngineCmd", "EngineDone", "engine_members",
           "engine_answer_states", "RetireRecord",
           "FetchItem", "KeyFetch", "KeyDeposit", "KeyHostReq", "KeyHostRsp", "KeyHostOp",
           "FAULT_BITS", "PC_BITS", "ADDR_BITS"]

FAULT_BITS = 8
PC_BITS = 64
ADDR_BITS = 64


def row_addr_bits(rows: int) -> int:
    return max(1, ceil_log2(rows))


class ReadPort(wiring.Signature):
    """A client's read port into the data memory."""

    def __init__(self, *, addr_bits: int, row_bits: int):
        self.addr_bits, self.row_bits = addr_bits, row_bits
        super().__init__({
            "req": Out(stream.Signature(unsigned(addr_bits))),
            "rsp": In(stream.Signature(unsigned(row_bits), always_ready=True)),
        })

    def __eq__(self, other):
        return (type(other) is type(self) and other.addr_bits == self.addr_bits
                and other.row_bits == self.row_bits)

    def __repr__(self):
        return f"ReadPort(addr_bits={self.addr_bits}, row_bits={self.row_bits})"


def write_request_layout(addr_bits, row_bits):
    return data.StructLayout({"row": unsigned(addr_bits), "data": unsigned(row_bits),
                              "be": unsigned(row_bits // 8)})


class WritePort(wiring.Signature):
    """A client's write port into the data memory (byte enables per row byte)."""

    def __init__(self, *, addr_bits: int, row_bits: int):
        self.addr_bits, self.row_bits = addr_bits, row_bits
        super().__init__({
            "req": Out(stream.Signature(write_request_layout(addr_bits, row_bits))),
        })

    def __eq__(self, other):
        return (type(other) is type(self) and other.addr_bits == self.addr_bits
                and other.row_bits == self.row_bits)

    def __repr__(self):
        return f"WritePort(addr_bits={self.addr_bits}, row_bits={self.row_bits})"


def EngineCmd(table_bits: int):
    """Start an engine: the Unity opcode key, the raw operand table (table bit i is
    bit i of the operand table in memory, D-TABLE-ORDER) and its byte address (inside
    the memory: the operand loader has checked it; an engine may read the table's
    bytes there instead, as the micro-coded data-move engine does)."""
    return data.StructLayout({
        "section_ai": unsigned(1),          # 0: BASE, 1: AI
        "op_code": unsigned(14),
        "as_code": unsigned(2),             # 0/1/2: AS 16/32/64
        "table": unsigned(max(1, table_bits)),
        "table_addr": unsigned(ADDR_BITS),
    })


EngineDone = data.StructLayout({"fault": unsigned(FAULT_BITS)})


def engine_answer_states(m, engine, idle="IDLE"):
    """The two last states of an engine's control FSM (call inside ``with m.FSM()``):
    FINISH takes the command (``cmd.ready``), DONE offers ``done`` (its payload driven
    by the engine) until it transfers, then `idle`."""
    with m.State("FINISH"):
        m.d.comb += engine.cmd.ready.eq(1)
        m.next = "DONE"
    with m.State("DONE"):
        m.d.comb += engine.done.valid.eq(1)
        with m.If(engine.done.ready):
            m.next = idle


def engine_members(config, table_bits, read_ports):
    """The members every engine has: ``cmd``, ``done``, the read ports named
    `read_ports` and ``wr`` (engine side, for `wiring.Component.__init__`)."""
    from amaranth.lib import stream
    from amaranth.lib.wiring import In, Out
    abits = row_addr_bits(config.rows)
    members = {"cmd": In(stream.Signature(EngineCmd(table_bits))), "done": Out(stream.Signature(EngineDone))}
    for name in read_ports:
        members[name] = Out(ReadPort(addr_bits=abits, row_bits=config.row_bits))
    members["wr"] = Out(WritePort(addr_bits=abits, row_bits=config.row_bits))
    return members

# One fetched instruction.
FetchItem = data.StructLayout({
    "pc": unsigned(PC_BITS),
    "did": unsigned(8),
    "payload": unsigned(128),
    "fault": unsigned(FAULT_BITS),          # FETCH_RANGE when the instruction could not be read
})

# The retire trace, as the core reports it (compared with golden.machine.Retired.key()).
RetireRecord = data.StructLayout({
    "index": unsigned(32),
    "pc": unsigned(PC_BITS),
    "did": unsigned(8),
    "did_valid": unsigned(1),               # 0 for an instruction that could not be fetched
    "unity": unsigned(1),                   # section/op_code are meaningful
    "section": unsigned(6),
    "op_code": unsigned(14),
    "fault": unsigned(FAULT_BITS),
})


# --- sync unit (key tables) ------------------------------------------------------------

# The core asks the sync unit to fetch `n` (1..8) keys from table/entry; the sync
# unit answers once, with fault 0 (keys consumed) or KEY_TIMEOUT.
KeyFetch = data.StructLayout({"table": unsigned(2), "index": unsigned(8), "n": unsigned(4)})
# The core deposits one key; the answer carries 0 or KEY_OVERFLOW (entry held 255).
KeyDeposit = data.StructLayout({"table": unsigned(2), "index": unsigned(8)})


class KeyHostOp:
    READ = 0        # answer the entry's count
    WRITE = 1       # set the entry to `value`
    DEPOSIT = 2     # add one key, saturating at 255


KeyHostReq = data.StructLayout({"op": unsigned(2), "table": unsigned(2), "index": unsigned(8),
                                "value": unsigned(8)})
KeyHostRsp = data.StructLayout({"value": unsigned(8)})
