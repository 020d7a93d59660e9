"""The timing of a placed ECP5 netlist (hw/placed_timing.py) on a hand-written one.

A few cells with chosen tiles: a register drives a LUT whose output (`ctrl.en`, a name
synthesis made up from the user's signal) enables 40 flip-flops, three of them far away;
a second register feeds a carry chain into a flip-flop of the same slice; a constant and
an input pin drive a flip-flop each, which no path may reach. The expected delays are
worked out here from the model as docs/boards.md states it, not by the code under test.
"""

import json
import re

import pytest

from xdsa.hw.placed_timing import placed_paths
from xdsa.hw.synth import analyse, format_summary, report_markdown, TARGETS

# the model (docs/boards.md, "Synthesis flow and report"), in ns
CLK_Q, LUT, LUT_FCO, FCI_F, F_DI = 0.525, 0.236, 0.447, 0.443, 0.13


def wire(d):
    return 0.52 + 0.12 * min(d, 5) + 0.05 * max(d - 5, 0)


FAR = {"ctrl.far0": (40, 30), "ctrl.far1": (35, 25), "ctrl.far2": (30, 22)}    # from the LUT at (12, 10): 48, 38, 30


def netlist():
    cells, netnames = {}, {}
    bits = iter(range(100, 1000))

    def net(name):
        b = next(bits)
        netnames[name] = {"hide_name": 0, "bits": [b]}
        return b

    def cell(name, type_, xy, bel, conns, params=None):
        outs = {"Q", "F", "FCO", "OFX", "O", "CLKO"}
        cells[name] = {"type": type_, "parameters": params or {},
                       "attributes": {"NEXTPNR_BEL": f"X{xy[0]}/Y{xy[1]}/{bel}"},
                       "port_directions": {p: "output" if p in outs else "input" for p in conns},
                       "connections": {p: [b] for p, b in conns.items()}}

    clk_pin, clk, gnd = net("clk$TRELLIS_IO_IN"), net("$glbnet$clk"), net("$PACKER_GND_NET")
    a, en, b, co, s, k, rx = (net(n) for n in ("ctrl.a[3]", "ctrl.en_TRELLIS_FF_CE", "ctrl.b", "ctrl.sum_CCU2C_COUT",
                                               "ctrl.sum[0]", "ctrl.k_LUT4_Z", "rx$TRELLIS_IO_IN"))
    cell("clk$tr_io", "TRELLIS_IO", (0, 5), "PIOA", {"O": clk_pin})
    cell("$gbuf$clk", "DCCA", (0, 0), "TDCC0", {"CLKI": clk_pin, "CLKO": clk})
    cell("ctrl.a_ff", "TRELLIS_FF", (10, 10), "SLICEA.FF0", {"CLK": clk, "Q": a})
    cell("ctrl.en_lut", "TRELLIS_COMB", (12, 10), "SLICEA.K0", {"A": a, "B": gnd, "F": en})
    for name, xy in FAR.items():
        cell(name, "TRELLIS_FF", xy, "SLICEA.FF0", {"CLK": clk, "CE": en})
    for i in range(37):                                     # near: one tile from the LUT
        cell(f"ctrl.r_{i}", "TRELLIS_FF", (13, 10), f"SLICE{'ABCD'[i % 4]}.FF{i % 2}", {"CLK": clk, "CE": en})
    # a carry chain: b -> LUT input A -> FCO -> FCI -> F -> the slice's own flip-flop (DI)
    cell("ctrl.b_ff", "TRELLIS_FF", (20, 20), "SLICEA.FF0", {"CLK": clk, "Q": b})
    cell("ctrl.sum_c0", "TRELLIS_COMB", (20, 21), "SLICEA.K1", {"A": b, "FCO": co})
    cell("ctrl.sum_c1", "TRELLIS_COMB", (21, 21), "SLICEA.K0", {"FCI": co, "F": s})
    cell("ctrl.s_ff", "TRELLIS_FF", (21, 21), "SLICEA.FF0", {"CLK": clk, "DI": s})
    # no path: a LUT of constants, and an input pin (nextpnr times pins apart)
    cell("ctrl.k_lut", "TRELLIS_COMB", (5, 5), "SLICEA.K0", {"A": gnd, "F": k})
    cell("ctrl.k_ff", "TRELLIS_FF", (5, 5), "SLICEA.FF0", {"CLK": clk, "DI": k})
    cell("rx$tr_io", "TRELLIS_IO", (0, 6), "PIOB", {"O": rx})
    cell("ctrl.rx_ff", "TRELLIS_FF", (1, 6), "SLICEA.FF0", {"CLK": clk, "M": rx})
    return {"modules": {"top": {"attributes": {"top": "1"}, "settings": {"arch.name": "ecp5", "place": "1"},
                                "ports": {}, "cells": cells, "netnames": netnames}}}


