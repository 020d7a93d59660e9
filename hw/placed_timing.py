"""Timing of a placed ECP5 netlist: which paths and which wires limit Fmax once the
cells have their places, before (or without) routing.

`placed_paths(placed_json)` reads the netlist that nextpnr-ecp5 writes after placing
(``--no-route --write placed.json``; the synthesis flow, `hw.synth.run_flow`, does so on
every ECP5 run) and returns the worst register-to-register paths of a delay model, every
arc named by its net, its fan-out and the tiles it joins, and the **hot nets**: the nets
of high fan-out that the worst paths of many endpoints go through. nextpnr's own report
has no critical path before routing, and the routing of a large design (`base`'s vector
engine) does not finish; this is the answer then. It ranks paths and names the wires to
fix; it is not a sign-off timing analysis (nextpnr's routed report is).

Model (ECP5 speed grade 6; nanoseconds; ``CELL_NS`` and ``WIRE_*`` below):

* cells: nextpnr's own delays (its SDF of a routed design) -- a LUT input to F 0.236, to
  FCO 0.447, to OFX 0.401 (the LUT and the slice's multiplexer); carry in to carry out
  (FCI->FCO) 0.071 and to F 0.443; M->OFX 0.256, FXA/FXB->OFX 0.242, F1->OFX 0.165; a
  flip-flop's clock to Q 0.525, its setup 0.424 on LSR and 0 on DI, M and CE; a block
  RAM's clock to DO 5.61 (port A) / 5.83 (port B), its setup 0.34 (the worst port); an
  unregistered multiplier (MULT18X18D, which is what synth_ecp5 makes) A/B->P 3.93;
* paths start at flip-flops, block RAM outputs and registered multipliers' outputs and
  end at flip-flop inputs (DI, M, CE, LSR), block RAM inputs, registered multipliers'
  inputs and distributed RAM writes (a registered multiplier, which synth_ecp5 does not
  make, is timed as a block RAM: not measured); I/O pins, clock buffers and the
  constant nets start nothing (nextpnr times the pins apart, as cross-domain paths);
* wires: 0 along carry chains (FCO->FCI) and into the slice multiplexers (FXA, FXB,
  F1); 0.13 from a LUT to its own flip-flop (F->DI); otherwise ``wire_ns(d)`` = 0.52 +
  0.12 per tile of the first five + 0.05 per tile beyond, ``d`` the Manhattan distance
  in tiles between the driver's and the sink's cells: the 40th percentile of 51k routed
  arcs of `tiny` (ECP5-25F) and `base`'s data-move engine (ECP5-85F) at each distance
  (the router gives the critical arcs the faster routes). The fan-out had no effect
  there (-0.015 ns per doubling, up to fan-outs of 4k), so the wire delay does not
  depend on it (``WIRE_FANOUT``); a net of high fan-out is slow because its sinks are far
  apart, which the distance counts. docs/boards.md, "Synthesis flow and report", has the
  calibration: the model's worst path is within 5 % of the routed critical path of
  `tiny`, the data-move engine and the fetch unit.

Cost: one pass over the netlist in topological order, linear in its size; reading the
JSON dominates -- under a second for `tiny`, about 4 s for the placed vector engine of
`base` (80 MB).
"""

import math
import re
from collections import Counter, defaultdict

from .logic_depth import _base, _hint, bit_names, top_module

__all__ = ["placed_paths", "wire_ns", "CELL_NS", "HOT_FANOUT", "HOT_WINDOW", "PROFILE_STEP_NS"]

