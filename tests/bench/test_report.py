"""The `xdsa bench all` report (bench/report.py) and the CLI's `all` mode, with stand-in
benchmarks (the real ones run for minutes and are not asserted in tests)."""

import json
import sys
import types
import xml.etree.ElementTree as ET

import pytest

from xdsa import cli
from xdsa.bench import report


def test_normalise_the_three_shapes():
    s = report.normalise("x", {"title": "GEMM", "rows": [{"size": 8, "mac_utilisation": 0.5}],
                               "notes": ["n"]})
    assert s["title"] == "GEMM" and s["columns"] == ["size", "mac_utilisation"]
    assert s["plot"]["bars"] == [["8", 0.5]] and s["notes"] == ["n"]

    s = report.normalise("conv", {"layer1": {"macs": 10, "mac_utilisation": 0.25}, "all": {"macs": 20}})
    assert s["columns"] == ["case", "macs", "mac_utilisation"]
    assert [r["case"] for r in s["rows"]] == ["layer1", "all"]
    assert s["plot"]["bars"] == [["layer1", 0.25]]

    s = report.normalise("fetch", {"instructions_per_cycle": 0.5, "matches_golden": True})
    assert s["rows"] == [{"figure": "instructions_per_cycle", "value": 0.5},
                         {"figure": "matches_golden", "value": True}]
    assert s["plot"] is None

    with pytest.raises(TypeError, match="benchmark 'bad' returned list"):
        report.normalise("bad", [1, 2])


def test_write_report(tmp_path):
    secs = [report.normalise("matmul", {"8@base": {"mac_utilisation": 0.9}, "16@base": {"mac_utilisation": 1.2}}),
            report.error_section("vector", "module xdsa.bench.vector does not exist yet")]
    synth = {"config": "base", "target": "ecp5-85k", "device": "d", "requested_mhz": 100.0, "pass": False,
             "failure": "timing: clock clk reaches 80 MHz, 100 MHz requested",
             "resources": {"luts": {"used": 1, "available": 2, "percent": 50.0}},
             "fmax": {"clk": {"achieved_mhz": 80.0, "constraint_mhz": 100.0}},
             "critical_paths": [{"clock": "clk", "from": "a", "to": "b", "delay_ns": 12.5,
                                 "logic_ns": 5, "routing_ns": 7.5}]}
    paths = report.write_report(str(tmp_path), {"config": "base", "seconds": 3}, secs, synth)
    md = open(paths["md"]).read()
    assert "| case | mac_utilisation |" in md and "Not run: module xdsa.bench.vector" in md
    assert "Result: **FAIL** (timing: clock clk reaches 80 MHz" in md and "* from `a`" in md
    data = json.load(open(paths["json"]))
    assert data["synthesis"]["fmax"]["clk"]["achieved_mhz"] == 80.0
    svg = ET.parse(paths["svg"]).getroot()
    texts = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert "8@base" in texts and "90.0" in texts and "120.0" in texts


def test_cli_bench_all(tmp_path, monkeypatch, capsys):
    ok = types.ModuleType("xdsa_fake_ok")
    ok.run = lambda config: {"title": "fake", "rows": [{"size": 4, "mac_utilisation": 0.75}]}
    bad = types.ModuleType("xdsa_fake_bad")

    def boom(config):
        raise ValueError("no such thing")
    bad.run = boom
    monkeypatch.setitem(sys.modules, "xdsa_fake_ok", ok)
    monkeypatch.setitem(sys.modules, "xdsa_fake_bad", bad)
    from xdsa import bench
    monkeypatch.setattr(bench, "BENCHMARKS", {"ok": "xdsa_fake_ok", "missing": "xdsa_fake_missing_module",
                                              "bad": "xdsa_fake_bad"})
    rc = cli.main(["bench", "all", "--config", "tiny", "--no-synth", "-o", str(tmp_path)])
    out = capsys.readouterr()
    assert rc == 2 and "failed: bad" in out.err and "ValueError: no such thing" in out.err
    data = json.load(open(tmp_path / "report.json"))
    assert [s["name"] for s in data["benchmarks"]] == ["ok", "missing", "bad"]
    assert data["benchmarks"][0]["rows"] == [{"size": 4, "mac_utilisation": 0.75}]
    assert "does not exist yet" in data["benchmarks"][1]["error"]
    assert data["synthesis"] is None
    assert (tmp_path / "utilisation.svg").exists() and (tmp_path / "report.md").exists()


def test_cli_bench_unknown(capsys):
    assert cli.main(["bench", "nonesuch"]) == 1
    assert "unknown benchmark 'nonesuch'" in capsys.readouterr().err
