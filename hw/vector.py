"""Vector ALU engine (being written)."""

OPCODES = ()
