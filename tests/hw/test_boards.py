# amaranth: UnusedElaboratable=no
"""The board tops (hw/boards.py): each elaborates for its amaranth-boards platform
(``platform.build(top, do_build=False)``: no tools run) with the expected pins,
clock constraints and PLL; the PLL parameters agree with YoWASP's ``ecppll`` and
``icepll``. The bitstream build itself (`xdsa board`) is not run here.
"""

import re
import subprocess

import pytest

from xdsa.hw.boards import (BOARDS, BoardTop, PLLError, board_platform, build_overrides, ecp5_pll, get_board,
                            ice40_pll)
from xdsa.hw.config import CoreConfig, get_config
from xdsa.tools import tool_path

SMALL = CoreConfig("board_small", mem_bytes=2048, row_bytes=8, datamove_lanes=1)


def plan_files(board, config, seed=None, **kw):
    """The build plan's files with the overrides `xdsa board` passes (`build_overrides`)."""
    b = get_board(board)
    platform = board_platform(b)
    plan = platform.build(BoardTop(b, config, **kw), name="top", do_build=False,
                          **build_overrides(b, config, platform, seed))
    return plan.files


def text(files, name):
    return files[name] if isinstance(files[name], str) else files[name].decode()


def rtlil(files):
    return files["top.il"] if isinstance(files["top.il"], str) else files["top.il"].decode()


def params(text, cell):
    """{parameter: value} of the first `cell` in RTLIL text."""
    m = re.search(rf"cell \\{cell} .*?\n(.*?)\n  end", text, re.S)
    assert m, f"no {cell} in the design"
    return dict(re.findall(r"parameter \\(\w+) (\S+)", m.group(1)))


# the ECP5 flow's first steps (`hw.synth.synth_steps`): synth_ecp5 up to its coarse step,
# the small comparisons as LUTs, synth_ecp5 to its gate mapping, the small adders as LUTs
SMALL_ALUS_RE = (r"synth_ecp5 -run :coarse -top top\s+techmap -map \+/techmap.v t:\$lt .*? %i\s+"
                 r"synth_ecp5 -top top -run coarse:map_gates\s+techmap -map \+/techmap.v t:\$alu r:Y_WIDTH<=\d+ %i\s+")


def test_ulx3s_top_elaborates():
    """The ULX3S top with its default configuration (base) at 100 MHz from the 25 MHz
    clock through an EHXPLLL, the UART on the FT231X pins, LEDs."""
    board = BOARDS["ulx3s"]
    assert board.config == "base" and board.freq_mhz >= 100
    files = plan_files("ulx3s", get_config(board.config), seed=3)
    # `xdsa synth`'s flow for base: abc -lut 4 between synth_ecp5's halves (with abc9 it
    # does not fit the 85F), the static placer and router2; the seed reaches nextpnr
    ys, sh = text(files, "top.ys"), text(files, "build_top.sh")
    assert re.search(SMALL_ALUS_RE + r"synth_ecp5 -top top -run map_gates:map_luts\s+abc -lut 4\s+clean\s+"
                     r"synth_ecp5 -top top -run map_cells:\s+write_json top.json", ys), ys
    assert re.search(r"nextpnr-ecp5.*--placer static --router router2 --seed 3", sh, re.S), sh
    lpf = files["top.lpf"]
    for pin in ("G2", "M1", "L4", "B2", "C2", "C1", "H3"):      # clk25, uart rx/tx, leds 0-2 and 7
        assert f'SITE "{pin}"' in lpf
    assert 'FREQUENCY NET "clk" 100000000.0 HZ' in lpf
    p = params(rtlil(files), "EHXPLLL")
    assert (p["CLKI_DIV"], p["CLKFB_DIV"], p["CLKOP_DIV"]) == ("1", "4", "6")   # 25 * 4 = 100, VCO 600
    assert p["FEEDBK_PATH"] == '"CLKOP"'


def test_icebreaker_top_elaborates():
    """The iCEBreaker top with tiny at the 12 MHz board clock (no PLL), and with a PLL
    (SB_PLL40_PAD on the clock pad) at 24 MHz."""
    board = BOARDS["icebreaker"]
    assert board.config == "tiny"
    files = plan_files("icebreaker", get_config("tiny"))
    pcf = files["top.pcf"]
    for port, pin in (("clk12_0__io", 35), ("uart_0__rx__io", 6), ("uart_0__tx__io", 9),
                      ("led_g_0__io", 37), ("led_r_0__io", 11)):
        assert f"set_io {port} {pin}" in pcf
    assert "SB_PLL40" not in rtlil(files)

    files = plan_files("icebreaker", SMALL, freq_mhz=24)
    p = params(rtlil(files), "SB_PLL40_PAD")
    assert (p["DIVR"], p["DIVF"], p["DIVQ"]) == ("0", "63", "5")          # 12 * 64 / 32 = 24
    assert "set_frequency clk 24.0" in files["top.pcf"]


