"""What the RTL executes: the opcode keys of every engine the core can route to.

Engines register the opcodes they execute in `ENGINE_OPCODES`; the core's decode
ROM and the `implemented.rtl` flag of ``xdsa isa --json`` are derived from it.
"""

ENGINE_OPCODES = {}     # engine name -> frozenset of (section, op_code)


def rtl_opcode_keys() -> frozenset:
    keys = set()
    for ops in ENGINE_OPCODES.values():
        keys |= ops
    return frozenset(keys)
