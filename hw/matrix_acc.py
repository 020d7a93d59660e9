"""The matrix engine's accumulator memory (hw/matrix.py): ``2 pb`` positions (two banks
of ``pb``) of ``n`` exact ``ACC_BITS``-bit sums, read-modify-written one position per
cycle at the array's output, and read by the drain.

A vector leaving the array (``in_valid``: its position ``in_addr``, ``in_first`` for
the first pass, which writes instead of adding, its ``n`` column sums and a ``in_tag``
for the caller) is handled in three stages:

* **R** (the input's cycle): the position's word is read;
* **S**: the word arrives from the block RAMs; the position is compared with the two
  writes the read could not see (Q's, written at the end of this cycle, and the one
  written at the read's own clock edge);
* **Q**: the word, registered beside the block RAMs, or the newer of those two writes'
  sums when one was to the same position (a block of one or two positions, pass after
  pass), plus the sums, is written at the end of the cycle; ``w_valid``/``w_tag`` show
  the write (the caller counts the positions a block's last pass has finished).

No adder follows a block RAM's output in its cycle, and the memory needs no
transparent port (on the ECP5 a transparent port is a bypass in logic: with the adder
behind it, the largest group of the placed `base`'s end points over 12 ns, session
27). The drain's port (``rd_addr``/``rd_en``/``rd_data``, a synchronous read that
holds its data while ``rd_en`` is low) must not use a read of a position in the cycle
it is written (``rd_use``: the caller uses this cycle's read): the caller's guarantee
(the drain reads a position once its last write has happened, `hw/collision.py`);
neither port uses the data of a collision, so the memories are named collision-free
and synthesis builds no read-during-write emulation. With ``checks`` an `Assert`
checks the drain's guarantee.

The sums are kept in `memories(n)` memories of `MEMORY_SUMS` sums each, each with its
own read enable (``rd_en`` has one bit per memory, all equal: copies of one register
in the caller), so no single net reaches every block RAM's enable (one did, 24 block
RAMs over 79 tiles, the placed `base`'s worst path in session 43). Two 53-bit sums
fill three 36-bit block RAM words; a memory per sum would take four block RAMs per
read port where two sums take three.

Latency: the write 2 cycles after the input (``w_valid``). Throughput: one vector
per cycle.
"""

from amaranth.hdl import Cat, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from . import collision
from .replicate import replicas
from .requant import ACC_BITS

__all__ = ["Accumulators", "MEMORY_SUMS", "memories"]

MEMORY_SUMS = 2


def memories(n):
    """The number of memories holding `n` sums (and of the drain port's enable copies)."""
    return -(-n // MEMORY_SUMS)


class Accumulators(wiring.Component):
    """See the module docstring."""

    def __init__(self, *, n, pb, psum_width, tag_bits=1, checks=False):
        self.n, self.pb, self.checks = n, pb, checks
        aw = exact_log2(pb) + 1
        super().__init__({
            "in_valid": In(1), "in_addr": In(aw), "in_first": In(1),
            "in_sums": In(data.ArrayLayout(signed(psum_width), n)), "in_tag": In(tag_bits),
            "w_valid": Out(1), "w_tag": Out(tag_bits),
            "rd_addr": In(aw), "rd_en": In(memories(n)), "rd_use": In(1),
            "rd_data": Out(data.ArrayLayout(signed(ACC_BITS), n)),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.n
        words = data.ArrayLayout(signed(ACC_BITS), n)
        wrs, rmws = [], []
        for k in range(memories(n)):
            sums = range(k * MEMORY_SUMS, min(n, (k + 1) * MEMORY_SUMS))
            mem = Memory(shape=data.ArrayLayout(signed(ACC_BITS), len(sums)), depth=2 * self.pb, init=[])
            m.submodules[collision.name(f"mem{k}")] = mem
            wr, rmw, rd = mem.write_port(), mem.read_port(), mem.read_port()
            if self.checks:
                collision.check(m, wr, rd, f"matrix accumulators (memory {k})", used=self.rd_use)
            m.d.comb += [rd.addr.eq(self.rd_addr), rd.en.eq(self.rd_en[k]),
                         rmw.addr.eq(self.in_addr), rmw.en.eq(1)]       # R: read the position
            m.d.comb += [self.rd_data[j].eq(rd.data[x]) for x, j in enumerate(sums)]
            wrs.append((wr, sums))
            rmws.append(rmw)
        # S: the word arrives; compare with the writes it missed
        # the valid bits are reset; everything else is data that counts only under them (the
        # write's port enable and the caller's w_valid are q's valid bit; f1/f2/first select
        # data and are recomputed each cycle from the valid bits)
        stage = data.StructLayout({"addr": len(self.in_addr), "first": 1, "tag": len(self.in_tag),
                                   "sums": self.in_sums.shape()})
        s_valid, q_valid = Signal(name="s_valid"), Signal(name="q_valid")
        s, q = (Signal(stage, reset_less=True, name=nm) for nm in ("s", "q"))
        m.d.sync += [s_valid.eq(self.in_valid), s.addr.eq(self.in_addr), s.first.eq(self.in_first),
                     s.tag.eq(self.in_tag), s.sums.eq(self.in_sums), q_valid.eq(s_valid), q.eq(s)]
        q_word = Signal(words, reset_less=True)     # the word read, registered
        w1_valid = Signal()                                           # the last write
        w1_addr = Signal.like(q.addr, reset_less=True)
        # the last two writes' sums
        w1_data, w2_data = (Signal(words, reset_less=True, name=nm) for nm in ("w1_data", "w2_data"))
        # Q's selects (it takes the last write's word / the one before / none: the first pass),
        # one copy per word: shared, each fanned out to all n * ACC_BITS adder inputs (424
        # in `base`) across 123 tiles, 7 ns of the placed `base`'s paths into the block RAMs
        # (session 36)
        f1 = replicas(m, platform, q_valid & (q.addr == s.addr), n, "acc_f1", reset_less=True)
        f2 = replicas(m, platform, w1_valid & (w1_addr == s.addr), n, "acc_f2", reset_less=True)
        first = replicas(m, platform, s.first, n, "acc_first", reset_less=True)
        m.d.sync += q_word.eq(Cat(rmw.data for rmw in rmws))
        # Q: add and write
        m.d.comb += [self.w_valid.eq(q_valid), self.w_tag.eq(q.tag)]
        w_data = Signal(words)
        for j in range(n):
            word = Mux(f1[j], w1_data[j], Mux(f2[j], w2_data[j], q_word[j]))
            m.d.comb += w_data[j].eq(Mux(first[j], 0, word) + q.sums[j])
        for wr, sums in wrs:
            m.d.comb += [wr.addr.eq(q.addr), wr.en.eq(q_valid), wr.data.eq(Cat(w_data[j] for j in sums))]
        m.d.sync += [w1_valid.eq(q_valid), w1_addr.eq(q.addr), w1_data.eq(w_data), w2_data.eq(w1_data)]
        return m
