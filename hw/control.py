"""The control engine: EXIT. It has no operands and completes at once; the core
stops after retiring it (D-EXIT)."""

OPCODES = ("exit",)
