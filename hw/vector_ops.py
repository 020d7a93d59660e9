"""The vector engine's instruction set: which opcodes it executes and how each maps
onto the datapath (kind, variant, operand roles and the golden model's operand
checks). Everything here is derived from the mnemonics; operand positions come from
the ISA table through `hw.fields`.

Roles: ``s0``, ``s1``, ``s2`` (sources), ``d`` (destination). The field that holds
each role's address and unit differs between opcodes (``src`` or ``src0``,
``src_unit`` or ``src0_unit``); `ROLE_FIELDS` lists the candidates.
"""

from dataclasses import dataclass

from xdsa.golden import isa
from xdsa.golden.cycle.vector import NARROW, NARROW_SCALED

__all__ = ["Kind", "OpInfo", "OPS", "OP_LIST", "ROLE_FIELDS", "REDUCE_AXES", "NARROW_KINDS", "NARROW_SCALED_KINDS"]


class Kind:
    """What the datapath computes (the ALU's case)."""
    ADD, SUB, MAX, MIN, MAXSI, MINSI, CMP, THRES, CLIP, MEDIAN, ABS, SIGN, IDENT, LOGIC, \
        LSL, LSR, ROR, ASR, MUL, ASL, POW, DIV, MOD, REDUCE = range(24)
    COUNT = 24


# CMP variants (seq .. sgt), LOGIC variants, REDUCE variants
CMP_VARIANT = {"seq": 0, "sne": 1, "sle": 2, "slt": 3, "sge": 4, "sgt": 5}
LOGIC_VARIANT = {"and": 0, "or": 1, "xor": 2, "inv": 3, "bclr": 4, "bset": 1}
REDUCE_VARIANT = {"reduce_all": 0, "reduce_any": 1, "reduce_mean": 2, "reduce_max": 3,
                  "reduce_min": 4, "reduce_prod": 5, "reduce_sum": 6, "reduce_var": 7,
                  "asum": 6}
REDUCE_AXES = ("W", "H", "C")                      # axis mask bits 0, 1, 2

ROLE_FIELDS = {
    "s0": (("src0", "src"), ("src0_unit", "src_unit")),
    "s1": (("src1",), ("src1_unit",)),
    "s2": (("src2",), ("src2_unit",)),
    "d": (("dst",), ("dst_unit",)),
}


@dataclass(frozen=True)
class OpInfo:
    mnemonic: str
    kind: int
    variant: int = 0
    sources: tuple = ("s0", "s1")       # sources read (in this order)
    units: tuple = ()                   # roles with a unit field used by the datapath
    bytes_only: bool = False            # logic: u8 everywhere, no unit fields
    rule: str = ""                      # extra UNSUPPORTED_UNIT rule (golden order)
    reduction: bool = False             # ASUM and REDUCE_*: whole-vector results
    no_sat: bool = False                # conversion always wraps (SXT/UXT)
    shift_amount: bool = False          # source 1 is read as an unsigned shift amount
    pattern: bool = False               # source 0 is a bit pattern (LSL/LSR/ROR)

    @property
    def opcode(self):
        return isa.by_mnemonic(self.mnemonic)


def _build():
    ops = []
    B = dict(sources=("s0", "s1"), units=("s0", "s1", "d"))
    U = dict(sources=("s0",), units=("s0", "d"))
    for name, kind in (("add", Kind.ADD), ("sub", Kind.SUB), ("max", Kind.MAX), ("min", Kind.MIN),
                       ("maxsi", Kind.MAXSI), ("minsi", Kind.MINSI), ("mul", Kind.MUL),
                       ("div", Kind.DIV), ("mod", Kind.MOD), ("pow", Kind.POW)):
        ops.append(OpInfo(name, kind, **B))
    for name, v in CMP_VARIANT.items():
        ops.append(OpInfo(name, Kind.CMP, v, **B))
    ops.append(OpInfo("thres", Kind.THRES, **U))
    ops.append(OpInfo("abs", Kind.ABS, rule="abs", **U))
    ops.append(OpInfo("sign", Kind.SIGN, **U))
    ops.append(OpInfo("median", Kind.MEDIAN, sources=("s0", "s1", "s2"), units=("s0", "s1", "s2", "d")))
    for name, v in LOGIC_VARIANT.items():
        ops.append(OpInfo(name, Kind.LOGIC, v, sources=("s0",) if name == "inv" else ("s0", "s1"),
                          bytes_only=True))
    ops.append(OpInfo("lsl", Kind.LSL, shift_amount=True, pattern=True, **B))
    ops.append(OpInfo("lsr", Kind.LSR, shift_amount=True, pattern=True, **B))
    ops.append(OpInfo("ror", Kind.ROR, shift_amount=True, pattern=True, **B))
    ops.append(OpInfo("asl", Kind.ASL, shift_amount=True, **B))
    ops.append(OpInfo("asr", Kind.ASR, shift_amount=True, rule="asr", **B))
    ops.append(OpInfo("nsr", Kind.ASR, shift_amount=True, rule="nsr", **B))
    ops.append(OpInfo("sxt", Kind.IDENT, 1, rule="extend", no_sat=True, **U))
    ops.append(OpInfo("uxt", Kind.IDENT, 2, rule="extend", no_sat=True, **U))
    for name in ("round", "ceil", "floor", "clip", "data_convert"):
        ops.append(OpInfo(name, Kind.CLIP if name == "clip" else Kind.IDENT, **U))
    ops.append(OpInfo("asum", Kind.REDUCE, REDUCE_VARIANT["asum"], reduction=True, **U))
    for name, v in REDUCE_VARIANT.items():
        if name != "asum":
            ops.append(OpInfo(name, Kind.REDUCE, v, sources=("s0",), units=("s0",), reduction=True))
    return {op.mnemonic: op for op in ops}


OPS = _build()
OP_LIST = tuple(OPS.values())


def _kinds_of(mnemonics):
    kinds = frozenset(OPS[mn].kind for mn in mnemonics)
    mixed = sorted(mn for mn, op in OPS.items() if op.kind in kinds and mn not in mnemonics)
    assert not mixed, f"{mixed} share a kind with the narrow path's instructions"
    return kinds


# the kinds on the ALU's narrow path (`CoreConfig.vector_narrow_bits`, `hw.vector_alu_split`),
# and those of them whose cycles per beat grow by `CoreConfig.narrow_groups`
NARROW_KINDS = _kinds_of(NARROW)
NARROW_SCALED_KINDS = _kinds_of(NARROW_SCALED)
