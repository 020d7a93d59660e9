"""Core configurations: the parameters every hardware unit is built from.

`tiny` fits an iCE40 UP5K, `base` an ECP5-85F, `large` is for simulation and ASIC
flows. A configuration without a feature (an engine, a data unit, a domain port)
faults cleanly on the instructions that need it; the golden model is given the
same capability (`capability()`) so that co-simulation agrees on those faults.
"""

from dataclasses import dataclass, field

from .flow_options import LUT_MAPPERS, PLACERS, ROUTERS

__all__ = ["CoreConfig", "CONFIGS", "get_config"]


@dataclass(frozen=True)
class CoreConfig:
    name: str
    mem_bytes: int                 # data memory (SRAM) size in bytes, a multiple of row_bytes
    row_bytes: int = 32            # data memory row width in bytes (8, 16 or 32)
    domains: tuple = ()            # DIDs that have a domain stream port
    key_timeout: int = 1 << 16     # cycles a key wait may last before KEY_TIMEOUT
    datamove_lanes: int = None     # bytes per cycle of the data-move fast path (None: row_bytes)
    datamove: str = "stream"       # data-move engine: "stream" (hw/datamove.py) or "micro"
                                   # (hw/datamove_micro.py: micro-coded, least logic, lanes = 1)
    vector_bytes: int = 0          # vector datapath width W in bytes (0: no vector engine)
    vector_narrow_bits: int = 0    # width of the ALU for POW, MEDIAN, CLIP, MUL, the shifts, DIV/MOD
                                   # (0: the whole datapath; 64: one 64-bit lane group per cycle)
    vector_narrow_stages: int = 0  # registers inside the narrow path (0 up to its NARROW_CUTS); each of
                                   # its steps then takes `narrow_step_cycles` (hw/vector_alu_split.py)
    vector_min_lane: int = 4       # narrowest lane of the vector datapath in bits (4, or 8: int4-only
                                   # instructions then run in 8-bit lanes, at half their rate)
    array_n: int = 0               # systolic array size N (0: no matrix unit)
    matrix_rq_lanes: int = 2       # CONV2D requantisers (results per cycle, 1 or 2; the second costs
                                   # about 3,000 LUT4 sites on ECP5 and keeps the ResNet-20 stem at
                                   # >= 75 %, see docs/matrix-unit.md)
    fetch_depth: int = None        # fetcher buffer entries (None: default_depth(row_bytes, mem_latency))
    mem_latency: int = 1           # data memory read latency in cycles (hw/memory.py): 1, 2 with the
                                   # requests registered in front of the block RAMs, 3 with their
                                   # read data registered too
    synth_luts: str = "abc9"       # the synthesis flow's default LUT mapper (hw/synth.py): "abc9", or
                                   # "abc" (abc -lut 4: fewer LUTs; `base` fits the ECP5-85F only so)
    synth_router: str = "router1"  # the flow's default nextpnr router ("router2" for `base`: router1
                                   # does not finish its vector engine, docs/boards.md)
    synth_placer: str = "heap"     # the flow's default nextpnr placer: "heap" (its default) or "static"
                                   # (electrostatic: `base` places in half the time, with 28 % less
                                   # wire and a better estimate, docs/boards.md)
    doc: str = ""
    extra: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        if self.row_bytes not in (8, 16, 32):
            raise ValueError(f"row_bytes must be 8, 16 or 32, not {self.row_bytes!r}")
        if self.mem_bytes <= 0 or self.mem_bytes % self.row_bytes:
            raise ValueError(f"mem_bytes must be a positive multiple of row_bytes ({self.row_bytes}), "
                             f"not {self.mem_bytes!r}")
        for d in self.domains:
            if not (1 <= d <= 6 or 0x80 <= d <= 0xFF):
                raise ValueError(f"domain port DID {d:#x} is not a STANDARD non-Unity or CUSTOM DID")
        if self.fetch_depth is not None and (not isinstance(self.fetch_depth, int) or self.fetch_depth < 1):
            raise ValueError(f"fetch_depth must be a positive number of buffer entries, not {self.fetch_depth!r}")
        if self.mem_latency not in (1, 2, 3):
            raise ValueError(f"mem_latency must be 1, 2 or 3 cycles, not {self.mem_latency!r}")
        for name, choices in (("synth_luts", LUT_MAPPERS), ("synth_router", ROUTERS), ("synth_placer", PLACERS)):
            if getattr(self, name) not in choices:
                raise ValueError(f"{name} must be {' or '.join(map(repr, choices))}, not {getattr(self, name)!r}")
        if self.datamove not in ("stream", "micro"):
            raise ValueError(f"datamove must be 'stream' or 'micro', not {self.datamove!r}")
        if self.datamove == "micro" and self.mem_latency != 1:
            raise ValueError(f"the micro-coded data-move engine reads with a memory read latency of 1 "
                             f"cycle: it needs mem_latency = 1, not {self.mem_latency}")
        if self.datamove == "micro" and self.lanes != 1:
            raise ValueError(f"the micro-coded data-move engine moves one byte per cycle: it needs "
                             f"datamove_lanes = 1, not {self.lanes}")
        nb = self.vector_narrow_bits
        if nb and not (self.vector_bytes and nb >= 64 and nb & (nb - 1) == 0 and nb <= 8 * self.vector_bytes):
            raise ValueError(f"vector_narrow_bits must be 0 or a power of two from 64 up to the vector "
                             f"datapath's {8 * self.vector_bytes} bits, not {nb!r}")
        if self.vector_narrow_stages:
            from .vector_alu_split import NARROW_CUTS
            if self.narrow_groups == 1:
                raise ValueError(f"vector_narrow_stages needs a narrow path (vector_narrow_bits below the "
                                 f"datapath's {8 * self.vector_bytes} bits), not {self.vector_narrow_stages!r} "
                                 f"stages without one")
            if self.vector_narrow_stages not in range(len(NARROW_CUTS) + 1):
                raise ValueError(f"vector_narrow_stages must be 0 to {len(NARROW_CUTS)}, "
                                 f"not {self.vector_narrow_stages!r}")
        if self.vector_min_lane not in (4, 8):
            raise ValueError(f"vector_min_lane must be 4 or 8 bits, not {self.vector_min_lane!r}")
        if self.matrix_rq_lanes not in (1, 2):
            raise ValueError(f"matrix_rq_lanes must be 1 or 2, not {self.matrix_rq_lanes!r}")
        if self.key_timeout < 1:
            raise ValueError(f"key_timeout must be at least 1 cycle, not {self.key_timeout!r}")

    @property
    def rows(self) -> int:
        return self.mem_bytes // self.row_bytes

    @property
    def row_bits(self) -> int:
        return 8 * self.row_bytes

    @property
    def narrow_groups(self) -> int:
        """The lane groups a beat is split into on the vector ALU's narrow path (1: not split)."""
        nb = self.vector_narrow_bits
        return (8 * self.vector_bytes) // nb if nb else 1

    @property
    def narrow_step_cycles(self) -> int:
        """Cycles per step of the vector ALU's narrow path (1 without stages; see
        `hw.vector_alu_split.narrow_step_cycles`)."""
        from .vector_alu_split import narrow_step_cycles
        return narrow_step_cycles(self.vector_narrow_stages)

    @property
    def lanes(self) -> int:
        return self.datamove_lanes or self.row_bytes


