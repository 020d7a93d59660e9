"""The matrix engine's output writer: one vector of up to ``lanes`` result elements
per input, written through a `bus.WritePort` with byte enables.

A vector is {``base``, ``stride``, ``lsz``, ``count``, ``data``}: element ``j <
count`` (the low ``2**lsz`` bytes of ``data[j]``, little-endian; ``data[j]`` is 32
bits, sign-extended for 8-byte elements: a Matrix_Mul result is 32 bits and a CONV2D
result, whatever its unit, a saturated 17-bit value) goes to byte address
``base + j * stride``. When ``stride`` is the element size the vector is
one contiguous run: it is cut into pieces of at most one row (``row_bytes /
2**lsz`` elements each) and every piece is written with one or two row writes
(two when it crosses a row boundary: the data is rotated to the row offset and
the byte enables select the piece). Otherwise every element is its own piece
(NCHW outputs: the kernels of one position are a plane apart).

Throughput: an aligned contiguous run of ``row_bytes`` bytes per cycle (e.g. 8
s32 results with 32-byte rows), one or two cycles per element otherwise; the next
vector is taken in the cycle the last write of the current one transfers.
Latency: the first write is offered the cycle after the vector is taken.

The shape of the piece being written (elements, bytes, whether it crosses a row,
whether it is the vector's last) and its data, rotated to the row offset, are kept in
registers computed one piece ahead, so the write's data is a register and its byte
enables and the ``ready`` that takes the next vector are a few gates from registers
(the drain's queue pops on that ``ready``).
"""

from amaranth.hdl import Assert, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from .bus import WritePort, row_addr_bits
from .replicate import mux_sliced, replicas, slice_bounds, slices
from .thermometer import thermometer

__all__ = ["WriteVector", "VectorWriter", "contiguous"]


def contiguous(stride, lsz):
    """A `WriteVector`'s ``contig``: its stride is the element size (``1 << lsz``)."""
    return stride == (Const(1, 4) << lsz)


def WriteVector(lanes, addr_bits):
    return data.StructLayout({
        "base": unsigned(addr_bits),
        "stride": unsigned(addr_bits),
        "lsz": unsigned(2),
        "count": unsigned(ceil_log2(lanes + 1)),
        "data": data.ArrayLayout(unsigned(32), lanes),
        # stride == the element size (1 << lsz), the producer's compare: at the writer's
        # input, the queue's stride -> the compare -> the choice of 285 rotator inputs was
        # 16.0 ns placed (session 43)
        "contig": unsigned(1),
    })


