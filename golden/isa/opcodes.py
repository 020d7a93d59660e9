"""The Unity opcode table: every opcode of the seed with its section, group, code
and operand-table layout.

Groups and codes are exactly the seed's. Layouts the seed gives are written in
the seed's own notation; layouts the seed leaves as USER DEFINE (or omits) are
project layouts, marked ``user_defined=True`` and described family by family in
docs/isa-decisions.md (D-UDEF-*). Sub-field layouts of the BASE "OP Mode" words,
which the seed does not give, are fixed here once (D-OPMODE).
"""

from dataclasses import dataclass

from .enums import Section
from .layout import Table, addr, slot, word

__all__ = ["Opcode", "OPCODES", "GROUP_NAMES"]


@dataclass(frozen=True)
class Opcode:
    name: str               # the seed's spelling
    mnemonic: str           # unique assembler mnemonic
    section: Section
    group: int              # OP_CODE[13:5]
    code: int               # OP_CODE[4:0]
    table: Table            # None for EXIT (no operand table)
    user_defined: bool      # the layout is this project's, not the seed's
    summary: str = ""
    seed_note: str = ""     # where the seed is inconsistent about this opcode

    @property
    def op_code(self) -> int:
        return (self.group << 5) | self.code

    @property
    def key(self) -> tuple:
        return (int(self.section), self.op_code)

    @property
    def group_name(self) -> str:
        return GROUP_NAMES[(self.section, self.group)]


A, M = "A", "M"


def _packed(*fields) -> str:
    """A packed group from (name, lo, width) triples, with RSVD spacers, as seed notation."""
    items, pos = [], 0
    for name, lo, width in sorted(fields, key=lambda f: f[1]):
        if lo > pos:
            items.append(f"RSVD[{lo - pos - 1}:0]")
        items.append(f"{name}[{width - 1}:0]" if width > 1 else name)
        pos = lo + width
    return "{" + ", ".join(reversed(items)) + "}"


# --- BASE OP Mode words (D-OPMODE) -------------------------------------------------
# One bit layout for every BASE elementwise instruction, chosen to agree with the
# only BASE OP Mode the seed spells out (DATA_CONVERT: {dst_unit, src_unit}):
#   [3:0] source-0 unit   [7:4] destination unit   [8] saturate   [9] round
#   [10] THRES direction  [15:12] source-1 unit     [19:16] source-2 unit
#   [31:16] THRES threshold (THRES has no source 1/2)

def ew_mode(srcs=("src0",), *, sat=True, rnd=False, lt=False, thres=False, dst="dst"):
    fields = [(f"{srcs[0]}_unit", 0, 4), (f"{dst}_unit", 4, 4)]
    if sat:
        fields.append(("sat", 8, 1))
    if rnd:
        fields.append(("rnd", 9, 1))
    if lt:
        fields.append(("lt", 10, 1))
    for i, s in enumerate(srcs[1:]):
        fields.append((f"{s}_unit", 12 + 4 * i, 4))
    if thres:
        fields.append(("thres", 16, 16))
    return _packed(*fields)


def t_ew2(mode=None, srcs=("src0", "src1")):
    """Binary elementwise: Source 0, Source 1, Destination, Transfer Length, OP Mode."""
    return Table((addr(srcs[0]), addr(srcs[1]), addr("dst"), slot("len", A),
                  word("op_mode", mode or ew_mode(srcs))))


def t_ew1(src="src", mode=None):
    """Unary elementwise: Source, Destination, Transfer Length, OP Mode."""
    return Table((addr(src), addr("dst"), slot("len", A), word("op_mode", mode or ew_mode((src,)))))


def t_logic():
    """Bitwise logic: no OP Mode; the length is in bytes."""
    return Table((addr("src0"), addr("src1"), addr("dst"), slot("len", A)))


PADDING = "{padding_mode[1:0], V_stride[3:0], H_stride[3:0], R_pad[3:0], L_pad[3:0], B_pad[3:0], T_pad[3:0]}"
FM_GEOMETRY = (
    word("fm_surface_stride"),
    word("fm_channels", "{FM_C[11:0], FM_LINE_STRIDE[15:0]}"),
    word("fm_shape", "{K_W[3:0], K_H[3:0], FM_W[11:0], FM_H[11:0]}"),
)
CONV_MODES = ("scale_mode[1:0], shift_mode[1:0], mul_mode[1:0], bias_mode[1:0], scale_unit[3:0], "
              "mul_unit[3:0], bias_unit[3:0], result_unit[3:0], w_unit[3:0], fm_unit[3:0]}")


