"""The disassembler: image -> canonical assembly text.

The output reassembles to an identical image. Instructions whose bytes cannot be
reproduced from named fields (reserved bits set, unknown opcodes, reserved AS,
operand tables with reserved bits set or outside every segment) are printed as
``.insn DID, PAYLOAD`` and their tables as raw bytes.

Canonical form: ``.as`` first, then sections in address order; labels on lines
of their own; operand fields in table order, zero-valued fields omitted, a data
unit suffix when every unit field agrees.
"""

import struct
from collections import Counter

import numpy as np

from .builder import TABLE_ALIGN, FLOAT_FUNCS, float_bits
from .encoding import UnityInstruction, encode_table, decode_table
from .image import SegmentKind, ANNOTATION_BYTES
from .isa import DID, DataUnit, Kind
from .storage import unpack_program, pc_of

__all__ = ["disassemble"]

_DID_NAME = {int(d): d.name.lower() for d in DID}
_SECTION_DIRECTIVE = {SegmentKind.PROGRAM: ".text", SegmentKind.TABLES: ".tables", SegmentKind.DATA: ".data"}
_IND = "    "
_NP_FLOAT = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def _runs(data):
    """Split raw bytes into [(is_zero_run, bytes)]: zero runs of 4 bytes or more (or
    the whole of `data`) become .zero, everything else .byte lines."""
    if not any(data):
        return [(True, data)] if data else []
    out, k = [], 0
    while k < len(data):
        j = k
        while j < len(data) and data[j] == 0:
            j += 1
        if j - k >= 4:
            out.append((True, data[k:j]))
            k = j
            continue
        j = k
        while j < len(data) and not (data[j] == 0 and data[j:j + 4] == bytes(4)):
            j += 1
        j = max(j, k + 1)
        if out and not out[-1][0]:
            out[-1] = (False, out[-1][1] + data[k:j])
        else:
            out.append((False, data[k:j]))
        k = j
    return out


def disassemble(image) -> str:
    return _Disassembler(image).run()


