"""The golden model: an ISA-level xDSA interpreter.

It holds the architectural state (byte-addressed data memory, the four 256-entry
key tables, the PC) and executes one instruction at a time, strictly in program
order. Every instruction produces a `Retired` record (the retire trace that the
RTL co-simulation compares against).

Checks, in order (docs/isa-decisions.md, D-PRECEDENCE); the first that fails is
the instruction's fault:

 1. fetch: the group's DID byte and payload lie in memory (FETCH_RANGE)
 2. DID: END stops; RESERVED faults RESERVED_DID; other STANDARD and CUSTOM DIDs go
    to a registered domain handler or fault DOMAIN_ABSENT
 3. Unity payload: reserved bits (RESERVED_BITS), section/opcode (ILLEGAL_OPCODE)
 4. AS = 3 (RESERVED_AS), except for EXIT, which ignores AS
 5. no golden semantics, or not in the configured capability (UNIMPLEMENTED)
 6. key fetch: enough keys, else KEY_TIMEOUT; the keys are consumed
 7. operand table in memory (OPTABLE_RANGE), then decoded
 8. every unit field holds a defined code (RESERVED_UNIT); the configuration
    supports the units (UNSUPPORTED_UNIT)
 9. operand checks by the semantics: unit support (UNSUPPORTED_UNIT), field values
    (ILLEGAL_OPERAND), operand byte ranges (ADDRESS_RANGE) -- all before anything
    is written
10. the writes are committed
11. key deposit (KEY_OVERFLOW if the entry already holds 255 keys)

A fault latches its code and the PC and stops the machine; nothing the faulting
instruction computed is written (except for KEY_OVERFLOW, which happens after the
instruction completed).
"""

from dataclasses import dataclass, field

import numpy as np

from . import units as U
from .dispatch import HANDLERS
from . import semantics  # noqa: F401  (registers the handlers)
from .encoding import Instruction, UnityInstruction, decode_table
from .isa import DidClass, did_class, Fault, DataUnit, Kind, GROUP_SIZE, GROUP_BYTES, DID_PACK_BYTES
from .storage import pc_of

__all__ = ["Machine", "Capability", "Retired", "RunResult", "MachineFault", "Exec", "DEFAULT_MEMORY"]

DEFAULT_MEMORY = 1 << 20
KEY_TABLES, KEY_ENTRIES = 4, 256


class MachineFault(Exception):
    """Raised inside an instruction's execution; becomes the instruction's fault."""

    def __init__(self, code: Fault, detail: str = ""):
        super().__init__(f"{code.name}: {detail}" if detail else code.name)
        self.code, self.detail = code, detail


@dataclass(frozen=True)
class Retired:
    """One entry of the retire trace."""
    index: int                 # instruction number in program order
    pc: int                    # payload byte address
    did: int                   # None when the instruction could not be fetched
    section: int = None        # Unity only
    op_code: int = None        # Unity only
    mnemonic: str = ""
    fault: Fault = Fault.NONE
    writes: tuple = ()         # ((address, nbytes), ...) in commit order
    detail: str = ""           # human-readable fault detail (not compared)

    def key(self):
        """The fields the RTL co-simulation compares."""
        return (self.pc, self.did, self.section, self.op_code, self.fault, self.writes)


@dataclass
class RunResult:
    status: str                # "end", "exit", "fault", "limit"
    retired: int
    fault: Fault = Fault.NONE
    fault_pc: int = None
    detail: str = ""
    trace: list = field(default_factory=list)


