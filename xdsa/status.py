"""Implementation status of each opcode, derived from the golden dispatch table and
the hardware decode table (never written by hand)."""


def golden_keys() -> frozenset:
    import xdsa.golden.semantics  # noqa: F401  (importing registers the handlers)
    from xdsa.golden.dispatch import implemented_keys
    return implemented_keys()


def rtl_keys() -> frozenset:
    from xdsa.hw.capabilities import rtl_opcode_keys
    return rtl_opcode_keys()


def status(op, golden=None, rtl=None) -> dict:
    golden = golden_keys() if golden is None else golden
    rtl = rtl_keys() if rtl is None else rtl
    return {"golden": op.key in golden, "rtl": op.key in rtl}
