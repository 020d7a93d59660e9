"""The xDSA text assembler (syntax reference: docs/assembly.md).

    ; comment (also #)
    .as 32                      ; default address space: 16, 32 or 64
    .text 0x0                   ; program section (storage format), 32-byte aligned
    main:
        add.s8 src0=a, src1=b, dst=c, len=16, sat=1
        data_move src=a, dst=c, data_unit=u8, transfer_mode=normal, src_trans_size=16, des_trans_size=16
        exit wait=0:3, signal=1:0, blk
        end
    .tables 0x400               ; operand tables are placed here automatically
    .data 0x800
    a:  .s8 1, -2, 3, 4
        .align 32
    .keys 0:3, 1                ; key table 0, entry 3 holds one key at load

One instruction per line: a mnemonic (optionally with a data-unit suffix that
sets every unit field), then comma-separated ``field=value`` operands. Besides
the opcode's own operand-table fields an instruction takes ``as=``, ``table=``,
``wait=T:I[*N]``, ``signal=T:I`` and ``blk``. ``.insn DID, PAYLOAD`` writes any
instruction of any domain; ``end`` writes the END-domain instruction.
"""

import re

from .builder import ProgramBuilder, AsmError, parse_int
from .isa import DataUnit

__all__ = ["assemble", "assemble_file", "AsmErrors"]

_LABEL_RE = re.compile(r"^\s*([A-Za-z_.$][A-Za-z0-9_.$]*)\s*:(?!\S*=)")
_KV_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.+)$")
_KEY_RE = re.compile(r"^\s*(\S+)\s*:\s*(\S+?)\s*(?:\*\s*(\S+))?\s*$")
_DATA_UNITS = {u.mnemonic: u for u in DataUnit}


class AsmErrors(Exception):
    """One or more assembly errors, each with file and line."""

    def __init__(self, errors):
        super().__init__("\n".join(str(e) for e in errors))
        self.errors = errors


def assemble_file(path) -> "Image":   # noqa: F821
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise AsmErrors([AsmError(f"cannot read {path}: {e.strerror}")]) from None
    return assemble(text, str(path))


def assemble(text: str, filename: str = "<input>"):
    """Assemble source text into an Image. Raises AsmErrors listing every error."""
    b = ProgramBuilder()
    errors = []
    for lineno, line in enumerate(text.splitlines(), 1):
        b.line = lineno
        try:
            _line(b, _strip_comment(line))
        except AsmError as e:
            e.file, e.line = filename, e.line or lineno
            errors.append(e)
    if errors:
        raise AsmErrors(errors)
    try:
        return b.build()
    except AsmError as e:
        e.file = filename
        raise AsmErrors([e]) from None


def _strip_comment(line):
    for c in ";#":
        i = line.find(c)
        if i >= 0:
            line = line[:i]
    return line.strip()


def _line(b, line):
    while True:
        m = _LABEL_RE.match(line)
        if not m:
            break
        b.label(m.group(1))
        line = line[m.end():].strip()
    if not line:
        return
    head, _, rest = line.partition(" ")
    head, rest = head.strip(), rest.strip()
    if head.startswith("."):
        _directive(b, head[1:].lower(), rest)
    else:
        _instruction(b, head, rest)


def _split_args(rest):
    return [a.strip() for a in rest.split(",")] if rest.strip() else []


def _int(b, text, what):
    try:
        return parse_int(text)
    except ValueError:
        raise b.error(f"{what}: expected a number, got {text!r}") from None


def _one(b, name, args, what):
    if len(args) != 1:
        raise b.error(f".{name} takes {what}, got {len(args)} arguments")
    return args[0]


def _directive(b, name, rest):
    args = _split_args(rest)
    if name == "as":
        b.set_as(_int(b, _one(b, name, args, "an address space (16, 32 or 64)"), ".as"))
    elif name in ("text", "tables", "data"):
        getattr(b, name)(_one(b, name, args, "an address"))
    elif name == "start":
        b.start(_one(b, name, args, "an address or label"))
    elif name == "insn":
        if len(args) != 2:
            raise b.error(f".insn takes a domain and a payload (.insn DID, PAYLOAD), got {len(args)} arguments")
        b.raw(args[0], args[1])
    elif name == "keys":
        if len(args) != 2:
            raise b.error(".keys takes TABLE:INDEX, COUNT")
        t, i, n = _key(b, args[0], ".keys")
        if n is not None:
            raise b.error(".keys: write the count after a comma (.keys T:I, COUNT)")
        b.keys(t, i, _int(b, args[1], ".keys count"))
    elif name == "zero":
        b.zero(_int(b, _one(b, name, args, "a byte count"), ".zero"))
    elif name == "align":
        b.align(_int(b, _one(b, name, args, "an alignment"), ".align"))
    elif name == "byte":
        vals = []
        for a in args:
            v = _int(b, a, ".byte")
            if not -128 <= v <= 255:
                raise b.error(f".byte: {v} is out of range -128..255")
            vals.append(v & 0xFF)
        b.bytes(vals)
    elif name in _DATA_UNITS:
        unit = _DATA_UNITS[name]
        if unit.is_float:
            vals = []
            for a in args:
                try:
                    vals.append(float(a))
                except ValueError:
                    raise b.error(f".{name}: {a!r} is not a number") from None
        else:
            vals = [_int(b, a, f".{name}") for a in args]
        b.values(unit, vals)
    else:
        raise b.error(f"unknown directive .{name}; expected one of .as .start .text .tables .data "
                      ".insn .keys .byte .zero .align or a data unit (" + " ".join("." + u for u in _DATA_UNITS) + ")")


def _key(b, text, what):
    m = _KEY_RE.match(text)
    if not m:
        raise b.error(f"{what}: expected TABLE:INDEX, got {text!r}")
    t = _int(b, m.group(1), f"{what} table")
    i = _int(b, m.group(2), f"{what} index")
    n = _int(b, m.group(3), f"{what} count") if m.group(3) else None
    return t, i, n


def _instruction(b, head, rest):
    mnemonic, _, unit = head.partition(".")
    if mnemonic.lower() == "end":
        if rest or unit:
            raise b.error("end takes no operands (use .insn end, PAYLOAD for a non-zero payload)")
        b.end()
        return
    fields, kw = {}, {}
    for arg in _split_args(rest):
        if not arg:
            raise b.error("empty operand (two commas in a row?)")
        m = _KV_RE.match(arg)
        if m is None:
            if arg.lower() == "blk":
                kw["blk"] = True
                continue
            raise b.error(f"operand {arg!r} is not of the form field=value")
        key, value = m.group(1).lower(), m.group(2).strip()
        if key in fields or key in kw:
            raise b.error(f"field {key} is given twice")
        if key == "as":
            kw["as_bits"] = _int(b, value, "as")
        elif key == "table":
            kw["table"] = value
        elif key == "wait":
            t, i, n = _key(b, value, "wait")
            kw["wait"] = (t, i, 1 if n is None else n)
        elif key == "signal":
            t, i, n = _key(b, value, "signal")
            if n is not None:
                raise b.error("signal deposits one key; write signal=TABLE:INDEX")
            kw["signal"] = (t, i)
        elif key == "blk":
            kw["blk"] = bool(_int(b, value, "blk"))
        else:
            fields[key] = value
    b.insn(mnemonic, unit or None, **kw, **fields)
