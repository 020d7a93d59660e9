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

The multiplication is split over two pipeline stages: (acc + bias) times the low 17
bits of ``mul`` (unsigned) and times its high 16 bits (signed), registered, then
their sum. Each partial product is a plain ``*``, which synthesis maps onto the
FPGA's multiplier blocks (on the ECP5: 4 MULT18X18D each, 8 per requantiser; the
8 x 8 array's PEs take 64 and the vector engine 32 of the 85F's 156). A radix-4
Booth tree in LUTs cost about 4,000 LUT4s per requantiser instead.

The inputs are registered first (stage 0). The rounding addition and the shift
take a stage each; the last stage compares the
shifted value with the four bounds moved to its side (``cmin - scale``, ...,
computed a stage earlier), all four comparisons in parallel, and picks the result
from their flags (the offset is added only to the low 17 bits, which is the result
whenever it lies inside the bounds).

Latency ``LATENCY`` = 7 cycles from ``i_valid`` to ``o_valid`` while ``en`` is high;
throughput one element per cycle. ``en`` low freezes every stage (the consumer
is full). ``i_tag`` travels with the element to ``o_tag``; ``busy`` is high while
an element is in any stage (including ``o_valid``).
"""

from amaranth.hdl import Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from xdsa.golden.isa import DataUnit

__all__ = ["ACC_BITS", "PARAM_BITS", "Requantiser", "sat_bounds", "requantise"]

ACC_BITS = 53
PARAM_BITS = 33
OUT_BITS = 17
_V0 = ACC_BITS + 1           # acc + bias
_P = _V0 + PARAM_BITS        # (acc + bias) * mul
_SH = 88                     # rounding-shift width
_LIMIT = 86                  # shifts of _LIMIT or more give 0
_MUL_LO = 17                 # mul splits into 17 low (unsigned) and 16 high (signed) bits


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

    LATENCY = 7

    def __init__(self, tag_bits: int = 4):
        self.tag_bits = tag_bits
        super().__init__({
            "en": In(1),
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

        def pipe(name, value, shape=None):
            r = Signal(shape if shape is not None else value.shape(), name=name)
            with m.If(en):
                m.d.sync += r.eq(value)
            return r

        # the control values and the element's tag travel alongside
        def carry(stage, sigs):
            return [pipe(f"s{stage}_{name}", s) for name, s in sigs]

        ctl = [("valid", self.i_valid), ("tag", self.i_tag), ("shift", self.shift),
               ("scale", self.scale), ("cmin", self.clip_min), ("cmax", self.clip_max),
               ("lo", self.sat_lo), ("hi", self.sat_hi)]

        # stage 0: the inputs, registered (the accumulator comes straight from a block RAM
        # and the drain's lane selection)
        acc0, bias0, mul0 = pipe("s0_acc", self.acc), pipe("s0_bias", self.bias), pipe("s0_mul", self.mul)
        c0 = carry(0, ctl)

        # stage 1: acc + bias (and the multiplier operand)
        v0 = pipe("s1_v0", acc0 + bias0, signed(_V0))
        mul1 = pipe("s1_mul", mul0)
        c1 = carry(1, zip([n for n, _ in ctl], c0))

        # stages 2-3: the two partial products, then their sum
        pp_lo = pipe("s2_pp_lo", v0 * mul1[:_MUL_LO].as_unsigned(), signed(_V0 + _MUL_LO + 1))
        pp_hi = pipe("s2_pp_hi", v0 * mul1[_MUL_LO:].as_signed(), signed(_V0 + PARAM_BITS - _MUL_LO))
        c2 = carry(2, zip([n for n, _ in ctl], c1))
        p3 = pipe("s3_prod", pp_lo + (pp_hi << _MUL_LO), signed(_P))
        sh2 = c2[2]
        half_v = Signal(signed(_SH))                                     # 2**(shift-1), 0 for shift 0
        with m.If(sh2 != 0):
            m.d.comb += half_v.eq(Const(1, _SH) << (sh2[:7] - 1)[:7])
        half = pipe("s3_half", half_v)
        c3 = carry(3, zip([n for n, _ in ctl], c2))

        # stage 4: the rounding addition; stage 5: the shift (a stage each: an 88-bit carry
        # chain and a seven-level shifter do not fit one cycle at 100 MHz together)
        t = pipe("s4_t", p3 + half, signed(_SH))
        c4 = carry(4, zip([n for n, _ in ctl], c3))
        valid4, tag4, sh4, scale4, cmin4, cmax4, lo4, hi4 = c4
        v2 = pipe("s5_v2", Mux(sh4 >= _LIMIT, 0, t >> sh4[:7]), signed(_SH))
        c5 = carry(5, zip([n for n, _ in ctl], c4))
        # the bounds moved to v2's side of the comparisons (v2 + scale < cmin <=> v2 < cmin -
        # scale, ...), so stage 6 compares v2 with all four at once instead of adding scale
        # first and then clipping and saturating in series
        kmin, kmax, klo, khi = (pipe(f"s5_k{nm}", bound - scale4, signed(PARAM_BITS + 2))
                                for nm, bound in (("min", cmin4), ("max", cmax4), ("lo", lo4), ("hi", hi4)))
        c_gt = pipe("s5_cmin_gt_cmax", cmin4 > cmax4)
        lo_c = pipe("s5_lo_c", Mux(lo4 > hi4, hi4, lo4))                 # min(lo, hi)

        def saturate(v):                                                 # min(max(v, lo), hi)
            return Mux(v > hi4, hi4, Mux(v < lo4, lo4, v))
        sat_min, sat_max = pipe("s5_sat_min", saturate(cmin4)), pipe("s5_sat_max", saturate(cmax4))

        # stage 6: output offset, clip, saturate
        valid5, tag5, _, scale5, _, _, _, hi5 = c5
        lt_min, gt_max = v2 < kmin, v2 > kmax                            # v3 < cmin, v3 > cmax
        lt_lo, gt_hi = v2 < klo, v2 > khi                                # v3 < lo, v3 > hi
        v3 = Signal(signed(OUT_BITS))      # v2 + scale where it is the clipped value (in 16 bits)
        m.d.comb += v3.eq(v2[:OUT_BITS] + scale5[:OUT_BITS])
        # a = max(v3, cmin); b = min(a, cmax): cmax where a > cmax, else a
        to_max = Mux(lt_min, c_gt, gt_max)
        out = Mux(to_max, sat_max, Mux(lt_min, sat_min, Mux(lt_lo, lo_c, Mux(gt_hi, hi5, v3))))
        with m.If(en):
            m.d.sync += [self.value.eq(out), self.o_valid.eq(valid5), self.o_tag.eq(tag5)]
        m.d.comb += self.busy.eq(c0[0] | c1[0] | c2[0] | c3[0] | c4[0] | c5[0] | self.o_valid)
        return m
