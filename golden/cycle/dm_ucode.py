"""Microcode of the micro-coded data-move engine (`xdsa.hw.datamove_micro`): its
micro-instruction set, a small assembler and the DATA_MOVE microprogram.

The engine is an accumulator machine built for area (the `tiny` configuration):
a 64-bit accumulator ``ACC`` with two flags, a scratch memory of 64 registers of
64 bits (block RAM, constants preloaded), a micro-sequencer with a two-entry
return stack and a microprogram ROM (block RAM), and a *copier* that moves one
run of bytes or nibbles between the data memory positions ``SP`` and ``DP``.
Everything DATA_MOVE decides (D-DATAMOVE, D-OVERLAP, D-PRECEDENCE) is computed by
the microprogram below with exact 64-bit arithmetic, then the microprogram walks
both sides line by line (or element by element) and starts the copier once per
run. `xdsa.golden.cycle.dm_micro.MicroModel` executes the same ROM.

Micro-instruction (15 bits, in a 16-bit ROM word): ``op`` [4:0] and an argument
[14:5]: the jump target ``t`` (10 bits) of JMP .. CALL, ``a`` [12:5] of the others.

==========  =================================================================
LD r        ACC <- M[r]
LDI k       ACC <- k (8 bits)
ST r        M[r] <- ACC
ADD r       ACC <- ACC + M[r]; C <- carry out
ADDI k      ACC <- ACC + k; C <- carry out
SUB r       ACC <- ACC - M[r]; C <- no borrow (ACC >= M[r], unsigned)
SUBI k      ACC <- ACC - k; C <- no borrow
AND k       ACC <- ACC & k
SHR         ACC <- ACC >> 1; C <- ACC[0]
SHL         ACC <- ACC << 1; C <- ACC[63]
RCL         ACC <- ACC << 1 | C; C <- ACC[63]
TB c, j     ACC <- ACC << 8 | byte j of operand-table region c (0 beyond it)
UINFO       ACC <- the unit information of ACC[3:0] (`unit_info`)
SIDE k      the bank of side-relative registers: 0 destination, 1 source
SETU        the copier's unit <- ACC (`unit_info` of the data unit)
SETP        SP <- ACC (source position in nibbles: 2 * byte address + high)
SETD        DP <- ACC (destination position in nibbles)
RUN k       copy ACC items (bytes; nibbles for int4) from SP to DP, k = 0, or
            write ACC items of the immediate (the bytes of scratch register SRC,
            cycling over the element size) at DP, k = 1; SP/DP advance; the
            sequencer waits until the copier is done
JMP t       jump
JZ t/JNZ t  jump if ACC == 0 / != 0
JC t/JNC t  jump if C / not C
CALL t      push the next address (two entries), jump
RET         pop
FAULT k     finish with fault code k
DONE        finish (fault 0)
==========  =================================================================

LD, LDI, ST, TB, UINFO, AND and the jumps keep C. Register operands ``r``:
``a[5:0]`` is the register; with ``a[7]`` set it is side-relative (register
``16 + 16 * side + a[3:0]``). Table regions (``TB``): SRC, DST (the address
fields, 2/4/8 bytes at AS 16/32/64) and TAIL (the fields after them, at the same
offsets in every AS; their offsets come from the ISA tables).
"""

from xdsa.golden.isa import DataUnit, Fault, by_mnemonic

__all__ = ["OPS", "Asm", "program", "labels", "WORD_BITS", "unit_info", "table_regions", "REG", "N_REGS", "ROM_DEPTH",
           "scratch_init", "SRC", "DST", "TAIL"]

OPS = ("LD", "LDI", "ST", "ADD", "ADDI", "SUB", "SUBI", "AND", "SHR", "SHL", "RCL", "TB", "UINFO",
       "SIDE", "SETU", "SETP", "SETD", "RUN", "JMP", "JZ", "JNZ", "JC", "JNC", "CALL", "RET",
       "FAULT", "DONE")