def test_worst_path_and_hot_net():
    r = placed_paths(netlist())
    assert json.loads(json.dumps(r)) == r                          # JSON-able as it is
    # a -> (2 tiles) -> LUT -> (48 tiles, fan-out 40) -> CE of ctrl.far0 (setup 0)
    worst = CLK_Q + wire(2) + LUT + wire(28 + 20)
    assert r["worst_ns"] == pytest.approx(worst, abs=1e-3)
    assert r["fmax_mhz"] == pytest.approx(1000 / worst, abs=0.01)
    p = r["paths"][0]
    assert (p["from"], p["to"]) == ("ctrl.a_ff", "ctrl.far0.CE")
    assert p["logic_ns"] == pytest.approx(CLK_Q + LUT, abs=1e-3)
    assert p["wire_ns"] == pytest.approx(wire(2) + wire(48), abs=1e-3)
    assert [(a["net"], a["hint"], a["fanout"], a["from"], a["to"], a["tiles"]) for a in p["arcs"]] == [
        ("ctrl.a[3]", False, 1, [10, 10], [12, 10], 2),
        ("ctrl.en", True, 40, [12, 10], [40, 30], 48)]               # named after the user's signal
    assert [a["wire_ns"] for a in p["arcs"]] == pytest.approx([wire(2), wire(48)], abs=1e-3)

    # the paths, worst first, one per end register: the far three, the carry chain, a near one
    assert [q["to"] for q in r["paths"]][:4] == ["ctrl.far0.CE", "ctrl.far1.CE", "ctrl.far2.CE", "ctrl.s_ff.DI"]
    assert r["paths"][1]["delay_ns"] == pytest.approx(CLK_Q + wire(2) + LUT + wire(38), abs=1e-3)
    carry = r["paths"][3]
    assert carry["delay_ns"] == pytest.approx(CLK_Q + wire(1) + LUT_FCO + 0.0 + FCI_F + F_DI, abs=1e-3)
    assert [a["wire_ns"] for a in carry["arcs"]] == pytest.approx([wire(1), 0.0, F_DI], abs=1e-3)
    assert r["paths"][4]["delay_ns"] == pytest.approx(CLK_Q + wire(2) + LUT + wire(1), abs=1e-3)

    # no path from a constant or a pin: 40 enables and the carry's flip-flop end paths
    assert r["endpoints"] == 41
    assert all("k_ff" not in q["to"] and "rx_ff" not in q["to"] for q in r["paths"])

    # within 20 % of the worst: the three far flip-flops (the fourth worst is the carry path,
    # well below), all through ctrl.en
    assert CLK_Q + wire(2) + LUT + wire(30) >= 0.8 * worst > CLK_Q + wire(1) + LUT_FCO + FCI_F + F_DI
    assert r["window_endpoints"] == 3
    assert r["hot_nets"] == [{"net": "ctrl.en", "hint": True, "bits": 1, "fanout": 40, "max_tiles": 48,
                              "endpoints": 3}]