def t_conv(data_mode_prefix="{", extra=()):
    """CONV2D family (AI group 2). In IMM mode a *_addr field holds the value itself."""
    return Table((
        addr("fm"), addr("kernel"), addr("dst"),
        word("data_mode", data_mode_prefix + "Data_format[1:0], " + CONV_MODES, width=64),
        word("padding", PADDING),
        addr("padding_addr", M), addr("bias_addr", M), addr("mul_addr", M),
        addr("shift_addr", M), addr("scale_o_addr", M),
        *FM_GEOMETRY,
        word("kernels", "{K_NUM[11:0], K_LINE_STRIDE[19:0]}"),
        word("clip", "{CLIP_MIN[15:0], CLIP_MAX[15:0]}"),
        *extra,
    ))


def t_pool(data_mode="{Data_format[1:0], fm_unit[3:0]}", extra=()):
    """Pooling family (AI group 4)."""
    return Table((addr("fm"), addr("dst"), word("data_mode", data_mode), word("padding", PADDING),
                  addr("padding_addr", M), *FM_GEOMETRY, *extra))


def t_act():
    """Simple activations: {RSVD, SRC_UNIT[3:0]} for source and destination."""
    return Table((addr("src"), addr("dst"), slot("len", A), word("op_mode", "{RSVD, SRC_UNIT[3:0]}")))


def t_shape_op(op_mode="{src_data_unit[3:0], FW[11:0], FN[11:0]}", dims="{FC[11:0], FH[11:0]}",
               srcs=("src",), dsts=("dst",)):
    """Indexing/slicing family: addresses, then a dimension word, then OP Mode."""
    return Table((*(addr(s) for s in srcs), *(addr(d) for d in dsts),
                  word("dims", dims), word("op_mode", op_mode)))


# --- USER DEFINE families (D-UDEF) -------------------------------------------------

def u_branch(mode="{imm[15:0], RSVD[11:0], cond_unit[3:0]}"):
    return Table((addr("cond"), addr("target"), word("op_mode", mode)))


def u_reshape():
    return Table((addr("src"), addr("dst"), slot("len", A), addr("shape"),
                  word("op_mode", "{axis[2:0], src_data_unit[3:0]}")))


def u_create():
    return Table((addr("src"), addr("dst"), slot("len", A), word("op_mode", ew_mode(("src",))),
                  word("param0", width=64), word("param1", width=64)))


def u_query():
    return Table((addr("src"), addr("dst"), slot("len", A), word("op_mode", ew_mode(("src",), sat=False))))


def u_conv3d():
    return t_conv(extra=(word("depth", "{K_D[3:0], D_stride[3:0], F_pad[3:0], BK_pad[3:0], FM_D[11:0]}"),
                         word("fm_depth_stride")))


def u_norm(*params):
    return Table((addr("fm"), addr("dst"), word("data_mode", "{I_W[11:0], I_H[11:0], Data_format[1:0], fm_unit[3:0]}"),
                  *params))


def u_embed(mode):
    return Table((addr("indices"), addr("weight"), addr("dst"), slot("len", A), word("op_mode", mode)))


def u_recurrent():
    return Table((addr("x"), addr("weight"), addr("bias"), addr("state"), addr("dst"),
                  word("op_mode", "{input_size[11:0], hidden_size[11:0], src_unit[3:0]}"),
                  word("seq_len")))


def u_loss():
    return Table((addr("src0"), addr("src1"), addr("dst"), slot("len", A),
                  word("op_mode", "{reduction[1:0], classes[11:0], src1_unit[3:0], dst_unit[3:0], src0_unit[3:0]}")))


def u_optimizer():
    return Table((addr("param"), addr("grad"), addr("state0"), addr("state1"), slot("len", A),
                  word("op_mode", "{hp_unit[3:0], src_unit[3:0]}"),
                  word("lr"), word("beta1"), word("beta2"), word("eps"), word("weight_decay")))


def u_vision(mode):
    return Table((addr("fm"), addr("grid"), addr("dst"), word("data_mode", mode),
                  word("fm_size", "{FH[11:0], FW[11:0]}"), word("fm_depth", "{FC[11:0]}")))


# --- the table ------------------------------------------------------------------------

GROUP_NAMES = {}
_ROWS = []


def _group(section, group, name, rows):
    GROUP_NAMES[(section, group)] = name
    for row in rows:
        code, opname, table = row[:3]
        extra = row[3] if len(row) > 3 else {}
        _ROWS.append((section, group, code, opname, table, extra))


B, AI = Section.BASE, Section.AI
UD = {"user_defined": True}

REDUCE = Table((addr("src"), addr("dst"), word("dims", "{FC[11:0], FH[11:0], FW[11:0]}", width=64),
                word("op_mode", "{src_unit[3:0], axis[2:0]}")))