# cell delays (ns), ECP5 speed grade 6: nextpnr's own (its SDF of a routed design)
CELL_NS = {
    "lut": 0.236,          # A/B/C/D -> F
    "lut_fco": 0.447,      # A/B/C/D -> FCO
    "lut_ofx": 0.401,      # A/B/C/D -> OFX (the LUT and the slice's PFUMX)
    "carry": 0.071,        # FCI -> FCO
    "fci_f": 0.443,        # FCI -> F (the sum)
    "mux_m": 0.256,        # M -> OFX
    "mux_f1": 0.165,       # F1 -> OFX (the slice's other LUT)
    "mux_fx": 0.242,       # FXA/FXB -> OFX (L6MUX21)
    "clk_q": 0.525,        # flip-flop clock -> Q
    "setup_lsr": 0.424,    # flip-flop setup of LSR (DI, M, CE: 0)
    "bram_clk_q": 5.609,   # DP16KD clock -> DOA
    "bram_clk_q_b": 5.83,  # DP16KD clock -> DOB
    "bram_setup": 0.34,    # DP16KD setup (0.13-0.34 by port)
    "mult": 3.927,         # MULT18X18D, unregistered, A/B -> P
}
# wire delay (ns) of an arc d tiles long (Manhattan): fitted to the 40th percentile of the
# routed arcs of `tiny` (ECP5-25F) and `base`'s data-move engine (ECP5-85F), 51k arcs: the
# router gives the critical arcs the faster routes (docs/boards.md has the calibration)
WIRE_BASE = 0.52           # d = 0: out of the slice and back in through the switch box
WIRE_NEAR = 0.12           # per tile of the first five
WIRE_FAR = 0.05            # per tile beyond
WIRE_FANOUT = 0.0          # per doubling of the fan-out: fitted -0.015 on both, no penalty, so none
WIRE_F_DI = 0.13           # a LUT to its own flip-flop (F -> DI)
HOT_FANOUT = 32            # a hot net: fan-out at least this ...
HOT_WINDOW = 0.2           # ... on the worst path of an endpoint within 20 % of the worst delay
PROFILE_STEP_NS = 2.0      # the delay profile's step

_LUT_IN = frozenset("ABCD")
_MUX_IN = {"M": "mux_m", "F1": "mux_f1", "FXA": "mux_fx", "FXB": "mux_fx"}
_NO_WIRE_SINKS = frozenset(("FXA", "FXB", "F1"))
_CONSTANT_NETS = frozenset(("$PACKER_GND_NET", "$PACKER_VCC_NET"))
_BEL = re.compile(r"X(\d+)/Y(\d+)/")


def wire_ns(distance, fanout=1):
    """The model's delay of a routed arc `distance` tiles long (Manhattan) on a net of
    `fanout` sinks."""
    return (WIRE_BASE + WIRE_NEAR * min(distance, 5) + WIRE_FAR * max(distance - 5, 0)
            + WIRE_FANOUT * math.log2(max(fanout, 1)))


def _comb_arc(cell, ip, op):
    """The delay of `cell` from input `ip` to output `op`, or None (no arc)."""
    t = cell["type"]
    if t == "TRELLIS_COMB":
        if ip in _LUT_IN:
            return {"F": CELL_NS["lut"], "FCO": CELL_NS["lut_fco"], "OFX": CELL_NS["lut_ofx"]}.get(op)
        if ip == "FCI":
            return {"F": CELL_NS["fci_f"], "FCO": CELL_NS["carry"]}.get(op)
        if op == "OFX" and ip in _MUX_IN:
            return CELL_NS[_MUX_IN[ip]]
        return None
    if t == "TRELLIS_RAMW":        # the write half of a distributed RAM: wires only
        return 0.0
    if t == "MULT18X18D" and not _mult_registered(cell):
        if ip[:1] in "AB" and ip[1:].isdigit() and op[:1] == "P" and op[1:].isdigit():
            return CELL_NS["mult"]
    return None


def _mult_registered(cell):
    """A multiplier with any of its registers in use (timed as starting and ending paths)."""
    p = cell.get("parameters", {})
    return any(str(p.get(k, "NONE")).strip() not in ("NONE", "")
               for k in ("REG_INPUTA_CLK", "REG_INPUTB_CLK", "REG_PIPELINE_CLK", "REG_OUTPUT_CLK"))


