"""The vector engine: the integer elementwise and reduction instructions of the BASE
section (docs/isa-decisions.md D-ARITH .. D-REDUCE; golden/semantics/elementwise.py
and reduction.py are the definition it matches bit for bit).

`VectorEngine(config)` takes one command at a time on ``cmd`` (opcode, AS and the
raw operand table), decodes it over two cycles (the opcode compare in the cycle
that accepts it, the fields from the registered table in the next, DECODE),
checks the operands exactly as the golden model does and in its order, streams
the operands through its memory ports and answers on ``done`` with the fault code
(0: completed). A faulting command writes nothing: every check is made before the
first write.

Checks (D-PRECEDENCE), one per cycle:

1. a floating-point unit (f16/f32/f64) in any unit field -> UNSUPPORTED_UNIT
   (`refuses`; the core has already faulted reserved codes 13..15);
2. the golden model's unit rules (ABS of an unsigned unit, ASR beyond 32 bits,
   NSR not halving, SXT/UXT widths) -> UNSUPPORTED_UNIT;
3. ASUM of length 0 completes at once; a reduction axis mask of 0 -> ILLEGAL_OPERAND;
4. D-OVERLAP, one source per cycle (`hw.vector_overlap.OverlapCheck`) -> ILLEGAL_OPERAND;
5. the byte range of every operand within ``mem_bytes`` (addresses up to 64 bits,
   lengths up to 64 bits, exact arithmetic), one operand per cycle -> ADDRESS_RANGE.

The verdicts of 4 and 5 are registers, so no check's arithmetic lies on the paths
of the control state and the fault register: a range verdict is acted on in the
cycle after its check (the next RANGE cycle, or PREP, which then starts nothing), a
D-OVERLAP verdict two cycles after it (the check is a two-stage pipeline; the verdict
of the last source arrives in the second RANGE cycle, before that cycle's range
verdict in D-PRECEDENCE's order). Passing checks cost no cycle; a fault is reported
one (range) or two (D-OVERLAP) cycles after the cycle of its check.

Microarchitecture
-----------------

* **Readers** (`hw.vector_stream.StreamReader`): source 0 on ``rd_a``, source 1
  on ``rd_b``; MEDIAN's source 2 shares ``rd_b`` with source 1 (round-robin, a
  request holds its port until it transfers), so MEDIAN runs at half rate.
  Sources 0 and 1 buffer `golden.cycle.vector.reader_slots` rows (4, and one more
  per further cycle of memory read latency: 6 in `base`); source 2's reader buffers fewer
  (`golden.cycle.vector.source2_slots`: 2 when MEDIAN is on the narrow path),
  enough for that rate.
  Sources 1 and 2 share one realignment shifter: MEDIAN's source 2 is realigned one
  cycle after sources 0 and 1 (`hw.vector_pipe.BeatPipe` ``c_due``) and enters S0
  in the ALU's first MEDIAN cycle, which does not need it.
* **Beat pipeline** (`hw.vector_pipe.BeatPipe`): a beat is N / L elements, L the
  widest unit of the instruction (N = 8 W): the readers' aligned windows registered
  (A), unpack (S0), ALU (S1, `hw.vector_alu`,
  with the multiplier array `hw.vector_mul`; its tail T one cycle later), convert/pack (S2,
  `hw.vector_convert`). With ``config.vector_narrow_bits`` (`base`: 64) S1 is
  `hw.vector_alu_split`: POW, MEDIAN, CLIP, MUL, the shifts and DIV/MOD on a narrow
  ALU, one lane group of the beat after the other (``occ`` grows by the number
  of groups, DIV/MOD excepted), and with ``config.vector_narrow_stages`` = K
  registers inside that ALU every step of a narrow kind takes
  ``config.narrow_step_cycles`` (1 + the ranks of its cuts: 9 for `base`'s K = 13).
* **Writer** (`hw.vector_stream.StreamWriter`) on ``wr``: row writes with byte
  enables at any destination alignment, queued in two request registers (the port's
  ``ready`` enables only the queue's read pointer: the pipeline's stall chain starts
  at registers); an odd int4 destination keeps its last byte's high nibble (read
  once, before the stream starts, on ``rd_b``).
* **Reductions** (ASUM, REDUCE_*): `hw.vector_reduce.Reducer`, fed element by
  element by reader 0, writes through the same writer.

W = ``config.vector_bytes`` must equal ``config.row_bytes`` (one memory row per
port per cycle is one full beat; narrower or wider datapaths are refused in
``__init__``).

Latency and throughput (no memory stalls): setup takes 3 cycles (DECODE, the unit
checks, the start of the streams) plus one per overlap check and one per range
check (the late verdicts above add none); the first read is issued in the cycle after setup and the
pipeline adds 8 + L cycles (request, the response L = ``config.mem_latency`` cycles later, A, S0, S1, T, S2,
P, writer) plus one to the last write.
Steady state: one beat per ``occ`` cycles (see `hw.vector_alu`), e.g. W bytes of
int8 ADD results per cycle at any alignment.

Measured through the `base` core (``xdsa bench vector``, W = 32, memory read
latency 3, Verilator): int8 ADD over 64 KiB at 31.4 destination bytes per cycle
(98.2 % of W; the rest is the fixed cost of one instruction), int32 MUL and int8
CLIP (narrow path of 13 stages, 9-cycle steps) at 0.89, a 16-element int8 ADD in 37
cycles from issue to completion, 23 of them in the engine. docs/vector-engine.md
has the details.
"""

from amaranth.hdl import Assert, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import Out
from amaranth.utils import ceil_log2, exact_log2

from xdsa.golden.cycle.vector import reader_slots, source2_slots
from xdsa.golden.isa import DataUnit, Fault, Section

from . import fields as F
from .bus import engine_members, row_addr_bits
from .delay import delayed
from .replicate import kept_and, mux_sliced, own_replicas, replicas, slices
from .vector_alu import OCC_BITS, beat_config_layout
from .vector_ops import NARROW_KINDS, NARROW_SCALED_KINDS, OP_LIST, OPS, ROLE_FIELDS, Kind
from .vector_pipe import BeatPipe
from .vector_overlap import OverlapCheck
from .vector_reduce import Reducer
from .vector_stream import StreamReader, StreamWriter, funnel
from .vector_swar import LANE_BITS
from .wide_mux import select_word

__all__ = ["OPCODES", "VectorEngine", "refuses"]

OPCODES = tuple(OPS)

_FLOAT_CODES = (int(DataUnit.FP16), int(DataUnit.FP32), int(DataUnit.FP64))


def refuses(config, op, fields):
    """The units this engine does not execute: any floating-point unit field."""
    info = OPS.get(op.mnemonic)
    if info is None:
        return None
    for name, value in fields.items():
        if name.endswith("_unit") and value in _FLOAT_CODES:
            return f"{name} = {DataUnit(value).mnemonic}: the vector engine executes integer units only"
    return None


# operand slots: sources 0..2, destination
S0, S1, S2, D = range(4)
SLOT_ROLE = ("s0", "s1", "s2", "d")
RULES = {"": 0, "abs": 1, "asr": 2, "nsr": 3, "extend": 4}