_group(B, 0b0, "Arithmetic", [
    (0x0, "ADD", t_ew2(), {"summary": "elementwise add"}),
    (0x1, "SUB", t_ew2(), {"summary": "elementwise subtract"}),
    (0x2, "MAX", t_ew2(), {"summary": "elementwise maximum"}),
    (0x3, "MIN", t_ew2(), {"summary": "elementwise minimum"}),
    (0x4, "MAXSI", t_ew2(), {"summary": "index (0 or 1) of the larger operand"}),
    (0x5, "MINSI", t_ew2(), {"summary": "index (0 or 1) of the smaller operand"}),
    (0x6, "THRES", t_ew1("src0", ew_mode(("src0",), lt=True, thres=True)),
     {"summary": "keep elements above (below) a threshold, else 0"}),
    (0x7, "ASUM", t_ew1("src0"), {"summary": "sum of all elements"}),
    (0x8, "ABS", t_ew1("src0"), {"summary": "absolute value"}),
    (0x9, "MEDIAN", Table((addr("src0"), addr("src1"), addr("src2"), addr("dst"), slot("len", A),
                           word("op_mode", ew_mode(("src0", "src1", "src2"))))),
     {"summary": "median of three operands",
      "seed_note": "the seed places OP Mode at [6A+31:5A]; it is [5A+31:5A]"}),
    (0xA, "SIGN", t_ew1("src0"), {"summary": "1 for x >= 0, -1 for x < 0",
                                  "seed_note": "the seed's format line says OP_CODE: SGT"}),
    (0xB, "POW", t_ew2(), {"summary": "x to the power y"}),
    (0xC, "SQRT", t_ew1(), {"summary": "square root"}),
    (0xD, "RSQRT", t_ew1(), {"summary": "reciprocal square root"}),
    (0xE, "COS_SIM", t_ew2(), {"summary": "cosine similarity"}),
    (0xF, "RECIPROCAL", t_ew1(), {"summary": "1/x"}),
])

_group(B, 0b1, "Logic", [
    (0x0, "AND", t_logic(), {"summary": "bitwise and (length in bytes)"}),
    (0x1, "OR", t_logic(), {"summary": "bitwise or (length in bytes)"}),
    (0x2, "XOR", t_logic(), {"summary": "bitwise xor (length in bytes)"}),
    (0x3, "INV", t_logic(), {"summary": "bitwise not of source 0 (length in bytes)"}),
    (0x4, "BCLR", t_logic(), {"summary": "bit clear (length in bytes)"}),
    (0x5, "BSET", t_logic(), {"summary": "bit set (length in bytes)"}),
])

_group(B, 0b10, "Shift", [
    (0x0, "ASR", t_ew2(ew_mode(("src0", "src1"), sat=False, rnd=True)), {"summary": "arithmetic shift right"}),
    (0x1, "ASL", t_ew2(), {"summary": "arithmetic shift left"}),
    (0x2, "LSR", t_ew2(ew_mode(("src0", "src1"), sat=False)), {"summary": "logical shift right"}),
    (0x3, "LSL", t_ew2(ew_mode(("src0", "src1"), sat=False)), {"summary": "logical shift left"}),
    (0x4, "ROR", t_ew2(ew_mode(("src0", "src1"), sat=False)), {"summary": "rotate right"}),
])

_group(B, 0b11, "Narrow/Extension", [
    (0x0, "NSR", t_ew2(ew_mode(("src0", "src1"), rnd=True)), {"summary": "narrowing shift right with rounding and saturation"}),
    (0x1, "SXT", t_ew2(ew_mode(("src0",), sat=False)), {"summary": "sign extension (source 1 unused)"}),
    (0x2, "UXT", t_ew2(ew_mode(("src0",), sat=False)), {"summary": "zero extension (source 1 unused)"}),
])

_group(B, 0b100, "DIV/MOD", [
    (0x0, "DIV", t_ew2(), {"summary": "elementwise divide"}),
    (0x1, "MOD", t_ew2(), {"summary": "elementwise remainder"}),
])

_group(B, 0b101, "MUL", [
    (0x0, "MUL", t_ew2(), {"summary": "elementwise multiply"}),
])

_group(B, 0b110, "Reduction", [
    (0x0, "REDUCE_ALL", REDUCE, {"summary": "all elements true"}),
    (0x1, "REDUCE_ANY", REDUCE, {"summary": "any element true"}),
    (0x2, "REDUCE_MEAN", REDUCE, {"summary": "mean"}),
    (0x3, "REDUCE_MAX", REDUCE, {"summary": "maximum"}),
    (0x4, "REDUCE_MIN", REDUCE, {"summary": "minimum"}),
    (0x5, "REDUCE_PROD", REDUCE, {"summary": "product"}),
    (0x6, "REDUCE_SUM", REDUCE, {"summary": "sum"}),
    (0x7, "REDUCE_VAR", REDUCE, {"summary": "variance"}),
])

_group(B, 0b111, "Branch", [
    (0x0, "CASE", u_branch(), UD),
    (0x1, "COND", u_branch(), UD),
    (0x2, "SWITCH_CASE", u_branch("{count[11:0], RSVD[15:0], cond_unit[3:0]}"), UD),
    (0x3, "WHILE_LOOP", u_branch(), UD),
])