def _start(cell, op):
    """Clock to output of a path's start point, or None (not a start)."""
    t = cell["type"]
    if t == "TRELLIS_FF" and op == "Q":
        return CELL_NS["clk_q"]
    if t == "DP16KD" and op.startswith("DO"):
        return CELL_NS["bram_clk_q_b" if op.startswith("DOB") else "bram_clk_q"]
    if t == "MULT18X18D" and op.startswith("P") and _mult_registered(cell):
        return CELL_NS["bram_clk_q_b"]
    return None


def _end(cell, ip):
    """Setup time of a path's end point, or None (not an end)."""
    t = cell["type"]
    if t == "TRELLIS_FF" and ip in ("DI", "M", "CE", "LSR"):
        return CELL_NS["setup_lsr"] if ip == "LSR" else 0.0
    if t == "DP16KD" and not ip.startswith("CLK"):
        return CELL_NS["bram_setup"]
    if t == "MULT18X18D" and ip[:1] in "AB" and ip[1:].isdigit() and _mult_registered(cell):
        return CELL_NS["bram_setup"]
    if t == "TRELLIS_COMB" and (ip.startswith("WAD") or ip in ("WD", "WRE")):
        return CELL_NS["bram_setup"]
    return None


def _load(placed):
    mod = top_module(placed, "placed netlist")
    if mod is None:
        raise ValueError("not a nextpnr JSON netlist: no modules")
    arch = mod.get("settings", {}).get("arch.name")
    if arch not in (None, "ecp5"):
        raise ValueError(f"placed netlist of a {arch!r} device; expected ecp5")
    return mod


def _user_names(netlist):
    """{name of a net bit: the user's name of that bit} from the yosys JSON netlist
    (a dict or the path of its file) that was placed: nextpnr keeps one name of each
    net, often one that synthesis made up, where yosys also has the user's."""
    mod = top_module(netlist, "yosys netlist")
    if mod is None:
        return {}
    user = {b: nm for b, (made_up, _, nm) in bit_names(mod).items() if not made_up}
    return {f"{nn}[{k}]" if len(net["bits"]) > 1 else nn: user[b]
            for nn, net in mod.get("netnames", {}).items() for k, b in enumerate(net["bits"]) if b in user}


