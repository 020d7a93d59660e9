"""The `xdsa bench all` report: every benchmark of the registry plus the synthesis of
`base`, in one Markdown page, one JSON file and one SVG bar plot.

Benchmark contract
------------------

A benchmark is a module in `xdsa.bench.BENCHMARKS` with ``run(config) -> dict``
(``config`` a `CoreConfig`; a benchmark that picks its own configurations may
accept ``None``). It may print progress to stderr but returns its figures. The
dict is either

* **structured** (preferred): ``{"title": str, "rows": [dict, ...]}`` with
  optional ``"columns"`` (the row keys to show, in order; default: the union of
  the row keys in first-seen order), ``"notes"`` (a list of strings) and
  ``"plot"``: ``{"title": str, "bars": [[label, value], ...]}`` with values in
  [0, 1] (a utilisation, shown as a percentage); or
* **a mapping of cases**: ``{case: {figure: value}}`` (each case a row, the case
  name in column ``case``); or
* **flat**: ``{figure: value}`` (one row per figure, columns ``figure`` and
  ``value``).

Values must be JSON-serialisable (numbers, strings, booleans, None, lists, dicts).
Without an explicit ``"plot"``, every row with a ``mac_utilisation`` or
``utilisation`` figure becomes a bar (label: the case, or the row's ``name``/
``layer``/``size``), so GEMM sizes and ResNet layers are plotted as they are.

`normalise(name, result)` turns any of the three into a section
``{"name", "title", "columns", "rows", "notes", "plot"}``; `write_report` writes
``report.md``, ``report.json`` and ``utilisation.svg`` (hand-written SVG, no
plotting library) from the sections and the synthesis report (`hw.synth`'s dict,
or None).
"""

import json
import math
import os
from xml.sax.saxutils import escape

__all__ = ["normalise", "error_section", "write_report", "utilisation_svg", "report_markdown"]

_UTIL_KEYS = ("mac_utilisation", "utilisation")
_LABEL_KEYS = ("name", "layer", "size", "case")


def _jsonable(v):
    """`v` with numpy scalars and tuples turned into plain JSON values."""
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if hasattr(v, "item") and callable(v.item):            # numpy scalar
        return v.item()
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def _columns(rows):
    cols = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    return cols


def _auto_bars(rows):
    bars = []
    for i, r in enumerate(rows):
        key = next((k for k in _UTIL_KEYS if isinstance(r.get(k), (int, float))), None)
        if key is None:
            continue
        label = next((str(r[k]) for k in _LABEL_KEYS if k in r), str(i))
        bars.append([label, float(r[key])])
    return bars


def normalise(name, result):
    """A report section from benchmark `name`'s `result` (any of the contract's three
    shapes). Raises TypeError naming the benchmark if `result` is not a dict."""
    if not isinstance(result, dict):
        raise TypeError(f"benchmark {name!r} returned {type(result).__name__}, expected a dict")
    result = _jsonable(result)
    notes = []
    plot = None
    if isinstance(result.get("rows"), list):
        title = str(result.get("title", name))
        rows = [r if isinstance(r, dict) else {"value": r} for r in result["rows"]]
        columns = list(result.get("columns") or _columns(rows))
        notes = [str(n) for n in result.get("notes", [])]
        plot = result.get("plot")
    elif result and all(isinstance(v, dict) for v in result.values()):
        title = name
        rows = [{"case": k, **v} for k, v in result.items()]
        columns = _columns(rows)
    else:
        title = name
        rows = [{"figure": k, "value": v} for k, v in result.items()]
        columns = ["figure", "value"]
    if plot is None:
        bars = _auto_bars(rows)
        if bars:
            plot = {"title": f"{title}: MAC utilisation", "bars": bars}
    return {"name": name, "title": title, "columns": columns, "rows": rows, "notes": notes, "plot": plot}


def error_section(name, message):
    """The section of a benchmark that could not run (`message` says why)."""
    return {"name": name, "title": name, "columns": [], "rows": [], "notes": [], "plot": None,
            "error": message}


def _cell(v):
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (dict, list)):
        return json.dumps(v)
    return "" if v is None else str(v)


