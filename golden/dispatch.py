"""Golden-model dispatch: which opcodes the golden interpreter executes.

`HANDLERS` maps an opcode key ``(section, op_code)`` to the function that executes
it. It is filled by the semantics modules as they register themselves; the
`implemented.golden` flag of ``xdsa isa --json`` is derived from it.
"""

HANDLERS = {}


def handler(*mnemonics):
    """Register the decorated function as the semantics of the given mnemonics."""
    from .isa import by_mnemonic

    def register(fn):
        for m in mnemonics:
            op = by_mnemonic(m)
            if op.key in HANDLERS:
                raise ValueError(f"{m} has two golden handlers")
            HANDLERS[op.key] = fn
        return fn
    return register


def implemented_keys() -> frozenset:
    return frozenset(HANDLERS)
