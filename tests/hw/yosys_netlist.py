"""The tests' way to look at what yosys makes of a component: `yosys_cells` converts it
to RTLIL, runs a yosys script on it in a temporary directory and returns the top
module's cells from the JSON netlist."""

import json
import subprocess

from amaranth.back import rtlil

from xdsa.hw.synth import FlowPlatform, yowasp_env


def yosys_cells(tmp_path, top, script="synth_ecp5 -top top", family=None):
    """The cells (by name) of component `top` after ``read_rtlil; <script>`` in yosys;
    `family`: elaborate it for the flow's platform of that device family ("ecp5", ...)."""
    platform = FlowPlatform(family) if family else None
    (tmp_path / "t.il").write_text(rtlil.convert(top, name="top", platform=platform))
    env = yowasp_env(("YOSYS",))
    subprocess.run([env["YOSYS"], "-q", "-p", f"read_rtlil t.il; {script}; write_json t.json"],
                   cwd=tmp_path, env=env, check=True)
    return json.loads((tmp_path / "t.json").read_text())["modules"]["top"]["cells"]