CONFIGS = {
    "tiny": CoreConfig("tiny", mem_bytes=8 << 10, row_bytes=8, datamove_lanes=1, datamove="micro",
                       fetch_depth=1,
                       doc="iCE40 UP5K: micro-coded byte-serial data move, 8 KiB of data memory, "
                           "1-entry fetch buffer"),
    "base": CoreConfig("base", mem_bytes=128 << 10, row_bytes=32, domains=(0x80,), datamove_lanes=8,
                       vector_bytes=32, vector_narrow_bits=64, vector_narrow_stages=13, vector_min_lane=8,
                       array_n=8, mem_latency=3, synth_luts="abc", synth_router="router2", synth_placer="static",
                       doc="ECP5-85F: 128 KiB in 256-bit rows read with a latency of 3 (requests "
                           "registered in front of the block RAMs, read data behind them), DATA_MOVE 8 bytes per cycle, W = 32 "
                           "vector datapath (POW, MEDIAN, CLIP, MUL, shifts, DIV/MOD on a 64-bit path of "
                           "13 stages, 64 bits per 9 cycles; int4 in 8-bit lanes), 8 x 8 array"),
    "large": CoreConfig("large", mem_bytes=1 << 20, row_bytes=32, domains=(1, 2, 3, 4, 5, 6, 0x80),
                        vector_bytes=32, array_n=16,
                        doc="simulation/ASIC: 1 MiB data memory, 16 x 16 array"),
}


def get_config(name: str) -> CoreConfig:
    try:
        return CONFIGS[name]
    except KeyError:
        raise ValueError(f"unknown configuration {name!r}; expected one of {', '.join(CONFIGS)}") from None
