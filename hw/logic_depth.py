"""The deepest logic of a synthesised design, read from yosys's JSON netlist: the
register-to-register paths with the most LUT levels, named by the registers they
start and end at.

`deepest_paths(netlist, family)` is the synthesis flow's answer to "what limits Fmax"
when nextpnr gives no critical path (a design that does not route, or a run stopped
after placement): the logic depth that the placement and the routing then stretch.
The flow (`hw.synth.run_flow`) puts it in every report.

Delay model, in LUT levels (an abstraction of the device's delays, good for ranking
paths, not a timing analysis): a LUT 1; ECP5's slice multiplexers (PFUMX, L6MUX21,
which widen a LUT to 5 or 6 inputs) 0.3; a carry cell 0.05 from carry in to carry out,
0.6 from its other inputs to carry out, and to a sum output 0.4 from carry in, 1 from
the others (iCE40's SB_CARRY has no sum output); ECP5's LUT RAM read 1. ``luts`` counts
the arcs of a whole level (LUTs, sum outputs) on the path. Every other cell -- flip-flops, block RAMs,
DSPs, I/O -- starts and ends paths, as do the module's ports (outputs that feed
nothing end none).

Cost: linear in the netlist (one pass in topological order); about a second for the
vector engine of `base` (40k LUTs).
"""

import json
import re
from collections import defaultdict

__all__ = ["deepest_paths", "top_module", "bit_names", "CELL_ARCS"]

# per family: cell type -> function (input port, output port) -> levels, or None (no arc)
CELL_ARCS = {
    "ecp5": {
        "LUT4": lambda i, o: 1.0,
        "PFUMX": lambda i, o: 0.3,
        "L6MUX21": lambda i, o: 0.3,
        "CCU2C": lambda i, o: (0.05 if o == "COUT" else 0.4) if i == "CIN" else (0.6 if o == "COUT" else 1.0),
        "TRELLIS_DPR16X4": lambda i, o: 1.0 if i.startswith("RAD") and o == "DO" else None,
    },
    "ice40": {
        "SB_LUT4": lambda i, o: 1.0,
        "SB_CARRY": lambda i, o: 0.05 if i == "CI" else 0.6,
    },
}

# names that synthesis made up (abc's, the techmappers'): not shown along a path
_MADE_UP = re.compile(r"(^\$)|(_LUT4_)|(_TRELLIS_)|(_CCU2C_)|(_PFUMX_)|(_L6MUX21_)|(_SB_)|(\$abc\$)|(\$auto\$)")


def _base(name):
    return name.split("[")[0]


def _hint(name):
    """The user's signal a net is named after: the name itself, or the part of a made-up
    name before the mapper's suffixes (abc names a LUT's output after a net it drives);
    "" when nothing of the user's is left."""
    m = _MADE_UP.search(name)
    if m is None:
        return _base(name)
    head = name[:m.start()]
    return "" if not head or "$" in head else _base(head)


def top_module(netlist, what, top=None):
    """The module `top` (or the one marked top, or the first) of a JSON netlist of yosys
    or nextpnr (a dict, or the path of its file; `what` names it in the error when the
    file cannot be read); None when it has no modules."""
    if isinstance(netlist, str):
        try:
            with open(netlist) as f:
                netlist = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise ValueError(f"cannot read the {what} {netlist!r}: {e}") from None
    mods = netlist.get("modules") if isinstance(netlist, dict) else None
    if not mods:
        return None
    if top is None:
        tops = [k for k, v in mods.items() if v.get("attributes", {}).get("top")]
        top = tops[0] if tops else next(iter(mods))
    return mods[top]


def bit_names(mod):
    """The best name of every net bit of a netlist module: ``{bit: (made_up, length,
    name)}``, a user's name before one that synthesis made up, then the shortest
    (``name`` with ``[k]`` for a bit of a bus)."""
    names = {}
    for name, net in mod.get("netnames", {}).items():
        made_up = bool(net.get("hide_name")) or bool(_MADE_UP.search(name))
        for k, b in enumerate(net["bits"]):
            if isinstance(b, int):
                key = (made_up, len(name), f"{name}[{k}]" if len(net["bits"]) > 1 else name)
                if b not in names or key < names[b]:
                    names[b] = key
    return names


