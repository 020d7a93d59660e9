"""The program builder: the Python API that assembles xDSA programs into images.

The text assembler (asm.py) is a thin front end over this class, so a program
written in text and the same program written with the builder give identical
bytes.

    b = ProgramBuilder()
    b.text(0x0)
    b.insn("add", "s8", src0="a", src1="b", dst="c", len=16, sat=1)
    b.exit(); b.end()
    b.tables(0x400)
    b.data(0x800)
    b.label("a"); b.values("s8", [1, 2, 3])
    ...
    image = b.build()

Addresses may be integers or expressions over labels (``"a+4"``), resolved when
`build` runs. Operand tables of instructions without an explicit ``table=`` are
placed, in program order, at the end of the first ``.tables`` region, each
aligned to a 32-byte row (D-ASM-TABLES).
"""

import re
import struct
from dataclasses import dataclass, field

import numpy as np

from . import isa
from .encoding import Instruction, SyncCtrl, UnityInstruction, encode_table
from .image import Image, Segment, SegmentKind, Symbol, Annotation, ANNOTATION_BYTES
from .isa import DataUnit, Kind, DID, AddrSpace
from .storage import pack_program, pc_of

__all__ = ["ProgramBuilder", "AsmError", "TABLE_ALIGN", "parse_int", "DID_NAMES", "FLOAT_FUNCS"]

TABLE_ALIGN = 32
DID_NAMES = {d.name.lower(): int(d) for d in DID}
FLOAT_FUNCS = {"f16": ("<e", "<H"), "f32": ("<f", "<I"), "f64": ("<d", "<Q")}


class AsmError(Exception):
    """An assembly error. `line` is the 1-based source line (None for builder use)."""

    def __init__(self, message, line=None, file=None):
        super().__init__(message)
        self.message, self.line, self.file = message, line, file

    def __str__(self):
        where = ""
        if self.file is not None:
            where = f"{self.file}:"
        if self.line is not None:
            where += f"{self.line}:"
        return f"{where} error: {self.message}" if where else self.message


_INT_RE = re.compile(r"^[+-]?(0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|[0-9][0-9_]*)$")
_NAME_RE = re.compile(r"^[A-Za-z_.$][A-Za-z0-9_.$]*$")
_FLOAT_FUNC_RE = re.compile(r"^(f16|f32|f64)\((.*)\)$")


def parse_int(text: str) -> int:
    t = text.strip()
    if not _INT_RE.match(t):
        raise ValueError(f"{text!r} is not an integer")
    return int(t.replace("_", ""), 0)


def float_bits(func: str, value: float) -> int:
    """The bit pattern of `value` rounded to binary16/32/64 (round to nearest even)."""
    fmt, ifmt = FLOAT_FUNCS[func]
    with np.errstate(over="ignore"):
        v = {"f16": np.float16, "f32": np.float32, "f64": np.float64}[func](value)
    return struct.unpack(ifmt, struct.pack(fmt, v))[0]


@dataclass
class _Expr:
    """label+offset, or a plain number (label None)."""
    terms: tuple          # ((sign, label), ...)
    offset: int

    @classmethod
    def parse(cls, text):
        if isinstance(text, int):
            return cls((), int(text))
        s = str(text).strip()
        if not s:
            raise ValueError("empty expression")
        terms, offset, pos = [], 0, 0
        if s[0] not in "+-":
            s = "+" + s
        for m in re.finditer(r"([+-])\s*([^+\-\s]+)\s*", s):
            if m.start() != pos:
                raise ValueError(f"cannot parse {text!r}")
            pos = m.end()
            sign, tok = (1 if m.group(1) == "+" else -1), m.group(2)
            if _INT_RE.match(tok):
                offset += sign * parse_int(tok)
            elif _NAME_RE.match(tok):
                terms.append((sign, tok))
            else:
                raise ValueError(f"{tok!r} is neither a number nor a label")
        if pos != len(s):
            raise ValueError(f"cannot parse {text!r}")
        return cls(tuple(terms), offset)

    def value(self, symbols):
        v = self.offset
        for sign, name in self.terms:
            if name not in symbols:
                raise KeyError(name)
            v += sign * symbols[name]
        return v


@dataclass
class _Insn:
    line: int
    op: object = None            # isa.Opcode, or None for a raw instruction
    as_bits: int = 32
    fields: dict = field(default_factory=dict)   # name -> (_Expr | int)
    table: object = None          # _Expr or None (auto)
    sync: SyncCtrl = SyncCtrl()
    raw: Instruction = None
    table_addr: int = None        # resolved


