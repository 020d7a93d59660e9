"""The synthesis flow's tool choices (hw/synth.py, `xdsa synth`, `CoreConfig`'s
``synth_*`` defaults): one list of each, in a module without Amaranth so that the
command line can offer them without importing the hardware."""

__all__ = ["LUT_MAPPERS", "ROUTERS", "PLACERS"]

LUT_MAPPERS = ("abc9", "abc")        # yosys: abc9 (timing-driven), or abc -lut 4
ROUTERS = ("router1", "router2")     # nextpnr --router
PLACERS = ("heap", "static")         # nextpnr --placer
