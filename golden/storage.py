"""The storage format: program <-> bytes.

Every 32 instructions form a 544-byte group: a 256-bit DID pack (DID i in byte i),
then 16 rows of 256 bits, each holding two 128-bit payloads (instruction 2k in the
low half). A partial last group is padded to a full group with DID END and a zero
payload, so a fetcher that runs past the last real instruction stops at END.

The PC of an instruction is the byte address of its payload (D-PC):
``pc = group_base + 32 + 16 * slot``.
"""

from .encoding import Instruction
from .isa import (GROUP_SIZE, GROUP_BYTES, DID_PACK_BYTES, PAYLOAD_BYTES, END_PADDING_DID)

__all__ = ["pack_program", "unpack_program", "program_bytes", "pc_of", "slot_of_pc"]


def program_bytes(count: int) -> int:
    """Bytes occupied by a program of `count` instructions (whole groups)."""
    return -(-count // GROUP_SIZE) * GROUP_BYTES



def pack_program(instructions) -> bytes:
    """Pack instructions into the storage format."""
    instructions = list(instructions)
    out = bytearray()
    for g in range(0, len(instructions), GROUP_SIZE):
        group = instructions[g:g + GROUP_SIZE]
        group += [Instruction(END_PADDING_DID, 0)] * (GROUP_SIZE - len(group))
        out += bytes(i.did for i in group)
        for i in group:
            out += i.payload.to_bytes(PAYLOAD_BYTES, "little")
    return bytes(out)


def unpack_program(data: bytes, count: int = None) -> list:
    """Unpack the storage format. With `count`, return exactly that many instructions;
    without, return every slot of every whole group in `data`."""
    if count is None:
        if len(data) % GROUP_BYTES:
            raise ValueError(f"a program is a whole number of {GROUP_BYTES}-byte groups; "
                             f"got {len(data)} bytes")
        count = len(data) // GROUP_BYTES * GROUP_SIZE
    if program_bytes(count) > len(data):
        raise ValueError(f"{count} instructions need {program_bytes(count)} bytes, got {len(data)}")
    out = []
    for n in range(count):
        g, s = divmod(n, GROUP_SIZE)
        base = g * GROUP_BYTES
        did = data[base + s]
        off = base + DID_PACK_BYTES + s * PAYLOAD_BYTES
        out.append(Instruction(did, int.from_bytes(data[off:off + PAYLOAD_BYTES], "little")))
    return out


def pc_of(start: int, index: int) -> int:
    """PC (payload byte address) of instruction number `index` of a program at `start`."""
    g, s = divmod(index, GROUP_SIZE)
    return start + g * GROUP_BYTES + DID_PACK_BYTES + s * PAYLOAD_BYTES


def slot_of_pc(start: int, pc: int) -> int:
    """Instruction number of the instruction whose payload is at `pc` (inverse of pc_of)."""
    g, off = divmod(pc - start, GROUP_BYTES)
    s, rem = divmod(off - DID_PACK_BYTES, PAYLOAD_BYTES)
    if rem or not 0 <= s < GROUP_SIZE or pc < start:
        raise ValueError(f"{pc:#x} is not the payload address of an instruction of a program at {start:#x}")
    return g * GROUP_SIZE + s
