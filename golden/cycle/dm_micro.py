"""Model of the micro-coded data-move engine (`xdsa.hw.datamove_micro`): executes
the microprogram ROM of `xdsa.golden.cycle.dm_ucode` one micro-instruction at a
time, with the copier moving whole runs.

`MicroModel(mem_bytes).run(table, as_bits, mem)` executes one DATA_MOVE on the
numpy byte array `mem` (in place) and returns ``(fault, trace)``: the fault code
and the list of micro-program counters executed, which the RTL reproduces
exactly (``tests/hw/test_datamove_micro.py`` compares them).
"""

from . import dm_ucode as U

__all__ = ["MicroModel"]

M64 = (1 << 64) - 1


class MicroModel:
    def __init__(self, mem_bytes):
        self.mem_bytes = mem_bytes
        self.code, self.rom = U.program()
        self.regions, _ = U.table_regions()
        self.scratch = U.scratch_init(mem_bytes)

    def tbyte(self, table, as_bits, region, j):
        off, n = self.regions[as_bits][region]
        return table[off + j] if j < n and off + j < len(table) else 0

    def run(self, table, as_bits, mem, max_steps=10_000_000):
        M = self.scratch
        acc, c, side, unit = 0, 0, 0, 0
        sp = dp = 0
        stack = []
        pc = 0
        trace = []
        for _ in range(max_steps):
            w = self.rom[pc]
            op, a, t = U.OPS[w & 31], (w >> 5) & 0xFF, w >> 5
            trace.append(pc)
            pc += 1
            r = (16 + 16 * side + (a & 15)) if a & 0x80 else a & 63
            if op == "LD":
                acc = M[r]
            elif op == "LDI":
                acc = a
            elif op == "ST":
                M[r] = acc
            elif op in ("ADD", "ADDI"):
                s = acc + (M[r] if op == "ADD" else a)
                acc, c = s & M64, s >> 64
            elif op in ("SUB", "SUBI"):
                b = M[r] if op == "SUB" else a
                c = int(acc >= b)
                acc = (acc - b) & M64
            elif op == "AND":
                acc &= a
            elif op == "SHR":
                acc, c = acc >> 1, acc & 1
            elif op == "SHL":
                acc, c = (acc << 1) & M64, acc >> 63
            elif op == "RCL":
                acc, c = ((acc << 1) | c) & M64, acc >> 63
            elif op == "TB":
                acc = ((acc << 8) | self.tbyte(table, as_bits, a >> 6, a & 63)) & M64
            elif op == "UINFO":
                acc = U.unit_info(acc & 15)
            elif op == "SIDE":
                side = a & 1
            elif op == "SETU":
                unit = acc & 63
            elif op == "SETP":
                sp = acc
            elif op == "SETD":
                dp = acc
            elif op == "RUN":
                sp, dp = self._copy(mem, table, as_bits, unit, a & 1, acc, sp, dp)
            elif op == "JMP" or (op == "JZ" and acc == 0) or (op == "JNZ" and acc != 0) \
                    or (op == "JC" and c) or (op == "JNC" and not c):
                pc = t
            elif op == "CALL":
                stack = [pc] + stack[:1]
                pc = t
            elif op == "RET":
                pc = stack[0]
                stack = stack[1:] + stack[:1]
            elif op == "FAULT":
                return a, trace
            elif op == "DONE":
                return 0, trace
        raise RuntimeError("the microprogram did not finish")

    def _copy(self, mem, table, as_bits, unit, imm, n, sp, dp):
        is4, size = unit & 16, unit & 15
        for i in range(n):
            if imm:                              # the immediate, from scratch register SRC
                v = (self.scratch[U.REG["SRC"]] >> (0 if is4 else 8 * (i % size))) & 0xFF
            else:
                v = int(mem[sp >> 1])
                if is4:
                    v = (v >> (4 * (sp & 1))) & 15
                sp += 1 if is4 else 2
            if is4:
                b = int(mem[dp >> 1])
                v = (b & 0xF0) | (v & 15) if not dp & 1 else (b & 0x0F) | ((v & 15) << 4)
            mem[dp >> 1] = v
            dp += 1 if is4 else 2
        return sp, dp
