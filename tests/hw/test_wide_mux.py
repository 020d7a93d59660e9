"""hw/wide_mux.py: the ECP5 multiplexer trees select the same word as ``word_select``.

Simulation never sees the ECP5 trees (they are built only for ``platform.family ==
"ecp5"``), so each shape is proved equivalent to the generic selection with yosys:
both netlists, the primitives' simulation models (LUT4, PFUMX, L6MUX21 from yosys's
``common_sim.vh``, which the ECP5 models include), a miter, and SAT over every input value.
"""

import subprocess

import pytest
from amaranth.back import rtlil
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from xdsa.hw.synth import FlowPlatform, yowasp_env
from xdsa.hw.wide_mux import select_word


class Select(wiring.Component):
    def __init__(self, words, width, sel_bits=None):
        self.words, self.width = words, width
        super().__init__({"value": In(words * width), "sel": In(sel_bits or max(1, (words - 1).bit_length())),
                          "out": Out(width)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.out.eq(select_word(m, self.value, self.sel, self.width, "t", platform))
        return m


def cells(text):
    return text.count("cell \\LUT4"), text.count("cell \\PFUMX"), text.count("cell \\L6MUX21")


def tree_cells(words):
    """(LUT4, PFUMX, L6MUX21) per bit: 8:1 trees (4, 2, 1) while three select bits are
    left, then a 4:1 (2, 1, 0) or a 2:1 (1, 0, 0)."""
    m8 = m4 = m2 = 0
    k = words.bit_length() - 1
    while k >= 3:
        words, k = words // 8, k - 3
        m8 += words
    m4, m2 = int(k == 2), int(k == 1)
    return 4 * m8 + 2 * m4 + m2, 2 * m8 + m4, m8


@pytest.mark.parametrize("words, width", [(32, 8), (64, 8), (8, 16), (16, 3), (128, 1), (4, 16), (4, 64)])
def test_ecp5_trees_equal_word_select(tmp_path, words, width):
    generic = rtlil.convert(Select(words, width), name="gold")
    ecp5 = rtlil.convert(Select(words, width), name="gate", platform=FlowPlatform("ecp5"))
    # the trees are there, exactly as large as the module docstring says (32:1: 18 LUT4s a bit)
    assert cells(ecp5) == tuple(width * c for c in tree_cells(words))
    assert cells(generic) == (0, 0, 0)
    (tmp_path / "gold.il").write_text(generic)
    (tmp_path / "gate.il").write_text(ecp5)
    (tmp_path / "eq.ys").write_text(
        "read_verilog +/lattice/common_sim.vh\n"        # LUT4, PFUMX, L6MUX21 (the ECP5 models)
        "read_rtlil gate.il\nhierarchy -check -top gate\n"      # (derives each LUT4 by its INIT)
        "read_rtlil gold.il\nproc\n"
        "miter -equiv -flatten -make_assert gold gate miter\n"
        "sat -verify -prove-asserts -set-init-zero miter\n")
    env = yowasp_env(("YOSYS",))
    res = subprocess.run([env["YOSYS"], "-q", "eq.ys"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]


def test_other_platforms_get_word_select():
    for platform in (None, FlowPlatform("ice40")):
        assert cells(rtlil.convert(Select(32, 8), name="top", platform=platform)) == (0, 0, 0)
    # fewer than 4 words or a count that is not a power of two: the plain selection too
    assert tree_cells(32) == (18, 9, 4)
    assert cells(rtlil.convert(Select(2, 8), name="top", platform=FlowPlatform("ecp5"))) == (0, 0, 0)
    assert cells(rtlil.convert(Select(12, 8), name="top", platform=FlowPlatform("ecp5"))) == (0, 0, 0)