def _synth_markdown(synth):
    out = ["## Synthesis", ""]
    if synth is None:
        return out + ["Not run (`--no-synth`).", ""]
    if "error" in synth:
        return out + [f"Failed: {synth['error']}", ""]
    head = (f"`{synth.get('config')}` on `{synth.get('target')}` ({synth.get('device')}), "
            f"{synth.get('requested_mhz', 0):g} MHz requested")
    if synth.get("reused"):
        head += f" (report of an earlier run: {synth.get('reused')})"
    out += [head + ":", "", "| resource | used | available | % |", "| --- | ---: | ---: | ---: |"]
    for key, r in synth.get("resources", {}).items():
        out.append(f"| {key} | {r.get('used')} | {r.get('available')} | {r.get('percent')} |")
    out += ["", "| clock | Fmax (MHz) | requested (MHz) |", "| --- | ---: | ---: |"]
    for clk, f in synth.get("fmax", {}).items():
        out.append(f"| {clk} | {f.get('achieved_mhz')} | {f.get('constraint_mhz')} |")
    crit = synth.get("critical_paths") or []
    if crit:
        c = crit[0]
        out += ["", f"Critical path ({c.get('clock')}): {c.get('delay_ns')} ns "
                    f"({c.get('logic_ns')} ns logic, {c.get('routing_ns')} ns routing)",
                f"* from `{c.get('from')}`", f"* to `{c.get('to')}`"]
    out += ["", f"Result: **{'PASS' if synth.get('pass') else 'FAIL'}**"
            + (f" ({synth['failure']})" if synth.get("failure") else ""), ""]
    bd = synth.get("breakdown")
    if isinstance(bd, dict) and bd and "error" not in bd:
        keys = [k for k in ("luts", "ffs", "brams", "dsps") if any(k in v for v in bd.values())]
        out += ["Per module (hierarchical yosys run, each module with its submodules):", "",
                "| module | " + " | ".join(keys) + " |", "| --- |" + " ---: |" * len(keys)]
        for path, counts in bd.items():
            out.append(f"| {path} | " + " | ".join(str(counts.get(k, 0)) for k in keys) + " |")
        out.append("")
    return out


def report_markdown(meta, sections, synth):
    out = ["# xDSA benchmark report", "",
           f"Configuration `{meta.get('config')}`; {meta.get('date', '')}; "
           f"{meta.get('seconds', 0):.0f} s in all.", ""]
    for s in sections:
        out += [f"## {s['title']} (`{s['name']}`)", ""]
        if s.get("error"):
            out += [f"Not run: {s['error']}", ""]
            continue
        if s["rows"]:
            cols = s["columns"]
            out.append("| " + " | ".join(cols) + " |")
            out.append("| " + " | ".join("---" for _ in cols) + " |")
            for r in s["rows"]:
                out.append("| " + " | ".join(_cell(r.get(c)) for c in cols) + " |")
            out.append("")
        out += [f"* {n}" for n in s["notes"]] + ([""] if s["notes"] else [])
        if s.get("seconds") is not None:
            out += [f"({s['seconds']:.1f} s)", ""]
    out += _synth_markdown(synth)
    if any(s.get("plot") for s in sections):
        out += ["## Utilisation", "", "![utilisation per GEMM size and layer](utilisation.svg)", ""]
    return "\n".join(out)


def utilisation_svg(sections):
    """A horizontal bar plot (SVG text) of every section's plot bars, one group per
    section, utilisation in percent on a 0..100 axis."""
    groups = [(s["plot"].get("title", s["title"]), s["plot"].get("bars", []))
              for s in sections if s.get("plot") and s["plot"].get("bars")]
    label_w, bar_w, bar_h, gap, head_h, left, top = 170, 420, 16, 4, 26, 10, 40
    n_bars = sum(len(b) for _, b in groups)
    height = top + sum(head_h for _ in groups) + n_bars * (bar_h + gap) + 40
    width = left + label_w + bar_w + 70
    x0 = left + label_w
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14" font-weight="bold">MAC utilisation per GEMM size '
           f'and layer (%)</text>']
    if not groups:
        out.append(f'<text x="{left}" y="{top + 10}">no utilisation figures were measured</text>')
    y = top
    for title, bars in groups:
        out.append(f'<text x="{left}" y="{y + 16}" font-weight="bold">{escape(str(title))}</text>')
        y += head_h
        for label, value in bars:
            v = float(value)
            frac = min(max(v, 0.0), 1.0) if math.isfinite(v) else 0.0
            w = round(bar_w * frac, 1)
            out.append(f'<text x="{x0 - 6}" y="{y + bar_h - 4}" text-anchor="end">{escape(str(label))}</text>')
            out.append(f'<rect x="{x0}" y="{y}" width="{bar_w}" height="{bar_h}" fill="#eeeeee"/>')
            out.append(f'<rect x="{x0}" y="{y}" width="{w}" height="{bar_h}" fill="#3b75af"/>')
            out.append(f'<text x="{x0 + w + 4}" y="{y + bar_h - 4}">{100 * v:.1f}</text>')
            y += bar_h + gap
    for pct in (0, 25, 50, 75, 100):                     # axis
        x = x0 + bar_w * pct / 100
        out.append(f'<line x1="{x}" y1="{top}" x2="{x}" y2="{y}" stroke="#999999" stroke-width="0.5" '
                   f'stroke-dasharray="2,2"/>')
        out.append(f'<text x="{x}" y="{y + 14}" text-anchor="middle">{pct}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_report(out_dir, meta, sections, synth):
    """Write report.md, report.json and utilisation.svg in `out_dir`; return their paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = {k: os.path.join(out_dir, f) for k, f in
             (("md", "report.md"), ("json", "report.json"), ("svg", "utilisation.svg"))}
    with open(paths["json"], "w") as f:
        json.dump(_jsonable({"meta": meta, "benchmarks": sections, "synthesis": synth}), f, indent=1)
        f.write("\n")
    with open(paths["md"], "w") as f:
        f.write(report_markdown(meta, sections, synth))
    with open(paths["svg"], "w") as f:
        f.write(utilisation_svg(sections))
    return paths