class Exec:
    """What a semantics function sees: the decoded instruction, checked reads of
    memory, and staged writes that commit only if the whole instruction succeeds."""

    def __init__(self, machine, op, as_bits, fields, pc):
        self.m, self.op, self.as_bits, self.f, self.pc = machine, op, as_bits, fields, pc
        self.mem = machine.mem
        self._writes = []

    # --- operands -------------------------------------------------------------

    def fault(self, code: Fault, detail: str = ""):
        raise MachineFault(code, f"{self.op.mnemonic}: {detail}" if detail else self.op.mnemonic)

    def unit(self, name: str) -> DataUnit:
        code = self.f[name]
        if code > max(DataUnit):
            self.fault(Fault.RESERVED_UNIT, f"{name} = {code} is a reserved unit code")
        return DataUnit(code)

    def require(self, cond: bool, code: Fault, detail: str):
        if not cond:
            self.fault(code, detail)

    def check_range(self, address: int, n: int, what: str):
        if n and not (0 <= address and address + n <= len(self.mem)):
            self.fault(Fault.ADDRESS_RANGE, f"{what} {address:#x}..{address + n:#x} is outside the "
                       f"{len(self.mem)}-byte data memory")

    def read(self, address: int, unit: DataUnit, count: int, what: str = "source") -> np.ndarray:
        self.check_range(address, U.nbytes(unit, count), what)
        return U.read(self.mem, address, unit, count)

    def read_bytes(self, address: int, n: int, what: str = "source") -> np.ndarray:
        self.check_range(address, n, what)
        return self.mem[address:address + n].copy()

    def write(self, address: int, unit: DataUnit, values: np.ndarray, what: str = "destination"):
        """Stage a write of native `values`; committed after the instruction succeeds."""
        values = np.asarray(values)
        self.check_range(address, U.nbytes(unit, len(values)), what)
        self._writes.append(("unit", address, unit, values))

    def write_bytes(self, address: int, data, what: str = "destination"):
        data = np.asarray(data, dtype=np.uint8)
        self.check_range(address, len(data), what)
        self._writes.append(("bytes", address, None, data))

    def write_scatter(self, addresses: np.ndarray, data: np.ndarray, what: str = "destination"):
        """Stage byte writes at arbitrary addresses (later entries win)."""
        if len(addresses):
            lo, hi = int(addresses.min()), int(addresses.max())
            self.check_range(lo, hi - lo + 1, what)
        self._writes.append(("scatter", addresses, None, np.asarray(data, dtype=np.uint8)))

    def write_nibbles(self, addresses: np.ndarray, high: np.ndarray, nibbles: np.ndarray,
                      what: str = "destination"):
        """Stage int4 writes: nibble `high` (0/1) of byte `addresses` (later entries win)."""
        if len(addresses):
            lo, hi = int(addresses.min()), int(addresses.max())
            self.check_range(lo, hi - lo + 1, what)
        self._writes.append(("nibbles", addresses, high, np.asarray(nibbles, dtype=np.uint8)))

    def _commit(self):
        ranges = []
        for kind, a, b, v in self._writes:
            if kind == "unit":
                n = U.write(self.mem, a, b, v)
                ranges.append((a, n))
            elif kind == "bytes":
                self.mem[a:a + len(v)] = v
                ranges.append((a, len(v)))
            elif kind == "scatter":
                self.mem[a] = v                 # numpy: the last duplicate index wins
                ranges.extend(_ranges(a))
            else:                               # nibbles
                for h in (0, 1):
                    sel = b == h
                    addr, nib = a[sel], v[sel]
                    if not len(addr):
                        continue
                    # last writer wins among duplicates: keep the last occurrence
                    rev = addr[::-1]
                    _, first = np.unique(rev, return_index=True)
                    keep = len(addr) - 1 - first
                    addr, nib = addr[keep], nib[keep]
                    cur = self.mem[addr]
                    self.mem[addr] = (cur & 0xF0) | (nib & 0xF) if h == 0 else (cur & 0x0F) | (nib << 4)
                ranges.extend(_ranges(a))
        return tuple(_merge(ranges))


def _ranges(addresses):
    """Sorted, merged (start, length) ranges covering a set of byte addresses."""
    if not len(addresses):
        return []
    u = np.sort(addresses)
    u = u[np.r_[True, u[1:] != u[:-1]]]          # (np.unique is several times slower)
    breaks = np.nonzero(np.diff(u) != 1)[0]
    starts = np.concatenate(([u[0]], u[breaks + 1]))
    ends = np.concatenate((u[breaks], [u[-1]]))
    return [(int(s), int(e - s + 1)) for s, e in zip(starts, ends)]


def _merge(ranges):
    """Merge ranges that touch, keeping commit order otherwise."""
    out = []
    for a, n in ranges:
        if n == 0:
            continue
        if out and out[-1][0] + out[-1][1] == a:
            out[-1] = (out[-1][0], out[-1][1] + n)
        else:
            out.append((a, n))
    return out


class Capability:
    """What a hardware configuration supports, for `Machine(capability=...)`.

    `executes(op)` says whether the configuration runs the opcode at all (if not:
    UNIMPLEMENTED); `refuses(op, fields)` returns a reason when it does not support
    the instruction's units (UNSUPPORTED_UNIT), or None.
    """

    def __init__(self, executes=None, refuses=None):
        self._executes = executes or (lambda op: True)
        self._refuses = refuses or (lambda op, fields: None)

    def executes(self, op) -> bool:
        return bool(self._executes(op))

    def refuses(self, op, fields):
        return self._refuses(op, fields)


