"""Data-move engine (being written)."""

OPCODES = ()