_group(B, 0b1000, "Indexing, Slicing, Joining, Mutating", [
    (0x0, "CONCAT", Table((addr("src0"), addr("src1"), addr("dst"),
                           word("dims", "{FC0[11:0], FH0[11:0], FW0[11:0], FC1[11:0], FH1[11:0]}", width=64),
                           word("op_mode", "{src_data_unit[3:0], axis[2:0], FW1[11:0]}")))),
    (0x1, "GATHER", t_shape_op("{src_data_unit[3:0], axis[2:0], FW[11:0], Index_Len[11:0]}",
                               srcs=("src", "index"))),
    (0x2, "GATHER_ND", t_shape_op("{src_data_unit[3:0], FW[11:0], Index_Len[11:0]}", srcs=("src", "index"))),
    (0x3, "SCATTER", Table((addr("src"), addr("index"), addr("update"), word("src_len"),
                            word("op_mode", "{src_data_unit[3:0], Index_Len[11:0]}"))),
     {"seed_note": "the seed places OP Mode at [3A+63:3A+31], overlapping Source Length; it is [3A+63:3A+32]"}),
    (0x4, "SCATTER_ND", Table((addr("src"), addr("index"), addr("update"), word("src_len"),
                               word("op_mode", "{index_depth[3:0], src_data_unit[3:0], Index_Len[11:0]}"))), UD),
    (0x5, "SPLIT", t_shape_op("{src_data_unit[3:0], FW[11:0], Axis[2:0], Split_Index[11:0]}", dsts=("dst0", "dst1"))),
    (0x6, "SLICE", t_shape_op("{src_data_unit[3:0], FW[11:0], Axis[2:0], Slice_Index[11:0]}", dsts=("dst0", "dst1"))),
    (0x7, "TRANSPOSE", t_shape_op(dims="{FC[11:0], FH[11:0], P0[2:0], P1[2:0], P2[2:0], P3[2:0]}"),
     {"seed_note": "the 36-bit dimension group does not fit its 32-bit slot (widened to 64)"}),
    (0x8, "RESHAPE", u_reshape(), UD),
    (0x9, "SQUEEZE", u_reshape(), UD),
    (0xA, "UNSQUEEZE", u_reshape(), {"user_defined": True,
                                     "seed_note": "the seed gives only OP Mode [4A+31:4A]"}),
    (0xB, "UNSTACK", t_shape_op(dims="{FC[11:0], FH[11:0], Axis[2:0]}", dsts=("dst0", "dst1")), UD),
    (0xC, "STACK", t_shape_op(dims="{FC[11:0], FH[11:0], Axis[2:0]}", srcs=("src0", "src1"))),
    (0xD, "TILE", t_shape_op(dims="{FC[11:0], FH[11:0], Repeat_num[8:0]}"),
     {"seed_note": "the 33-bit dimension group does not fit its 32-bit slot (widened to 64)"}),
    (0xE, "PAD", t_shape_op("{src_data_unit[3:0], FW[11:0], PH0[3:0], PH1[3:0]}",
                            "{FC[11:0], FH[11:0], PW0[3:0], PW1[3:0]}")),
    (0xF, "ROLL", t_shape_op("{src_data_unit[3:0], FW[11:0], SHIFT_W[5:0]}",
                             "{FC[11:0], FH[11:0], SHIFT_C[5:0], SHIFT_H[5:0]}"),
     {"seed_note": "the 36-bit dimension group does not fit its 32-bit slot (widened to 64)"}),
    (0x10, "SIGN", Table((addr("src"), addr("dst"), word("len"), word("op_mode", "{src_data_unit[3:0]}"))),
     {"summary": "sign bit of each element"}),
    (0x11, "WHERE", Table((addr("cond"), addr("src0"), addr("src1"), addr("dst"), slot("len", A),
                           word("op_mode", "{cond_unit[3:0], src1_unit[3:0], dst_unit[3:0], src0_unit[3:0]}"))), UD),
    (0x12, "FLATTEN", u_reshape(), UD),
    (0x13, "EXPAND_DIM", u_reshape(), UD),
    (0x14, "REVERSE", t_shape_op(dims="{FC[11:0], FH[11:0], Axis[2:0]}", srcs=("src0", "src1"))),
])

_group(B, 0b1001, "Roundup", [
    (0x0, "ROUND", t_ew1()),
    (0x1, "CEIL", t_ew1()),
    (0x2, "FLOOR", t_ew1()),
    (0x3, "CLIP", Table((addr("src"), addr("dst"), slot("len", A), word("op_mode", ew_mode(("src",))),
                         word("clip", "{CLIP_MIN[15:0], CLIP_MAX[15:0]}")))),
])

_group(B, 0b1010, "Data Conversion", [
    # The seed's OP Mode {Destination_data_unit[3:0], Source_data_unit[3:0]}, plus the
    # project's saturate/round bits at the BASE OP Mode positions.
    (0x0, "DATA_CONVERT", t_ew1("src", "{rnd, sat, dst_unit[3:0], src_unit[3:0]}")),
])