def _field_layouts(sources):
    """The ops of OP_LIST grouped by where the value of one field register comes from,
    ``sources[i]`` for op i: a field name (grouped by where the field lies in the operand
    table at every AS), a constant, or None (the op has no such field). Returns (one
    (opcode, field name) or constant per layout, and each op's layout number, 1 .. the
    number of layouts, 0 for none)."""
    seen, number, first = {}, [], []
    for info, src in zip(OP_LIST, sources):
        if src is None:
            number.append(0)
            continue
        op = info.opcode
        if isinstance(src, int):
            where, value = ("constant", src), src
        else:
            where = (F.field_width(op, src),
                     tuple(tuple(sorted(op.table.resolve(a).field(src).pieces)) for a in F.AS_BITS))
            value = (op, src)
        if where not in seen:
            seen[where] = len(seen) + 1
            first.append(value)
        number.append(seen[where])
    return first, number


def _props_layout():
    return data.StructLayout({
        "kind": 5, "variant": 3,
        "src_mask": 3,           # sources read
        "unit_mask": 4,          # slots whose unit field the instruction has
        "rule": 3,
        "reduction": 1, "no_sat": 1, "shift_amount": 1, "pattern": 1, "bytes_only": 1,
        "sxt": 1, "uxt": 1, "asum": 1,
    })


def _props_value(info):
    return {
        "kind": info.kind, "variant": info.variant if info.kind != Kind.IDENT else 0,
        "src_mask": sum(1 << SLOT_ROLE.index(r) for r in info.sources),
        "unit_mask": sum(1 << SLOT_ROLE.index(r) for r in info.units) | (1 << D if info.units else 0),
        "rule": RULES[info.rule], "reduction": int(info.reduction), "no_sat": int(info.no_sat),
        "shift_amount": int(info.shift_amount), "pattern": int(info.pattern),
        "bytes_only": int(info.bytes_only),
        "sxt": int(info.mnemonic == "sxt"), "uxt": int(info.mnemonic == "uxt"),
        "asum": int(info.mnemonic == "asum"),
    }


def _field_name(op, candidates):
    names = {f.name for f in op.table.resolve(32).fields}
    for c in candidates:
        if c in names:
            return c
    return None


