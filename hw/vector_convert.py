"""Stage S2 of the beat pipeline: the destination conversion (D-CONVERT) and packing.

Input: the ALU's per-lane exact results (`hw.vector_alu`: exact or magnitude
mode; `exact_from_magnitude` converts the latter). In magnitude mode the sign is applied first (``low = -|r| mod 2**L``,
``neg = sign & |r| != 0``, ``fit = |r| <= 2**L`` for negatives, ``< 2**L``
otherwise). Then, with k = dst_bits - signed:

* over  = not neg and (not fit or any of bits [k, L) of low set)
* under = neg and (unsigned destination, or not fit, or bits [k, L) not all ones)
* with ``sat``: over -> the destination maximum, under -> its minimum; without
  ``sat`` (or when in range) the low destination bits are kept, which is the
  wrap-around of the exact value.

`Converter` is combinational (the pipeline registers its lanes) but for the range
mask, a register loaded every cycle from ``cfg``. `pack` (the pipeline's stage P)
takes the low dst_bits of every lane of the registered lanes into consecutive
destination elements: the beat's destination data, least significant element first.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .vector_alu import MAG_KINDS, beat_config_layout
from .vector_swar import LANE_BITS, Lanes, cut_registers

__all__ = ["Converter", "exact_from_magnitude", "pack"]


def exact_from_magnitude(ln, low, hi, neg, tag):
    """Magnitude-mode lanes (|r| in `low`/`hi`, the sign at the lane MSBs of `neg`)
    as exact ones: (r mod 2**L, r < 0, r in [-2**L, 2**L)), the two flags as masks
    over whole lanes. `ln` is the `hw.vector_swar.Lanes` of the values' width."""
    sgn = ln.lane_flag(neg & ln.H, tag + "_sgn")
    nzl = ln.lane_any(low, tag + "_nzl")
    nzh = ln.lane_any(hi, tag + "_nzh")
    ph1 = ln.lane_any(hi ^ ln.LO, tag + "_ph_ne1")
    return (ln.neg_if(low, sgn, tag + "_apply"), ln.comb(sgn & (nzl | nzh), tag + "_negm"),
            ln.comb(~nzh | (sgn & ~ph1 & ~nzl), tag + "_fitm"))


class Converter(wiring.Component):
    """D-CONVERT for an `n`-bit beat. With ``magnitude=False`` the input is always in
    exact mode (`hw.vector_alu_split` converts its narrow path's magnitudes itself)
    and there is no ``hi`` port. `widths`: the lane widths built."""

    def __init__(self, n, *, magnitude=True, widths=LANE_BITS):
        self.n = n
        self.widths = tuple(widths)
        self.magnitude = magnitude
        super().__init__({
            "cfg": In(beat_config_layout()),
            "low": In(n), "neg": In(n), "fit": In(n),
            **({"hi": In(n)} if magnitude else {}),
            "out": Out(n),
        })

    def elaborate(self, platform):
        m = Module()
        cm = Module()
        m.submodules.consts = cm
        n, cfg = self.n, self.cfg
        ln = Lanes(m, n, cfg.lsel, "cv", cm=cm, widths=self.widths)
        H = ln.H

        v = Signal(n, name="value")
        negm = Signal(n, name="negm")
        fitm = Signal(n, name="fitm")
        exact = [v.eq(self.low), negm.eq(ln.lane_flag(self.neg & H, "negm")),
                 fitm.eq(ln.lane_flag(self.fit & H, "fitm"))]
        if self.magnitude:
            mag = Signal(name="mag_mode")
            cm.d.comb += mag.eq(cfg.kind.matches(*MAG_KINDS))
            with m.If(mag):
                m.d.comb += [x.eq(y) for x, y in zip((v, negm, fitm),
                                                    exact_from_magnitude(ln, self.low, self.hi, self.neg, "mg"))]
            with m.Else():
                m.d.comb += exact
        else:
            m.d.comb += exact

        dkey = [(Cat(cfg.bd, cfg.sd), [(bd | (sd << 3), (4 << bd, sd)) for bd in range(5) for sd in (0, 1)])]

        def mk(L, d):
            bd, sd = d
            k = bd - sd
            return None if bd > L else ((1 << L) - 1) & ~((1 << k) - 1)
        # lane bits [k, L), registered: `cfg` holds still from before the first beat (the
        # engine sets it in PREP), and the mask's decoding is then off the range checks' path
        hi_mask, = cut_registers(cm, True, ln.const(mk, "mk", keys=dkey))
        hi_bits = ln.lane_any(v & hi_mask, "anyhi")
        zero_bits = ln.lane_any(~v & hi_mask, "anyzero")
        over = Signal(n, name="over")
        under = Signal(n, name="under")
        m.d.comb += [
            over.eq(Mux(cfg.sat, ~negm & (~fitm | hi_bits), 0)),
            under.eq(Mux(cfg.sat, negm & Mux(cfg.sd, ~fitm | zero_bits, ln.ALL), 0)),
        ]
        res = Signal(n, name="res")
        m.d.comb += res.eq((~hi_mask & over) | (Mux(cfg.sd, hi_mask, 0) & under) | (v & ~(over | under)))
        m.d.comb += self.out.eq(res)
        return m


def pack(ln, lanes, bd):
    """The low ``4 << bd`` bits of every lane of `lanes` (an ``ln.n``-bit word of
    `hw.vector_swar.Lanes` `ln`) as consecutive elements, the first lane lowest: a
    multiplexer per bit over the lane and destination widths."""
    n = ln.n
    return ln.per_lane("pack", lambda L, b: None if (4 << b) > L else
                       Cat(lanes[k * L:k * L + (4 << b)] for k in range(n // L)),
                       keys=[(bd, range(5))])