_group(B, 0b1011, "Matrix Multiply", [
    (0x0, "Matrix_Mul", Table((
        addr("fm"), addr("kernel"), addr("dst"),
        word("data_mode", "{Data_format[1:0], result_unit[3:0], w_unit[3:0], fm_unit[3:0]}"),
        word("padding", PADDING), addr("padding_addr", M), *FM_GEOMETRY,
        word("kernels", "{K_NUM[11:0], K_LINE_STRIDE[19:0]}"))),
     {"summary": "GEMM (K_W = K_H = 1) or convolution without quantisation, 32-bit output"}),
    (0x1, "LU", Table((addr("a"), addr("dst0"), addr("dst1"), word("op_mode", "{src_unit[3:0], I_H[11:0], I_W[11:0]}")))),
    (0x2, "CHOLESKY", Table((addr("a"), addr("dst"), word("op_mode", "{src_unit[3:0], I_H[11:0], I_W[11:0], Upper[1:0]}")))),
    (0x3, "QR", Table((addr("a"), addr("q"), addr("r"), word("op_mode", "{src_unit[3:0], I_H[11:0], I_W[11:0]}")))),
    (0x4, "NORM", Table((addr("src"), addr("dst"),
                         word("op_mode", "{src_unit[3:0], I_H[11:0], I_W[11:0], norm_type[2:0], axis[1:0]}"))),
     {"seed_note": "the format line says OP_CODE: SVD; the 33-bit OP Mode is widened to 64"}),
    (0x5, "INVERSE", Table((addr("src"), addr("dst"), word("op_mode", "{src_unit[3:0], I_H[11:0], I_W[11:0]}")))),
    (0x6, "LSTSQ", Table((addr("src"), addr("dst"), word("op_mode", "{src_unit[3:0], m[11:0], n[11:0], k[11:0]}"))),
     {"seed_note": "the 40-bit OP Mode is widened to 64"}),
    (0x7, "SOLVE", Table((addr("a"), addr("b"), addr("x"), addr("lu"),
                          word("op_mode", "{src_unit[3:0], n[11:0], k[11:0]}"))), UD),
])

_group(B, 0b1100, "Data Move", [
    (0x0, "DATA_MOVE", Table((
        addr("src"), addr("dst"),
        word("op_mode", "{transfer_mode[1:0], data_unit[3:0]}"),
        word("src_trans", "{SRC_num_trans[7:0], SRC_trans_size[23:0]}"),
        word("src_strides", "{SRC_surface_stride[23:0], SRC_line_stride[23:16]}"),
        word("src_lines", "{SRC_line_stride[15:0], SRC_Width[15:0]}"),
        word("des_trans", "{DES_num_trans[7:0], DES_trans_size[23:0]}"),
        word("des_strides", "{DES_surface_stride[23:0], DES_line_stride[23:16]}"),
        word("des_lines", "{DES_line_stride[15:0], DES_Width[15:0]}"))),
     {"summary": "1/2/3-D strided memory-to-memory move: normal, immediate, upsample, transpose"}),
])

RESIZE = Table((addr("fm"), addr("dst"), slot("op_mode", A, "{src_unit[3:0]}"),
                word("data_mode", "{O_W[11:0], O_H[11:0], Data_format[1:0], Align_corners[1:0]}"),
                word("fm_size", "{FH[11:0], FW[11:0]}"), word("fm_depth", "{FC[11:0]}")))
_group(B, 0b1101, "Resize", [
    (0x0, "RESIZE_BILINEAR", RESIZE),
    (0x1, "RESIZE_NEAREST", RESIZE, {"seed_note": "labelled AI SECTION inside the BASE Resize group; it is BASE"}),
])

_AI_LABEL = {"user_defined": True, "seed_note": "labelled AI SECTION inside the BASE Create group; it is BASE"}
_group(B, 0b1110, "Create", [
    (0x0, "CREATE_TENSOR", u_create(), _AI_LABEL),
    (0x1, "WARP_TENSOR", u_create(), _AI_LABEL),
    (0x2, "ZEROS", u_create(), _AI_LABEL),
    (0x3, "FULL", u_create(), _AI_LABEL),
    (0x4, "EMPTY", u_create(), _AI_LABEL),
    (0x5, "CONTIGUOUS", u_create(), _AI_LABEL),
    (0x6, "RAND_UNIFORM", u_create(), _AI_LABEL),
    (0x7, "RAND_NORMAL", u_create(), _AI_LABEL),
    (0x8, "RAND_BERNOULLI", u_create(), _AI_LABEL),
    (0x9, "RAND_BERNOULLI", u_create(), {"user_defined": True,
                                         "seed_note": "a second RAND_BERNOULLI at code 9; labelled AI SECTION"}),
    (0xA, "MULTI_NOMIAL", u_create(), _AI_LABEL),
    (0xB, "RAND_PERM", u_create(), _AI_LABEL),
    (0xC, "RANGE", u_create(), UD),
    (0xD, "LINSPACE", u_create(), UD),
    (0xE, "CREATE_SPARSE_TENSOR", u_create(), UD),
    (0xF, "CREATE_QUANT_TENSOR", u_create(), UD),
    (0x10, "DUPLICATE", u_create(), UD),
    (0x11, "CREATE_FROM_DIAG", u_create(), UD),
    (0x12, "DESTROY_TENSOR", u_create(), UD),
])