class VectorEngine(wiring.Component):
    """The vector engine for one `CoreConfig` (see the module docstring). ``checks``:
    simulation-only `Assert`s on the units' invariants (the unit tests set it)."""

    def __init__(self, config, *, checks=False):
        W = config.vector_bytes
        if W != config.row_bytes:
            raise ValueError(f"the vector engine needs vector_bytes equal to row_bytes ({config.row_bytes}), "
                             f"not {W!r}")
        if W > 32:
            # DIV/MOD take W / 8 * 64 cycles per 64-bit beat, POW on a 64-bit narrow path W / 8 * 129:
            # the iteration counter (OCC_BITS) is sized for W <= 32
            raise ValueError(f"the vector engine supports vector_bytes up to 32, not {W!r}")
        self.config = config
        self.checks = checks
        self.W = W
        self.n = 8 * W
        self._ops = [info.opcode for info in OP_LIST]
        self.table_bits = F.table_bits(self._ops)
        super().__init__({
            **engine_members(config, self.table_bits, ["rd_a", "rd_b"]),
            # state for the cycle model and tests
            "dbg_state": Out(4),
            "dbg_va": Out(1), "dbg_v0": Out(1), "dbg_vt": Out(1), "dbg_v1": Out(1), "dbg_v2": Out(1), "dbg_vp": Out(1), "dbg_it": Out(OCC_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        W, n = self.W, self.n
        R = cfg.row_bytes
        lr = exact_log2(R)
        AW = max(ceil_log2(cfg.mem_bytes), lr + 1)     # byte addresses inside memory
        NB = AW + 2                                     # nibble addresses and counts
        abits = row_addr_bits(cfg.rows)

        # --- command decode and field latch ------------------------------------------------------------
        # (reset-less: the decoded command, loaded when a command is accepted and in DECODE,
        # before any state that reads it; `st`, which is reset, starts in IDLE)
        opi = Signal(range(len(OP_LIST)), reset_less=True)
        props = Signal(_props_layout(), reset_less=True)
        # (the kind of the slots' element counts, for the range checks: props.reduction & ~asum,
        # and ASUM, as registers of their own beside those checks)
        count_tensor, count_one = (Signal(reset_less=True, name=nm) for nm in ("count_tensor", "count_one"))
        addr = [Signal(64, name=f"addr_{r}", reset_less=True) for r in SLOT_ROLE]
        unit = [Signal(4, name=f"unit_{r}", reset_less=True) for r in SLOT_ROLE]
        length = Signal(64, reset_less=True)
        sat, rnd, lt = (Signal(name=nm, reset_less=True) for nm in ("sat", "rnd", "lt"))
        imm0, imm1 = Signal(16, name="imm0", reset_less=True), Signal(16, name="imm1", reset_less=True)
        dims = [Signal(12, name=f"dim_{d}", reset_less=True) for d in ("fw", "fh", "fc")]
        axis = Signal(3, reset_less=True)

        # Two cycles, for the clock: in the cycle the command is accepted only its raw table and AS
        # are registered, with what the opcode decodes to -- the op index and, for every field
        # register, the number of its layout (where the field lies in the table at each AS, or a
        # constant) --; in DECODE each field register is loaded through one multiplexer over its
        # few layouts, and the op's properties from the op index. The opcode compare and the field
        # multiplexers are never in series.
        tb = Signal.like(self.cmd.payload.table, name="cmd_table", reset_less=True)
        asc = Signal.like(self.cmd.payload.as_code, name="cmd_as", reset_less=True)
        key = Cat(self.cmd.payload.op_code, self.cmd.payload.section_ai)
        decode = Signal()                                   # DECODE: load the field registers

        def sources(candidates, kinds=None):
            """Each op's source of a field register: its first field among `candidates`
            (None: it has none), only for the ops `kinds` accepts."""
            return [_field_name(info.opcode, candidates) if kinds is None or kinds(info) else None
                    for info in OP_LIST]

        def unit_sources(role):
            out = []
            for info in OP_LIST:
                uf = _field_name(info.opcode, ROLE_FIELDS[role][1])
                if info.bytes_only or (uf is None and not (role == "d" and info.reduction)):
                    out.append(int(DataUnit.U8))
                else:
                    out.append(uf or "src_unit")            # a reduction's result: the source's unit
            return out

        def tensor_op(info):
            return info.kind == Kind.REDUCE and info.mnemonic != "asum"

        # (register, each op's source: a field name, a constant or None, and whether None keeps the
        # register's value (the reduction's dimensions, read only by REDUCE_*) or clears it)
        latched = [(addr[s], sources(ROLE_FIELDS[role][0]), False) for s, role in enumerate(SLOT_ROLE)]
        latched.append((length, sources(("len",)), False))
        latched += [(unit[s], unit_sources(role), False) for s, role in enumerate(SLOT_ROLE)]
        latched += [(sat, sources(("sat",)), False), (rnd, sources(("rnd",)), False), (lt, sources(("lt",)), False),
                    (imm0, sources(("thres", "clip_min")), False), (imm1, sources(("clip_max",)), False)]
        latched += [(reg, sources((name,), tensor_op), True)
                    for reg, name in zip([*dims, axis], ("fw", "fh", "fc", "axis"))]
        layouts, layout_of = zip(*(_field_layouts(srcs) for _, srcs, _ in latched))
        layout_sel = [Signal(range(len(lo) + 1), name=f"layout_{reg.name}", reset_less=True)
                      for (reg, _, _), lo in zip(latched, layouts)]

        with m.If(self.cmd.valid & self.cmd.ready):
            m.d.sync += [tb.eq(self.cmd.payload.table), asc.eq(self.cmd.payload.as_code)]
            m.d.sync += [sel.eq(0) for sel in layout_sel]
            with m.Switch(key):
                for i, info in enumerate(OP_LIST):
                    op = info.opcode
                    with m.Case(op.op_code | (int(op.section == Section.AI) << 14)):
                        m.d.sync += opi.eq(i)
                        m.d.sync += [sel.eq(idx[i]) for sel, idx in zip(layout_sel, layout_of)]
        with m.If(decode):
            for (reg, _, keep), sel, lo in zip(latched, layout_sel, layouts):
                with m.Switch(sel):
                    for k, src in enumerate(lo, 1):
                        with m.Case(k):
                            m.d.sync += reg.eq(src if isinstance(src, int) else F.field(tb, asc, *src))
                    if not keep:
                        with m.Default():
                            m.d.sync += reg.eq(0)
            with m.Switch(opi):                             # the op's properties, a register from UNIT on
                for i, info in enumerate(OP_LIST):
                    with m.Case(i):
                        m.d.sync += [props.eq(_props_layout().const(_props_value(info))),
                                     count_tensor.eq(int(tensor_op(info))),
                                     count_one.eq(int(info.reduction and not tensor_op(info)))]

        # --- unit facts -----------------------------------------------------------------------------------
        bsel = [Signal(3, name=f"bsel_{r}") for r in SLOT_ROLE]       # width 4 << bsel
        signed = [Signal(name=f"signed_{r}") for r in SLOT_ROLE]
        is_float = [Signal(name=f"float_{r}") for r in SLOT_ROLE]
        for s in range(4):
            with m.Switch(unit[s]):
                for u in DataUnit:
                    with m.Case(int(u)):
                        m.d.comb += [bsel[s].eq(exact_log2(u.bits) - 2), signed[s].eq(u.signed),
                                     is_float[s].eq(u.is_float)]
                with m.Default():
                    m.d.comb += is_float[s].eq(1)
        used_unit = props.unit_mask
        kind = props.kind
        lsel = Signal(3)
        # the widest used unit, not below the narrowest lane built (int4 in 8-bit lanes: 1): the
        # highest bit of an OR of one-hot widths, not a chain of comparisons
        lfloor = exact_log2(cfg.vector_min_lane) - 2
        widths_used = Signal(5)
        onehot = Const(1 << lfloor, 5)
        for s in range(4):
            onehot = onehot | Mux(used_unit[s], (Const(1, 5) << bsel[s])[:5], 0)
        m.d.comb += widths_used.eq(onehot)
        lmax = Const(0, 3)
        for i in range(5):
            lmax = Mux(widths_used[i], i, lmax)
        m.d.comb += lsel.eq(Mux(props.bytes_only, 1, lmax))

        float_bad = Signal()
        m.d.comb += float_bad.eq(Cat(*(used_unit[s] & is_float[s] for s in range(4))).any())
        b0, bd = bsel[S0], bsel[D]
        rule_bad = Signal()
        with m.Switch(props.rule):
            with m.Case(RULES["abs"]):
                m.d.comb += rule_bad.eq(~signed[S0])
            with m.Case(RULES["asr"]):
                m.d.comb += rule_bad.eq(b0 > 3)
            with m.Case(RULES["nsr"]):
                m.d.comb += rule_bad.eq((b0 == 0) | (bd + 1 != b0))
            with m.Case(RULES["extend"]):
                m.d.comb += rule_bad.eq((b0 > 3) | (bd == 0) | (bd <= b0))

        # The unit facts as registers, loaded every cycle from the fields latched in DECODE:
        # UNIT's checks read the decoders themselves, every later state (OVERLAP .. RUN, the
        # reducer) reads the registers, which settle at the end of UNIT, so the decoding of the
        # units is off the paths of the checks and the beat issue. (Reset-less, like every
        # register below loaded in every cycle from registers: settled a cycle later.)
        def held(value, name):
            reg = Signal.like(value, name=name + "_h", reset_less=True)
            m.d.sync += reg.eq(value)
            return reg
        bsel_c, lsel_c = bsel, lsel
        bsel = [held(b, f"bsel_{r}") for b, r in zip(bsel, SLOT_ROLE)]
        signed = [held(sg, f"signed_{r}") for sg, r in zip(signed, SLOT_ROLE)]
        lsel = held(lsel, "lsel")
        b0, bd = bsel[S0], bsel[D]

        # --- operand byte counts and checks (exact, 72-bit) ------------------------------------------------
        def nbytes(count, bs):
            """Bytes spanned by `count` elements of width 4 << bs (nibbles rounded up)."""
            return ((count << bs) + 1) >> 1

        def lim(count, bs):
            """nbytes(count, bs) - (mem_bytes + 1), with one add: (n + 1) // 2 - (M + 1) is
            (n - (2 M + 1)) // 2."""
            return ((count << bs) - (2 * cfg.mem_bytes + 1)) >> 1

        # the slot being checked (ck) and its address, unit and element count as registers,
        # loaded with the slot of the next cycle (ck_n, which the FSM sets whatever the checks
        # find: a fault ends the checks anyway), so no slot selection lies on a check's path
        ck, ck_n = (Signal(2, name=nm) for nm in ("ck", "ck_n"))
        m.d.comb += ck_n.eq(ck)
        m.d.sync += ck.eq(ck_n)
        # (reset-less: loaded in every cycle)
        slot_addr = Signal(64, reset_less=True)
        slot_b = Signal(3, reset_less=True)
        red_n = Signal(36, reset_less=True)         # reductions: source elements
        red_m = Signal(36, reset_less=True)         # reductions: results
        tensor = Signal()                          # REDUCE_* (not ASUM)
        m.d.comb += tensor.eq(props.reduction & ~props.asum)
        # ADDRESS_RANGE: an address or count with a bit set at TB or above is out of memory
        # (2**TB elements span at least 2 * mem_bytes); below, exact TB + 5-bit arithmetic.
        # Each slot's byte count, whether its count is nonzero and whether it has a bit at TB or
        # above are registers, loaded in every cycle from the counts and units (below), and
        # whether the slot's address has one is loaded with the slot's address, so the check is
        # a four-way select by `ck`, one add and one compare. (With the count's shift in it, the
        # check was 19.3 ns from the slot's unit into rg_hit, 22.1 ns into the copies of
        # start_rd, the placed `base`, session 33; with the shift after the selection of the
        # next slot's count, the op's properties -> ck_n -> that shift was 21.6 ns, session 34.)
        TB = AW + 2
        # each slot's byte count less mem_bytes + 1 (`slot_lim`), so that the check is one
        # add's sign: addr + bytes > mem_bytes <=> addr + (bytes - mem_bytes - 1) >= 0 (the
        # add, then its compare with mem_bytes, were two carry chains from slot_addr into the
        # copies of start_rd: 17.3 ns in the placed `base`, session 45)
        slot_lim = [Signal(range(-(cfg.mem_bytes + 1), 1 << (TB + 4)), name=f"lim_{r}", reset_less=True,
                           init=-(cfg.mem_bytes + 1)) for r in SLOT_ROLE]      # (a count of 0)
        LIMW = len(slot_lim[0])
        slot_nz = [Signal(name=f"nz_{r}", reset_less=True) for r in SLOT_ROLE]
        slot_long = [Signal(name=f"long_{r}", reset_less=True) for r in SLOT_ROLE]
        addr_far = Signal(reset_less=True)
        # (the add and compare for every slot's byte count, `ck` choosing the verdict: a
        # choice of the count before them put `ck` (fan-out 28) at the head of a path through
        # the adder into the copies of start_rd, 16.2-16.4 ns in the placed `base`, session 42)
        range_bad = Signal()
        slot_bad = Signal(len(SLOT_ROLE))
        m.d.comb += [slot_bad[k].eq(slot_nz[k] & (slot_long[k] | addr_far | ~(slot_addr[:TB] + slot_lim[k])[-1]))
                     for k in range(len(SLOT_ROLE))]
        m.d.comb += range_bad.eq(slot_bad.bit_select(ck, 1))

        # The verdicts reach the FSM as registers, so that no check's arithmetic lies on the
        # paths of the state and the fault register: the range verdict of a RANGE cycle
        # (rg_hit) is read in the next cycle (RANGE or PREP), the D-OVERLAP verdict of an
        # OVERLAP cycle two cycles later (`hw.vector_overlap`, two stages; in OVERLAP or RANGE:
        # an elementwise instruction has at least two RANGE cycles, the destination's and a
        # source's). A verdict arriving with an earlier one's is later in D-PRECEDENCE's order:
        # ov_hit first.
        rg_hit = Signal()
        m.submodules.ov = ovc = OverlapCheck()
        ov_hit = ovc.bad

        def first_from(mask, start):
            """(found, index) of the first set bit of `mask` at `start` or above."""
            found, idx = Const(0, 1), Const(0, 2)
            for i in reversed(range(4)):
                hit = mask[i] & (i >= start) if not isinstance(start, int) else Const(int(i >= start), 1) & mask[i]
                found = Mux(hit, 1, found)
                idx = Mux(hit, i, idx)
            return found, idx

        ov_mask = Signal(4)
        m.d.comb += ov_mask.eq(Mux(props.reduction, 0, props.src_mask))
        src4 = Signal(4)
        m.d.comb += src4.eq(props.src_mask)

        # --- datapath units -----------------------------------------------------------------------------------
        # sources 1 and 2 share one realignment shifter (MEDIAN, the only user of source 2,
        # captures it one cycle after sources 0 and 1: `BeatPipe.c_due`)
        readers = [StreamReader(R, NB, abits, realign=s == 0, offset_copies=s > 0, has_copies=3, checks=self.checks,
                                slots=reader_slots(cfg) if s < 2 else source2_slots(cfg)) for s in range(3)]
        for i, r in enumerate(readers):
            m.submodules[f"rd{i}"] = r
        m.submodules.wrt = wrt = StreamWriter(R, NB, abits, checks=self.checks)
        lane_widths = tuple(L for L in LANE_BITS if L >= cfg.vector_min_lane)
        m.submodules.pipe = pipe = BeatPipe(n, cfg.vector_narrow_bits or n, lane_widths, cfg.vector_narrow_stages,
                                           checks=self.checks)
        m.submodules.red = red = Reducer(cfg, NB, checks=self.checks)

        bcfg = Signal(beat_config_layout(), reset_less=True)     # loaded in PREP, before the first beat
        m.d.comb += pipe.cfg.eq(bcfg)

        # --- setup computations for the run ------------------------------------------------------------------
        # (from copies of the held units of their own, kept apart from those the checks, the
        # reducer and the beat amounts read: through the shared ones a decode of source 0's
        # unit was one net of fan-out 108 over 102 tiles into `occ_r`, 18.19 ns in the placed
        # `base`, session 39; the kind's copy likewise: props.kind -> a decode 94 tiles away,
        # 18.28 ns, session 40; the copies load a cycle after what they copy, as the held units)
        units, = replicas(m, platform, Cat(bsel_c[S0], bsel_c[S1], lsel_c), 1, "fact_units", reset_less=True)
        fkind, = replicas(m, platform, kind, 1, "fact_kind", reset_less=True)
        wb = len(bsel_c[S0])
        fb0, fb1, flsel = units[:wb], units[wb:2 * wb], units[2 * wb:]
        occ_beat = Signal(OCC_BITS)                 # on a full-width ALU
        occ_n = Signal(OCC_BITS)                    # steps (narrow kinds: of the narrow path)
        occ = Signal(OCC_BITS)                      # cycles
        pass2 = Signal()
        narrow_shift = exact_log2(cfg.narrow_groups)
        scaled = Cat(fkind == k for k in sorted(NARROW_SCALED_KINDS)).any()
        narrow = Cat(fkind == k for k in sorted(NARROW_KINDS)).any()

        def cycles(steps, narrow):                  # a beat's cycles from its steps: shifts and adds
            return Mux(narrow, sum(steps << i for i in range(cfg.narrow_step_cycles.bit_length())
                                   if cfg.narrow_step_cycles >> i & 1), steps)
        m.d.comb += [occ_n.eq(Mux(scaled, occ_beat << narrow_shift, occ_beat)), occ.eq(cycles(occ_n, narrow))]
        # the beat facts PREP loads into bcfg as registers loaded in every cycle: the fields and
        # the held units they come from hold still from DECODE on, so they are settled before
        # PREP (four cycles or more later) and the held units' nets (bsel_s0_h, fan-out 118)
        # are not in series with the shifts and adds (bsel -> pass2 -> occ -> bcfg, 19.4 ns in
        # the placed `base`, session 39)
        occ_r, occ_g_r = Signal.like(occ, name="occ_r", reset_less=True), Signal.like(occ, name="occ_g_r", reset_less=True)
        pass2_r, swap_r = Signal(name="pass2_r", reset_less=True), Signal(name="swap_r", reset_less=True)
        occ_g, swap = occ_n >> narrow_shift, fb1 > fb0
        # occ_r in two steps, occ_n and the narrow flag registered between the unit facts'
        # decoding and the shifts and adds (the facts -> pass2 -> occ_n -> occ was one path,
        # 17.26 ns in the placed `base`, session 52); still settled in PREP, which comes four
        # cycles or more after DECODE (asserted below)
        occ_n_r = Signal.like(occ_n, name="occ_n_r", reset_less=True)
        narrow_r = Signal(name="narrow_r", reset_less=True)
        m.d.sync += [occ_n_r.eq(occ_n), narrow_r.eq(narrow),
                     occ_r.eq(cycles(occ_n_r, narrow_r)), occ_g_r.eq(occ_g), pass2_r.eq(pass2), swap_r.eq(swap)]
        with m.Switch(fkind):
            with m.Case(Kind.MUL):
                m.d.comb += [pass2.eq((fb0 == 4) & (fb1 == 4)), occ_beat.eq(1 + pass2)]
            with m.Case(Kind.ASL, Kind.LSL, Kind.ROR):                  # products by 2**t
                m.d.comb += [pass2.eq(flsel == 4), occ_beat.eq(1 + pass2)]
            with m.Case(Kind.POW):
                m.d.comb += [pass2.eq(flsel == 4),
                             occ_beat.eq(1 + ((Const(8, OCC_BITS) << fb1) << pass2))]
            with m.Case(Kind.DIV, Kind.MOD):
                m.d.comb += occ_beat.eq(Const(4 * (n // 64), OCC_BITS) << flsel)      # N / 64 lane groups of L steps
            with m.Case(Kind.MEDIAN):
                m.d.comb += occ_beat.eq(2)
            with m.Default():
                m.d.comb += occ_beat.eq(1)

        def nibbles(count, bs):
            return (count << bs)[:NB]

        # the sources' run lengths in nibbles, for the readers' start in PREP: registers loaded
        # in every cycle like the beat facts above (bsel -> the shift -> a reader's run end
        # and first crossing, 20.3-22.3 ns in the placed `base`, session 39)
        src_len = [Signal(NB, name=f"src_len_{r}", reset_less=True) for r in SLOT_ROLE[:3]]
        src_len_now = Cat(nibbles(length, bsel[s]) for s in range(3))
        m.d.sync += Cat(src_len).eq(src_len_now)

        # elements per beat and nibbles per beat of each slot (registers like the facts above:
        # settled before PREP, read in RUN; reset-less, loaded in every cycle)
        beat_e = Signal(range(n // 4 + 1), reset_less=True)
        m.d.sync += beat_e.eq(Const(n // 4, range(n // 4 + 1)) >> lsel)
        beat_e2 = Signal(range(n // 2 + 1), reset_less=True)    # two beats
        m.d.sync += beat_e2.eq(Const(n // 2, range(n // 2 + 1)) >> lsel)
        beat_nib = [Signal(range(2 * W + 1), name=f"beat_nib_{r}", reset_less=True) for r in SLOT_ROLE]
        for s in range(4):
            m.d.sync += beat_nib[s].eq(Mux(bsel[s] > lsel, 0, Const(2 * W, range(2 * W + 1)) >> (lsel - bsel[s])[:3]))

        # (reset-less: the run's counts and the tail's facts, loaded in PREP (tail_nib in
        # TAIL_RSP) and read only while `run` / `red_run` or in TAIL_*, all of which PREP starts)
        eleft = Signal(NB + 1, reset_less=True)     # elements not yet loaded into A
        # more (eleft != 0) as a register, set in PREP and at each load from the count before
        # it: no comparison of eleft on the path of the load (`full` likewise, below)
        more = Signal()
        dleft = Signal(NB + 1, reset_less=True)     # destination nibbles not yet loaded
        fault = Signal(8)
        tail_en = Signal(reset_less=True)
        tail_row = Signal(abits, reset_less=True)
        tail_off = Signal(lr, reset_less=True)
        # The row's high nibbles are registered in every TAIL_RSP cycle (the last one holds the
        # response) and the tail's nibble is selected from those registers, valid in the cycle
        # after the response as before: selected at the response, the block RAM -> the byte
        # select -> tail_nib took 18.2 ns in the placed `base` (session 34). The nibble is a
        # register too (loaded in every cycle: valid from the second RUN / RED cycle, and the
        # writer reads it with the last row, cycles after the first beat has passed the
        # pipeline): tail_off -> the select -> the writer's queue was 16.0-16.6 ns placed,
        # 91 tiles between the select and the writer (session 42).
        tail_hi = Signal(4 * R, reset_less=True)
        tail_nib = Signal(4, reset_less=True)
        m.d.sync += tail_nib.eq(tail_hi.word_select(tail_off, 4))
        dst_nib = Signal(NB, reset_less=True)
        dst_len = Signal(NB, reset_less=True)

        # --- port B owner (sources 1 and 2; the tail read) ---------------------------------------------------
        b_hold = Signal()
        b_hold_own = Signal(reset_less=True)        # (data: read only with b_hold, which is reset)
        b_prio = Signal()
        b_pend_own = Signal(reset_less=True)        # (data: loaded at each port-B request, read at its response)
        # st == RUN and st == RED as registers of their own, set and cleared with the state's
        # transitions: no decoding of `st` on the paths of the beat issue (fan-out ~450)
        run = Signal()
        red_run = Signal()
        # red_run's next value (the FSM below sets it), and a copy of red_run for reader 0's
        # take (its amount feeds the reader's `has`): red_run's one net spanned 80 tiles in
        # the placed `base` (session 26)
        red_run_n = Signal(name="red_run_next")
        m.d.comb += red_run_n.eq(red_run)
        m.d.sync += red_run.eq(red_run_n)
        red_take, = replicas(m, platform, red_run_n, 1, "red_run_take")
        # the same for run: its next value, and a copy for port B's responses to each of
        # readers 1 and 2 (run -> a reader's rsp_valid -> its avail adders -> `has_take`,
        # run's net 57 tiles long, 17.4 ns in the placed `base`, session 38; one copy for
        # both, 25 tiles from either, 17.9 ns, session 39)
        run_n = Signal(name="run_next")
        m.d.comb += run_n.eq(run)
        m.d.sync += run.eq(run_n)
        run_rsp = replicas(m, platform, run_n, 2, "run_rsp")
        want1, want2 = readers[1].req_valid, readers[2].req_valid
        own2 = Signal()
        m.d.comb += own2.eq(Mux(b_hold, b_hold_own, want2 & (~want1 | b_prio)))

        # --- control FSM ------------------------------------------------------------------------------------
        st = Signal(4)
        m.d.comb += [self.done.payload.fault.eq(fault), self.dbg_state.eq(st),
                     self.dbg_va.eq(pipe.va), self.dbg_v0.eq(pipe.v0), self.dbg_vt.eq(pipe.vt), self.dbg_v1.eq(pipe.v1), self.dbg_v2.eq(pipe.v2), self.dbg_vp.eq(pipe.vp),
                     self.dbg_it.eq(pipe.it)]
        IDLE, DECODE, UNIT, RED_DIMS, OVERLAP, RANGE, PREP, TAIL_REQ, TAIL_RSP, RUN, RED, DONE = range(12)

        start_rd = Signal()
        # start_rd (PREP with a passing range verdict) as register copies, one per stream unit
        # (readers 0..2, the reducer, the writer), loaded with its next value in RANGE: the
        # range verdict and the state decode are off the starts' load enables (session 32:
        # rg_hit -> start_rd, fan-out 390 over 62 tiles -> reader 0, 18.5 ns)
        start_rd_n = Signal()
        st_rd = replicas(m, platform, start_rd_n, 5, "start_rd")
        m.d.comb += self.cmd.ready.eq(st == IDLE)

        # the destination's element count, and whether it is an odd number of int4 elements (the
        # TAIL_REQ read) as a register: loaded every cycle, read in PREP, which always follows a
        # RANGE cycle in which the units (registers since UNIT) and the counts hold still
        count_d = Mux(props.reduction, Mux(tensor, red_m, 1), length)
        tail_odd = Signal(reset_less=True)
        m.d.sync += tail_odd.eq((bd == 0) & count_d[0])

        with m.Switch(st):
            with m.Case(IDLE):
                with m.If(self.cmd.valid):
                    m.d.sync += st.eq(DECODE)

            with m.Case(DECODE):
                # the fault is cleared here, not at the command: `done` shows it only in DONE, and
                # the core's command valid (its state decode) then reaches only `st` (the core's
                # state -> the command -> the fault's enable crossed the chip three times, 19.5 ns
                # in the placed `base`, session 30)
                m.d.comb += decode.eq(1)
                m.d.sync += [st.eq(UNIT), fault.eq(0)]

            with m.Case(UNIT):
                ov_any, ov_first = first_from(ov_mask, 0)
                with m.If(float_bad | rule_bad):
                    m.d.sync += [st.eq(DONE), fault.eq(int(Fault.UNSUPPORTED_UNIT))]
                with m.Elif(tensor):
                    with m.If(axis == 0):
                        m.d.sync += [st.eq(DONE), fault.eq(int(Fault.ILLEGAL_OPERAND))]
                    with m.Else():
                        m.d.sync += st.eq(RED_DIMS)
                with m.Elif(props.reduction & (length == 0)):             # ASUM of nothing
                    m.d.sync += st.eq(DONE)
                with m.Elif(props.reduction):
                    m.d.sync += st.eq(RANGE)
                with m.Else():
                    m.d.sync += st.eq(OVERLAP)
                m.d.comb += ck_n.eq(Mux(props.reduction, D, ov_first))

            with m.Case(RED_DIMS):
                m.d.comb += ck_n.eq(D)
                with m.If(red.dims_ready):
                    m.d.sync += st.eq(RANGE)

            with m.Case(OVERLAP):
                # checks the slot ck (its verdict in ov_hit two cycles later)
                nxt_any, nxt = first_from(ov_mask, ck + 1)
                more_ov = nxt_any & (ck < 2)
                m.d.comb += ck_n.eq(Mux(more_ov, nxt, D))
                with m.If(ov_hit):
                    m.d.sync += [st.eq(DONE), fault.eq(int(Fault.ILLEGAL_OPERAND))]
                with m.Elif(~more_ov):
                    m.d.sync += st.eq(RANGE)

            with m.Case(RANGE):
                # destination first (slot 3), then the sources 0, 1, 2 (each verdict in rg_hit in
                # the next cycle; the last sources' D-OVERLAP verdicts arrive here)
                nxt_any, nxt = first_from(src4, Mux(ck == D, 0, ck + 1))
                more_rg = nxt_any & ((ck == D) | (ck < 2))
                with m.If(more_rg):
                    m.d.comb += ck_n.eq(nxt)
                # PREP follows and its range verdict (rg_hit then) passes: start_rd next cycle
                m.d.comb += start_rd_n.eq(~ov_hit & ~rg_hit & ~more_rg & ~range_bad)
                with m.If(ov_hit):
                    m.d.sync += [st.eq(DONE), fault.eq(int(Fault.ILLEGAL_OPERAND))]
                with m.Elif(rg_hit):
                    m.d.sync += [st.eq(DONE), fault.eq(int(Fault.ADDRESS_RANGE))]
                with m.Elif(~more_rg):
                    m.d.sync += st.eq(PREP)

            with m.Case(PREP):
                # the last range verdict; then start the readers, the writer and the pipeline
                # (the registers below are loaded either way: a faulting PREP starts nothing, and
                # the next instruction's PREP loads them again)
                m.d.comb += start_rd.eq(~rg_hit)
                m.d.sync += [
                    eleft.eq(length), more.eq(length != 0),
                    dleft.eq(nibbles(count_d, bd)),
                    dst_nib.eq(addr[D] << 1), dst_len.eq(nibbles(count_d, bd)),
                    tail_en.eq(tail_odd),
                    tail_row.eq((addr[D] + (count_d >> 1)) >> lr),
                    tail_off.eq((addr[D] + (count_d >> 1))[:lr]),
                ]
                m.d.sync += [
                    bcfg.kind.eq(kind), bcfg.variant.eq(props.variant), bcfg.lsel.eq(lsel),
                    bcfg.b0.eq(bsel[S0]), bcfg.b1.eq(bsel[S1]), bcfg.b2.eq(bsel[S2]), bcfg.bd.eq(bd),
                    bcfg.sg0.eq(Mux(props.pattern | props.uxt, 0, signed[S0] | props.sxt)),
                    bcfg.sg1.eq(signed[S1] & ~props.shift_amount), bcfg.sg2.eq(signed[S2]),
                    bcfg.rsg.eq(signed[S0]), bcfg.sd.eq(signed[D]),
                    bcfg.sat.eq(sat & ~props.no_sat), bcfg.rnd.eq(rnd), bcfg.lt.eq(lt),
                    bcfg.pass2.eq(pass2_r), bcfg.swap.eq(swap_r), bcfg.occ.eq(occ_r), bcfg.occ_g.eq(occ_g_r),
                    bcfg.ws.eq(Mux(props.pattern, bsel[S0], lsel)),
                    bcfg.imm0.eq(imm0), bcfg.imm1.eq(imm1), bcfg.isg.eq(signed[S0]),
                ]
                with m.If(rg_hit):
                    m.d.sync += [st.eq(DONE), fault.eq(int(Fault.ADDRESS_RANGE))]
                with m.Elif(tail_odd):
                    m.d.sync += st.eq(TAIL_REQ)
                with m.Elif(props.reduction):
                    m.d.sync += st.eq(RED)
                    m.d.comb += red_run_n.eq(1)
                with m.Else():
                    m.d.sync += st.eq(RUN)
                    m.d.comb += run_n.eq(1)

            with m.Case(TAIL_REQ):
                m.d.comb += [self.rd_b.req.valid.eq(1), self.rd_b.req.payload.eq(tail_row)]
                with m.If(self.rd_b.req.ready):
                    m.d.sync += st.eq(TAIL_RSP)

            with m.Case(TAIL_RSP):                 # the response, mem_latency cycles after the request
                m.d.sync += tail_hi.eq(Cat(self.rd_b.rsp.payload.word_select(b, 8)[4:] for b in range(R)))
                with m.If(self.rd_b.rsp.valid):
                    m.d.sync += st.eq(Mux(props.reduction, RED, RUN))
                    m.d.comb += run_n.eq(~props.reduction)
                    m.d.comb += red_run_n.eq(props.reduction)

            with m.Case(RUN):
                with m.If(wrt.done):
                    m.d.sync += st.eq(DONE)
                    m.d.comb += run_n.eq(0)

            with m.Case(RED):
                with m.If(wrt.done & red.idle):
                    m.d.sync += st.eq(DONE)
                    m.d.comb += red_run_n.eq(0)

            with m.Case(DONE):
                m.d.comb += self.done.valid.eq(1)
                with m.If(self.done.ready):
                    m.d.sync += st.eq(IDLE)

        # --- the checks' verdicts as registers ------------------------------------------------------------------
        m.d.sync += rg_hit.eq((st == RANGE) & range_bad)
        m.d.comb += [ovc.valid.eq(st == OVERLAP), ovc.src.eq(slot_addr), ovc.dst.eq(addr[D]), ovc.bs.eq(slot_b),
                     ovc.length.eq(length), ovc.bd.eq(bsel_c[D])]

        # --- readers ------------------------------------------------------------------------------------------
        for s, r in enumerate(readers):
            m.d.comb += r.rsp_data.eq((self.rd_a if s == 0 else self.rd_b).rsp.payload)
        # elementwise: start every source's reader in PREP; reductions: reader 0 runs the
        # reducer's runs. A reader reads its run (start_nib, start_len) only with `start`,
        # so the run is driven in every cycle, chosen by the register red_run alone: the
        # state decode and the range verdict (`start_rd`) reach only `start`, not the
        # run's carry chains behind it (session 30: 19.4 ns from `st` into reader 0)
        for s in range(3):
            r = readers[s]
            m.d.comb += [r.start.eq(st_rd[s] & ~props.reduction & props.src_mask[s]),
                         r.start_nib.eq(addr[s] << 1), r.start_len.eq(src_len[s])]
        with m.If(red_run):
            m.d.comb += [readers[0].start.eq(red.run_start), readers[0].start_nib.eq(red.run_nib),
                         readers[0].start_len.eq(red.run_len)]
        m.d.comb += [
            self.rd_a.req.valid.eq(readers[0].req_valid & (run | red_run)),
            self.rd_a.req.payload.eq(readers[0].req_row),
            readers[0].req_ready.eq(self.rd_a.req.ready & (run | red_run)),
            readers[0].rsp_valid.eq(self.rd_a.rsp.valid),
        ]
        b_valid = Mux(own2, want2, want1)
        with m.If(run):
            m.d.comb += [
                self.rd_b.req.valid.eq(b_valid),
                self.rd_b.req.payload.eq(Mux(own2, readers[2].req_row, readers[1].req_row)),
                readers[1].req_ready.eq(self.rd_b.req.ready & ~own2),
                readers[2].req_ready.eq(self.rd_b.req.ready & own2),
            ]
            m.d.sync += [b_hold.eq(b_valid & ~self.rd_b.req.ready), b_hold_own.eq(own2)]
            with m.If(b_valid & self.rd_b.req.ready):
                m.d.sync += [b_prio.eq(~own2), b_pend_own.eq(own2)]
        with m.Else():
            m.d.sync += [b_hold.eq(0), b_prio.eq(0)]
        # a port-B response belongs to the reader of its request, L = mem_latency cycles earlier
        b_rsp_own = delayed(m, b_pend_own, cfg.mem_latency - 1, "b_rsp_own", reset_less=True)
        m.d.comb += [readers[1].rsp_valid.eq(self.rd_b.rsp.valid & run_rsp[0] & ~b_rsp_own),
                     readers[2].rsp_valid.eq(self.rd_b.rsp.valid & run_rsp[1] & b_rsp_own)]

        # --- beat issue (A load) ------------------------------------------------------------------------------
        load = Signal()
        # full (eleft >= beat_e) as registers, set in PREP and at each load from the count
        # before it, in four copies: the engine's (the counts, rest_c) and one for each
        # reader's take_rest (and its `has` below). Each copy computes its next value from
        # its own, so `load` reaches each in one hop. One `full` was placed 106 tiles from
        # reader 2, whose take_rest -> step -> avail -> `has_take` it began (18.2 ns in the
        # placed `base`, session 32); one copy for readers 0 and 1 was a hop of 14.7 ns of
        # wire into reader 0's pointer copies (16.84 ns, session 46).
        full_prep, full_more = (Signal(name=nm) for nm in ("full_prep", "full_more"))
        m.d.comb += [full_prep.eq(length >= beat_e), full_more.eq(eleft >= beat_e2)]
        full, full0, full1, full2 = own_replicas(
            m, platform, lambda q: Mux(st == PREP, full_prep, Mux(load, q & full_more, q)), 1, 4, "full")
        full01 = (full0, full1)
        # Every reader's `has` as the load sees it: a reader's take_rest is ~full in every
        # cycle a load may happen (reader 2's: none while c_due, when `in_free` is low;
        # reader 0's: while `run`, not `red_run`), so the load picks between the reader's two
        # outcomes by a copy of `full` and does not wait for c_due (c_due -> reader 2's
        # `take_rest` -> `has` -> `load` -> the readers' `take_en` led the placed `base`,
        # 20.65 ns, session 30) or for the copy of red_run that gives the reducer reader 0's
        # take (-> reader 0's take_rest -> `has` -> `load` -> reader 1's take_en, 23.25 ns,
        # session 32).
        # `load` and readers 0's and 1's take enables (`load & src_mask[s]`) are three kept
        # LUTs of the same terms, each placed beside its loads (one `load`, fan-out 38, was
        # a hop between reader 2's `has_take` and reader 1's pointer copies, the stall loop,
        # 16.9-17.0 ns in the placed `base`, session 44), and each reads its own copies of
        # `full` and of the readers' outcomes (`StreamReader.has_copies`; consumer 0: reader
        # 0's enable, 1: reader 1's, 2: the engine's `load`). A term per source, `src_ok`
        # (not a source, or it has its beat), and for a reader's own enable `src_go` (a
        # source with its beat) in place of its `src_ok`.
        full_for = (full0, full1, full)
        src_mask = props.src_mask
        src_has = [[Signal(name=f"has{s}_for{c}") for c in range(3)] for s in range(3)]
        for s, r in enumerate(readers):
            m.d.comb += [src_has[s][c].eq(Mux(full_for[c], r.has_take_copies[c], r.has_rest_copies[c]))
                         for c in range(3)]
        src_ok = [[Signal(name=f"src_ok{s}_for{c}") for c in range(3)] for s in range(3)]
        m.d.comb += [src_ok[s][c].eq(~src_mask[s] | src_has[s][c]) for s in range(3) for c in range(3)]
        src_go = [Signal(name=f"src_go{s}") for s in range(2)]
        m.d.comb += [src_go[s].eq(src_mask[s] & src_has[s][s]) for s in range(2)]
        issue_ok = Signal()
        m.d.comb += issue_ok.eq(run & more & pipe.in_free)
        m.d.comb += load.eq(kept_and(m, platform, [issue_ok, *(src_ok[s][2] for s in range(3))], "load_lut"))
        take_en01 = [kept_and(m, platform, [issue_ok, src_go[c], *(src_ok[s][c] for s in range(3) if s != c)],
                              f"take_en{c}")
                     for c in range(2)]
        dnib = Mux(full, beat_nib[D], dleft)
        c_due = pipe.c_due
        # the rows' select as one copy of c_due per 64-bit slice (`hw.replicate`): the
        # 16 R-bit multiplexer spread over the readers' buffers (fan-out 972 in the placed
        # `base`, session 25); the first copies choose the offset's copies as well
        c_sel = replicas(m, platform, pipe.c_due_next, slices(16 * R), "c_due_sel")
        # the offset as the readers' copies, one per 64-bit slice of the funnel's stages, each
        # chosen by a copy of c_due: one offset net into every stage spanned the funnel, and
        # reader 1's position was placed 127 tiles from it (17.5 ns in the placed `base`, session 30)
        lrn = len(readers[1].offset)
        off12 = [Mux(c_sel[j], readers[2].offsets[j * lrn:(j + 1) * lrn], readers[1].offsets[j * lrn:(j + 1) * lrn])
                 for j in range(slices(8 * R))]
        win12 = funnel(m, mux_sliced(c_sel, readers[2].rows, readers[1].rows), off12, 8 * R, 4, "win12")
        if self.checks:
            m.d.sync += [Assert(c == start_rd, "VectorEngine: a copy of start_rd differs") for c in st_rd]
            m.d.sync += Assert((st != PREP) | ((occ_r == occ) & (occ_g_r == occ_g) & (pass2_r == pass2)
                                               & (swap_r == swap) & (Cat(src_len) == src_len_now)
                                               & (units == Cat(bsel[S0], bsel[S1], lsel)) & (fkind == kind)),
                               "VectorEngine: a beat fact or run length register is not settled in PREP")
            m.d.sync += Assert((full0 == full) & (full1 == full) & (full2 == full),
                               "VectorEngine: a copy of `full` differs")
            m.d.sync += [Assert(~run | ((s == 2) & c_due) | (src_has[s][c] == readers[s].has),
                                f"VectorEngine: reader {s}'s `has` for consumer {c} differs from the reader's")
                         for s in range(3) for c in range(3)]
            m.d.sync += Assert(~red.out_valid | red_run, "VectorEngine: a reducer result outside red_run")
            m.d.sync += [Assert(t == (load & src_mask[s]),
                                f"VectorEngine: reader {s}'s take enable is not load & src_mask")
                         for s, t in enumerate(take_en01)]
        rest_c = Signal(reset_less=True)            # source 2 takes its rest at c_due (loaded with it)
        m.d.comb += [pipe.load.eq(load), pipe.load_dnib.eq(dnib),
                     pipe.win0.eq(readers[0].window), pipe.win1.eq(win12)]
        with m.If(load):
            m.d.sync += [eleft.eq(Mux(full, eleft - beat_e, 0)), dleft.eq(dleft - dnib), rest_c.eq(~full),
                         more.eq(full & (eleft != beat_e))]
        # the amounts early, the enables late (the readers compute their next position first); a
        # beat that is not full takes the rest of every source
        # reader 0's amount as a register of its own, loaded with the amount of the next cycle's
        # consumer (the reducer's element while red_run is next, else the beat's): both amounts
        # hold still from RANGE on, so it equals the choice by red_run_take, and the copy of
        # red_run reaches only the reader's last multiplexers, not its adders and compares
        # (red_run_take, 57 tiles away -> the take -> avail's and left's carry chains ->
        # `has_take`, 17.24 ns in the placed `base`, session 46)
        take0 = Signal.like(readers[0].take, name="rd0_take_amount", reset_less=True)
        m.d.sync += take0.eq(Mux(red_run_n, red.take_nib, beat_nib[0]))
        m.d.comb += readers[0].take.eq(take0)
        m.d.comb += readers[1].take.eq(beat_nib[1])
        for s in range(2):
            m.d.comb += [readers[s].take_rest.eq(~full01[s]), readers[s].take_en.eq(take_en01[s])]
        m.d.comb += [readers[2].take.eq(beat_nib[S2]), readers[2].take_rest.eq(Mux(c_due, rest_c, ~full2)),
                     readers[2].take_en.eq(c_due)]

        # --- reducer --------------------------------------------------------------------------------------------
        m.d.comb += [
            red.start.eq(st_rd[3] & props.reduction), red.dims_start.eq((st == UNIT) & tensor),
            red.variant.eq(props.variant), red.asum.eq(props.asum),
            red.src_nib.eq(addr[S0] << 1), red.length.eq(length[:NB]),
            red.fw.eq(dims[0]), red.fh.eq(dims[1]), red.fc.eq(dims[2]), red.axis.eq(axis),
            red.bsel.eq(bsel[S0]), red.signed.eq(signed[S0]),
            red.dbsel.eq(bd), red.dsigned.eq(signed[D]), red.sat.eq(sat | tensor),
            red.window.eq(readers[0].window), red.has.eq(readers[0].has), red.rd_left_zero.eq(readers[0].left_zero),
            red.run.eq(red_run),
        ]
        with m.If(red_take):
            m.d.comb += [readers[0].take_rest.eq(0), readers[0].take_en.eq(red.take)]
        if self.checks:
            m.d.sync += Assert(~(readers[0].start | readers[0].take_en)
                               | (take0 == Mux(red_take, red.take_nib, beat_nib[0])),
                               "VectorEngine: reader 0's take amount register differs from its consumer's")
        # the reduction's element counts as registers (PREP and the writer's start read them)
        m.d.sync += [red_n.eq(red.n_total), red_m.eq(red.n_out)]
        # the next cycle's slot, and every slot's count facts (the counts from the reducer's own
        # outputs, valid with `dims_ready`, when red_n and red_m are not yet; the count's kind
        # from registers of their own, loaded with the op's properties)
        slot_addr_n = Signal(64)
        slot_b_n = Signal(3)
        m.d.comb += [slot_addr_n.eq(select_word(m, Cat(*addr), ck_n, 64, "slot_addr", platform)),
                     slot_b_n.eq(Cat(*bsel_c).word_select(ck_n, 3))]
        # (each slot's high bits reduced before `ck_n` picks one: after the 64-bit select,
        # ck_n (fan-out 132) -> the select -> the OR of 45 bits was 16.1 ns in the placed
        # `base`, session 49)
        m.d.sync += [slot_addr.eq(slot_addr_n), slot_b.eq(slot_b_n),
                     addr_far.eq(Cat(a[TB:].any() for a in addr).bit_select(ck_n, 1))]
        counts = [Mux(count_tensor, red.n_total, length)] * 3
        counts.append(Mux(count_tensor, red.n_out, Mux(count_one, 1, length)))
        for s, count in enumerate(counts):
            m.d.sync += [slot_lim[s].eq(lim(count[:TB], bsel_c[s])), slot_nz[s].eq(count != 0),
                         slot_long[s].eq(count[TB:].any())]
        if self.checks:                             # the slot's count itself, for the checks
            slot_count_n, slot_count = Signal(64, name="slot_count_n"), Signal(64, reset_less=True, name="slot_count")
            with m.If(tensor):
                m.d.comb += slot_count_n.eq(Mux(ck_n == D, red.n_out, red.n_total))
            with m.Elif(props.reduction):            # ASUM: one destination element
                m.d.comb += slot_count_n.eq(Mux(ck_n == D, 1, length))
            with m.Else():
                m.d.comb += slot_count_n.eq(length)
            m.d.sync += slot_count.eq(slot_count_n)
            lim_ck = Cat(*slot_lim).word_select(ck, LIMW).as_signed()
            m.d.sync += Assert((lim_ck == nbytes(slot_count[:TB], slot_b) - (cfg.mem_bytes + 1))
                               & (Cat(*slot_nz).bit_select(ck, 1) == (slot_count != 0))
                               & ((Cat(*slot_long).bit_select(ck, 1) | addr_far)
                                  == (slot_count[TB:].any() | slot_addr[TB:].any())),
                               "VectorEngine: the slot's range facts differ from its count and address")

        # --- writer ---------------------------------------------------------------------------------------------
        # (the writer's input needs no choice: each producer's data, count and mask are 0 while it
        # has no output; a copy of the instruction's `reduction` chose the count and the mask
        # until session 37, spanning 86 tiles, and copies of `red_run` the data)
        m.d.comb += [wrt.in_data.eq(red.out_data | pipe.out_data),
                     wrt.in_mask.eq(red.out_mask | pipe.out_mask),
                     wrt.in_cnt.eq(red.out_cnt | pipe.out_cnt)]
        if self.checks:
            idle_red = (red.out_data == 0) & (red.out_mask == 0) & (red.out_cnt == 0)
            idle_pipe = (pipe.out_data == 0) & (pipe.out_mask == 0) & (pipe.out_cnt == 0)
            m.d.sync += Assert((idle_red | red.out_valid) & (idle_pipe | pipe.out_valid),
                               "VectorEngine: a producer's output is not 0 while it has none")
        m.d.comb += [
            wrt.start.eq(st_rd[4]), wrt.start_nib.eq(addr[D] << 1),
            wrt.start_len.eq(nibbles(Mux(props.reduction, Mux(tensor, red_m, 1), length), bd)),
            wrt.tail_en.eq(tail_en), wrt.tail_nib.eq(tail_nib),
            # (no mux: the reducer has a result only while red_run, asserted under `checks`, and
            # the pipeline's valid counts only while run)
            wrt.in_valid.eq(red.out_valid | (pipe.out_valid & run)),
            pipe.out_ready.eq(wrt.in_ready & run),
            red.out_ready.eq(wrt.in_ready & red_run),
            self.wr.req.valid.eq(wrt.wr_valid),
            self.wr.req.payload.row.eq(wrt.wr_row),
            self.wr.req.payload.data.eq(wrt.wr_data),
            self.wr.req.payload.be.eq(wrt.wr_be),
            wrt.wr_ready.eq(self.wr.req.ready),
        ]
        return m