OP = {name: i for i, name in enumerate(OPS)}
JUMPS = ("JMP", "JZ", "JNZ", "JC", "JNC", "CALL")
REG_OPS = ("LD", "ST", "ADD", "SUB")
N_REGS = 64
ROM_DEPTH = 1024
WORD_BITS = 16
SRC, DST, TAIL = range(3)                    # TB regions

_OPC = by_mnemonic("data_move")

# scratch registers: globals 0..15 and 48..63, side banks 16..31 (destination), 32..47 (source)
_GLOBAL = ["UM", "INFO", "MODE", "SRC", "DST", "T", "MA", "MB", "MP", "R", "D", "Q", "K", "EI",
           "EPOS", "KH"]
_GLOBAL2 = ["KV", "EP", "CE", "CH", "CV", "SL", "LOFF", "SSURF", "MEM"]
_SIDE = ["TRANS", "NUM", "LS", "SS", "W", "N", "WIDTH", "LINES", "BAD", "LB", "TBY", "SPAN", "CONT",
         "LITEMS", "SURF", "LINE"]
_SIDE2 = ["CL", "CS", "REM"]                  # walker state, kept in the 48.. globals per side
REG = {n: i for i, n in enumerate(_GLOBAL)}
REG.update({n: 48 + i for i, n in enumerate(_GLOBAL2)})
for _b, _p in ((16, "D."), (32, "S.")):
    REG.update({_p + n: _b + i for i, n in enumerate(_SIDE)})
REG.update({n: 128 | i for i, n in enumerate(_SIDE)})          # side-relative
# the walker state of both sides: 57.. (destination), 60.. (source); not side-relative:
# the walker routine is emitted once per side (`_advance`)
for _b, _p in ((57, "D."), (60, "S.")):
    REG.update({_p + n: _b + i for i, n in enumerate(_SIDE2)})
assert max(v for v in REG.values() if v < 128) < N_REGS


def scratch_init(mem_bytes):
    """Initial scratch contents: the constants (everything else starts at zero)."""
    init = [0] * N_REGS
    init[REG["MEM"]] = mem_bytes
    return init


