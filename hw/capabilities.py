"""What the RTL executes: the opcodes of every engine a configuration contains.

Each engine module declares the mnemonics it executes (`OPCODES`); the core's
decode ROM and the `implemented.rtl` flag of ``xdsa isa --json`` are derived from
this table, never written twice.
"""

from xdsa.golden import isa

__all__ = ["engine_opcodes", "rtl_opcode_keys"]


def _engines():
    # (engine name, module attribute path, present in config?)
    from . import control, datamove
    return [
        ("control", control.OPCODES, lambda cfg: True),
        ("datamove", datamove.OPCODES, lambda cfg: True),
    ]


def engine_opcodes(config=None) -> dict:
    """{engine name: [Opcode, ...]} for the engines in `config` (all engines if None)."""
    out = {}
    for name, mnemonics, present in _engines():
        if config is None or present(config):
            out[name] = [isa.by_mnemonic(m) for m in mnemonics]
    return out


def rtl_opcode_keys(config=None) -> frozenset:
    return frozenset(op.key for ops in engine_opcodes(config).values() for op in ops)