class _Disassembler:
    def __init__(self, image):
        self.img = image
        self.sym_at = {}                       # address -> [names] in definition order
        for s in image.symbols:
            self.sym_at.setdefault(s.address, []).append(s.name)
        self.first_sym = {a: names[0] for a, names in self.sym_at.items()}
        self.printed_syms = set()

    # --- memory helpers -----------------------------------------------------------

    def _segment_covering(self, address, n):
        for s in self.img.segments:
            if s.address <= address and address + n <= s.end:
                return s
        return None

    def _read(self, address, n):
        s = self._segment_covering(address, n)
        return None if s is None else s.data[address - s.address:address - s.address + n]

    # --- analysis -------------------------------------------------------------

    def _decode_all(self):
        """Decode every instruction of every program segment into a line plan."""
        programs = [s for s in self.img.segments if s.kind == SegmentKind.PROGRAM]
        as_votes = Counter()
        decoded = {}
        for seg in programs:
            insns = unpack_program(seg.data, seg.count)
            rows = []
            for k, ins in enumerate(insns):
                rows.append((pc_of(seg.address, k), ins, self._symbolic(ins)))
                if rows[-1][2] is not None and rows[-1][2]["op"].table is not None:
                    as_votes[rows[-1][2]["as_bits"]] += 1
            decoded[seg.address] = rows
        self.default_as = as_votes.most_common(1)[0][0] if as_votes else 32
        # operand-table placement: which tables the assembler would place itself
        tables = [s for s in self.img.segments if s.kind == SegmentKind.TABLES]
        self.raw_tables = set()                 # TABLES segments printed as raw bytes
        if tables:
            region = tables[0]
            cursor, regenerated = region.address, bytearray()
            auto_rows, explicit_in_region = [], []
            for seg in programs:
                for row in decoded[seg.address]:
                    sym = row[2]
                    if sym is None or sym["op"].table is None:
                        continue
                    aligned = cursor + (-(cursor - region.address) % TABLE_ALIGN)
                    if sym["table"] == aligned:
                        auto_rows.append(row)
                        cursor = aligned + len(sym["table_bytes"])
                    elif region.address <= sym["table"] < region.end:
                        explicit_in_region.append(row)
            for row in auto_rows + explicit_in_region:
                sym = row[2]
                off = sym["table"] - region.address
                if len(regenerated) < off + len(sym["table_bytes"]):
                    regenerated += bytes(off + len(sym["table_bytes"]) - len(regenerated))
                regenerated[off:off + len(sym["table_bytes"])] = sym["table_bytes"]
            if bytes(regenerated) == region.data:
                for row in auto_rows:
                    row[2]["auto"] = True
            else:
                self.raw_tables.add(region.address)
            for other in tables[1:]:
                self.raw_tables.add(other.address)
        return decoded

    def _symbolic(self, ins):
        """Named fields of a Unity instruction if they reproduce its bytes exactly."""
        if ins.did != DID.UNITY:
            return None
        u = UnityInstruction.decode(ins)
        op = u.opcode
        if op is None or u.rsvd or u.sync.rsvd:
            return None
        if op.table is None:
            if u.addr_space or u.operand_descriptor:
                return None
            return {"op": op, "as_bits": None, "fields": {}, "sync": u.sync, "table": None, "table_bytes": b""}
        if u.as_bits is None:
            return None
        layout = op.table.resolve(u.as_bits)
        data = self._read(u.operand_descriptor, layout.nbytes)
        if data is None:
            return None
        fields = decode_table(op, u.as_bits, data)
        if encode_table(op, u.as_bits, fields) != data:
            return None                         # reserved table bits are set
        return {"op": op, "as_bits": u.as_bits, "fields": fields, "sync": u.sync,
                "table": u.operand_descriptor, "table_bytes": data}

    # --- printing ---------------------------------------------------------------

    def run(self):
        decoded = self._decode_all()
        out = [f".as {self.default_as}"]
        first_program = min(s.address for s in self.img.segments if s.kind == SegmentKind.PROGRAM)
        if self.img.start != first_program:
            label = self.first_sym.get(pc_of(self.img.start, 0))
            out.append(f".start {label or self._addr(self.img.start)}")
        for (t, i), n in sorted(self.img.keys.items()):
            out.append(f".keys {t}:{i}, {n}")
        for seg in self.img.segments:
            out.append("")
            out.append(f"{_SECTION_DIRECTIVE[seg.kind]} {seg.address:#x}")
            if seg.kind == SegmentKind.PROGRAM:
                for pc, ins, sym in decoded[seg.address]:
                    self._labels(out, pc)
                    out.append(_IND + self._insn(ins, sym))
                self._labels(out, pc_of(seg.address, seg.count))
            elif seg.kind == SegmentKind.DATA or seg.address in self.raw_tables:
                self._data(out, seg)
        return "\n".join(out) + "\n"

    def _labels(self, out, address):
        for name in self.sym_at.get(address, ()):
            if name not in self.printed_syms:
                self.printed_syms.add(name)
                out.append(f"{name}:")

    def _addr(self, value):
        return self.first_sym.get(value, f"{value:#x}")

    def _insn(self, ins, sym):
        if sym is None:
            if ins.did == DID.END and ins.payload == 0:
                return "end"
            did = _DID_NAME.get(ins.did, f"{ins.did:#04x}")
            return f".insn {did}, {ins.payload:#x}"
        op = sym["op"]
        parts = []
        mnemonic = op.mnemonic
        if op.table is not None:
            layout = op.table.resolve(sym["as_bits"])
            units = [sym["fields"][f.name] for f in layout.fields if f.kind == Kind.UNIT]
            suffix = units and len(set(units)) == 1 and units[0] in DataUnit._value2member_map_
            if suffix:
                mnemonic += "." + DataUnit(units[0]).mnemonic
            for f in layout.fields:
                v = sym["fields"][f.name]
                if f.kind == Kind.UNIT:
                    if not suffix:
                        unit = DataUnit._value2member_map_.get(v)
                        parts.append(f"{f.name}={unit.mnemonic if unit else v}")
                    continue
                if v == 0:
                    continue
                if f.kind == Kind.ADDR:
                    parts.append(f"{f.name}={self._addr(v)}")
                elif f.kind == Kind.ENUM:
                    names = {val: k for k, val in f.enum.items()}
                    parts.append(f"{f.name}={names.get(v, v)}")
                else:
                    parts.append(f"{f.name}={v}")
            if sym["as_bits"] != self.default_as:
                parts.append(f"as={sym['as_bits']}")
            if not sym.get("auto"):
                parts.append(f"table={self._addr(sym['table'])}")
        s = sym["sync"]
        if s.fetch:
            parts.append(f"wait={s.keyr_bar}:{s.fetch_key_addr}" + (f"*{s.num_keys}" if s.num_keys != 1 else ""))
        if s.deposit:
            parts.append(f"signal={s.keyw_bar}:{s.deposit_key_addr}")
        if s.blk:
            parts.append("blk")
        return mnemonic + (" " + ", ".join(parts) if parts else "")

    def _data(self, out, seg):
        ann = {a.address: a for a in self.img.annotations if seg.address <= a.address < seg.end}
        pos, end = seg.address, seg.end
        pending = bytearray()

        def flush():
            nonlocal pending
            for zero, run in _runs(bytes(pending)):
                if zero:
                    out.append(_IND + f".zero {len(run)}")
                    continue
                for j in range(0, len(run), 16):
                    out.append(_IND + ".byte " + ", ".join(f"{x:#04x}" for x in run[j:j + 16]))
            pending = bytearray()

        while pos < end:
            if pos in self.sym_at or pos in ann:
                flush()
                self._labels(out, pos)
            a = ann.get(pos)
            if a is not None and a.unit != ANNOTATION_BYTES:
                text, n = self._typed(seg, a)
                if text is not None:
                    out.append(_IND + text)
                    pos += n
                    continue
            pending.append(seg.data[pos - seg.address])
            pos += 1
        flush()
        self._labels(out, end)

    def _typed(self, seg, a):
        """Typed-data text for annotation `a` if it reproduces the bytes, else (None, 0)."""
        try:
            unit = DataUnit(a.unit)
        except ValueError:
            return None, 0
        info = unit.info
        nbytes = (a.count * info.bits + 7) // 8
        off = a.address - seg.address
        raw = seg.data[off:off + nbytes]
        if len(raw) != nbytes or a.count == 0:
            return None, 0
        # never swallow a label that lies inside the run
        if any(a.address < s < a.address + nbytes for s in self.sym_at):
            return None, 0
        if info.bits == 4:
            nib = [(b >> s) & 0xF for b in raw for s in (0, 4)]
            if a.count % 2 and nib[-1]:
                return None, 0
            vals = nib[:a.count]
            if info.signed:
                vals = [v - 16 if v & 8 else v for v in vals]
            text = ", ".join(str(v) for v in vals)
        elif info.is_float:
            fmt, ifmt = FLOAT_FUNCS[info.name]
            size = info.bits // 8
            items = []
            for k in range(a.count):
                chunk = raw[k * size:(k + 1) * size]
                # the shortest text that rounds back to this binary16/32/64 value
                r = str(_NP_FLOAT[info.name](struct.unpack(fmt, chunk)[0]))
                if struct.pack(ifmt, float_bits(info.name, float(r))) != chunk:
                    return None, 0                # a NaN payload or -nan: keep raw bytes
                items.append(r)
            text = ", ".join(items)
        else:
            size = info.bits // 8
            vals = [int.from_bytes(raw[k * size:(k + 1) * size], "little", signed=info.signed)
                    for k in range(a.count)]
            text = ", ".join(str(v) for v in vals)
        return f".{info.name} {text}", nbytes