def deepest_paths(netlist, family, count=5, top=None):
    """The `count` deepest paths of the netlist (a yosys JSON netlist: a dict, or the
    path of its file) of the top module (`top`, or the one module with no parent).
    Paths whose start and end registers (as words, without the bit index) repeat an
    earlier path's are left out. Each path: ``{"levels": float, "luts": int, "from":
    name, "to": name, "via": [named nets along it]}``, the deepest first."""
    if family not in CELL_ARCS:
        raise ValueError(f"unknown device family {family!r}; expected one of {', '.join(CELL_ARCS)}")
    mod = top_module(netlist, "yosys netlist", top)
    if mod is None:
        raise ValueError("not a yosys JSON netlist: no modules")
    arcs_of = CELL_ARCS[family]

    names = bit_names(mod)

    succ = defaultdict(list)        # bit -> [(bit, levels, is LUT)]
    ends = {}                       # bit -> the name of the register (output) it feeds
    for cell in mod["cells"].values():
        conns, dirs = cell["connections"], cell.get("port_directions", {})
        arcs = arcs_of.get(cell["type"])
        if arcs is None:            # a path boundary: name its inputs after its outputs
            outs = [b for p, bits in conns.items() if dirs.get(p) == "output" for b in bits if isinstance(b, int)]
            label = names[outs[0]][2] if outs and outs[0] in names else cell["type"]
            for p, bits in conns.items():
                if dirs.get(p) == "input":
                    for b in bits:
                        if isinstance(b, int):
                            ends.setdefault(b, label)
            continue
        for ip, ibits in conns.items():
            if dirs.get(ip) != "input":
                continue
            for op, obits in conns.items():
                if dirs.get(op) != "output":
                    continue
                w = arcs(ip, op)
                if w is None:
                    continue
                for a in ibits:
                    if isinstance(a, int):
                        for b in obits:
                            if isinstance(b, int):
                                succ[a].append((b, w, w >= 1.0))

    # longest path to every bit, in topological order (Kahn)
    indeg = defaultdict(int)
    for a, lst in succ.items():
        for b, _, _ in lst:
            indeg[b] += 1
    dist, luts, prev = {}, {}, {}
    stack = [a for a in succ if indeg[a] == 0]
    for a in stack:
        dist[a], luts[a] = 0.0, 0
    while stack:
        a = stack.pop()
        for b, w, is_lut in succ.get(a, ()):
            if b not in dist or dist[a] + w > dist[b]:
                dist[b], luts[b], prev[b] = dist[a] + w, luts[a] + is_lut, a
            indeg[b] -= 1
            if indeg[b] == 0:
                stack.append(b)

    # path ends: the inputs of the boundary cells and the module's outputs (not the
    # outputs that feed nothing, such as a carry chain's unused sums)
    for port in mod.get("ports", {}).values():
        if port.get("direction") == "output":
            for b in port["bits"]:
                if isinstance(b, int):
                    ends.setdefault(b, names.get(b, (1, 0, f"<net {b}>"))[2])
    out, seen = [], set()
    for b in sorted((x for x in dist if x in ends), key=lambda x: -dist[x]):
        if len(out) == count or dist[b] == 0:
            break
        chain = [b]
        while chain[-1] in prev:
            chain.append(prev[chain[-1]])
        chain.reverse()
        start = names.get(chain[0], (1, 0, f"<net {chain[0]}>"))[2]
        end = ends[b]
        key = (_base(start), _base(end))
        if key in seen:
            continue
        seen.add(key)
        via = []
        for x in chain[1:-1]:
            nm = _hint(names.get(x, (1, 0, ""))[2])
            if nm and nm not in via and nm not in key:
                via.append(nm)
        out.append({"levels": round(dist[b], 2), "luts": luts[b], "from": start, "to": end, "via": via})
    return out