class Machine:
    """The architectural state and the interpreter.

    `domains` maps a non-Unity DID to a handler ``fn(machine, pc, instruction)``
    that may return an iterable of (address, nbytes) it wrote, or raise
    MachineFault. `capability`, if given, lets the golden model refuse what a
    hardware configuration does not support, with the same faults as the RTL:
    ``capability.executes(op)`` false -> UNIMPLEMENTED (before the key fetch), and
    ``capability.refuses(op, fields)`` returning a reason -> UNSUPPORTED_UNIT (after
    the reserved-unit check, before the semantics).
    """

    def __init__(self, mem_size: int = DEFAULT_MEMORY, domains: dict = None, capability=None):
        if mem_size <= 0:
            raise ValueError(f"memory size must be positive, not {mem_size}")
        self.mem = np.zeros(mem_size, dtype=np.uint8)
        self.keys = np.zeros((KEY_TABLES, KEY_ENTRIES), dtype=np.uint8)
        self.domains = dict(domains or {})
        self.capability = capability
        self.start = 0
        self.index = 0                    # next instruction number
        self.halted = False
        self.status = None
        self.fault = Fault.NONE
        self.fault_pc = None
        self.detail = ""
        self.trace = []

    # --- loading ----------------------------------------------------------------

    def load(self, image):
        """Load an Image: segments into memory, key presets, the start address."""
        self.mem[:] = 0
        image.write_into(self.mem)
        self.keys[:] = 0
        for (t, i), n in image.keys.items():
            self.keys[t, i] = n
        self.reset(image.start)

    def reset(self, start: int):
        self.start = start
        self.index = 0
        self.halted = False
        self.status = None
        self.fault, self.fault_pc, self.detail = Fault.NONE, None, ""
        self.trace = []

    @property
    def pc(self) -> int:
        return pc_of(self.start, self.index)

    # --- execution --------------------------------------------------------------

    def run(self, max_instructions: int = 1_000_000) -> RunResult:
        """Run until END, EXIT, a fault, or `max_instructions` more instructions."""
        for _ in range(max_instructions):
            if self.halted:
                break
            self.step()
        status = self.status if self.halted else "limit"
        return RunResult(status, self.index, self.fault, self.fault_pc, self.detail, self.trace)

    def step(self) -> Retired:
        """Execute the next instruction and return its trace record."""
        if self.halted:
            raise RuntimeError("the machine has stopped; reset or load it first")
        pc, index = self.pc, self.index
        try:
            ins = self._fetch(index)
        except MachineFault as e:
            return self._retire(Retired(index, pc, None, fault=e.code, detail=str(e)))
        cls = did_class(ins.did)
        if cls == DidClass.END:
            self._stop("end")
            return self._retire(Retired(index, pc, ins.did))
        if cls == DidClass.RESERVED:
            return self._retire(Retired(index, pc, ins.did, fault=Fault.RESERVED_DID,
                                        detail=f"DID {ins.did:#04x} is reserved"))
        if cls != DidClass.UNITY:
            handler = self.domains.get(ins.did)
            if handler is None:
                return self._retire(Retired(index, pc, ins.did, fault=Fault.DOMAIN_ABSENT,
                                            detail=f"no domain handler for DID {ins.did:#04x}"))
            try:
                writes = tuple(handler(self, pc, ins) or ())
            except MachineFault as e:
                return self._retire(Retired(index, pc, ins.did, fault=e.code, detail=str(e)))
            return self._retire(Retired(index, pc, ins.did, writes=writes))
        return self._retire(self._unity(index, pc, ins))

    def _fetch(self, index) -> Instruction:
        g, s = divmod(index, GROUP_SIZE)
        base = self.start + g * GROUP_BYTES
        if self.start % 32:
            raise MachineFault(Fault.FETCH_RANGE, f"start address {self.start:#x} is not 32-byte aligned")
        payload_at = base + DID_PACK_BYTES + 16 * s
        if base < 0 or payload_at + 16 > len(self.mem):
            raise MachineFault(Fault.FETCH_RANGE, f"instruction {index} at {payload_at:#x} is outside the "
                               f"{len(self.mem)}-byte memory")
        did = int(self.mem[base + s])
        payload = int.from_bytes(self.mem[payload_at:payload_at + 16].tobytes(), "little")
        return Instruction(did, payload)

    def _unity(self, index, pc, ins) -> Retired:
        u = UnityInstruction.decode(ins)
        rec = dict(index=index, pc=pc, did=0, section=u.op_section, op_code=u.op_code)
        op = u.opcode
        try:
            if u.rsvd or u.sync.rsvd:
                raise MachineFault(Fault.RESERVED_BITS, "reserved payload or SYNC_CTRL bits are set")
            if op is None:
                raise MachineFault(Fault.ILLEGAL_OPCODE, f"no opcode at section {u.op_section:#04x}, "
                                   f"OP_CODE {u.op_code:#06x}")
            rec["mnemonic"] = op.mnemonic
            if op.table is not None and u.as_bits is None:
                raise MachineFault(Fault.RESERVED_AS, f"{op.mnemonic}: ADDR SPACE = 3 is reserved")
            fn = HANDLERS.get(op.key)
            if fn is None:
                raise MachineFault(Fault.UNIMPLEMENTED, f"{op.mnemonic} has no golden semantics yet")
            if self.capability is not None and not self.capability.executes(op):
                raise MachineFault(Fault.UNIMPLEMENTED, f"{op.mnemonic} is not in this configuration")
            self._fetch_keys(u.sync)
            fields = {}
            if op.table is not None:
                n = op.table.resolve(u.as_bits).nbytes
                d = u.operand_descriptor
                if not 0 <= d <= len(self.mem) - n:
                    raise MachineFault(Fault.OPTABLE_RANGE, f"{op.mnemonic}: operand table {d:#x}..{d + n:#x} "
                                       f"is outside the {len(self.mem)}-byte data memory")
                fields = decode_table(op, u.as_bits, self.mem[d:d + n].tobytes(), signed=False)
                for f in op.table.resolve(u.as_bits).fields:
                    if f.kind == Kind.UNIT and fields[f.name] > max(DataUnit):
                        raise MachineFault(Fault.RESERVED_UNIT, f"{op.mnemonic}: {f.name} = {fields[f.name]} "
                                           "is a reserved unit code")
            if self.capability is not None:
                detail = self.capability.refuses(op, fields)
                if detail:
                    raise MachineFault(Fault.UNSUPPORTED_UNIT, f"{op.mnemonic}: {detail}")
            x = Exec(self, op, u.as_bits, fields, pc)
            stop = fn(x)
            writes = x._commit()
        except MachineFault as e:
            return Retired(**rec, fault=e.code, detail=str(e))
        rec["writes"] = writes
        if u.sync.deposit:
            t, i = u.sync.keyw_bar, u.sync.deposit_key_addr
            if self.keys[t, i] == 255:
                return Retired(**rec, fault=Fault.KEY_OVERFLOW,
                               detail=f"{op.mnemonic}: key table {t} entry {i} already holds 255 keys")
            self.keys[t, i] += 1
        if isinstance(stop, str) and stop == "exit":
            self._stop("exit")
        return Retired(**rec)

    def _fetch_keys(self, sync):
        if not sync.fetch:
            return
        t, i, n = sync.keyr_bar, sync.fetch_key_addr, sync.num_keys
        if self.keys[t, i] < n:
            # Nothing else runs while the golden model waits, so the wait can never be
            # satisfied (D-KEYS): it times out at once.
            raise MachineFault(Fault.KEY_TIMEOUT, f"waiting for {n} key(s) in table {t} entry {i}, "
                               f"which holds {int(self.keys[t, i])}")
        self.keys[t, i] -= n

    def _stop(self, status):
        self.halted, self.status = True, status

    def _retire(self, r: Retired) -> Retired:
        self.trace.append(r)
        self.index += 1
        if r.fault != Fault.NONE:
            self.halted, self.status = True, "fault"
            self.fault, self.fault_pc, self.detail = r.fault, r.pc, r.detail
        return r

    # --- host-side helpers ------------------------------------------------------

    def deposit_key(self, table: int, index: int, count: int = 1):
        """Deposit keys as the host (or another domain) would."""
        self.keys[table, index] = min(255, int(self.keys[table, index]) + count)

    def read(self, address: int, unit: DataUnit, count: int) -> np.ndarray:
        return U.read(self.mem, address, unit, count)
