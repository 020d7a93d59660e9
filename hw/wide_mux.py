"""Wide word selection (``value.word_select(sel, width)``) mapped onto the ECP5's
slice multiplexers.

An ECP5 slice holds two LUT4s and a PFUMX that selects between them, and an
L6MUX21 selects between the PFUMXs of two slices: a 2:1 multiplexer in each LUT4
makes an 8:1 multiplexer of 4 LUT4s. yosys's LUT mapping (``abc -lut 4``, and
abc9's) knows nothing of this structure and maps an 8:1 multiplexer to about 6
LUT4s and a 32:1 to about 24; built from the primitives, a 32:1 takes 18 (four
8:1 trees and a 4:1 of two LUT4s and a PFUMX), a 4:1 two instead of three.
`select_word` builds those trees
when the design is elaborated for an ECP5 (``platform.family == "ecp5"``: the
``xdsa synth`` flow and the amaranth-boards ECP5 platforms), and the plain
``word_select`` otherwise (simulation, Verilog export, other FPGAs), so the
simulated design is the generic one. tests/hw/test_wide_mux.py proves the two
equivalent with yosys's SAT solver on the primitives' simulation models.

Combinational: no latency; one selection per cycle.
"""

from amaranth.hdl import Cat, Instance, Signal

__all__ = ["select_word", "is_ecp5"]

_MUX2_INIT = 0xCACA            # LUT4 Z = C ? B : A (INIT index D C B A)
MIN_WORDS = 4                  # a 4:1 is two LUT4s and a PFUMX (abc: three LUT4s)


def is_ecp5(platform):
    return getattr(platform, "family", None) == "ecp5"


def select_word(m, value, sel, width, name, platform):
    """``value.word_select(sel, width)``: on an ECP5 with at least 4 words (a power of
    two of them), as trees of LUT4 / PFUMX / L6MUX21 per bit."""
    words = len(value) // width
    if not is_ecp5(platform) or words < MIN_WORDS or words & (words - 1) or len(sel) < words.bit_length() - 1:
        return value.word_select(sel, width)
    k = words.bit_length() - 1
    builder = _Tree(m, name)
    return Cat(*(builder.mux([value[w * width + b] for w in range(words)], [sel[i] for i in range(k)], f"b{b}")
                 for b in range(width)))


class _Tree:
    def __init__(self, m, name):
        self.m, self.name = m, name

    def _cell(self, kind, tag, **ports):
        z = Signal(name=f"{self.name}_{tag}")
        self.m.submodules[f"{self.name}_{tag}"] = Instance(kind, **ports, o_Z=z)
        return z

    def _mux2(self, a, b, s, tag):                       # s ? b : a in one LUT4
        return self._cell("LUT4", tag, p_INIT=_MUX2_INIT, i_A=a, i_B=b, i_C=s, i_D=0)

    def _mux4(self, x, s, tag):                          # two LUT4s and their slice's PFUMX
        lo = self._mux2(x[0], x[1], s[0], tag + "l0")
        hi = self._mux2(x[2], x[3], s[0], tag + "l1")
        return self._cell("PFUMX", tag + "p", i_ALUT=hi, i_BLUT=lo, i_C0=s[1])

    def _mux8(self, x, s, tag):                          # two slices' PFUMXs and an L6MUX21
        d0 = self._mux4(x[:4], s, tag + "a")
        d1 = self._mux4(x[4:], s, tag + "b")
        return self._cell("L6MUX21", tag + "x", i_D0=d0, i_D1=d1, i_SD=s[2])

    def mux(self, x, s, tag):
        """x[s] for len(x) == 2 ** len(s): 8:1 trees first, then the remaining levels."""
        level = 0
        while len(s) >= 3:
            x = [self._mux8(x[i:i + 8], s[:3], f"{tag}_{level}_{i // 8}") for i in range(0, len(x), 8)]
            s, level = s[3:], level + 1
        if len(s) == 2:
            x = [self._mux4(x, s, f"{tag}_{level}")]
        elif len(s) == 1:
            x = [self._mux2(x[0], x[1], s[0], f"{tag}_{level}")]
        return x[0]
