"""Memories whose non-transparent read ports never use the data of a read of an address
in the cycle it is written: read-during-write there is a don't-care, and synthesis
may say so.

An Amaranth read port that is not transparent for a write port returns the old data
when both use one address in one cycle. The ECP5 block RAM leaves that collision
undefined between its two ports, so yosys's `memory_libmap` emulates it in logic:
every write is delayed by a register and a bypass multiplexer follows the read data
(on `base`'s matrix accumulators, 8 x 53 bits: 857 flip-flops and 424 LUT4s, whose
enables made the accumulators' read enable a net of fan-out 456 in the placed core,
docs/boards.md session 27). Amaranth's RTLIL always clears the read ports'
``COLLISION_X_MASK``; a design that never reads an address while it is written, or
discards what such a read returns (the matrix accumulators' forwarding,
`hw.matrix_acc`), names the memory with
`name` and the synthesis flow runs `YOSYS_COMMAND` after reading the design, which
sets the mask on that memory's non-transparent read ports only (a transparent port's
bypass is the design's own semantics and stays).

`check(m, write_port, read_port, what)` adds the guarantee as an `Assert` (pysim raises
`AssertionError` on a collision); the unit tests build the engine with their checks on.
Only memories with one write port may be named so (the mask is one bit).
"""

from amaranth.hdl import Assert

__all__ = ["SUFFIX", "name", "YOSYS_COMMAND", "check"]

SUFFIX = "_xrd"

YOSYS_COMMAND = (f"setparam -set COLLISION_X_MASK 1'1 */t:$memrd_v2 */r:MEMID=*{SUFFIX} %i "
                 f"*/r:TRANSPARENCY_MASK=1'0 %i")


def name(base):
    """The submodule name of a memory whose non-transparent reads' collisions are don't-cares."""
    return base + SUFFIX


def check(m, write_port, read_port, what, used=None):
    """Assert (in simulation) that `read_port` never reads the address `write_port`
    writes in the same cycle (only reads whose data is `used`, if given: a caller may
    enable reads it discards)."""
    used = read_port.en if used is None else used
    # checked at the clock edge (a combinational check would see the settling values)
    m.d.sync += Assert(~(used & write_port.en.any() & (read_port.addr == write_port.addr)),
                       f"{what}: a read of the address being written (collision-free by design)")
