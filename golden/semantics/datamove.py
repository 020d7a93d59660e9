"""DATA_MOVE (BASE group 12, code 0x0): docs/isa-decisions.md, D-DATAMOVE.

Each side (source, destination) is up to three dimensions: ``num_trans`` surfaces
(0 means 1) ``surface_stride`` bytes apart, each of ``trans_size`` elements in
lines of ``width`` elements (0 means one line of ``trans_size``) ``line_stride``
bytes apart; the elements of a line are contiguous. Both sides are traversed in
surface, line, element order.

The move is done on *positions*: byte addresses for 8/16/32/64-bit units (an
element is ``size`` consecutive positions), nibble addresses ``2 * byte + high``
for int4 (D-INT4: a line starts on a byte, element k of it is nibble k). Every
destination element is enumerated in traversal order with numpy (in chunks, so a
huge legal move cannot exhaust host memory), its source positions are computed
for the mode, the source is gathered from memory before anything is written
(D-SNAPSHOT), and when several destination elements land on the same position
the later one in traversal order wins.

Checks, in D-PRECEDENCE order: data_unit (RESERVED_UNIT); field values
(ILLEGAL_OPERAND): trans_size a multiple of width on each side that is used,
upsample 1/2-D only, then the mode's shape rule; then the exact byte extent of the
source (not for immediate mode) and of the destination (ADDRESS_RANGE).

Project readings where D-DATAMOVE is silent:

* immediate mode ignores every source field except ``src`` (the immediate): the
  source geometry is not checked;
* a move in which neither side holds an element is legal and writes nothing in
  every mode (only the trans_size/width checks and upsample's num_trans check
  apply); a move with exactly one empty side fails the mode's shape rule;
* upsample factors are positive integers (an empty destination cannot be an
  upsampling of a non-empty source, nor vice versa).
"""

import numpy as np

from ..dispatch import handler
from ..isa import Fault

NORMAL, IMMEDIATE, UPSAMPLE, TRANSPOSE = range(4)   # transfer_mode codes
CHUNK_POSITIONS = 1 << 23          # positions enumerated per pass
RUNS_MAX, MIN_RUN = 1 << 16, 32    # stage contiguous runs as ranges when few and long