def table_regions():
    """{AS bits: [(byte offset, byte length)] of SRC, DST, TAIL}, and {field: [(TAIL byte,
    bit shift in the field)] most significant piece first}, from the ISA tables."""
    regions, tail_fields = {}, None
    for as_bits in (16, 32, 64):
        lay = _OPC.table.resolve(as_bits)
        src, dst = lay.field("src"), lay.field("dst")
        (s_lo, s_w, _), = src.pieces
        (d_lo, d_w, _), = dst.pieces
        t_lo = d_lo + d_w
        assert s_lo == 0 and d_lo == s_w and t_lo % 8 == 0
        regions[as_bits] = [(0, s_w // 8), (d_lo // 8, d_w // 8), (t_lo // 8, lay.nbytes - t_lo // 8)]
        fields = {}
        for f in lay.fields:
            if f.name in ("src", "dst"):
                continue
            pieces = [(lo - t_lo, w, shift) for lo, w, shift in f.pieces]
            fields[f.name] = sorted(pieces, key=lambda p: -p[2])
        assert tail_fields is None or tail_fields == fields, "tail fields move between AS"
        tail_fields = fields
    return regions, tail_fields


def unit_info(code):
    """bits 3:0 element bytes (int4: 1), bit 4 int4, bit 5 reserved code (13..15)."""
    if code > max(DataUnit):
        return 32
    u = DataUnit(code)
    return 16 | 1 if u.bits == 4 else u.bits // 8


class Asm:
    """Builds the ROM: ``a.op(arg, target)``, labels with ``a.label(name)``."""

    def __init__(self):
        self.code, self.labels, self._n = [], {}, 0

    def label(self, name):
        assert name not in self.labels, name
        self.labels[name] = len(self.code)

    def new(self, stem):
        self._n += 1
        return f"{stem}.{self._n}"

    def emit(self, op, a=0, t=None):
        if op in REG_OPS:
            a = REG[a] if isinstance(a, str) else a
        self.code.append((op, a, t))

    def __getattr__(self, op):
        if op not in OP:
            raise AttributeError(op)
        if op in JUMPS:
            return lambda t: self.emit(op, 0, t)
        return lambda a=0: self.emit(op, a)

    def assemble(self):
        words = []
        for op, a, t in self.code:
            if op in JUMPS:
                arg = self.labels[t]
                assert 0 <= arg < ROM_DEPTH, (op, t)
            else:
                arg = a
                assert 0 <= arg < 256 and t is None, (op, a, t)
            words.append(OP[op] | (arg << 5))
        assert len(words) <= ROM_DEPTH, len(words)
        return words


def _load_field(a, name):
    """ACC <- operand field `name` (zero-extended; its pieces are whole bytes)."""
    _, fields = table_regions()
    a.LDI(0)
    for off, w, _ in fields[name]:             # most significant piece first
        assert off % 8 == 0 and w % 8 == 0, (name, off, w)
        for j in reversed(range(w // 8)):
            a.TB((TAIL << 6) | (off // 8 + j))


def _load_addr(a, region):
    a.LDI(0)
    for j in reversed(range(8)):
        a.TB((region << 6) | j)


def _mul(a):
    """MP += MA * MB (MA shifted out, MB shifted up)."""
    a.label("mul")
    a.LD("MA")
    a.JZ("mul.ret")
    a.label("mul.loop")
    a.SHR()
    a.ST("MA")
    a.JNC("mul.skip")
    a.LD("MP")
    a.ADD("MB")
    a.ST("MP")
    a.label("mul.skip")
    a.LD("MB")
    a.SHL()
    a.ST("MB")
    a.LD("MA")
    a.JNZ("mul.loop")
    a.label("mul.ret")
    a.RET()


def _div(a):
    """Q, R = R // D, R % D (D != 0): the divisor doubles while it fits (K times),
    then one compare-subtract per quotient bit."""
    a.label("div")
    a.LDI(0)
    a.ST("Q")
    a.ST("K")
    a.label("div.norm")
    a.LD("D")
    a.SHL()
    a.ST("T")
    a.LD("R")
    a.SUB("T")
    a.JNC("div.loop")
    a.LD("T")
    a.ST("D")
    a.LD("K")
    a.ADDI(1)
    a.ST("K")
    a.JMP("div.norm")
    a.label("div.loop")
    a.LD("R")
    a.SUB("D")
    a.JNC("div.q0")
    a.ST("R")
    a.label("div.q0")
    a.LD("Q")
    a.RCL()
    a.ST("Q")
    a.LD("D")
    a.SHR()
    a.ST("D")
    a.LD("K")
    a.SUBI(1)
    a.ST("K")
    a.JC("div.loop")
    a.RET()


def _mul_into(a, dst, x, y):
    """M[dst] <- M[x] * M[y] (x the short operand)."""
    a.LDI(0)
    a.ST("MP")
    a.LD(x)
    a.ST("MA")
    a.LD(y)
    a.ST("MB")
    a.CALL("mul")
    a.LD("MP")
    a.ST(dst)


def _times_ei(a, dst, x):
    """M[dst] <- M[x] * EI (items of an element), with a short path for EI = 1."""
    one, done = a.new("ei1"), a.new("eid")
    a.LD("EI")
    a.SUBI(1)
    a.JZ(one)
    _mul_into(a, dst, "EI", x)
    a.JMP(done)
    a.label(one)
    a.LD(x)
    a.ST(dst)
    a.label(done)


def _side(a):
    """For the side in SIDE: N, WIDTH, LINES, BAD (remainder), LB / TBY (bytes of a
    line / surface), CONT (D-OVERLAP contiguity), SPAN (when TRANS != 0), LITEMS."""
    a.label("side")
    a.LD("NUM")
    a.JNZ("side.n")
    a.LDI(1)
    a.label("side.n")
    a.ST("N")
    a.LD("W")
    a.JZ("side.w0")
    a.LD("TRANS")
    a.ST("R")
    a.LD("W")
    a.ST("D")
    a.CALL("div")
    a.LD("Q")
    a.ST("LINES")
    a.LD("R")
    a.ST("BAD")
    a.LD("W")
    a.ST("WIDTH")
    a.JMP("side.lb")
    a.label("side.w0")
    a.LDI(0)
    a.ST("BAD")
    a.LD("TRANS")
    a.ST("WIDTH")
    a.JZ("side.l0")
    a.LDI(1)
    a.label("side.l0")
    a.ST("LINES")
    a.label("side.lb")
    for src, dst in (("WIDTH", "LB"), ("TRANS", "TBY")):       # bytes of width / trans elements
        is4, done = a.new("eb4"), a.new("ebd")
        a.LD("INFO")
        a.AND(16)
        a.JNZ(is4)
        _times_ei(a, dst, src)
        a.JMP(done)
        a.label(is4)
        a.LD(src)
        a.ADDI(1)
        a.SHR()
        a.ST(dst)
        a.label(done)
    _times_ei(a, "LITEMS", "WIDTH")
    # contiguity: lines <= 1 or a line stride of exactly one line (an odd int4 count never is)
    a.LDI(0)
    a.ST("CONT")
    for cnt, stride, nb, cnt_of in (("LINES", "LS", "LB", "WIDTH"), ("N", "SS", "TBY", "TRANS")):
        ok = a.new("cok")
        a.LD(cnt)
        a.SUBI(2)
        a.JNC(ok)
        a.LD(stride)
        a.SUB(nb)
        a.JNZ("side.span")
        a.LD("INFO")
        a.AND(16)
        a.JZ(ok)
        a.LD(cnt_of)
        a.AND(1)
        a.JNZ("side.span")
        a.label(ok)
    a.LDI(1)
    a.ST("CONT")
    # the extent: LB + (LINES - 1) * LS + (N - 1) * SS, all offsets non-negative
    a.label("side.span")
    a.LD("TRANS")
    a.JZ("side.ret")
    a.LD("LB")
    a.ST("MP")
    for cnt, stride in (("LINES", "LS"), ("N", "SS")):
        a.LD(cnt)
        a.SUBI(1)
        a.ST("MA")
        a.LD(stride)
        a.ST("MB")
        a.CALL("mul")
    a.LD("MP")
    a.ST("SPAN")
    a.label("side.ret")
    a.RET()


def _advance(a, p):
    """Side `p` ("D." or "S.") walker: to its next line (REM <- its items), or REM <- 0
    after the last line. Uses the side-relative LINES, N, LS, SS, LITEMS, SURF, LINE."""
    a.label(f"adv{p}")
    a.LD(p + "CL")
    a.ADDI(1)
    a.ST(p + "CL")
    a.SUB("LINES")
    a.JNZ(f"adv{p}.line")
    a.LDI(0)
    a.ST(p + "CL")
    a.LD(p + "CS")
    a.ADDI(1)
    a.ST(p + "CS")
    a.SUB("N")
    a.JZ(f"adv{p}.end")
    a.LD("SURF")
    a.ADD("SS")
    a.ST("SURF")
    a.ST("LINE")
    a.JMP(f"adv{p}.set")
    a.label(f"adv{p}.line")
    a.LD("LINE")
    a.ADD("LS")
    a.ST("LINE")
    a.label(f"adv{p}.set")
    a.LD("LITEMS")
    a.ST(p + "REM")
    a.RET()
    a.label(f"adv{p}.end")
    a.LDI(0)
    a.ST(p + "REM")
    a.RET()


def _walker_init(a, p, base):
    a.LD(base)
    a.ST(p + "SURF")
    a.ST(p + "LINE")
    a.LDI(0)
    a.ST(p + "CL")
    a.ST(p + "CS")
    a.LD(p + "LITEMS")
    a.ST(p + "REM")


def program():
    """The DATA_MOVE microprogram: [(op, a, t)] and its ROM words."""
    a = _build()
    return a.code, a.assemble()


def labels():
    """{label: micro-PC} of the microprogram (for reading traces and waveforms)."""
    return dict(_build().labels)


def _build():
    a = Asm()
    regions, fields = table_regions()
    # --- unit and mode --------------------------------------------------------------
    a.LDI(0)
    a.TB((TAIL << 6) | 0)                       # data_unit [3:0], transfer_mode [5:4]
    assert fields["data_unit"] == [(0, 4, 0)] and fields["transfer_mode"] == [(4, 2, 0)]
    a.ST("UM")
    a.AND(15)
    a.UINFO()
    a.ST("INFO")
    a.SETU()
    a.AND(32)
    a.JNZ("f.reserved")
    a.LD("INFO")
    a.AND(15)
    a.ST("EI")                                  # items of an element (int4: 1 nibble)
    a.SHL()
    a.ST("EPOS")                                # nibbles of an element
    a.LD("INFO")
    a.AND(16)
    a.JZ("m.epos")
    a.LDI(1)
    a.ST("EPOS")
    a.label("m.epos")
    a.LD("UM")
    for _ in range(4):
        a.SHR()
    a.AND(3)
    a.ST("MODE")
    _load_addr(a, SRC)
    a.ST("SRC")
    _load_addr(a, DST)
    a.ST("DST")
    # --- both sides (the source unless immediate) -------------------------------------
    for k, (p, pre) in enumerate((("des", "D."), ("src", "S."))):
        if k == 1:
            a.LD("MODE")
            a.SUBI(1)
            a.JZ("m.checks")
        for f in ("trans_size", "num_trans", "line_stride", "surface_stride", "width"):
            _load_field(a, f"{p}_{f}")
            a.ST(pre + {"trans_size": "TRANS", "num_trans": "NUM", "line_stride": "LS",
                        "surface_stride": "SS", "width": "W"}[f])
        a.SIDE(k)
        a.CALL("side")
    # --- ILLEGAL_OPERAND checks, then ADDRESS_RANGE (D-PRECEDENCE) -----------------------
    a.label("m.checks")
    a.LD("D.BAD")
    a.JNZ("f.illegal")
    a.LD("MODE")
    a.SUBI(1)
    a.JZ("m.empty")                             # immediate: no source checks
    a.LD("S.BAD")
    a.JNZ("f.illegal")
    a.LD("MODE")
    a.SUBI(2)
    a.JNZ("m.empty")
    for p in ("S.", "D."):                      # upsample is 1/2-D only
        a.LD(p + "NUM")
        a.SUBI(2)
        a.JC("f.illegal")
    a.label("m.empty")
    a.LD("D.TRANS")
    a.JNZ("m.shape")
    a.LD("MODE")
    a.SUBI(1)
    a.JZ("m.overlap")
    a.LD("S.TRANS")
    a.JZ("m.overlap")
    a.label("m.shape")
    a.LD("MODE")
    a.JZ("m.normal")
    a.SUBI(2)
    a.JZ("m.up")
    a.JC("m.tr")
    a.JMP("m.overlap")                          # immediate: no shape rule
    a.label("m.normal")                         # n_s * trans_s == n_d * trans_d
    _mul_into(a, "T", "S.N", "S.TRANS")
    _mul_into(a, "MP", "D.N", "D.TRANS")        # (MP kept: T - MP below)
    a.LD("T")
    a.SUB("MP")
    a.JNZ("f.illegal")
    a.JMP("m.overlap")
    a.label("m.up")                             # kh = d.width / s.width, kv = d.lines / s.lines
    a.LD("S.TRANS")
    a.JZ("f.illegal")
    a.LD("D.TRANS")
    a.JZ("f.illegal")
    for num, den, res in (("D.WIDTH", "S.WIDTH", "KH"), ("D.LINES", "S.LINES", "KV")):
        a.LD(num)
        a.ST("R")
        a.LD(den)
        a.ST("D")
        a.CALL("div")
        a.LD("R")
        a.JNZ("f.illegal")
        a.LD("Q")
        a.ST(res)
    a.JMP("m.overlap")
    a.label("m.tr")
    for x, y in (("D.N", "S.N"), ("D.TRANS", "S.TRANS"), ("D.WIDTH", "S.LINES")):
        a.LD(x)
        a.SUB(y)
        a.JNZ("f.illegal")
    # D-OVERLAP: src < dst + span_d and dst < src + span_s (65-bit sums)
    a.label("m.overlap")
    a.LD("MODE")
    a.SUBI(1)
    a.JZ("m.range")
    a.LD("S.TRANS")
    a.JZ("m.range")
    a.LD("D.TRANS")
    a.JZ("m.range")
    for x, y, span in (("SRC", "DST", "D.SPAN"), ("DST", "SRC", "S.SPAN")):
        yes = a.new("ov")
        a.LD(y)
        a.ADD(span)
        a.JC(yes)
        a.ST("T")
        a.LD(x)
        a.SUB("T")
        a.JC("m.range")                         # x >= y + span: apart
        a.label(yes)
    a.LD("MODE")
    a.JNZ("f.illegal")
    a.LD("S.CONT")
    a.JZ("f.illegal")
    a.LD("D.CONT")
    a.JZ("f.illegal")
    a.LD("SRC")
    a.SUB("DST")
    a.JNC("f.illegal")
    a.label("m.range")
    for base, p, skip_imm in (("SRC", "S.", True), ("DST", "D.", False)):
        nxt = a.new("rg")
        if skip_imm:
            a.LD("MODE")
            a.SUBI(1)
            a.JZ(nxt)
        a.LD(p + "TRANS")
        a.JZ(nxt)
        a.LD(base)
        a.ADD(p + "SPAN")
        a.JC("f.range")
        a.SUB("MEM")
        a.JZ(nxt)
        a.JC("f.range")
        a.label(nxt)
    a.LD("D.TRANS")
    a.JZ("m.done")
    # --- the move ---------------------------------------------------------------------
    _walker_init(a, "D.", "DST")
    a.SIDE(0)
    a.LD("MODE")
    a.JZ("mv.normal")
    a.SUBI(2)
    a.JZ("mv.up")
    a.JC("mv.tr")
    # immediate: one run per destination line
    a.label("mv.imm")
    a.LD("D.LINE")
    a.SHL()
    a.SETD()
    a.LD("D.LITEMS")
    a.RUN(1)
    a.CALL("advD.")
    a.LD("D.REM")
    a.JNZ("mv.imm")
    a.JMP("m.done")
    # normal: chunks of min(source run, destination run)
    a.label("mv.normal")
    _walker_init(a, "S.", "SRC")
    a.LD("D.LINE")
    a.SHL()
    a.SETD()
    a.LD("S.LINE")
    a.SHL()
    a.SETP()
    a.label("mv.n.loop")
    a.LD("S.REM")
    a.SUB("D.REM")
    a.JC("mv.n.d")
    a.LD("S.REM")
    a.JMP("mv.n.go")
    a.label("mv.n.d")
    a.LD("D.REM")
    a.label("mv.n.go")
    a.ST("T")
    a.RUN(0)
    a.LD("D.REM")
    a.SUB("T")
    a.ST("D.REM")
    a.LD("S.REM")
    a.SUB("T")
    a.ST("S.REM")
    a.LD("D.REM")
    a.JNZ("mv.n.s")
    a.SIDE(0)
    a.CALL("advD.")
    a.LD("D.REM")
    a.JZ("m.done")
    a.LD("D.LINE")
    a.SHL()
    a.SETD()
    a.label("mv.n.s")
    a.LD("S.REM")
    a.JNZ("mv.n.loop")
    a.SIDE(1)
    a.CALL("advS.")
    a.LD("S.LINE")
    a.SHL()
    a.SETP()
    a.JMP("mv.n.loop")
    # upsample: destination line l takes source line l // kv; element e takes e // kh
    a.label("mv.up")
    a.LD("SRC")
    a.ST("SL")
    a.LDI(0)
    a.ST("CV")
    a.label("mv.u.line")
    a.LD("D.LINE")
    a.SHL()
    a.SETD()
    a.LD("KH")
    a.SUBI(1)
    a.JNZ("mv.u.elem")
    a.LD("SL")
    a.SHL()
    a.SETP()
    a.LD("D.LITEMS")
    a.RUN(0)
    a.JMP("mv.u.next")
    a.label("mv.u.elem")
    a.LD("SL")
    a.SHL()
    a.ST("EP")
    a.LD("S.WIDTH")
    a.ST("CE")
    a.label("mv.u.e")
    a.LD("KH")
    a.ST("CH")
    a.label("mv.u.h")
    a.LD("EP")
    a.SETP()
    a.LD("EI")
    a.RUN(0)
    a.LD("CH")
    a.SUBI(1)
    a.ST("CH")
    a.JNZ("mv.u.h")
    a.LD("EP")
    a.ADD("EPOS")
    a.ST("EP")
    a.LD("CE")
    a.SUBI(1)
    a.ST("CE")
    a.JNZ("mv.u.e")
    a.label("mv.u.next")
    a.LD("CV")
    a.ADDI(1)
    a.ST("CV")
    a.SUB("KV")
    a.JNZ("mv.u.adv")
    a.LDI(0)
    a.ST("CV")
    a.LD("SL")
    a.ADD("S.LS")
    a.ST("SL")
    a.label("mv.u.adv")
    a.CALL("advD.")
    a.LD("D.REM")
    a.JNZ("mv.u.line")
    a.JMP("m.done")
    # transpose: destination (s, l, e) <- source (s, e, l), one element per run
    a.label("mv.tr")
    a.LD("SRC")
    a.ST("SSURF")
    a.LDI(0)
    a.ST("LOFF")
    a.label("mv.t.line")
    a.LD("D.LINE")
    a.SHL()
    a.SETD()
    a.LD("SSURF")
    a.SHL()
    a.ADD("LOFF")
    a.ST("EP")
    a.LD("D.WIDTH")
    a.ST("CE")
    a.label("mv.t.e")
    a.LD("EP")
    a.SETP()
    a.LD("EI")
    a.RUN(0)
    a.LD("EP")
    a.ADD("S.LS")
    a.ADD("S.LS")
    a.ST("EP")
    a.LD("CE")
    a.SUBI(1)
    a.ST("CE")
    a.JNZ("mv.t.e")
    a.CALL("advD.")
    a.LD("D.REM")
    a.JZ("m.done")
    a.LD("D.CL")
    a.JNZ("mv.t.same")
    a.LDI(0)
    a.ST("LOFF")
    a.LD("SSURF")
    a.ADD("S.SS")
    a.ST("SSURF")
    a.JMP("mv.t.line")
    a.label("mv.t.same")
    a.LD("LOFF")
    a.ADD("EPOS")
    a.ST("LOFF")
    a.JMP("mv.t.line")
    # --- endings and subroutines ---------------------------------------------------------
    a.label("m.done")
    a.DONE()
    a.label("f.reserved")
    a.FAULT(int(Fault.RESERVED_UNIT))
    a.label("f.illegal")
    a.FAULT(int(Fault.ILLEGAL_OPERAND))
    a.label("f.range")
    a.FAULT(int(Fault.ADDRESS_RANGE))
    _side(a)
    _mul(a)
    _div(a)
    _advance(a, "D.")
    _advance(a, "S.")
    return a
