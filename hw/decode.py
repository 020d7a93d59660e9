"""The Unity decode ROM: from a 128-bit Unity payload to the first decode fault,
the engine that executes the instruction and the length of its operand table.

Serves steps 3 of the execution model (docs/architecture.md) and the decode part
of D-PRECEDENCE (docs/isa-decisions.md), in the golden model's order
(`golden.machine.Machine._unity`):

1. RESERVED_BITS   -- the payload's RSVD field or SYNC_CTRL's rsvd field is nonzero;
2. ILLEGAL_OPCODE  -- no opcode at this OP_SECTION / OP_CODE (reserved sections included);
3. RESERVED_AS     -- ADDR SPACE = 3 for an opcode that has an operand table (not EXIT);
4. UNIMPLEMENTED   -- a legal opcode that no engine of this configuration executes.

Everything is generated: field positions from `golden.isa.UNITY_FIELDS` and
`SYNC_CTRL_FIELDS`, the legal opcodes and their table lengths from
`golden.isa.OPCODES` and their layouts, the engines and what they execute from
`hw.capabilities.engine_opcodes(config)`. `decode_rom()` returns the same contents
as data (for the reference page and the tests).

Latency: combinational (no clock). Throughput: one payload per cycle.
"""

import functools
import types
from dataclasses import dataclass

from amaranth.hdl import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import enum, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

from xdsa.golden import isa
from xdsa.golden.isa import AddrSpace, Fault, PAYLOAD_BITS, SYNC_CTRL_FIELDS, UNITY_FIELDS, field_map

from .bus import FAULT_BITS
from .capabilities import engine_opcodes
from .config import CoreConfig
from .fields import AS_BITS, table_bits

__all__ = ["Decoder", "RomEntry", "decode_rom", "engine_enum", "max_table_bits", "rom_key", "TABLE_BYTES_BITS",
           "DECODE_FAULTS", "SOURCE"]

SOURCE = "golden/isa (OPCODES, UNITY_FIELDS, SYNC_CTRL_FIELDS, table layouts) and hw/capabilities.py"

_U = field_map(UNITY_FIELDS)
_S = field_map(SYNC_CTRL_FIELDS)

TABLE_BYTES_BITS = 8            # width of `table_bytes` (and of the loader's `nbytes`)

# The decode faults, in precedence order (D-PRECEDENCE).
DECODE_FAULTS = (Fault.RESERVED_BITS, Fault.ILLEGAL_OPCODE, Fault.RESERVED_AS, Fault.UNIMPLEMENTED)

# The reserved AS code: the one AddrSpace does not name.
_RESERVED_AS = next(v for v in range(1 << _U["addr_space"].width) if v not in AddrSpace._value2member_map_)


def rom_key(section: int, op_code: int) -> int:
    """The ROM index of OP_SECTION `section`, OP_CODE `op_code`: {section, op_code}."""
    return (section << _U["op_code"].width) | op_code


@dataclass(frozen=True)
class RomEntry:
    """One legal opcode as the decode ROM sees it."""
    opcode: isa.Opcode
    engine: str             # the engine that executes it in this configuration, or None
    table_bytes: tuple      # operand-table length in bytes for AS 16/32/64; None: no table (EXIT)

    @property
    def key(self) -> int:
        return rom_key(*self.opcode.key)

    @property
    def has_table(self) -> bool:
        return self.table_bytes is not None

    @property
    def is_exit(self) -> bool:
        return self.opcode.table is None


def _check_engines(engines: dict) -> dict:
    """Validate {engine name: [Opcode, ...]}: every opcode is an ISA opcode, executed by one engine."""
    owner = {}
    if len({str(name).upper() for name in engines}) != len(engines):
        raise ValueError(f"engine names {list(engines)} must differ in more than letter case")
    for name, ops in engines.items():
        if not isinstance(name, str) or not name.isidentifier() or name.upper() == "NONE":
            raise ValueError(f"engine name must be a Python identifier other than 'none', not {name!r}")
        for op in ops:
            if not isinstance(op, isa.Opcode) or isa.lookup(*op.key) != op:
                raise ValueError(f"engine {name!r}: {op!r} is not an opcode of golden.isa.OPCODES")
            if op.key in owner:
                raise ValueError(f"opcode {op.mnemonic} is executed by both engine {owner[op.key]!r} "
                                 f"and engine {name!r}; expected exactly one")
            owner[op.key] = name
    return owner


def decode_rom(engines: dict) -> tuple:
    """The ROM contents for engines {name: [Opcode, ...]}: a `RomEntry` per legal opcode,
    in golden/isa table order."""
    owner = _check_engines(engines)
    out = []
    for op in isa.OPCODES:
        tb = None
        if op.table is not None:
            tb = tuple(op.table.resolve(a).nbytes for a in AS_BITS)
            if max(tb) >= 1 << TABLE_BYTES_BITS:
                raise ValueError(f"{op.mnemonic}: a {max(tb)}-byte operand table does not fit "
                                 f"{TABLE_BYTES_BITS}-bit table_bytes")
        out.append(RomEntry(op, owner.get(op.key), tb))
    return tuple(out)