class _Side:
    """The geometry of one side of the move (`p` is the field prefix "src"/"des")."""

    def __init__(self, x, p, address, unit, what):
        f = x.f
        self.p, self.what, self.unit = p, what, unit
        self.base = address
        self.trans = f[f"{p}_trans_size"]
        self.num = f[f"{p}_num_trans"]
        self.n = self.num or 1
        self.ss = f[f"{p}_surface_stride"]
        self.ls = f[f"{p}_line_stride"]
        self.w_field = w = f[f"{p}_width"]
        x.require(w == 0 or self.trans % w == 0, Fault.ILLEGAL_OPERAND,
                  f"{p}_trans_size = {self.trans} is not a multiple of {p}_width = {w}")
        self.width = w or self.trans
        self.lines = self.trans // self.width if self.trans else 0
        self.count = self.n * self.trans

    def shape(self):
        return (f"{self.n} x {self.lines} x {self.width} ({self.p}_num_trans = {self.num}, "
                f"{self.p}_trans_size = {self.trans}, {self.p}_width = {self.w_field})")

    @property
    def span(self):
        """Bytes from the first to the last byte of the pattern (all offsets are
        non-negative, so the pattern lies in [base, base + span))."""
        if self.unit.bits == 4:
            last = (self.width - 1) // 2 + 1
        else:
            last = self.width * (self.unit.bits // 8)
        return (self.n - 1) * self.ss + (self.lines - 1) * self.ls + last

    @property
    def contiguous(self):
        """Consecutive element positions: lines and surfaces follow without gaps."""
        bits = self.unit.bits
        return ((self.lines <= 1 or 8 * self.ls == self.width * bits)
                and (self.n <= 1 or 8 * self.ss == self.trans * bits))

    def check_range(self, x):
        """ADDRESS_RANGE unless every byte of the strided pattern lies in memory."""
        if not self.count:
            return
        span = self.span
        x.check_range(self.base, span, f"{self.what} ({self.n} surface(s) x {self.lines} line(s) x "
                                       f"{self.width} {self.unit.mnemonic}, line stride {self.ls}, "
                                       f"surface stride {self.ss})")

    def grid(self):
        """(surface, line, element) index arrays that broadcast to the whole side."""
        return (np.arange(self.n, dtype=np.int64)[:, None, None],
                np.arange(self.lines, dtype=np.int64)[None, :, None],
                np.arange(self.width, dtype=np.int64)[None, None, :])

    def coords(self, k):
        """(surface, line, element) of the flat element indices `k` (int64)."""
        s, r = np.divmod(k, self.trans)
        ln, e = np.divmod(r, self.width)
        return s, ln, e

    def positions(self, s, ln, e):
        """Positions of elements (s, ln, e): first byte, or nibble address for int4."""
        row = np.int64(self.base) + s * np.int64(self.ss) + ln * np.int64(self.ls)
        if self.unit.bits == 4:
            return 2 * row + e
        return row + e * np.int64(self.unit.bits // 8)


def _flat(a, count):
    """A position array (a full grid or a chunk) as a flat array of `count` entries."""
    return a.reshape(count)


def _expand(first, size):
    """Byte positions of elements starting at `first`, `size` bytes each, flattened."""
    if size == 1:
        return first
    return (first[:, None] + np.arange(size, dtype=np.int64)).ravel()


def _last_wins(pos, val):
    """Unique positions in increasing order, each with the value of its last occurrence."""
    if len(pos) < 2 or bool((pos[1:] > pos[:-1]).all()):
        return pos, val
    order = np.argsort(pos, kind="stable")
    p = pos[order]
    last = np.ones(len(p), dtype=bool)
    last[:-1] = p[1:] != p[:-1]
    sel = order[last]
    return pos[sel], val[sel]


def _stage(x, pos, val, int4):
    """Stage the final writes: `pos` are unique increasing positions, `val` their
    bytes (nibbles for int4). int4 nibbles are merged into whole bytes, the nibble
    not written keeping its current value (nothing else is staged by this
    instruction, so this equals a nibble write). Long contiguous runs are staged
    as byte ranges, which is much cheaper to commit than one address per byte;
    otherwise the bytes are scattered. The retire trace is the same either way:
    the merged, address-ordered byte ranges touched."""
    if int4:
        byte = pos >> 1
        first = np.ones(len(byte), dtype=bool)
        first[1:] = byte[1:] != byte[:-1]
        addr = byte[first]
        data = x.mem[addr]                      # a copy (fancy indexing)
        slot = np.cumsum(first) - 1             # the entry of `addr` each nibble is in
        high = (pos & 1).astype(bool)
        lo_s, hi_s = slot[~high], slot[high]
        data[lo_s] = (data[lo_s] & 0xF0) | val[~high]
        data[hi_s] = (data[hi_s] & 0x0F) | (val[high] << 4)
    else:
        addr, data = pos, val
    breaks = np.flatnonzero(addr[1:] != addr[:-1] + 1) + 1
    if len(breaks) < RUNS_MAX and (len(breaks) + 1) * MIN_RUN <= len(addr):
        starts = np.concatenate(([0], breaks)).tolist()
        ends = np.concatenate((breaks, [len(addr)])).tolist()
        for a, b in zip(starts, ends):
            x.write_bytes(int(addr[a]), data[a:b])
    else:
        x.write_scatter(addr, data)


@handler("data_move")
def data_move(x):
    f = x.f
    unit = x.unit("data_unit")
    mode = f["transfer_mode"]                   # 2 bits: all four modes are defined
    dst = _Side(x, "des", f["dst"], unit, "destination")
    src = None if mode == IMMEDIATE else _Side(x, "src", f["src"], unit, "source")

    if mode == UPSAMPLE:
        for side in (src, dst):
            x.require(side.num <= 1, Fault.ILLEGAL_OPERAND,
                      f"upsample is 1/2-D only: {side.p}_num_trans = {side.num} (must be 0 or 1)")
    empty = dst.count == 0 and (src is None or src.count == 0)
    kh = kv = 1
    if not empty:
        if mode == NORMAL:
            x.require(src.count == dst.count, Fault.ILLEGAL_OPERAND,
                      f"normal: the source holds {src.count} elements ({src.shape()}) but the "
                      f"destination {dst.count} ({dst.shape()})")
        elif mode == UPSAMPLE:
            ok = (src.count and dst.count and dst.width % src.width == 0
                  and dst.lines % src.lines == 0)
            x.require(ok, Fault.ILLEGAL_OPERAND,
                      f"upsample: the destination's {dst.lines} line(s) x {dst.width} element(s) "
                      f"(des_trans_size = {dst.trans}, des_width = {dst.w_field}) are not positive "
                      f"integer multiples of the source's {src.lines} x {src.width} "
                      f"(src_trans_size = {src.trans}, src_width = {src.w_field})")
            kh, kv = dst.width // src.width, dst.lines // src.lines
        elif mode == TRANSPOSE:
            ok = (dst.n == src.n and dst.trans == src.trans and dst.width == src.lines)
            x.require(ok, Fault.ILLEGAL_OPERAND,
                      f"transpose: a source of {src.shape()} (surfaces x lines x width) needs a "
                      f"destination of {src.n} x {src.width} x {src.lines}, not {dst.shape()}")
    if src is not None and src.count and dst.count:
        overlap = src.base < dst.base + dst.span and dst.base < src.base + src.span
        # D-OVERLAP: a streaming engine can honour the snapshot only for a contiguous
        # normal move whose destination does not start above its source
        x.require(not overlap or (mode == NORMAL and src.contiguous and dst.contiguous
                                  and dst.base <= src.base), Fault.ILLEGAL_OPERAND,
                  f"the destination pattern {dst.base:#x}..{dst.base + dst.span:#x} overlaps the source "
                  f"pattern {src.base:#x}..{src.base + src.span:#x}; only a contiguous normal move with "
                  "dst <= src may overlap (D-OVERLAP)")
    if src is not None:
        src.check_range(x)
    dst.check_range(x)
    if dst.count == 0:
        return

    mem = x.mem
    int4 = unit.bits == 4
    size = 1 if int4 else unit.bits // 8
    if mode == IMMEDIATE:
        pattern = f["src"] & ((1 << unit.bits) - 1)
        pattern = np.frombuffer(pattern.to_bytes(size, "little"), dtype=np.uint8) if not int4 \
            else np.array([pattern], dtype=np.uint8)

    step = max(1, CHUNK_POSITIONS // size)
    acc_pos = acc_val = None
    for start in range(0, dst.count, step):
        stop = min(dst.count, start + step)
        if stop - start == dst.count:               # the whole move at once: broadcast grids
            s, ln, e = dst.grid()
        else:                                       # one chunk of a huge move
            k = np.arange(start, stop, dtype=np.int64)
            s, ln, e = dst.coords(k)
        dpos = _expand(_flat(dst.positions(s, ln, e), stop - start), size)
        if mode == IMMEDIATE:
            val = np.tile(pattern, stop - start)
        else:
            if mode == NORMAL:
                spos = src.positions(*(src.grid() if stop - start == dst.count else src.coords(k)))
            elif mode == UPSAMPLE:
                spos = src.positions(0, ln // kv, e // kh)
            else:                                   # transpose: (s, ln, e) <- (s, e, ln)
                spos = src.positions(s, e, ln)
            spos = _flat(spos, stop - start)
            if int4:
                val = (mem[spos >> 1] >> ((spos & 1) << 2).astype(np.uint8)) & 0xF
            else:
                val = mem[_expand(spos, size)]
        if acc_pos is not None:
            dpos, val = np.concatenate((acc_pos, dpos)), np.concatenate((acc_val, val))
        acc_pos, acc_val = _last_wins(dpos, val)

    _stage(x, acc_pos, acc_val, int4)
