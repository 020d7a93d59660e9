"""The requantisation pipeline of the matrix engine: CONV2D's output stage
(docs/isa-decisions.md D-CONV; golden/semantics/matrix.py `_requantise`).

`Requantiser` takes one exact accumulator per cycle with its parameters and
computes, in exact integer arithmetic,

    v = (acc + bias) * mul
    v = floor((v + 2**(shift-1)) / 2**shift)      (v itself for shift = 0)
    v = v + scale_o
    v = min(max(v, clip_min), clip_max)
    out = v saturated to the result unit's range

Widths (they make every step exact for the engine's operands): ``acc`` is a
``ACC_BITS`` = 53-bit signed sum (the largest exact sum of u16 x u16 products over
the largest reduction, 4095 x 15 x 15 terms, is below 2**52); ``bias``, ``mul`` and
``scale`` are 33-bit signed (any 8-, 16- or 32-bit parameter unit; the engine
refuses 64-bit parameter units); ``shift`` is an unsigned byte. ``|acc + bias| <
2**53`` and ``|mul| <= 2**32``, so ``|v| < 2**85`` after the multiplication and any
shift of 86 or more rounds to 0 exactly; the shifter therefore works on 88 bits
with a 7-bit amount. ``clip_min``/``clip_max`` are signed 16-bit, so the clipped
value is a signed 16-bit number and the final saturation only needs the result
unit's bounds (``sat_lo``/``sat_hi``, 17-bit signed, from `sat_bounds`).

The multiplication takes five pipeline stages: the operands registered again for
the multiplier blocks alone; (acc + bias), cut into three unsigned 17-bit digits and
a signed 3-bit one, times the low 17 and the high 16 bits of ``mul`` (both read as
unsigned), eight tile products no wider than one multiplier block, registered, and
registered again (so each block has flip-flops of its own on both sides, which the
placer can put beside it); then one addition per half of ``mul`` (the tiles of the
even and of the odd digits do not overlap: concatenated, not added); then the
product. ``mul``'s sign (-(acc + bias) * 2**33, its high half being read as
unsigned) is folded into the rounding constant. Each tile is a plain ``*``, which
synthesis maps onto the FPGA's multiplier blocks (on the ECP5: one MULT18X18D each,
8 per requantiser, 2 more than two 54 x 17-bit partial products took; the 8 x 8
array's PEs take 64 and the vector engine 8 of the 85F's 156). A radix-4 Booth tree
in LUTs cost about 4,000 LUT4s per requantiser instead.

The inputs are registered first (stage 0). The rounding addition and the shift
take a stage each; the last stage compares the
shifted value with the four bounds moved to its side (``cmin - scale``, ...,
computed a stage earlier), all four comparisons in parallel, and picks the result
from their flags (the offset is added only to the low 17 bits, which is the result
whenever it lies inside the bounds).

Latency ``LATENCY`` = 10 cycles from ``i_valid`` to ``o_valid`` while ``en`` is high;
throughput one element per cycle. ``en`` low freezes every stage (the consumer
is full). With ``stage_enables``, ``en`` has one bit per stage (bit k: the registers
of stage k, the output's at 9), each meant to be a register copy of the same enable,
so that no single net reaches the pipeline's 2,000 flip-flops (the drain's copies).
``i_tag`` travels with the element to ``o_tag``; ``busy`` is high while an element
is in any stage (including ``o_valid``).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from xdsa.golden.isa import DataUnit

__all__ = ["ACC_BITS", "PARAM_BITS", "Requantiser", "sat_bounds", "requantise"]

ACC_BITS = 53
PARAM_BITS = 33
OUT_BITS = 17
_V0 = ACC_BITS + 1           # acc + bias
_SH = 88                     # rounding-shift width
_LIMIT = 86                  # shifts of _LIMIT or more give 0
_CMP = PARAM_BITS + 2        # the bounds moved to the shifted value's side (bound - scale), signed
_MUL_LO = 17                 # mul splits into 17 low and 16 high bits (both read as unsigned)
_MUL_HI = PARAM_BITS - _MUL_LO
_DIGIT = 17                  # acc + bias in digits of 17 bits for the multiplier blocks


def sat_bounds(unit: DataUnit):
    """(lo, hi) saturation bounds of an integer result unit, clipped to 17-bit signed
    (the clipped value is a signed 16-bit number)."""
    lo, hi = -(1 << 16), (1 << 16) - 1
    if unit.signed:
        b = unit.bits
        return max(lo, -(1 << (b - 1))), min(hi, (1 << (b - 1)) - 1)
    return 0, min(hi, (1 << unit.bits) - 1)


def requantise(acc, bias, mul, shift, scale, clip_min, clip_max, lo, hi):
    """The pipeline's function on Python ints (the golden model's `_requantise`
    followed by saturation to [lo, hi])."""
    v = (acc + bias) * mul
    if shift > 0:
        v = (v + (1 << (shift - 1))) >> shift
    v = v + scale
    v = min(max(v, clip_min), clip_max)
    return min(max(v, lo), hi)


class Requantiser(wiring.Component):
    """CONV2D requantisation, one element per cycle (module docstring).
    ``LATENCY`` cycles while ``en`` is high."""

    LATENCY = 10

    def __init__(self, tag_bits: int = 4, stage_enables: bool = False):
        self.tag_bits = tag_bits
        super().__init__({
            "en": In(self.LATENCY if stage_enables else 1),
            "i_valid": In(1),
            "i_tag": In(tag_bits),
            "acc": In(signed(ACC_BITS)),
            "bias": In(signed(PARAM_BITS)),
            "mul": In(signed(PARAM_BITS)),
            "shift": In(unsigned(8)),
            "scale": In(signed(PARAM_BITS)),
            "clip_min": In(signed(16)),
            "clip_max": In(signed(16)),
            "sat_lo": In(signed(OUT_BITS)),
            "sat_hi": In(signed(OUT_BITS)),
            "o_valid": Out(1),
            "o_tag": Out(tag_bits),
            "busy": Out(1),                 # an element is in some stage
            "value": Out(signed(OUT_BITS)),
        })

    def elaborate(self, platform):
        m = Module()
        en = self.en

        def stage_en(stage):
            return en[stage] if len(en) > 1 else en

        # every stage register but the valid bits (and `o_valid`) is data, used only under the
        # valid bit of its stage, which is reset: reset-less
        def pipe(stage, name, value, shape=None, reset_less=True):
            r = Signal(shape if shape is not None else value.shape(), name=name, reset_less=reset_less)
            with m.If(stage_en(stage)):
                m.d.sync += r.eq(value)
            return r

        # the control values and the element's tag travel alongside: `carry` registers the
        # values of the stage before (in the order of `ctl`) into stage `stage`
        ctl = [("valid", self.i_valid), ("tag", self.i_tag), ("shift", self.shift),
               ("scale", self.scale), ("cmin", self.clip_min), ("cmax", self.clip_max),
               ("lo", self.sat_lo), ("hi", self.sat_hi)]

        def carry(stage, values):
            return [pipe(stage, f"s{stage}_{name}", v, reset_less=name != "valid")
                    for (name, _), v in zip(ctl, values)]

        # stage 0: the inputs, registered (the accumulator comes straight from a block RAM
        # and the drain's lane selection)
        acc0, bias0, mul0 = pipe(0, "s0_acc", self.acc), pipe(0, "s0_bias", self.bias), pipe(0, "s0_mul", self.mul)
        c0 = carry(0, [v for _, v in ctl])

        # stage 1: acc + bias (and the multiplier operand)
        v0 = pipe(1, "s1_v0", acc0 + bias0, signed(_V0))
        mul1 = pipe(1, "s1_mul", mul0)
        c1 = carry(1, c0)

        # stages 2-6: the product. The multiplier blocks have a register stage on each side of
        # their own (2: the operands, 3: the tile products; 4: the products again): in the
        # placed `base` the flip-flops at a block's input and output stood beside the adders
        # that use them, a 123-tile wire before the block and a 112-tile one after it (s1_mul
        # -> a block -> s2_t11, 17.94 ns, session 47); stage 2's operands feed only the blocks
        # and stage 3's products only stage 4, so both can stand beside the blocks.
        # Stage 3 registers the eight tile products of (acc + bias),
        # cut into 17-bit digits (the top one signed, 3 bits), and mul's low 17 and high 16
        # bits, both taken as unsigned: no tile is wider than one multiplier block and no
        # adder follows a block in the same cycle (in the placed `base` a 112-tile wire ran
        # from a block to the adders: docs/boards.md, session 25). Only the top digit's tiles
        # are negative, so the tiles of even and of odd digits, which do not overlap, are
        # concatenated: one addition per half of mul in stage 5, one for the product in
        # stage 6. mul's sign (its high half read as unsigned is 2**16 too large) is
        # -(acc + bias) * 2**33, which stage 5 folds into the rounding constant; stage 7
        # adds both.
        v0_2 = pipe(2, "s2_v0", v0)
        mul2 = pipe(2, "s2_mul", mul1)
        neg = pipe(2, "s2_neg", Mux(mul1[-1], v0, 0), signed(_V0))          # mul's sign correction
        c2 = carry(2, c1)
        digits = [v0_2[lo:lo + _DIGIT].as_unsigned() for lo in range(0, _V0 - _DIGIT, _DIGIT)]
        digits.append(v0_2[len(digits) * _DIGIT:].as_signed())
        halves = (mul2[:_MUL_LO].as_unsigned(), mul2[_MUL_LO:].as_unsigned())
        rows = []
        for h, half in enumerate(halves):
            t = [pipe(3, f"s3_t{h}{d}", dg * half, None if d == len(digits) - 1 else unsigned(2 * _DIGIT))
                 for d, dg in enumerate(digits)]
            t = [pipe(4, f"s4_t{h}{d}", td) for d, td in enumerate(t)]
            top = (len(t) - 1) % 2                                       # the group of the signed tile
            rows.append(tuple(Cat(*t[k::2]).as_signed() if k == top else Cat(*t[k::2]).as_unsigned()
                              for k in (0, 1)))
        neg = pipe(4, "s4_neg", pipe(3, "s3_neg", neg))
        c3 = carry(3, c2)
        c4 = carry(4, c3)
        r5 = [pipe(5, f"s5_row{h}", even + (odd << _DIGIT), signed(_V0 + _MUL_LO + 1))     # (acc + bias) * half
              for h, (even, odd) in enumerate(rows)]
        sh4 = c4[2]
        half_v = Signal(signed(_SH))                                     # 2**(shift-1), 0 for shift 0
        with m.If(sh4 != 0):
            m.d.comb += half_v.eq(Const(1, _SH) << (sh4[:7] - 1)[:7])
        half = pipe(5, "s5_half", half_v - (neg << (_MUL_LO + _MUL_HI)), signed(_SH))
        c5 = carry(5, c4)
        p6 = pipe(6, "s6_prod", r5[0] + (r5[1] << _MUL_LO), signed(_SH))
        half = pipe(6, "s6_half", half)
        c6 = carry(6, c5)

        # stage 7: the rounding addition; stage 8: the shift (a stage each: an 88-bit carry
        # chain and a seven-level shifter do not fit one cycle at 100 MHz together)
        t = pipe(7, "s7_t", p6 + half, signed(_SH))
        c7 = carry(7, c6)
        _, _, sh7, scale7, cmin7, cmax7, lo7, hi7 = c7
        v2 = pipe(8, "s8_v2", Mux(sh7 >= _LIMIT, 0, t >> sh7[:7]), signed(_SH))
        c8 = carry(8, c7)
        # the bounds moved to v2's side of the comparisons (v2 + scale < cmin <=> v2 < cmin -
        # scale, ...), so stage 9 compares v2 with all four at once instead of adding scale
        # first and then clipping and saturating in series
        kmin, kmax, klo, khi = (pipe(8, f"s8_k{nm}", bound - scale7, signed(_CMP))
                                for nm, bound in (("min", cmin7), ("max", cmax7), ("lo", lo7), ("hi", hi7)))
        c_gt = pipe(8, "s8_cmin_gt_cmax", cmin7 > cmax7)
        lo_c = pipe(8, "s8_lo_c", Mux(lo7 > hi7, hi7, lo7))                 # min(lo, hi)

        def saturate(v):                                                 # min(max(v, lo), hi)
            return Mux(v > hi7, hi7, Mux(v < lo7, lo7, v))
        sat_min, sat_max = pipe(8, "s8_sat_min", saturate(cmin7)), pipe(8, "s8_sat_max", saturate(cmax7))

        # stage 9: output offset, clip, saturate
        valid8, tag8, _, scale8, _, _, _, hi8 = c8
        # the bounds are _CMP-bit signed, so v2 is compared in _CMP bits where it fits them and
        # is above or below all four where it does not: the flags of its high bits (a LUT tree
        # beside the carry chains) instead of four 88-bit carry chains (9.7 ns of cells placed)
        top = v2[_CMP - 1:]
        above, below = ~v2[-1] & top.any(), v2[-1] & ~top.all()          # v2 >= 2**34, v2 < -2**34
        v2c = v2[:_CMP].as_signed()

        def lt(k):
            return below | (~above & (v2c < k))

        def gt(k):
            return above | (~below & (v2c > k))
        lt_min, gt_max = lt(kmin), gt(kmax)                              # v3 < cmin, v3 > cmax
        lt_lo, gt_hi = lt(klo), gt(khi)                                  # v3 < lo, v3 > hi
        v3 = Signal(signed(OUT_BITS))      # v2 + scale where it is the clipped value (in 16 bits)
        m.d.comb += v3.eq(v2[:OUT_BITS] + scale8[:OUT_BITS])
        # a = max(v3, cmin); b = min(a, cmax): cmax where a > cmax, else a
        to_max = Mux(lt_min, c_gt, gt_max)
        out = Mux(to_max, sat_max, Mux(lt_min, sat_min, Mux(lt_lo, lo_c, Mux(gt_hi, hi8, v3))))
        value = Signal.like(self.value, name="s9_value", reset_less=True)       # data: under o_valid
        o_tag = Signal.like(self.o_tag, name="s9_tag", reset_less=True)
        m.d.comb += [self.value.eq(value), self.o_tag.eq(o_tag)]
        with m.If(stage_en(9)):
            m.d.sync += [value.eq(out), self.o_valid.eq(valid8), o_tag.eq(tag8)]
        m.d.comb += self.busy.eq(Cat(c[0] for c in (c0, c1, c2, c3, c4, c5, c6, c7, c8)).any() | self.o_valid)
        return m
