"""Replicated registers: copies of one register, each driving a part of its loads.

A register whose value selects in hundreds of multiplexers (a ring buffer's read
pointer, a shifter's amount) has a net that spans the multiplexers' whole area; in a
placed `base` such nets were tens of tiles long (docs/boards.md). `replicas` gives
``copies`` registers that all load the same next value, so that each can stand beside
the part of the loads it drives.

yosys merges flip-flops with the same inputs (``opt_merge``), whatever attributes the
wires have, so on the ECP5 (``platform.family == "ecp5"``) every bit of a copy is a
``TRELLIS_FF`` instance with the ``keep`` attribute: a synchronous reset to the
register's initial value (``SRMODE="LSR_OVER_CE"``, ``REGSET`` per bit), clocked and
reset by the ``sync`` domain, as Amaranth's own registers map (``reset_less`` copies
tie ``LSR`` low, for the copies of a register that is itself reset-less). Elsewhere (simulation,
the Verilog export, the iCE40) the copies are ordinary registers, which the tools may
merge. Either way each copy holds the same value in every cycle (the register's).

`own_replicas` is the same for a register whose next value is a function of its own
(a pointer that steps on an enable): each copy computes its next value from its own
flip-flops, so the late enable reaches every copy in one hop, where a shared next
value is one multiplexer (placed somewhere among the copies) and a second hop.

`kept_and` is the AND of up to four bits as a LUT of its own (a kept ``LUT4`` on the
ECP5): copies of one decision for loads far apart, each computed beside its loads
from the decision's shared terms, which yosys would otherwise merge into one.

`slices(bits)` is the number of copies the project uses for a select over ``bits``
bits (one per 64-bit slice); `mux_sliced` is ``Mux(sel, a, b)`` with each slice
selected by its own copy.

Latency: a copy is a register (its value is ``next`` of the cycle before); no logic
besides the flip-flops (`own_replicas`: each copy's next-value logic).
"""

from amaranth.hdl import Cat, ClockSignal, Const, Instance, Mux, ResetSignal, Signal, Value

__all__ = ["replicas", "own_replicas", "kept_and", "slices", "mux_sliced"]

SLICE_BITS = 64


def _ecp5(platform):
    return getattr(platform, "family", None) == "ecp5"


def replicas(m, platform, next_value, copies, name, init=0, reset_less=False):
    """``copies`` registers of ``len(next_value)`` bits, each loading ``next_value`` at every
    clock edge of the ``sync`` domain (reset to ``init`` unless `reset_less`). Returns the
    list of their values."""
    next_value = Value.cast(next_value)
    return own_replicas(m, platform, lambda q: next_value, len(next_value), copies, name, init, reset_less)


def own_replicas(m, platform, next_of, width, copies, name, init=0, reset_less=False):
    """`replicas` whose copies each compute their next value from their own: copy ``q``
    (``width`` bits) loads ``next_of(q)``. Each copy has next-value logic of its own, fed
    back from its own flip-flops, which the placer can put beside them, so a late input
    (an enable) reaches every copy in one hop instead of through one shared multiplexer.
    `next_of` must give the same value for equal arguments: all copies hold the same value."""
    init = Const(init, width).value
    out = []
    for k in range(copies):
        q = Signal(width, name=f"{name}_r{k}", init=0 if _ecp5(platform) else init, reset_less=reset_less)
        nxt = Value.cast(next_of(q))
        if _ecp5(platform):
            for b in range(width):
                m.submodules[f"{name}_r{k}_ff{b}"] = Instance(
                    "TRELLIS_FF", a_keep=1,
                    p_GSR="DISABLED", p_CEMUX="1", p_CLKMUX="CLK", p_LSRMUX="LSR",
                    p_SRMODE="LSR_OVER_CE", p_REGSET="SET" if (init >> b) & 1 else "RESET",
                    i_CLK=ClockSignal("sync"), i_LSR=Const(0) if reset_less else ResetSignal("sync"),
                    i_DI=nxt[b], o_Q=q[b])
        else:
            m.d.sync += q.eq(nxt)
        out.append(q)
    return out


def kept_and(m, platform, terms, name):
    """The AND of `terms` (one to four 1-bit values) as a signal named `name`; on the ECP5
    one ``LUT4`` instance with the ``keep`` attribute (unused inputs tied high), which
    yosys neither merges with an equal copy nor folds into the LUTs it feeds, so each
    copy is a cell of its own that the placer can put beside its loads. Elsewhere plain
    logic. Latency: combinational, one LUT."""
    terms = [Value.cast(t) for t in terms]
    if not 1 <= len(terms) <= 4 or any(len(t) != 1 for t in terms):
        raise ValueError(f"kept_and takes one to four 1-bit terms, not {len(terms)} of widths "
                         f"{[len(t) for t in terms]}")
    out = Signal(name=name)
    if _ecp5(platform):
        ins = terms + [Const(1)] * (4 - len(terms))
        m.submodules[f"{name}_lut"] = Instance("LUT4", a_keep=1, p_INIT=Const(0x8000, 16),
                                               i_A=ins[0], i_B=ins[1], i_C=ins[2], i_D=ins[3], o_Z=out)
    else:
        m.d.comb += out.eq(Cat(terms).all())
    return out


def slices(bits):
    """Copies of a select over `bits` bits: one per SLICE_BITS (at least one)."""
    return max(1, bits // SLICE_BITS)


def slice_bounds(width, parts):
    """``(lo, hi)`` of each of `parts` equal slices of `width` bits (the last may be shorter)."""
    step = -(-width // parts)
    return [(lo, min(lo + step, width)) for lo in range(0, width, step)]


def mux_sliced(sels, a, b):
    """``Mux(sel, a, b)`` for copies `sels` of one select: slice ``j`` of ``len(sels)``
    equal slices of `a` and `b` chosen by ``sels[j]``."""
    a, b = Value.cast(a), Value.cast(b)
    return Cat(Mux(s, a[lo:hi], b[lo:hi]) for s, (lo, hi) in zip(sels, slice_bounds(len(a), len(sels))))
