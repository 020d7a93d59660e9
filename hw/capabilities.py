"""What the RTL executes: the opcodes of every engine a configuration contains, and
the units each engine refuses.

Each engine module declares the mnemonics it executes (`OPCODES`) and, if it
supports fewer units than the golden model, ``refuses(config, op, fields)``
returning a reason (the engine faults UNSUPPORTED_UNIT for exactly these). The
decode ROM, the `implemented.rtl` flag of ``xdsa isa --json`` and the golden
model's capability in co-simulation are all derived from this table.
"""

from xdsa.golden import isa

__all__ = ["engine_modules", "engine_opcodes", "rtl_opcode_keys", "golden_capability"]


def engine_modules(config=None):
    """[(engine name, module)] for the engines in `config` (every engine if None)."""
    from . import control, datamove, matrix, vector
    engines = [
        ("control", control, True),
        ("datamove", datamove, True),
        ("vector", vector, config is None or config.vector_bytes > 0),
        ("matrix", matrix, config is None or config.array_n > 0),
    ]
    return [(name, mod) for name, mod, present in engines if present]


def engine_opcodes(config=None) -> dict:
    """{engine name: [Opcode, ...]} for the engines in `config` (all engines if None)."""
    return {name: [isa.by_mnemonic(m) for m in mod.OPCODES] for name, mod in engine_modules(config)}


def rtl_opcode_keys(config=None) -> frozenset:
    return frozenset(op.key for ops in engine_opcodes(config).values() for op in ops)


def golden_capability(config):
    """The golden model's view of `config`: what it executes and which units it refuses."""
    from xdsa.golden.machine import Capability
    owner = {}
    for name, mod in engine_modules(config):
        for m in mod.OPCODES:
            owner[isa.by_mnemonic(m).key] = mod

    def refuses(op, fields):
        rule = getattr(owner.get(op.key), "refuses", None)
        return rule(config, op, fields) if rule else None
    return Capability(executes=lambda op: op.key in owner, refuses=refuses)