def test_ice40_hx8k_evn_top_elaborates():
    """The iCE40-HX8K breakout board top with tiny at its 12 MHz clock; no PLL is offered."""
    board = BOARDS["ice40-hx8k-evn"]
    assert board.config == "tiny" and board.family == "ice40"
    files = plan_files("ice40-hx8k-evn", get_config("tiny"))
    pcf = files["top.pcf"]
    for port, pin in (("clk12_0__io", "J3"), ("uart_0__rx__io", "B10"), ("uart_0__tx__io", "B12"),
                      ("led_0__io", "C3"), ("led_1__io", "B3"), ("led_2__io", "C4"), ("led_7__io", "B5")):
        assert f"set_io {port} {pin}" in pcf
    assert "SB_PLL40" not in rtlil(files)
    with pytest.raises(PLLError, match="board's 12 MHz clock"):
        BoardTop("ice40-hx8k-evn", SMALL, freq_mhz=24)


def test_board_builds_use_the_synth_flow():
    """A board build runs `xdsa synth`'s flow for its configuration (base on the ULX3S:
    `test_ulx3s_top_elaborates`): a configuration with abc9 on the ULX3S runs
    synth_ecp5's LUT mapping (abc9), split only for the techmaps of the small comparisons
    and adders; tiny on the iCEBreaker maps with abc9 and the UP5K timing model, HeAP and
    router1, and without a seed nextpnr chooses."""
    files = plan_files("ulx3s", SMALL)
    ys = text(files, "top.ys")
    assert "abc -lut 4" not in ys
    assert re.search(SMALL_ALUS_RE + r"synth_ecp5 -top top -run map_gates:\s+write_json top.json", ys), ys
    files = plan_files("icebreaker", get_config("tiny"))
    assert "synth_ice40 -dsp -abc9 -device u -top top" in text(files, "top.ys")
    sh = text(files, "build_top.sh")
    assert "--placer heap --router router1" in sh and "--seed" not in sh


def test_board_parameter_errors():
    with pytest.raises(ValueError, match="unknown board"):
        get_board("de10")
    with pytest.raises(PLLError, match="cannot make|but not"):
        BoardTop("ulx3s", SMALL, freq_mhz=101.3)
    with pytest.raises(ValueError, match="baud"):
        BoardTop("icebreaker", SMALL, baud=6_000_000)            # 2 cycles per bit at 12 MHz


def test_cli_board_rejects_bad_arguments(capsys):
    from xdsa import cli
    assert cli.main(["board", "de10"]) == 1
    assert "unknown board 'de10'" in capsys.readouterr().err
    assert cli.main(["board", "ulx3s", "--freq", "101.3", "-o", "/nonexistent/x"]) == 1
    assert "PLL can make 100 MHz but not 101.3 MHz" in capsys.readouterr().err


def _tool(name):
    path = tool_path(name)
    assert path, f"{name} is a dependency of the project (pip)"
    return path


@pytest.mark.parametrize("fout", [100, 125, 48, 90])
def test_ecp5_pll_matches_ecppll(fout, tmp_path):
    out = subprocess.run([_tool("yowasp-ecppll"), "-i", "25", "-o", str(fout), "-f", str(tmp_path / "pll.v")],
                         capture_output=True, text=True, check=True).stdout
    ref = {k: int(v) for k, v in re.findall(r"(Refclk|Feedback|clkout0) divisor: (\d+)", out)}
    p = ecp5_pll(25, fout)
    assert (p["refclk_div"], p["feedback_div"], p["output_div"]) == (ref["Refclk"], ref["Feedback"], ref["clkout0"])
    assert 400 <= p["fvco"] <= 800


@pytest.mark.parametrize("fout", [24, 30, 48, 20.25])
def test_ice40_pll_matches_icepll(fout, tmp_path):
    out = subprocess.run([_tool("yowasp-icepll"), "-i", "12", "-o", str(fout)],
                         capture_output=True, text=True, check=True).stdout
    ref = {k: int(v) for k, v in re.findall(r"^(DIVR|DIVF|DIVQ|FILTER_RANGE):\s+(\d+)", out, re.M)}
    p = ice40_pll(12, fout)
    assert (p["divr"], p["divf"], p["divq"], p["filter_range"]) == (ref["DIVR"], ref["DIVF"], ref["DIVQ"],
                                                                     ref["FILTER_RANGE"])


def test_memory_ports_per_configuration():
    """A core whose only engine is the data-move engine gets one physical read port
    (two would duplicate the data memory in block RAM); a core with engines that read
    two operands per cycle gets two."""
    from xdsa.hw.core import Core
    from xdsa.hw.config import get_config
    tiny, base = Core(get_config("tiny")), Core(get_config("base"))
    for core in (tiny, base):                   # not elaborated here
        core._MustUse__silence = core._memsys._MustUse__silence = True
    assert tiny._memsys.read_clients == [["dm", "loader", "fetch", "host"]]
    assert base._memsys.read_clients == [["vec_a", "mm_a", "loader", "fetch", "host"], ["dm", "vec_b", "mm_b"]]