_group(B, 0b1111, "Compare", [
    (0x0, "SEQ", t_ew2(), {"summary": "1 if equal"}),
    (0x1, "SNE", t_ew2(), {"summary": "1 if not equal"}),
    (0x2, "SLE", t_ew2(), {"summary": "1 if less or equal"}),
    (0x3, "SLT", t_ew2(), {"summary": "1 if less"}),
    (0x4, "SGE", t_ew2(), {"summary": "1 if greater or equal"}),
    (0x5, "SGT", t_ew2(), {"summary": "1 if greater"}),
])

_group(B, 0b10000, "Trigonometric", [(i, n, t_ew1()) for i, n in enumerate(
    ["SIN", "COS", "TAN", "ASIN", "ACOS", "ATAN"])])
_group(B, 0b10001, "Hyperbolic", [(i, n, t_ew1()) for i, n in enumerate(
    ["SINH", "COSH", "TANH", "ASINH", "ACOSH", "ATANH"])])
_group(B, 0b10010, "Exponential power", [(i, n, t_ew1()) for i, n in enumerate(
    ["EXP", "EXPML", "LOG", "LOGLP", "LOG10", "LOG2"])])

_group(B, 0b10011, "Index", [
    (0x0, "ARG_MAX", t_ew1(mode=ew_mode(("src",), sat=False))),
    (0x1, "ARG_MIN", t_ew1(mode=ew_mode(("src",), sat=False))),
    (0x2, "ARG_SORT", Table((addr("src"), addr("dst0"), addr("dst1"), slot("len", A), word("op_mode", "{src_unit[3:0]}")))),
    (0x3, "TOPK", Table((addr("src"), addr("dst0"), addr("dst1"), slot("len", A), word("op_mode", "{src_unit[3:0], k[11:0]}")))),
    (0x4, "NON_ZERO", Table((addr("src"), addr("dst0"), slot("len", A), word("op_mode", "{dst0_unit[3:0], src_unit[3:0]}")))),
])

_group(B, 0b10100, "Signal", [
    (0x0, "FFT", u_query(), UD),
    (0x1, "IFFT", u_query(), UD),
])

_group(B, 0b10101, "Query", [(i, n, u_query(), UD) for i, n in enumerate(
    ["SHAPE", "IS_EMPTY", "IS_FINITE", "IS_EMPTY", "IS_CONTIGUROUS", "RANK", "SIZE", "HAS_INF", "HAS_NAN"])])

_group(B, 0b111111111, "Exit", [
    (0x1F, "EXIT", None, {"summary": "stop the Unity core"}),
])

# --- AI section ------------------------------------------------------------------------

_group(AI, 0b0, "Activation", [
    (0x0, "RELU", t_act()),
    (0x1, "PRELU", Table((addr("src"), addr("dst"), slot("len", A),
                          word("op_mode", "{RSVD, data_format[1:0], Valid_length[11:0], B, I, M_UNIT[3:0], S_UNIT[3:0], SRC_UNIT[3:0]}"),
                          addr("mul_addr"), addr("shift_addr")))),
    (0x2, "ELU", Table((addr("src"), addr("dst"), slot("len", A), word("alpha"),
                        word("op_mode", "{RSVD, SRC_UNIT[3:0], A_UNIT[3:0]}")))),
    (0x3, "HARD_SIGMOID", Table((addr("src"), addr("dst"), slot("len", A), word("a"), word("b"),
                                 word("op_mode", "{RSVD, SRC_UNIT[3:0], A_UNIT[3:0], b_UNIT[3:0]}")))),
    (0x4, "SELU", Table((addr("src"), addr("dst"), slot("len", A), word("gamma"), word("a"),
                         word("op_mode", "{RSVD, SRC_UNIT[3:0], A_UNIT[3:0], G_UNIT[3:0]}")))),
    (0x5, "SIGMOID", t_act()),
    (0x6, "TANH", t_act()),
    (0x7, "SOFTPLUS", t_act()),
    (0x8, "SOFTMAX", Table((addr("fm"), addr("dst"),
                            word("data_mode", "{I_H[11:0], I_W[11:0], Data_format[1:0], Axis[2:0], SRC_UNIT[3:0]}"),
                            word("fm_depth", "{FC[11:0]}"))),
     {"seed_note": "the 33-bit Data Mode is widened to 64"}),
    (0x9, "LOGSOFTMAX", Table((addr("fm"), addr("dst"),
                               word("data_mode", "{I_H[11:0], I_W[11:0], Data_format[1:0], Axis[2:0], SRC_UNIT[3:0]}"),
                               word("fm_depth", "{FC[11:0]}"))),
     {"seed_note": "the 33-bit Data Mode is widened to 64"}),
    (0xA, "SOFT_SIGN", t_act()),
    (0xB, "RELU6", t_act()),
    (0xC, "THRESHOLD_RELU", t_act()),
    (0xD, "LEAKY_RELU", t_act()),
    (0xE, "BRELU", t_act()),
    (0xF, "GELU", t_act()),
    (0x10, "SWISH", t_act()),
    (0x11, "HARD_SWISH", t_act()),
    (0x12, "ERF", t_act()),
    (0x13, "HARD_SHRINK", t_act()),
    (0x14, "TANH_SHRINK", t_act()),
    (0x15, "HARD_TANH", t_act()),
])