@functools.lru_cache(maxsize=None)
def engine_enum(names: tuple):
    """The engine-id enumeration for engines `names` (in order): NONE = 0, then 1, 2, ...
    One class per tuple of names, so that decoders of the same configuration agree."""
    names = tuple(names)

    def body(ns):
        ns["NONE"] = 0
        for i, name in enumerate(names, 1):
            ns[name.upper()] = i

    return types.new_class("Engine", (enum.Enum,), {"shape": unsigned(bits_for(len(names)))}, body)


def max_table_bits(engines):
    """Bits of the widest operand table of the opcodes of `engines` ({engine: opcodes}) at any AS."""
    return table_bits([op for ops in engines.values() for op in ops])


class Decoder(wiring.Component):
    """Combinational Unity decode ROM (see the module docstring).

    Parameters: `config` (a `CoreConfig`); `engines`, {name: [Opcode, ...]}, defaults to
    `engine_opcodes(config)` (tests pass their own to show the ROM follows the table).

    Ports:

    * ``payload`` (in, 128): the Unity payload.
    * ``section``, ``op_code``, ``as_code``, ``sync``, ``descriptor``: its raw fields.
    * ``fault``: the first decode fault in precedence order, or 0.
    * ``engine`` (`engine_enum`), ``is_exit``, ``has_table``, ``table_bytes`` (the operand
      table's length for this AS): meaningful when ``fault`` is 0; NONE/0 otherwise.

    Attributes: ``engine_enum`` (the engine-id enum class), ``engines``, ``rom``
    (`decode_rom` contents), ``max_table_bits`` (bits of the widest operand table of
    any executed opcode at any AS; 1 when none has a table).
    """

    def __init__(self, config, *, engines=None):
        if not isinstance(config, CoreConfig):
            raise TypeError(f"config must be a CoreConfig, not {config!r}")
        self.config = config
        self.engines = dict(engine_opcodes(config) if engines is None else engines)
        self.rom = decode_rom(self.engines)
        self.engine_enum = engine_enum(tuple(self.engines))
        self.max_table_bits = max_table_bits(self.engines)
        super().__init__({
            "payload": In(PAYLOAD_BITS),
            "section": Out(_U["op_section"].width),
            "op_code": Out(_U["op_code"].width),
            "as_code": Out(_U["addr_space"].width),
            "sync": Out(_U["sync_ctrl"].width),
            "descriptor": Out(_U["operand_descriptor"].width),
            "fault": Out(FAULT_BITS),
            "engine": Out(self.engine_enum),
            "is_exit": Out(1),
            "table_bytes": Out(TABLE_BYTES_BITS),
            "has_table": Out(1),
        })

    def engine_is(self, name: str):
        """1 when the decoded instruction goes to engine `name` (0 on a decode fault)."""
        return self.engine == self.engine_enum[name.upper()]

    def elaborate(self, platform):
        m = Module()
        E = self.engine_enum

        def ufield(name):
            f = _U[name]
            return self.payload[f.lo:f.lo + f.width]

        sync_lo, rsvd = _U["sync_ctrl"].lo, _S["rsvd"]
        m.d.comb += [
            self.section.eq(ufield("op_section")),
            self.op_code.eq(ufield("op_code")),
            self.as_code.eq(ufield("addr_space")),
            self.sync.eq(ufield("sync_ctrl")),
            self.descriptor.eq(ufield("operand_descriptor")),
        ]
        reserved_bits = (ufield("rsvd") != 0) | (self.payload[sync_lo + rsvd.lo:sync_lo + rsvd.lo + rsvd.width] != 0)

        # The ROM proper: one case per distinct row, listing every opcode with that row.
        legal = Signal()
        needs_as = Signal()                 # has an operand table: AS must not be reserved
        rom_engine = Signal(E)
        rom_exit = Signal()
        rom_bytes = Signal(TABLE_BYTES_BITS)

        rows = {}
        for e in self.rom:
            executed = e.engine is not None
            row = (e.has_table, e.engine, e.is_exit and executed, e.table_bytes if executed else None)
            rows.setdefault(row, []).append(e.key)
        with m.Switch(Cat(self.op_code, self.section)):
            for (has_table, engine, is_exit, tb), keys in rows.items():
                with m.Case(*keys):
                    m.d.comb += [legal.eq(1), needs_as.eq(has_table), rom_exit.eq(is_exit)]
                    if engine is not None:
                        m.d.comb += rom_engine.eq(E[engine.upper()])
                    if tb is not None:
                        m.d.comb += rom_bytes.eq(Mux(self.as_code == 0, tb[0],
                                                     Mux(self.as_code == 1, tb[1], tb[2])))

        with m.If(reserved_bits):
            m.d.comb += self.fault.eq(Fault.RESERVED_BITS)
        with m.Elif(~legal):
            m.d.comb += self.fault.eq(Fault.ILLEGAL_OPCODE)
        with m.Elif(needs_as & (self.as_code == _RESERVED_AS)):
            m.d.comb += self.fault.eq(Fault.RESERVED_AS)
        with m.Elif(rom_engine == E.NONE):
            m.d.comb += self.fault.eq(Fault.UNIMPLEMENTED)
        with m.Else():
            m.d.comb += [self.engine.eq(rom_engine), self.is_exit.eq(rom_exit),
                         self.has_table.eq(needs_as), self.table_bytes.eq(rom_bytes)]
        return m