class VectorWriter(wiring.Component):
    """See the module docstring. With `checks`, an `Assert` compares the input's
    ``contig`` with its stride and element size."""

    def __init__(self, config, *, lanes, addr_bits, checks=False):
        self.config, self.lanes, self.addr_bits, self.checks = config, lanes, addr_bits, checks
        super().__init__({
            "vec": In(stream.Signature(WriteVector(lanes, addr_bits))),
            "wr": Out(WritePort(addr_bits=row_addr_bits(config.rows), row_bits=config.row_bits)),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        n, R, AW = self.lanes, self.config.row_bytes, self.addr_bits
        lR = exact_log2(R)
        # the vector and the piece's registers below are loaded when a vector is taken and
        # used only while `have` (reset) is high: data, reset-less (`second` keeps its reset)
        v = Signal(WriteVector(n, AW), reset_less=True)     # the vector being written
        have = Signal()
        second = Signal()                            # writing the piece's second row
        contig = Signal(reset_less=True)             # stride == element size: a register, set with v

        # The current piece's shape is kept in registers, computed when the vector is
        # taken and again as each piece is finished, so neither the write's byte
        # enables nor the "last write" that takes the next vector wait for the
        # arithmetic from the piece's first element: `k` elements, `length` bytes, whether it `crosses` a row
        # boundary and whether it is the vector's `last` piece.
        k = Signal(range(n + 1), reset_less=True)
        length = Signal(range(R + 1), reset_less=True)
        crosses = Signal(reset_less=True)
        last = Signal(reset_less=True)
        addr = Signal(AW, reset_less=True)           # the piece's first byte address

        # Two cases: when no vector is held or the held one is on its last piece, the
        # next piece is the first of the vector at the input (j = 0 at its base), else
        # the one after the current piece. The registers load it when a vector is taken
        # or a piece finishes.
        # `from_input` (~have | last) is registers loaded with its next value (one copy for the
        # shape's choices, one per 64 bits of the vector's data), and so is the next piece's
        # first element `s_j` (one copy per 64 bits of the piece): `have` (fan-out 311) ->
        # `from_input` -> `s_j` (fan-out 370) -> the element select -> the rotation was 14.4 ns
        # in the placed `base` (session 49). `have_n`, `last_n`, `j_next_n`: the registers'
        # next values.
        have_n, last_n = Signal(name="have_next"), Signal(name="last_next")
        nv = self.vec.payload
        dcopies = slices(32 * n)
        fi_copies = replicas(m, platform, ~have_n | last_n, 1 + dcopies, "from_input", init=1)
        from_input = fi_copies[0]
        nv_contig = nv.contig
        if self.checks:
            m.d.sync += Assert(~self.vec.valid | (nv_contig == contiguous(nv.stride, nv.lsz)),
                               "VectorWriter: contig differs from stride == element size")
        # The piece after the current one starts at element j + k (j: the current piece's
        # first element) and byte address addr + (length or stride): registers, loaded with
        # the piece's shape, so no adder lies before the element select and the rotation
        # below (j + k, fanned out to ~250 sinks of that select, was the matrix unit's worst
        # path in the placed `base`, session 34).
        j_next = Signal(range(n + 1), reset_less=True)
        j_next_n = Signal.like(j_next)
        addr_next = Signal(AW, reset_less=True)
        s_js = replicas(m, platform, Mux(~have_n | last_n, 0, j_next_n), slices(8 * R), "s_j")
        s_addr = Signal(AW)
        s_lsz = Signal.like(v.lsz)
        s_contig = Signal()
        if self.checks:
            m.d.sync += Assert((Cat(fi_copies) == (~have | last).replicate(len(fi_copies)))
                               & (Cat(s_js) == Mux(~have | last, 0, j_next).replicate(len(s_js))),
                               "VectorWriter: a copy of from_input or s_j differs")
        m.d.comb += [s_addr.eq(Mux(from_input, nv.base, addr_next)),
                     s_lsz.eq(Mux(from_input, nv.lsz, v.lsz)),
                     s_contig.eq(Mux(from_input, nv_contig, contig))]
        s_off = s_addr[:lR]

        def shape(tag, j, addr, count, lsz, stride, contig):
            """The piece's shape from its first element `j` and byte address `addr`:
            {register name: (register, value)} for k, length, crosses, last, j_next and
            addr_next."""
            rem = Signal(range(n + 1), name=f"rem_{tag}")
            k_new = Signal(range(n + 1), name=f"k_{tag}")
            len_new = Signal(range(R + 1), name=f"length_{tag}")
            per = Const(R, lR + 1) >> lsz           # elements per contiguous piece
            m.d.comb += [rem.eq(count - j),
                         k_new.eq(Mux(contig, Mux(rem < per, rem, per), 1)),
                         len_new.eq((k_new << lsz)[:lR + 1])]
            return {"k": (k, k_new), "length": (length, len_new), "crosses": (crosses, (addr[:lR] + len_new) > R),
                    "last": (last, rem <= k_new), "j_next": (j_next, j + k_new),
                    "addr_next": (addr_next, addr + Mux(contig, len_new, stride))}

        # The shape is computed twice, from the input vector and from the current piece's
        # registers, and chosen by `from_input` at the registers: `have` -> `from_input`
        # (fan-out 309) -> the choice of every operand -> the compares and adders was a
        # 17.0 ns path (5.6 ns of logic) into `addr_next` on the placed `base` (session 37).
        from_in = shape("in", Const(0, len(j_next)), nv.base, nv.count, nv.lsz, nv.stride, nv_contig)
        from_cur = shape("cur", j_next, addr_next, v.count, v.lsz, v.stride, contig)
        shape_vals = {name: Mux(from_input, from_in[name][1], from_cur[name][1]) for name in from_in}
        next_shape = [reg.eq(shape_vals[name]) for name, (reg, _) in from_in.items()]

        # the piece's bytes, rotated to its row offset, as a register loaded with the shape
        # registers (from the next piece's data, element and offset): the element select and
        # the rotation were the head of a 20.95 ns path into the memory's write data in the
        # placed `base` (session 28). A whole row's worth of the packed vector (contiguous;
        # pieces start at multiples of a row's worth of elements, so this is a word select),
        # or element j.
        s_data = Signal.like(v.data)
        m.d.comb += s_data.as_value().eq(mux_sliced(fi_copies[1:], nv.data.as_value(), v.data.as_value()))
        elem = [Cat(s_data[i], s_data[i][31].replicate(32)) for i in range(n)]    # 8-byte units: sign-extended

        def piece_by(s_j, tag):
            """The piece's bytes (before the rotation), elements selected by `s_j`."""
            piece = Signal(8 * R, name=f"piece_{tag}")
            with m.If(s_contig):
                with m.Switch(s_lsz):
                    for lsz in range(4):
                        b = 8 << lsz
                        if b > 8 * R:
                            continue
                        with m.Case(lsz):
                            packed = Cat(*(elem[i][:b] for i in range(n)))
                            words = -(-len(packed) // (8 * R))
                            packed = Cat(packed, Const(0, words * 8 * R - len(packed)))
                            if words == 1:
                                m.d.comb += piece.eq(packed)
                            else:
                                g = (s_j >> (lR - lsz))[:ceil_log2(words)]
                                m.d.comb += piece.eq(packed.word_select(g, 8 * R))
            with m.Else():
                with m.Switch(s_j):
                    for i in range(n):
                        with m.Case(i):
                            m.d.comb += piece.eq(elem[i][:min(64, 8 * R)])
            return piece
        # each 64-bit slice of the piece selected through its own copy of s_j
        pieces = [piece_by(sj, k) for k, sj in enumerate(s_js)]
        piece = Cat(p[lo:hi] for p, (lo, hi) in zip(pieces, slice_bounds(8 * R, len(pieces))))
        rot = Signal(8 * R, reset_less=True)         # data, as the shape registers
        next_shape.append(rot.eq(_rotl_bytes(piece, s_off, R)))

        off = addr[:lR]
        ones = Signal(2 * R)
        # (the piece's `length` low bits as a thermometer mask: `(1 << length) - 1` was a
        # 65-bit subtraction on the carry chain, the tail of a 19.5 ns path in the placed `base`)
        m.d.comb += ones.eq(thermometer(m, length, 2 * R, "piece_ones") << off)
        w = self.wr.req.payload
        m.d.comb += [
            w.row.eq(addr[lR:] + second),
            w.data.eq(rot),
            w.be.eq(Mux(second, ones[R:], ones[:R])),
            self.wr.req.valid.eq(have),
            self.busy.eq(have),
        ]
        last_write = Signal()
        m.d.comb += [have_n.eq(have), last_n.eq(last), j_next_n.eq(j_next)]
        m.d.sync += have.eq(have_n)
        with m.If(have & self.wr.req.ready):
            with m.If(crosses & ~second):
                m.d.sync += second.eq(1)
            with m.Else():
                m.d.sync += [second.eq(0), addr.eq(addr_next)]
                m.d.sync += next_shape          # the next piece (from_input: unused, have drops)
                m.d.comb += [last_n.eq(shape_vals["last"]), j_next_n.eq(shape_vals["j_next"])]
                with m.If(last):
                    m.d.comb += [last_write.eq(1), have_n.eq(0)]
        m.d.comb += self.vec.ready.eq(~have | last_write)
        with m.If(self.vec.valid & self.vec.ready):
            m.d.sync += [v.eq(nv), second.eq(0), addr.eq(nv.base), contig.eq(nv_contig)]
            m.d.sync += next_shape              # from_input is high whenever vec.ready is
            m.d.comb += [have_n.eq(nv.count != 0), last_n.eq(shape_vals["last"]),
                         j_next_n.eq(shape_vals["j_next"])]
        return m


def _rotl_bytes(v, amount, nbytes):
    """Rotate `v` (nbytes bytes) left by `amount` bytes (a Value)."""
    out = v
    for k in range(len(amount)):
        s = 1 << k
        if s >= nbytes:
            break
        rotated = Cat(out[8 * (nbytes - s):], out[:8 * (nbytes - s)])
        out = Mux(amount[k], rotated, out)
    return out
