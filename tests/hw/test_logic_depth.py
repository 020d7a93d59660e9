"""hw/logic_depth.py: the deepest register-to-register paths of a yosys JSON netlist,
on small hand-made ECP5 and iCE40 netlists whose depths are known."""

import pytest

from xdsa.hw.logic_depth import deepest_paths


def _cell(kind, **ports):
    """A cell: ports given as name=(direction, [bits])."""
    return {"type": kind, "port_directions": {p: d for p, (d, _) in ports.items()},
            "connections": {p: bits for p, (_, bits) in ports.items()}}


def _netlist(cells, nets):
    return {"modules": {"top": {"attributes": {"top": 1}, "cells": dict(enumerate(cells)),
                                "netnames": {name: {"bits": bits, "hide_name": int(name.startswith("$"))}
                                             for name, bits in nets.items()}}}}


def _ff(d, q):
    return _cell("TRELLIS_FF", CLK=("input", [1]), DI=("input", [d]), Q=("output", [q]))


def _lut(ins, z):
    return _cell("LUT4", **{p: ("input", [b]) for p, b in zip("ABCD", ins)}, Z=("output", [z]))


def test_lut_chain_and_carry_chain_on_ecp5():
    # acc_r -> three LUTs -> out_r; cnt_r -> a 20-cell carry chain -> a LUT -> cnt_r;
    # a one-LUT path from acc_r to flag_r
    cells = [_ff(12, 10), _lut([10], 20), _lut([20, 10], 21), _lut([21, 10], 22), _ff(22, 11),
             _lut([10], 23), _ff(23, 13)]
    carry_in = 40
    chain = []
    for k in range(20):                         # CIN -> COUT, the first fed from cnt_r through A0
        cin = [] if k == 0 else [("CIN", carry_in + k - 1)]
        chain.append(_cell("CCU2C", A0=("input", [14]), **{p: ("input", [b]) for p, b in cin},
                           COUT=("output", [carry_in + k]), S0=("output", [60 + k])))
    cells += chain + [_lut([carry_in + 19], 80), _ff(80, 14)]
    nets = {"clk": [1], "acc_r": [10], "out_r": [11], "acc_next": [12], "flag_r": [13],
            "cnt_r": [14], "$abc$1$t0": [20], "mid_LUT4_Z_t1": [21], "$abc$1$t2": [22], "$abc$1$f": [23],
            "$carry": list(range(40, 60)), "$sum": list(range(60, 80)), "cnt_next": [80]}
    paths = deepest_paths(_netlist(cells, nets), "ecp5", count=5)
    assert [(p["from"], p["to"]) for p in paths] == [("acc_r", "out_r"), ("cnt_r", "cnt_r"), ("acc_r", "flag_r")]
    top = paths[0]
    assert top["levels"] == 3 and top["luts"] == 3
    assert top["via"] == ["mid"]                 # the user's part of a made-up name
    carry = paths[1]                             # 0.6 into the chain, 19 carry steps, one LUT
    assert carry["levels"] == pytest.approx(0.6 + 19 * 0.05 + 1) and carry["luts"] == 1
    assert paths[2]["levels"] == 1
    assert len(deepest_paths(_netlist(cells, nets), "ecp5", count=1)) == 1


def test_ice40_cells_and_a_bad_family():
    cells = [_cell("SB_DFF", C=("input", [1]), D=("input", [5]), Q=("output", [2])),
             _cell("SB_LUT4", I0=("input", [2]), O=("output", [3])),
             _cell("SB_CARRY", CI=("input", [3]), I0=("input", [2]), CO=("output", [4])),
             _cell("SB_LUT4", I0=("input", [4]), O=("output", [5]))]
    nets = {"clk": [1], "q": [2], "$x": [3], "$co": [4], "d": [5]}
    paths = deepest_paths(_netlist(cells, nets), "ice40")
    assert paths == [{"levels": 2.05, "luts": 2, "from": "q", "to": "q", "via": []}]
    with pytest.raises(ValueError, match="unknown device family 'gowin'"):
        deepest_paths(_netlist(cells, nets), "gowin")