def test_delay_profile_and_failing_endpoints():
    """The profile counts the end points at or above every 2 ns up to the worst delay;
    with a period, the end points whose worst path is longer fail: none at the worst
    delay itself, the three far flip-flops at 80 % of it (the window above), all 41
    at 1 ns."""
    r = placed_paths(netlist())
    assert "failing_endpoints" not in r
    worst = r["worst_ns"]
    assert [t for t, _ in r["profile"]] == [2.0 * k for k in range(1, int(worst // 2) + 1)]
    assert [n for _, n in r["profile"]] == sorted((n for _, n in r["profile"]), reverse=True)
    assert r["profile"][-1][1] >= 1 and r["profile"][0][1] <= r["endpoints"]
    for period, failing in ((worst, 0), (0.8 * worst, 3), (1.0, 41)):
        assert placed_paths(netlist(), period_ns=period)["failing_endpoints"] == failing, period
    for t, n in r["profile"]:                    # at least t ns: fail a period just below t
        assert placed_paths(netlist(), period_ns=t - 1e-9)["failing_endpoints"] == n


def test_user_names_from_the_yosys_netlist():
    """nextpnr keeps one name of a net, here the made-up `ctrl.en_TRELLIS_FF_CE`; the
    yosys netlist that was placed also calls it `ctrl.enable`, which the paths and the
    hot nets then use (and never a name that synthesis made up in its place)."""
    yosys = {"modules": {"top": {"attributes": {"top": 1}, "netnames": {
        "ctrl.en_TRELLIS_FF_CE": {"hide_name": 0, "bits": [7]},
        "ctrl.enable": {"hide_name": 0, "bits": [7]},
        "ctrl.a_LUT4_Z": {"hide_name": 0, "bits": [5, 6]},
        "$abc$9$ctrl.a": {"hide_name": 1, "bits": [5, 6]}}}}}
    r = placed_paths(netlist(), netlist=yosys)
    assert [(a["net"], a["hint"]) for a in r["paths"][0]["arcs"]] == [("ctrl.a[3]", False), ("ctrl.enable", False)]
    assert [(h["net"], h["hint"], h["endpoints"]) for h in r["hot_nets"]] == [("ctrl.enable", False, 3)]


def test_report_sections():
    """report.md has the worst path's routed arcs and the hot nets; the summary of a failed
    run names the hot nets."""
    head = {"config": "base", "target": "ecp5-85k", "device": "d", "top": "t", "requested_mhz": 100.0,
            "out_dir": "build/x", "time_limit_min": 25, "placement_estimate": {"clk": {"estimate_mhz": 30.0,
                                                                                       "constraint_mhz": 100.0}}}
    r = analyse(head, TARGETS["ecp5-85k"], 100.0, None, "Info: Routing globals...\n", None, {}, placed=True)
    assert r["failure"] == ("stopped after 25 min (the time limit) before routing; placement estimate 30 MHz for "
                            "clock clk, 100 MHz requested")
    r["placed_paths"] = placed_paths(netlist(), period_ns=10.0)
    md = report_markdown(r)
    fail = r["placed_paths"]["failing_endpoints"]
    assert f"{r['placed_paths']['endpoints']} end points, 3 within 20 % of the worst; {fail} miss the requested " \
           "period." in md
    assert re.search(r"End points whose worst path takes at least: \d+ at \d+ ns", md)
    assert "| `ctrl.en`* | 40 | (12, 10) | (40, 30) | 48 | 3.27 |" in md
    assert "| `ctrl.en`* | 1 | 40 | 48 | 3 |" in md
    summary = format_summary(r)
    assert "ctrl.en (fan-out 40, sinks up to 48 tiles away): on the worst path of 3 of 3 end points" in summary


def test_bad_input(tmp_path):
    """A netlist that is not placed, or no netlist at all: a ValueError that says so."""
    d = netlist()
    for c in d["modules"]["top"]["cells"].values():
        del c["attributes"]["NEXTPNR_BEL"]
    with pytest.raises(ValueError, match=r"not placed: 49 of its logic cells have no NEXTPNR_BEL.*--no-route --write"):
        placed_paths(d)
    (tmp_path / "top.json").write_text("{ not json")
    with pytest.raises(ValueError, match="cannot read the placed netlist"):
        placed_paths(str(tmp_path / "top.json"))
    with pytest.raises(ValueError, match="no modules"):
        placed_paths({"creator": "yosys"})
    with pytest.raises(ValueError, match="cannot read the yosys netlist"):
        placed_paths(netlist(), netlist=str(tmp_path / "top.json"))
    d = netlist()
    d["modules"]["top"]["settings"]["arch.name"] = "ice40"
    with pytest.raises(ValueError, match="placed netlist of a 'ice40' device; expected ecp5"):
        placed_paths(d)
