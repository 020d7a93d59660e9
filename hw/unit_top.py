"""One unit of the core alone, for `xdsa synth --unit NAME`: its area and its own
critical path on a device, when the whole core does not fit or its critical path
hides the others'.

`UnitTop(config, unit)` has three pins (``clk``, ``si``, ``so``). Every input of the
unit comes from its own flip-flop of a shift chain that ``si`` feeds (a registered
source, as most inputs are in the core, and no input is a constant that synthesis
could fold); every output is registered and the registers are folded by an XOR tree,
four bits per LUT and a register per level, into ``so`` (nothing is dropped as
unused, and the tree adds no long path of its own). The chain and the tree add one
flip-flop per input and output bit and about one LUT per four output bits.

The unit's paths from and to other units of the core (a memory response used in the
cycle it arrives, a ready signal from the arbiter) start and end at these registers
here, so a unit's Fmax alone is an upper bound for it in the core.
"""

from amaranth.hdl import Cat, Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .boards import power_on_reset

__all__ = ["UNITS", "UnitTop", "check_unit", "make_unit"]

UNITS = {
    "fetch": "instruction fetcher",
    "loader": "operand-table loader",
    "datamove": "data-move engine (stream or micro-coded, as the configuration has it)",
    "vector": "vector engine",
    "matrix": "matrix unit (systolic array, gathers, drain, writer)",
}


def check_unit(config, unit):
    """ValueError, naming it, for an unknown unit or one `config` does not have."""
    if unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}; expected one of {', '.join(UNITS)}")
    if unit == "vector" and not config.vector_bytes:
        raise ValueError(f"configuration {config.name} has no vector engine (vector_bytes = 0)")
    if unit == "matrix" and not config.array_n:
        raise ValueError(f"configuration {config.name} has no matrix unit (array_n = 0)")


def make_unit(config, unit):
    """The unit `unit` (a key of `UNITS`) as the core builds it for `config` (see
    `check_unit`)."""
    check_unit(config, unit)
    if unit == "fetch":
        from .fetch import Fetcher
        return Fetcher(config)
    if unit == "loader":
        from .capabilities import engine_opcodes
        from .decode import max_table_bits
        from .oploader import OperandLoader
        return OperandLoader(config, max_table_bits(engine_opcodes(config)))
    if unit == "datamove":
        from .datamove import DataMoveEngine
        from .datamove_micro import DataMoveMicro
        return (DataMoveMicro if config.datamove == "micro" else DataMoveEngine)(config)
    if unit == "vector":
        from .vector import VectorEngine
        return VectorEngine(config)
    from .matrix import MatrixEngine
    return MatrixEngine(config)


class UnitTop(wiring.Component):
    """`make_unit(config, unit)` between a shift chain and an XOR tree (see the module
    docstring), with a 16-cycle power-on reset."""

    clk: In(1)
    si: In(1)
    so: Out(1)

    def __init__(self, config, unit):
        self.unit = make_unit(config, unit)
        self._ins, self._outs = [], []
        for _, flow, value in self.unit.signature.flatten(self.unit):
            value = Value.cast(value)
            if isinstance(value, Signal):           # constant members are not ports
                (self._ins if flow.flow == In else self._outs).append(value)
        self.in_bits = sum(len(v) for v in self._ins)
        self.out_bits = sum(len(v) for v in self._outs)
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        power_on_reset(m, self.clk)
        m.submodules.unit = self.unit
        chain = Signal(max(self.in_bits, 1))
        m.d.sync += chain.eq(Cat(self.si, chain[:-1]))
        pos = 0
        for v in self._ins:
            m.d.comb += v.eq(chain[pos:pos + len(v)])
            pos += len(v)
        level = Signal(max(self.out_bits, 1))
        m.d.sync += level.eq(Cat(*self._outs))
        while len(level) > 1:
            nxt = Signal((len(level) + 3) // 4)
            m.d.sync += nxt.eq(Cat(level[i:i + 4].xor() for i in range(0, len(level), 4)))
            level = nxt
        m.d.comb += self.so.eq(level[0])
        return m