ELE_Q = Table((addr("src0"), addr("src1"), addr("dst"), slot("len", A),
               word("op_mode", "{RSVD, Data_format[1:0], Valid_length[11:0], B, I, M_UNIT[3:0], DES_UNIT[3:0], SRC1_UNIT[3:0], SRC0_UNIT[3:0]}"),
               word("multiplicator_imm", width=64),
               word("quant", "{IZERO_IMM[7:0], OZERO_IMM[7:0], SHIFT_IMM[7:0]}"),
               word("clip", "{CLIP_MIN[15:0], CLIP_MAX[15:0]}")))
_group(AI, 0b1, "Elementwise Arithmetic (quantised)", [
    (0x0, "ELE_ADD", ELE_Q),
    (0x1, "ELE_SUB", ELE_Q),
])

_group(AI, 0b10, "CONV", [
    (0x0, "CONV2D", t_conv()),
    (0x1, "DEP_CONV", t_conv()),
    (0x2, "Transpose_CONV", t_conv("{enlarge_V_scale[4:0], enlarge_H_scale[4:0], ")),
    (0x3, "Dilate_CONV", t_conv("{Dilate_rate[6:0], ")),
    (0x4, "CONV3D", u_conv3d(), UD),
    (0x5, "TRANS_CONV3D", u_conv3d(), UD),
    (0x6, "CONV1D", t_conv(), UD),
    (0x7, "UDEF_CONV", t_conv(), UD),
])

_group(AI, 0b100, "Pooling", [
    (0x0, "MAX_POOL", t_pool()),
    (0x1, "MIN_POOL", t_pool()),
    (0x2, "AVRG_POOL", t_pool()),
    (0x3, "MEDIAN_POOL", t_pool()),
    (0x4, "ROI_POOL", t_pool("{O_W[11:0], O_H[11:0], Data_format[1:0], fm_unit[3:0]}")),
    (0x5, "POOL3D", t_pool("{pool_type[1:0], Data_format[1:0], fm_unit[3:0]}",
                           (word("depth", "{K_D[3:0], D_stride[3:0], F_pad[3:0], BK_pad[3:0], FM_D[11:0]}"),
                            word("fm_depth_stride"))), UD),
    (0x6, "POOL1D", t_pool("{pool_type[1:0], Data_format[1:0], fm_unit[3:0]}"), UD),
    (0x7, "ADAPTIVV_POOL1D", t_pool("{O_W[11:0], pool_type[1:0], Data_format[1:0], fm_unit[3:0]}"), UD),
    (0x8, "ADAPTIVV_POOL2D", t_pool("{O_W[11:0], O_H[11:0], pool_type[1:0], Data_format[1:0], fm_unit[3:0]}"), UD),
    (0x9, "ADAPTIVV_POOL3D", t_pool("{O_W[11:0], O_H[11:0], pool_type[1:0], Data_format[1:0], fm_unit[3:0]}",
                                    (word("depth", "{O_D[11:0], FM_D[11:0]}"), word("fm_depth_stride"))), UD),
    (0xA, "UDEF_POOL", t_pool("{pool_type[1:0], Data_format[1:0], fm_unit[3:0]}"), UD),
])

