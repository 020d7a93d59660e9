"""A delay line: a value as it was some clock cycles ago (the ``sync`` domain).

The units that talk to the data memory use it to carry a request's bookkeeping (a
byte offset, the slots a response fills, a valid bit) to the cycle in which the
response arrives, ``config.mem_latency`` cycles after the request (hw/memory.py).

Latency: `cycles` clock cycles; no logic besides the flip-flops (``cycles x
len(value)`` of them).
"""

from amaranth.hdl import Signal, Value

__all__ = ["delayed"]


def delayed(m, value, cycles, name, reset_less=False):
    """`value` delayed by `cycles` registers of the ``sync`` domain (`value` itself for 0).
    The registers are named `name` (one register) or ``{name}_d1`` .. (several);
    `reset_less` for data that a delayed valid bit (with a reset) qualifies."""
    value = Value.cast(value)
    for k in range(cycles):
        q = Signal(value.shape(), name=f"{name}_d{k + 1}" if cycles > 1 else name,
                   reset_less=reset_less)
        m.d.sync += q.eq(value)
        value = q
    return value
