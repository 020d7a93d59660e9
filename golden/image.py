"""The loadable memory image written by ``xdsa asm`` (format in docs/image-format.md).

An image holds the start address, segments of bytes (program, operand tables,
data) at their addresses, initial key-table contents, and, for the disassembler,
symbols and typed-data annotations. All integers are little-endian.

    header      8s magic "XDSAIMG1", u64 start,
                u32 n_segments, u32 n_symbols, u32 n_annotations, u32 n_keys
    segment     u8 kind, 3x pad, u32 count, u64 address, u64 length, bytes[length]
    symbol      u64 address, u16 name length, bytes name (UTF-8)
    annotation  u64 address, u8 unit code (0xFF: bytes), 3x pad, u32 element count
    key         u8 table, u8 index, u8 count, 1x pad

`count` is the number of instructions in a program segment (0 otherwise).
Segments are stored in address order and never overlap.
"""

import enum
import struct

import numpy as np
from dataclasses import dataclass, field

__all__ = ["SegmentKind", "Segment", "Symbol", "Annotation", "Image", "ImageError", "MAGIC"]

MAGIC = b"XDSAIMG1"
_HEADER = struct.Struct("<8sQIIII")
_SEGMENT = struct.Struct("<B3xIQQ")
_SYMBOL = struct.Struct("<QH")
_ANNOTATION = struct.Struct("<QB3xI")
_KEY = struct.Struct("<BBBx")
ANNOTATION_BYTES = 0xFF


class ImageError(ValueError):
    """A malformed or unloadable image; the message says what and where."""


class SegmentKind(enum.IntEnum):
    PROGRAM = 1
    TABLES = 2
    DATA = 3


@dataclass
class Segment:
    kind: SegmentKind
    address: int
    data: bytes
    count: int = 0

    @property
    def end(self) -> int:
        return self.address + len(self.data)


@dataclass(frozen=True)
class Symbol:
    name: str
    address: int


@dataclass(frozen=True)
class Annotation:
    address: int
    unit: int          # DataUnit code, or ANNOTATION_BYTES
    count: int


@dataclass
class Image:
    start: int
    segments: list = field(default_factory=list)
    symbols: list = field(default_factory=list)
    annotations: list = field(default_factory=list)
    keys: dict = field(default_factory=dict)       # (table, index) -> count

    def __post_init__(self):
        self.segments.sort(key=lambda s: s.address)
        for a, b in zip(self.segments, self.segments[1:]):
            if b.address < a.end:
                raise ImageError(f"segments overlap: {a.kind.name.lower()} at {a.address:#x}..{a.end:#x} "
                                 f"and {b.kind.name.lower()} at {b.address:#x}")

    # --- serialisation ---------------------------------------------------------

    def to_bytes(self) -> bytes:
        out = bytearray(_HEADER.pack(MAGIC, self.start, len(self.segments), len(self.symbols),
                                     len(self.annotations), len(self.keys)))
        for s in self.segments:
            out += _SEGMENT.pack(int(s.kind), s.count, s.address, len(s.data)) + bytes(s.data)
        for sym in self.symbols:
            name = sym.name.encode()
            out += _SYMBOL.pack(sym.address, len(name)) + name
        for a in self.annotations:
            out += _ANNOTATION.pack(a.address, a.unit, a.count)
        for (t, i), n in sorted(self.keys.items()):
            out += _KEY.pack(t, i, n)
        return bytes(out)

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "image") -> "Image":
        r = _Reader(data, name)
        magic, start, nseg, nsym, nann, nkey = r.unpack(_HEADER, "header")
        if magic != MAGIC:
            raise ImageError(f"{name}: not an xDSA image (magic {magic!r}, expected {MAGIC!r})")
        segments = []
        for i in range(nseg):
            kind, count, address, length = r.unpack(_SEGMENT, f"segment {i} header")
            try:
                kind = SegmentKind(kind)
            except ValueError:
                raise ImageError(f"{name}: segment {i} has unknown kind {kind}") from None
            segments.append(Segment(kind, address, r.take(length, f"segment {i} data"), count))
        symbols = []
        for i in range(nsym):
            address, n = r.unpack(_SYMBOL, f"symbol {i}")
            symbols.append(Symbol(r.take(n, f"symbol {i} name").decode(), address))
        annotations = [Annotation(*r.unpack(_ANNOTATION, f"annotation {i}")) for i in range(nann)]
        keys = {}
        for i in range(nkey):
            t, idx, n = r.unpack(_KEY, f"key {i}")
            if t > 3:
                raise ImageError(f"{name}: key preset {i} names key table {t}; there are 4 (0..3)")
            keys[(t, idx)] = n
        if r.pos != len(data):
            raise ImageError(f"{name}: {len(data) - r.pos} trailing bytes after the image")
        try:
            return cls(start, segments, symbols, annotations, keys)
        except ImageError as e:
            raise ImageError(f"{name}: {e}") from None

    def save(self, path):
        with open(path, "wb") as f:
            f.write(self.to_bytes())

    @classmethod
    def load(cls, path) -> "Image":
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise ImageError(f"cannot read {path}: {e.strerror}") from None
        return cls.from_bytes(data, str(path))

    # --- use -------------------------------------------------------------------

    @property
    def end(self) -> int:
        return max((s.end for s in self.segments), default=0)

    def memory(self, size: int) -> bytearray:
        """A zero-filled memory of `size` bytes with every segment written in place."""
        mem = bytearray(size)
        self.write_into(mem)
        return mem

    def write_into(self, mem) -> None:
        for s in self.segments:
            if s.end > len(mem):
                raise ImageError(f"{s.kind.name.lower()} segment at {s.address:#x}..{s.end:#x} does not "
                                 f"fit in a {len(mem)}-byte memory")
            mem[s.address:s.end] = memoryview(s.data) if isinstance(mem, bytearray) else \
                np.frombuffer(s.data, dtype=np.uint8)

    def program_segment(self, address=None):
        """The program segment starting at `address` (default: the start address)."""
        address = self.start if address is None else address
        for s in self.segments:
            if s.kind == SegmentKind.PROGRAM and s.address == address:
                return s
        return None


class _Reader:
    def __init__(self, data, name):
        self.data, self.name, self.pos = data, name, 0

    def take(self, n, what):
        if self.pos + n > len(self.data):
            raise ImageError(f"{self.name}: truncated in {what} (needs {n} bytes at offset {self.pos}, "
                             f"file has {len(self.data)})")
        out = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return out

    def unpack(self, st, what):
        return st.unpack(self.take(st.size, what))