@dataclass
class _Block:
    kind: SegmentKind
    base: object                  # _Expr
    line: int
    items: list = field(default_factory=list)    # text: _Insn; data/tables: bytes chunks
    aligns: list = field(default_factory=list)   # (alignment, line) of .align directives
    size: int = 0                 # data/tables: bytes so far
    address: int = None
    table_end: int = None


class ProgramBuilder:
    """Build an image from instructions, operand tables, data and labels."""

    def __init__(self, as_bits: int = 32):
        self.default_as = self._check_as(as_bits)
        self._blocks = []
        self._block = None
        self._labels = {}            # name -> (block, offset_or_index, line)
        self._label_order = []
        self._annotations = []       # (block, offset, unit, count)
        self._keys = {}
        self._start = None
        self.line = None             # the current source line, for messages

    # --- errors -------------------------------------------------------------------

    def error(self, message, line=None):
        return AsmError(message, self.line if line is None else line)

    @staticmethod
    def _check_as(bits):
        try:
            return AddrSpace.from_bits(int(bits)).bits
        except (ValueError, TypeError):
            raise AsmError(f"address space must be 16, 32 or 64, not {bits!r}") from None

    # --- placement ----------------------------------------------------------------

    def set_as(self, bits):
        self.default_as = self._check_as(bits)

    def _open(self, kind, address):
        try:
            base = _Expr.parse(address)
        except ValueError as e:
            raise self.error(str(e)) from None
        self._block = _Block(kind, base, self.line)
        self._blocks.append(self._block)

    def text(self, address):
        """Start a program segment (storage format) at `address` (32-byte aligned)."""
        self._open(SegmentKind.PROGRAM, address)

    def tables(self, address):
        """Start an operand-table region. The first one also receives the tables of
        instructions that do not give ``table=``."""
        self._open(SegmentKind.TABLES, address)

    def data(self, address):
        """Start a data segment at `address`."""
        self._open(SegmentKind.DATA, address)

    def start(self, address):
        """Set the start address (default: the first program segment)."""
        try:
            self._start = (_Expr.parse(address), self.line)
        except ValueError as e:
            raise self.error(str(e)) from None

    def label(self, name: str):
        """Define `name` at the current location: in a program segment the PC of the
        next instruction, elsewhere the next byte."""
        if not _NAME_RE.match(name) or _INT_RE.match(name):
            raise self.error(f"{name!r} is not a valid label (letters, digits, _ . $; not starting with a digit)")
        if name in self._labels:
            raise self.error(f"label {name!r} is already defined on line {self._labels[name][2]}")
        blk = self._need_block("a label")
        loc = len(blk.items) if blk.kind == SegmentKind.PROGRAM else blk.size
        self._labels[name] = (blk, loc, self.line)
        self._label_order.append(name)
        return name

    def _need_block(self, what, kind=None):
        if self._block is None:
            raise self.error(f"{what} must follow a .text, .tables or .data directive")
        if kind is not None and self._block.kind not in kind:
            names = " or ".join("." + {SegmentKind.PROGRAM: "text", SegmentKind.TABLES: "tables",
                                       SegmentKind.DATA: "data"}[k] for k in kind)
            raise self.error(f"{what} belongs in a {names} section")
        return self._block

    # --- instructions -------------------------------------------------------------

    def insn(self, mnemonic: str, unit=None, *, as_bits=None, table=None, wait=None, signal=None,
             blk=False, **fields):
        """Append a Unity instruction. `unit` (e.g. "s8") sets every data-unit field
        not given explicitly; `wait=(table, index[, n])` fetches n keys before it
        runs, `signal=(table, index)` deposits a key after it completes."""
        block = self._need_block("an instruction", (SegmentKind.PROGRAM,))
        try:
            op = isa.by_mnemonic(mnemonic)
        except KeyError:
            raise self.error(f"unknown mnemonic {mnemonic!r}{_suggest(mnemonic)}") from None
        ins = _Insn(self.line, op, self.default_as if as_bits is None else self._check_as(as_bits))
        ins.sync = self._sync(wait, signal, blk)
        if op.table is None:
            if fields or unit is not None or table is not None:
                bad = ", ".join(list(fields) + (["a data unit"] if unit else []) + (["table="] if table else []))
                raise self.error(f"{op.mnemonic} has no operand table, so it takes no fields (got {bad})")
        else:
            layout = op.table.resolve(ins.as_bits)
            by_name = {f.name: f for f in layout.fields}
            if unit is not None:
                u = self._unit(unit, "data unit suffix")
                for f in layout.fields:
                    if f.kind == Kind.UNIT and f.name not in fields:
                        fields[f.name] = u
            for name, value in fields.items():
                f = by_name.get(name)
                if f is None:
                    raise self.error(f"{op.mnemonic} has no field {name!r}; its fields are "
                                     + ", ".join(by_name))
                ins.fields[name] = self._field_value(op, f, value)
            missing = [f.name for f in layout.fields if f.kind == Kind.UNIT and f.name not in ins.fields]
            if missing:
                raise self.error(f"{op.mnemonic} needs a data unit: write {op.mnemonic}.<unit> "
                                 f"(for example {op.mnemonic}.s8) or give " + ", ".join(f"{m}=" for m in missing))
            if table is not None:
                try:
                    ins.table = _Expr.parse(table)
                except ValueError as e:
                    raise self.error(f"table: {e}") from None
        block.items.append(ins)
        return ins

    def exit(self, **sync):
        return self.insn("exit", **sync)

    def raw(self, did, payload=0):
        """Append an instruction given as DID and 128-bit payload (any domain)."""
        block = self._need_block("an instruction", (SegmentKind.PROGRAM,))
        if isinstance(did, str):
            key = did.lower()
            if key in DID_NAMES:
                did = DID_NAMES[key]
            else:
                try:
                    did = parse_int(did)
                except ValueError:
                    raise self.error(f"unknown domain {did!r}; expected a number 0..255 or one of "
                                     + ", ".join(DID_NAMES)) from None
        if isinstance(payload, str):
            try:
                payload = parse_int(payload)
            except ValueError:
                raise self.error(f"payload must be a number, not {payload!r}") from None
        try:
            insn = Instruction(did, payload)
        except ValueError as e:
            raise self.error(str(e)) from None
        block.items.append(_Insn(self.line, raw=insn))
        return insn

    def end(self, payload=0):
        """Append an END-domain instruction (the last instruction of a program)."""
        return self.raw(DID.END, payload)

    def _sync(self, wait, signal, blk):
        s = {"blk": bool(blk)}
        if wait is not None:
            t, i, *n = wait
            n = n[0] if n else 1
            self._check_key(t, i, "wait")
            if not 1 <= n <= 8:
                raise self.error(f"wait: a key fetch takes 1..8 keys, not {n}")
            s.update(fetch=True, keyr_bar=t, fetch_key_addr=i, num_keys=n)
        if signal is not None:
            t, i = signal
            self._check_key(t, i, "signal")
            s.update(deposit=True, keyw_bar=t, deposit_key_addr=i)
        return SyncCtrl(**s)

    def _check_key(self, t, i, what):
        if not 0 <= t <= 3:
            raise self.error(f"{what}: key table must be 0..3, not {t}")
        if not 0 <= i <= 255:
            raise self.error(f"{what}: key index must be 0..255, not {i}")

    def _unit(self, value, what):
        if isinstance(value, DataUnit):
            return int(value)
        if isinstance(value, str):
            try:
                return int(DataUnit.from_mnemonic(value))
            except ValueError:
                pass
            try:
                return parse_int(value)
            except ValueError:
                raise self.error(f"{what}: unknown data unit {value!r}; expected one of "
                                 + ", ".join(u.mnemonic for u in DataUnit)) from None
        return int(value)

    def _field_value(self, op, f, value):
        where = f"{op.mnemonic}: {f.name}"
        if f.kind == Kind.UNIT:
            v = self._unit(value, where)
        elif f.kind == Kind.ENUM and isinstance(value, str):
            if value.lower() in f.enum:
                v = f.enum[value.lower()]
            else:
                try:
                    v = parse_int(value)
                except ValueError:
                    raise self.error(f"{where}: unknown value {value!r}; expected one of "
                                     f"{', '.join(f.enum)} or a number") from None
        elif isinstance(value, str):
            m = _FLOAT_FUNC_RE.match(value.strip())
            if m:
                try:
                    v = float_bits(m.group(1), float(m.group(2)))
                except ValueError:
                    raise self.error(f"{where}: {m.group(2)!r} is not a number") from None
            else:
                try:
                    expr = _Expr.parse(value)
                except ValueError as e:
                    extra = (f"; expected one of {', '.join(f.enum)} or a number" if f.enum else "")
                    raise self.error(f"{where}: {e}{extra}") from None
                if expr.terms:
                    return expr                       # resolved in build()
                v = expr.offset
        else:
            v = int(value)
        try:
            f.to_raw(v)
        except ValueError as e:
            raise self.error(f"{op.mnemonic}: {e}") from None
        return v

    # --- data -------------------------------------------------------------------

    def values(self, unit, values):
        """Append typed values (a unit name such as "s8", "f32", "u4")."""
        block = self._need_block("data", (SegmentKind.DATA, SegmentKind.TABLES))
        u = DataUnit(self._unit(unit, "data directive"))
        values = list(values)
        data = _encode_values(u, values, self)
        self._annotations.append((block, block.size, int(u), len(values)))
        self._emit(block, data)

    def bytes(self, data):
        block = self._need_block("data", (SegmentKind.DATA, SegmentKind.TABLES))
        self._emit(block, bytes(data))

    def zero(self, n):
        if n < 0:
            raise self.error(f".zero needs a count >= 0, not {n}")
        self._emit(self._need_block("data", (SegmentKind.DATA, SegmentKind.TABLES)), bytes(n))

    def align(self, n):
        if n <= 0 or n & (n - 1):
            raise self.error(f".align needs a power of two, not {n}")
        block = self._need_block("data", (SegmentKind.DATA, SegmentKind.TABLES))
        # The block base is not known until build(); alignment is relative to an
        # aligned base, which build() checks.
        block.aligns.append((n, self.line))
        self._emit(block, bytes(-block.size % n))

    def _emit(self, block, data):
        block.items.append(data)
        block.size += len(data)

    def keys(self, table, index, count):
        """Preset key-table entry (table, index) to `count` keys when the image loads."""
        self._check_key(table, index, ".keys")
        if not 0 <= count <= 255:
            raise self.error(f".keys: a key count is 0..255, not {count}")
        self._keys[(table, index)] = count

    # --- build --------------------------------------------------------------------

    def build(self) -> Image:
        if not any(b.kind == SegmentKind.PROGRAM for b in self._blocks):
            raise AsmError("the program has no .text section")
        symbols = {}
        # 1. block addresses (may refer to labels in earlier blocks)
        for b in self._blocks:
            b.address = self._resolve(b.base, symbols, b.line, "section address")
            if b.address < 0:
                raise AsmError(f"section address {b.address} is negative", b.line)
            if b.kind == SegmentKind.PROGRAM and b.address % 32:
                raise AsmError(f".text address {b.address:#x} is not a multiple of 32 "
                               "(program groups start on a 256-bit row)", b.line)
            for n, line in b.aligns:
                if b.address % n:
                    raise AsmError(f".align {n}: the section at {b.address:#x} is not "
                                   f"{n}-byte aligned", line)
            for name, (lb, loc, _) in self._labels.items():
                if lb is b:
                    symbols[name] = (pc_of(b.address, loc) if b.kind == SegmentKind.PROGRAM
                                     else b.address + loc)
        # 2. operand-table placement
        regions = [b for b in self._blocks if b.kind == SegmentKind.TABLES]
        for b in regions:
            b.table_end = b.address + b.size
        tables = []                                   # (address, bytes, line)
        for b in self._blocks:
            if b.kind != SegmentKind.PROGRAM:
                continue
            for ins in b.items:
                if ins.op is None or ins.op.table is None:
                    continue
                n = ins.op.table.resolve(ins.as_bits).nbytes
                if ins.table is not None:
                    ins.table_addr = self._resolve(ins.table, symbols, ins.line, "table")
                else:
                    if not regions:
                        raise AsmError(f"{ins.op.mnemonic} needs an operand table but there is no "
                                       ".tables section; add '.tables ADDRESS' or give table=", ins.line)
                    r = regions[0]
                    r.table_end += -(r.table_end - r.address) % TABLE_ALIGN
                    ins.table_addr = r.table_end
                    r.table_end += n
        # 3. encode
        segs = {}
        for b in self._blocks:
            if b.kind == SegmentKind.PROGRAM:
                insns = [self._encode(ins, symbols, tables) for ins in b.items]
                data = pack_program(insns)
                segs[id(b)] = Segment(b.kind, b.address, data, count=len(insns))
            else:
                data = bytearray(b"".join(b.items))
                end = b.table_end if b.table_end is not None else b.address + len(data)
                data += bytes(end - b.address - len(data))
                segs[id(b)] = Segment(b.kind, b.address, bytes(data))
        segments = sorted(segs.values(), key=lambda s: s.address)
        self._check_overlap(segments)
        # explicit or auto tables: write them into the segment that covers them
        for address, data, line in tables:
            self._place_table(segments, address, data, line)
        segments.sort(key=lambda s: s.address)
        self._check_overlap(segments)
        if self._start is not None:
            expr, line = self._start
            start = self._resolve(expr, symbols, line, ".start")
            for s in segments:
                # the label of a section's first instruction names that section
                if s.kind == SegmentKind.PROGRAM and start == pc_of(s.address, 0):
                    start = s.address
            if not any(s.kind == SegmentKind.PROGRAM and s.address == start for s in segments):
                raise AsmError(f".start {start:#x} is not the address of a .text section", line)
        else:
            start = next(b.address for b in self._blocks if b.kind == SegmentKind.PROGRAM)
        annotations = [Annotation(b.address + off, unit, count)
                       for b, off, unit, count in self._annotations]
        return Image(start, segments, [Symbol(n, symbols[n]) for n in self._label_order],
                     sorted(annotations, key=lambda a: a.address), dict(self._keys))

    def _check_overlap(self, segments):
        for a, b in zip(segments, segments[1:]):
            if b.address < a.end:
                raise AsmError(f"sections overlap: {a.kind.name.lower()} at {a.address:#x}..{a.end:#x} "
                               f"and {b.kind.name.lower()} at {b.address:#x}")

    def _place_table(self, segments, address, data, line):
        for s in segments:
            if s.address <= address < s.end or (s.kind == SegmentKind.TABLES and s.address <= address <= s.end):
                off = address - s.address
                buf = bytearray(s.data)
                if off + len(data) > len(buf):
                    if s.kind != SegmentKind.TABLES:
                        raise AsmError(f"operand table at {address:#x}..{address + len(data):#x} runs past the "
                                       f"end of the {s.kind.name.lower()} section at {s.address:#x}", line)
                    buf += bytes(off + len(data) - len(buf))
                old = bytes(buf[off:off + len(data)])
                # A table may land on zero bytes or on identical bytes (a disassembled
                # image spells tables out as raw bytes too), never on different data.
                if old != data and any(old):
                    raise AsmError(f"operand table at {address:#x} overlaps different bytes already "
                                   "placed there", line)
                buf[off:off + len(data)] = data
                s.data = bytes(buf)
                return
        segments.append(Segment(SegmentKind.TABLES, address, data))

    def _resolve(self, expr, symbols, line, what):
        if isinstance(expr, int):
            return expr
        try:
            return expr.value(symbols)
        except KeyError as e:
            raise AsmError(f"{what}: undefined label {e.args[0]!r}", line) from None

    def _encode(self, ins, symbols, tables):
        if ins.raw is not None:
            return ins.raw
        op = ins.op
        if op.table is not None:
            layout = op.table.resolve(ins.as_bits)
            values = {}
            for name, v in ins.fields.items():
                f = layout.field(name)
                if isinstance(v, _Expr):
                    v = self._resolve(v, symbols, ins.line, f"{op.mnemonic}: {name}")
                    try:
                        f.to_raw(v)
                    except ValueError as e:
                        raise AsmError(f"{op.mnemonic}: {e}", ins.line) from None
                values[name] = v
            tables.append((ins.table_addr, encode_table(op, ins.as_bits, values), ins.line))
            desc = ins.table_addr
        else:
            desc = 0
        return UnityInstruction(op_section=int(op.section), op_code=op.op_code,
                                addr_space=AddrSpace.from_bits(ins.as_bits) if op.table else 0,
                                sync=ins.sync, operand_descriptor=desc).encode()