NORM_DATA = "{I_W[11:0], I_H[11:0], Data_format[1:0], fm_unit[3:0]}"
_group(AI, 0b101, "Norm", [
    (0x0, "BATCH_NORM", Table((addr("fm"), addr("weight"), addr("bias"), addr("dst"), addr("mean"), addr("var"),
                               word("data_mode", NORM_DATA), word("dims", "{FC[11:0], Batch_Num[11:0]}"))),
     {"seed_note": "the seed places Mean Address at [5A-1:4A-1]; it is [5A-1:4A]"}),
    (0x1, "INSTANCE_NORM", Table((addr("fm"), addr("weight"), addr("bias"), addr("dst"),
                                  word("data_mode", NORM_DATA), word("dims", "{FC[11:0]}")))),
    (0x2, "LAYER_NORM", Table((addr("fm"), addr("weight"), addr("bias"), addr("dst"),
                               word("data_mode", NORM_DATA), word("dims", "{FC[11:0]}")))),
    (0x3, "GROUP_NORM", Table((addr("fm"), addr("weight"), addr("bias"), addr("dst"),
                               word("data_mode", "{I_W[11:0], I_H[11:0], Data_format[1:0], src_unit[3:0]}"),
                               word("dims", "{FC[11:0], Group_Num[11:0]}")))),
    (0x4, "LRN_NORM", u_norm(word("dims", "{FC[11:0], size[7:0]}"), word("alpha"), word("beta"), word("k")), UD),
    (0x5, "LP_NORM", u_norm(word("dims", "{FC[11:0], axis[2:0], p[3:0]}")), UD),
    (0x6, "L2_NORM", u_norm(word("dims", "{FC[11:0], axis[2:0]}")), UD),
])

_group(AI, 0b111, "Encoding", [
    (0x0, "EMBEDDING", u_embed("{dim[11:0], weight_unit[3:0], index_unit[3:0]}"), UD),
    (0x1, "ONE_HOT", u_embed("{depth[11:0], dst_unit[3:0], index_unit[3:0]}"), UD),
])

_group(AI, 0b1000, "Recurrent", [(i, n, u_recurrent(), UD) for i, n in enumerate(
    ["LSTM", "RNN_CELL", "RNN", "LSTM_CELL", "GRU_CELL", "GRU"])])

_group(AI, 0b1001, "Dropout", [
    (0x0, "DROPOUT", Table((addr("fm"), addr("dst"), word("data_mode", "{src_unit[3:0], ratio_unit[3:0]}"),
                            word("ratio"), word("len")))),
    (0x1, "LABEL_SMOOTH", Table((addr("src"), addr("dst"), slot("len", A),
                                 word("op_mode", "{classes[11:0], eps_unit[3:0], src_unit[3:0]}"), word("epsilon"))), UD),
])

_group(AI, 0b1010, "Vision", [
    (0x0, "PIXEL_SHUFFLE", Table((addr("fm"), addr("dst"), word("dims", "{FH[11:0], FW[11:0], Scale[4:0]}"),
                                  word("data_mode", "{src_unit[3:0], FC[11:0], Data_Format[1:0]}")))),
    (0x1, "PIXEL_UNSHUFFLE", Table((addr("fm"), addr("dst"), word("dims", "{FH[11:0], FW[11:0], Scale[4:0]}"),
                                    word("data_mode", "{src_unit[3:0], FC[11:0], Data_Format[1:0]}")))),
    (0x2, "GRID_SAMPLE", u_vision("{O_W[11:0], O_H[11:0], Data_format[1:0], Align_corners[1:0], src_unit[3:0]}"), UD),
    (0x3, "AFFINE_GRID", u_vision("{O_W[11:0], O_H[11:0], Data_format[1:0], Align_corners[1:0], src_unit[3:0]}"), UD),
])

_group(AI, 0b1011, "Loss", [(i, n, u_loss(), UD) for i, n in enumerate(
    ["CROSS_ENTROPY", "MSE_LOSS", "L1_LOSS", "LOG_LOSS", "SMOOTH_L1_LOSS", "KLDIV_LOSS", "NLL_LOSS",
     "SPARSE_CROSS_ENTROPY_LOSS", "SOFT_MARGIN_LOSS"])])

_group(AI, 0b1100, "Model Accuracy", [
    (0x0, "ACCURACY", u_loss(), UD),
    (0x1, "AUC", u_loss(), UD),
])

_group(AI, 0b1101, "Optimizer", [(i, n, u_optimizer(), UD) for i, n in enumerate(
    ["SGD", "MOMENTUM", "ADA_GRAD", "ADA_DELTA", "RMS_PROP", "CENTERED_RMSPROP", "ADAM"])])


# Mnemonics: the lower-cased seed name; where the seed repeats a name, the later
# entry gets an unambiguous mnemonic (D-MNEMONIC).
MNEMONIC_OVERRIDES = {
    (Section.BASE, 0b1000, 0x10): "sign_bit",       # "return the sign bit of input datas"
    (Section.BASE, 0b1110, 0x9): "rand_bernoulli_9",
    (Section.BASE, 0b10101, 0x3): "is_empty_3",
    (Section.AI, 0b0, 0x6): "ai_tanh",              # BASE has TANH in the Hyperbolic group
}


def _build():
    out = []
    for section, group, code, name, table, extra in _ROWS:
        extra = dict(extra)
        mnemonic = MNEMONIC_OVERRIDES.get((section, group, code), name.lower())
        out.append(Opcode(name=name, mnemonic=mnemonic, section=section, group=group, code=code,
                          table=table, user_defined=extra.pop("user_defined", False), **extra))
    return tuple(out)


OPCODES = _build()