def placed_paths(placed, count=5, *, netlist=None, hot_fanout=HOT_FANOUT, hot_window=HOT_WINDOW,
                 period_ns=None):
    """The model's worst paths of a placed ECP5 netlist (nextpnr's ``--write`` after
    placing: a dict or the path of its file); `netlist`, the yosys JSON netlist that
    was placed (optional), names the nets by the user's names where nextpnr kept a
    made-up one. Returns a JSON-able dict:

    * ``worst_ns``, ``fmax_mhz``: the worst register-to-register delay and its frequency;
    * ``paths``: the `count` worst paths with distinct end points (registers: the bits
      of one count once), each ``{delay_ns, logic_ns, wire_ns, from, to, arcs}``
      (``from``: the start cell, ``to``: the end cell.port); an arc ``{net, hint, fanout,
      from, to, tiles, wire_ns}`` (``from``/``to``: the tiles of the driver and the sink;
      ``net``: nextpnr's name of the net if it is the user's, else -- ``hint`` true --
      the user's signal that synthesis named it after, as `hw.logic_depth` does);
    * ``hot_nets``: the nets of fan-out >= `hot_fanout` on the worst paths of the
      end points within `hot_window` of the worst delay, most end points first: ``{net,
      hint, bits, fanout, max_tiles, endpoints}`` (``bits``: the nets of that name, a bus
      or the nets named after one signal, which count once per end point; ``max_tiles``:
      the distance from a driver to its farthest sink);
    * ``endpoints`` (timed end points), ``window_endpoints`` (those within the window);
    * ``profile``: ``[t, n]`` pairs, ``n`` the end points whose worst path takes at least
      ``t`` ns, for ``t`` every `PROFILE_STEP_NS` up to the worst delay;
    * with `period_ns` (the requested clock period), ``failing_endpoints``: the end points
      whose worst path is longer.

    Raises `ValueError` for a netlist that is not placed (no ``NEXTPNR_BEL``)."""
    mod = _load(placed)
    cells = mod["cells"]
    loc, unplaced = {}, []
    for cn, c in cells.items():
        m = _BEL.match(c.get("attributes", {}).get("NEXTPNR_BEL", ""))
        if m:
            loc[cn] = (int(m.group(1)), int(m.group(2)))
        elif c["type"] in ("TRELLIS_COMB", "TRELLIS_FF"):
            unplaced.append(cn)
    if unplaced:
        raise ValueError(f"the netlist is not placed: {len(unplaced)} of its logic cells have no NEXTPNR_BEL "
                         f"attribute (e.g. {unplaced[0]!r}); write it with nextpnr-ecp5 --no-route --write")
    if not loc:
        raise ValueError("the netlist is not placed: no cell has a NEXTPNR_BEL attribute")

    name = {}                                           # bit -> nextpnr's net name
    for nn, net in mod.get("netnames", {}).items():
        for k, b in enumerate(net["bits"]):
            if isinstance(b, int) and b not in name:
                name[b] = nn if len(net["bits"]) == 1 else f"{nn}[{k}]"
    const = {b for b, nn in name.items() if nn in _CONSTANT_NETS}
    alias = _user_names(netlist) if netlist is not None else {}

    driver, sinks = {}, defaultdict(list)               # bit -> (cell, port); bit -> [(cell, port)]
    for cn, c in cells.items():
        dirs = c.get("port_directions", {})
        for p, bits in c["connections"].items():
            for b in bits:
                if isinstance(b, int):
                    if dirs.get(p) == "output":
                        driver[b] = (cn, p)
                    elif dirs.get(p) == "input":
                        sinks[b].append((cn, p))

    def wire(b, sink, sp):
        dc, dp = driver[b]
        (x0, y0), (x1, y1) = loc.get(dc, (0, 0)), loc.get(sink, (0, 0))
        d = abs(x0 - x1) + abs(y0 - y1)
        if (dp == "FCO" and sp == "FCI") or sp in _NO_WIRE_SINKS:
            return 0.0, d
        if dp == "F" and sp == "DI":
            return WIRE_F_DI, d
        return wire_ns(d, len(sinks[b])), d

    # arrival time at each driven bit (the driver's output), in topological order
    arr, pred = {}, {}                                  # bit -> ns; bit -> the input bit of its arc
    succ = defaultdict(list)                            # bit -> [(out bit, cell, in port, cell delay)]
    indeg = Counter()
    for cn, c in cells.items():
        dirs, conns = c.get("port_directions", {}), c["connections"]
        for op, obits in conns.items():
            if dirs.get(op) != "output" or not obits or not isinstance(obits[0], int):
                continue
            ob = obits[0]
            t0 = _start(c, op)
            if t0 is not None:
                arr[ob] = t0
                continue
            for ip, ibits in conns.items():
                if dirs.get(ip) != "input" or not ibits or not isinstance(ibits[0], int):
                    continue
                ib = ibits[0]
                if ib in const or ib not in driver:
                    continue
                d = _comb_arc(c, ip, op)
                if d is not None:
                    succ[ib].append((ob, cn, ip, d))
                    indeg[ob] += 1
    ready = [b for b in driver if indeg[b] == 0]
    while ready:
        b = ready.pop()
        for ob, cn, ip, d in succ.get(b, ()):
            if b in arr:
                t = arr[b] + wire(b, cn, ip)[0] + d
                if ob not in arr or t > arr[ob]:
                    arr[ob], pred[ob] = t, (b, cn, ip)
            indeg[ob] -= 1
            if indeg[ob] == 0:
                ready.append(ob)
    # bits never reached with every input known (combinational loops) keep what they have

    # end points: the worst arrival over each end cell's timed inputs
    ends = []                                           # (delay, cell, port, bit)
    for cn, c in cells.items():
        dirs = c.get("port_directions", {})
        for ip, bits in c["connections"].items():
            if dirs.get(ip) != "input" or not bits or not isinstance(bits[0], int):
                continue
            b = bits[0]
            su = _end(c, ip)
            if su is None or b not in arr or b in const:
                continue
            ends.append((arr[b] + wire(b, cn, ip)[0] + su, cn, ip, b))
    if not ends:
        return {"worst_ns": None, "fmax_mhz": None, "paths": [], "hot_nets": [], "endpoints": 0,
                "window_endpoints": 0, "profile": [], **({} if period_ns is None else {"failing_endpoints": 0})}
    ends.sort(key=lambda e: -e[0])

    def span(b):
        """The distance in tiles from the driver of `b` to its farthest sink."""
        x0, y0 = loc.get(driver[b][0], (0, 0))
        return max((abs(x0 - loc.get(s, (x0, y0))[0]) + abs(y0 - loc.get(s, (x0, y0))[1]) for s, _ in sinks[b]),
                   default=0)

    def label(b):
        """The net's name: nextpnr's if it is the user's; else the user's signal that
        synthesis named it after (a hint), flagged; else the made-up name."""
        nn = name.get(b, f"<net {b}>")
        nn = alias.get(nn, nn)
        hint = _hint(nn)
        if hint == _base(nn):
            return nn, False
        return (hint, True) if hint else (nn, False)

    def trace(cn, ip, b):
        """The arcs of the worst path into input `ip` of `cn`, from its start."""
        arcs = []
        while True:
            w, d = wire(b, cn, ip)
            dc = driver[b][0]
            net, hinted = label(b)
            arcs.append({"net": net, "hint": hinted, "fanout": len(sinks[b]), "from": list(loc.get(dc, (0, 0))),
                         "to": list(loc.get(cn, (0, 0))), "tiles": d, "wire_ns": round(w, 3), "_bit": b,
                         "_from_cell": dc})
            if b not in pred:
                break
            b, cn, ip = pred[b]
        arcs.reverse()
        return arcs

    worst = ends[0][0]
    paths, seen = [], set()
    for delay, cn, ip, b in ends:
        if len(paths) == count:
            break
        word = _hint(cn) or cn                         # the register, not its bit
        if word in seen:
            continue
        seen.add(word)
        arcs = trace(cn, ip, b)
        wire_total = sum(a["wire_ns"] for a in arcs)
        paths.append({"delay_ns": round(delay, 3), "logic_ns": round(delay - wire_total, 3),
                      "wire_ns": round(wire_total, 3), "from": arcs[0]["_from_cell"], "to": f"{cn}.{ip}",
                      "arcs": [{k: v for k, v in a.items() if not k.startswith("_")} for a in arcs]})

    # hot nets: high fan-out nets on the worst paths of the end points near the worst
    hot, info = Counter(), {}
    window = [e for e in ends if e[0] >= worst * (1 - hot_window)]
    for delay, cn, ip, b in window:
        on_path = set()
        for a in trace(cn, ip, b):
            if a["fanout"] >= hot_fanout:
                key = a["net"] if a["hint"] else _base(a["net"])      # a bus counts once
                on_path.add(key)
                h = info.setdefault(key, {"bits": set(), "hint": a["hint"], "fanout": 0, "max_tiles": 0})
                if a["_bit"] not in h["bits"]:
                    h["bits"].add(a["_bit"])
                    h["fanout"] = max(h["fanout"], a["fanout"])
                    h["max_tiles"] = max(h["max_tiles"], span(a["_bit"]))
        hot.update(on_path)
    hot_nets = [{"net": k, "hint": info[k]["hint"], "bits": len(info[k]["bits"]), "fanout": info[k]["fanout"],
                 "max_tiles": info[k]["max_tiles"], "endpoints": n} for k, n in hot.most_common()]
    delays = [e[0] for e in ends]
    profile = [[t, sum(d >= t for d in delays)]
               for t in (PROFILE_STEP_NS * k for k in range(1, int(worst // PROFILE_STEP_NS) + 1))]
    out = {"worst_ns": round(worst, 3), "fmax_mhz": round(1000.0 / worst, 2), "paths": paths,
           "hot_nets": hot_nets, "endpoints": len(ends), "window_endpoints": len(window), "profile": profile}
    if period_ns is not None:
        out["failing_endpoints"] = sum(d > period_ns for d in delays)
    return out