def _encode_values(unit: DataUnit, values, builder) -> bytes:
    info = unit.info
    if info.is_float:
        out = bytearray()
        ifmt = FLOAT_FUNCS[info.name][1]
        for v in values:
            try:
                out += struct.pack(ifmt, float_bits(info.name, float(v)))
            except (TypeError, ValueError):
                raise builder.error(f".{info.name}: {v!r} is not a number") from None
        return bytes(out)
    lo = -(1 << (info.bits - 1)) if info.signed else 0
    hi = (1 << (info.bits - 1)) - 1 if info.signed else (1 << info.bits) - 1
    raw = []
    for v in values:
        if not isinstance(v, int):
            raise builder.error(f".{info.name}: {v!r} is not an integer")
        if not lo <= v <= hi:
            raise builder.error(f".{info.name}: {v} is out of range {lo}..{hi}")
        raw.append(v & ((1 << info.bits) - 1))
    if info.bits == 4:
        raw += [0] * (len(raw) % 2)
        return bytes(raw[i] | (raw[i + 1] << 4) for i in range(0, len(raw), 2))
    return b"".join(r.to_bytes(info.bits // 8, "little") for r in raw)


def _suggest(name):
    import difflib
    close = difflib.get_close_matches(name.lower(), [op.mnemonic for op in isa.OPCODES], n=3)
    return f" (did you mean {', '.join(close)}?)" if close else ""
