"""Lane-parallel (SWAR) arithmetic for the vector engine's datapath.

The vector datapath is one N-bit word (N = 8 * vector_bytes) split into lanes of
L bits, L in {4, 8, 16, 32, 64} (``lsel`` = log2(L) - 2 selects it at run time).
Element k of a beat lives in bits [k*L, (k+1)*L). A value that needs one more bit
than the lane (an unsigned L-bit element next to signed ones) carries that bit
in a separate *sign word* whose only non-zero bits are the lane MSB positions
(``H``): lane value = low + sign * (-2**L).

`Lanes` builds the masks for the current lane width and the lane-parallel
operations on such words: carry-killed addition with the exact upper bits of the
result, ``lane_any`` (a lane-wide mask of lanes holding any set bit), per-lane
shifts by a per-lane amount, and lane-wide selection. Every operation returns a
fresh Signal, so that expressions never nest (pysim evaluates each once) and the
netlist mirrors the structure written here.

Exact results are described by three words: ``low`` (the result modulo 2**L),
``neg`` (the exact result is negative) and ``fit`` (it lies in [-2**L, 2**L));
``neg``/``fit`` are flags at the ``H`` positions or lane-wide masks, as each
function says.

Every operation is combinational (no latency of its own; the pipeline stages that
use them register the results, see `hw.vector_pipe`).
"""

from functools import reduce
from operator import or_

from amaranth.hdl import Cat, Const, Signal, Value

from .replicate import SLICE_BITS, replicas

__all__ = ["LANE_BITS", "Lanes", "lane_const", "cut_registers"]

LANE_BITS = (4, 8, 16, 32, 64)


def cut_registers(m, enabled, *sigs):
    """`sigs`, or (if `enabled`) registers of them loaded every cycle, named after them
    with ``_r``: the cuts of a multi-cycle path (the narrow path's stages)."""
    if not enabled:
        return sigs
    regs = tuple(Signal(len(s), name=s.name + "_r", reset_less=True) for s in sigs)
    m.d.sync += [r.eq(s) for r, s in zip(regs, sigs)]
    return regs


def _extended(value, width):
    """`value` (an int or a Value) extended to `width` bits as an assignment would extend it."""
    v = Value.cast(value)
    if len(v) >= width:
        return v[:width]
    fill = v[-1] if v.shape().signed and len(v) else Const(0, 1)
    return Cat(v, fill.replicate(width - len(v)))


def lane_const(n, lane, value):
    """`value` (the low `lane` bits) repeated in every lane of an `n`-bit word."""
    value &= (1 << lane) - 1
    out = 0
    for k in range(n // lane):
        out |= value << (k * lane)
    return out


class Lanes:
    """Lane-parallel operations for module `m` on `n`-bit words with lane width
    ``4 << lsel``, one of `widths` (a subset of `LANE_BITS`: ``lsel`` never selects
    the others, so nothing is built for them). `prefix` names the signals created.
    `registered`: the run-time constants (`const`) are registers, loaded every cycle
    from ``lsel`` and the keys, which must then hold their values from the cycle
    before the constants are used, and so are the selects of the choices by lane width
    (`per_lane`, `broadcast`: an AND-OR under registered one-hot selects): no decoding
    of the lane width in the paths.
    `kept_consts`: the run-time constants alone are registers, under the same condition.
    Registered constants are on `platform` kept flip-flops (`hw.replicate`) that yosys
    does not merge: one per distinct bit function in each 64-bit slice (a bit that is
    the same for every lane width is a constant), each next to the slice it drives.
    (Merged plain registers drove every equal bit of every constant: the narrow path's
    constant-1 bit had a fan-out of 699, 16.5 ns in the placed `base`, session 45.)
    `sliced_lsel` (without `registered`): the choices by lane width decode copies of
    ``lsel``, registers (kept flip-flops on `platform`) one per 64-bit slice of the word,
    each choosing its slice, under the same condition as `kept_consts`. (Decoded from
    ``lsel`` itself, yosys shared one decoding LUT with every other user of the lane
    width: the wide ALU's tail and the conversion, fan-out 317 over 39 tiles, 16.5 ns in
    the placed `base`, session 46.)"""

    def __init__(self, m, n, lsel, prefix="ln", cm=None, widths=LANE_BITS, registered=False, kept_consts=False,
                 platform=None, sliced_lsel=False):
        self.m, self.n, self.lsel, self.prefix = m, n, lsel, prefix
        self.widths = tuple((i, L) for i, L in enumerate(LANE_BITS) if L in widths)   # (lsel, L)
        self.cm = cm if cm is not None else m     # where run-time constants are built
        self.registered = registered
        self.kept_consts, self.platform = kept_consts, platform
        self._lsel_copies = (replicas(self.cm, platform, lsel, max(1, n // SLICE_BITS), f"{prefix}_lsel",
                                      reset_less=True) if sliced_lsel and not registered else [])
        self._k = 0
        self._selects = {}
        self.ALL = Const((1 << n) - 1, n)
        self.H = self.const(lambda L: 1 << (L - 1), "H")
        self.LO = self.const(lambda L: 1, "LO")
        self.NH = self.const(lambda L: (1 << (L - 1)) - 1, "NH")

    # --- plumbing -------------------------------------------------------------------------

    def sig(self, name, width=None):
        self._k += 1
        return Signal(width or self.n, name=f"{self.prefix}_{name}_{self._k}")

    def comb(self, value, name="t", width=None):
        """A new signal driven by `value` (truncated to the word)."""
        s = self.sig(name, width)
        self.m.d.comb += s.eq(value[:len(s)] if len(value) > len(s) else value)
        return s

    def signal(self, value, name="t"):
        """`value` as a signal (an expression is given a signal of its own, so that
        slicing it per lane does not copy the expression into every lane)."""
        return value if isinstance(value, Signal) else self.comb(value, name)

    def _select(self, sels, code):
        """``Cat(*sels) == code`` as a register (`registered`), one per selectors and code."""
        key = (tuple(id(x) for x in sels), code)
        if key not in self._selects:
            sel = Signal(name=f"{self.prefix}_is_{code:x}_{len(self._selects)}")
            self.cm.d.comb += sel.eq(Cat(*sels) == code)
            self._selects[key] = (cut_registers(self.cm, True, sel)[0], sels)   # (the selectors kept alive)
        return self._selects[key][0]

    def _choice(self, out, cases, sels, module=None):
        """`out` = the value of the case (code, value) that ``Cat(*sels)`` matches (0 if
        none): a `Switch` (in `module`, if given), or with `registered` and no `module` an
        AND-OR under registered selects."""
        if self.registered and module is None:
            terms = [Value.cast(v) & self._select(sels, code).replicate(len(out)) for code, v in cases]
            self.m.d.comb += out.eq(reduce(or_, terms, Const(0, len(out))))
        elif module is None and self._lsel_copies and sels[0] is self.lsel:
            # (a value that is an expression becomes a signal first: sliced per slice, the
            # expression would be built once per slice)
            words = [(code, v if isinstance(v, (int, Const, Signal)) else self.comb(v, "case", len(out)))
                     for code, v in cases]
            for j, lo in enumerate(range(0, len(out), SLICE_BITS)):
                hi = min(lo + SLICE_BITS, len(out))
                copy = self._lsel_copies[min(j, len(self._lsel_copies) - 1)]
                with self.m.Switch(Cat(copy, *sels[1:])):
                    for code, v in words:
                        with self.m.Case(code):
                            self.m.d.comb += out[lo:hi].eq(_extended(v, len(out))[lo:hi])
        else:
            mod = module if module is not None else self.m
            with mod.Switch(Cat(*sels)):
                for code, v in cases:
                    with mod.Case(code):
                        mod.d.comb += out.eq(v)

    def _cases(self, fn, keys):
        """[(code, fn's value)] for every combination of the lane width and the keys
        (see `per_lane`) whose value is not None, and the selectors."""
        sels = [self.lsel] + [k for k, _ in (keys or [])]
        choices = [list(self.widths)] + [[c if isinstance(c, tuple) else (c, c) for c in v]
                                                  for _, v in (keys or [])]
        widths = [len(x) for x in sels]

        cases = []

        def rec(level, acc_code, acc_vals):
            if level == len(sels):
                v = fn(*acc_vals)
                if v is not None:
                    cases.append((acc_code, v))
                return
            shift = sum(widths[:level])
            for code, val in choices[level]:
                rec(level + 1, acc_code | (code << shift), acc_vals + [val])

        rec(0, 0, [])
        return cases, sels

    def per_lane(self, name, fn, *, keys=None, width=None, module=None):
        """A signal chosen by the lane width (and, with `keys` = [(selector, values)],
        by further selectors): ``fn(L, *key_values)`` gives an int constant or a Value,
        or None for combinations that never occur (left 0). `module`: where a constant
        is built (a `Switch` there)."""
        s = self.sig(name, width)
        cases, sels = self._cases(fn, keys)
        self._choice(s, cases, sels, module)
        return s

    def const(self, fn, name="c", *, keys=None):
        """A word with ``fn(L, ...)`` repeated in every lane (see `per_lane`)."""
        n = self.n

        def f(L, *rest):
            v = fn(L, *rest)
            return None if v is None else Const(lane_const(n, L, v), n)
        word = self.per_lane(name, f, keys=keys, module=self.cm)
        if self.kept_consts or self.registered:
            return self._kept(word, [v.value for _, v in self._cases(f, keys)[0]], name)
        return word

    def _kept(self, word, values, name):
        """`word` (whose value is one of `values`) through kept registers: one flip-flop
        per 64-bit slice and distinct column of `values` (bit i of every value)."""
        bits, regs = [], {}
        for i in range(self.n):
            column = tuple((v >> i) & 1 for v in values)
            if len(set(column)) == 1:
                bits.append(Const(column[0], 1))
                continue
            key = (i // SLICE_BITS, column)
            if key not in regs:
                regs[key], = replicas(self.cm, self.platform, word[i], 1,
                                      f"{self.prefix}_{name}_{self._k}_s{key[0]}_{len(regs)}", reset_less=True)
            bits.append(regs[key])
        return self.comb(Cat(bits), name + "_k")

    # --- lane-wide masks ---------------------------------------------------------------------

    def broadcast(self, flags, name):
        """Lane-wide masks from per-lane flags: ``flags[i]`` holds one bit per lane of
        width 4 << i."""
        out = self.sig(name)
        self._choice(out, [(i, Cat(flags[i][k].replicate(L) for k in range(self.n // L))) for i, L in self.widths],
                     [self.lsel])
        return out

    def lane_any(self, x, name="any"):
        """Lane-wide mask of the lanes of `x` with any bit set (one OR tree serves
        every lane width: nibbles, then pairs of them, ...)."""
        return self.broadcast(self.lane_any_flags(x, name), name)

    def lane_any_flags(self, x, name="any"):
        """The OR tree of `lane_any` before its broadcast: one flag word per lane
        width (``flags[i]``: one bit per lane of 4 << i bits), for `broadcast`."""
        x = self.signal(x, name + "_in")
        level = Signal(self.n // 4, name=f"{self.prefix}_{name}_or4_{self._k}")
        self.m.d.comb += level.eq(Cat(x[4 * i:4 * i + 4].any() for i in range(self.n // 4)))
        flags = [level]
        for L in LANE_BITS[1:]:
            prev = flags[-1]
            nxt = Signal(self.n // L, name=f"{self.prefix}_{name}_or{L}_{self._k}")
            self.m.d.comb += nxt.eq(Cat(prev[2 * k] | prev[2 * k + 1] for k in range(self.n // L)))
            flags.append(nxt)
        return flags

    def lane_flag(self, x, name="flag"):
        """Lane-wide mask from a flag word whose only set bits are lane MSBs (sign
        words, carries): no OR needed."""
        x = self.signal(x, name + "_in")
        return self.broadcast([x[L - 1::L] for L in LANE_BITS], name)

    def lane_bit(self, x, pos, name="bit"):
        """Lane-wide mask of the lanes whose bit `pos` (an int, or a function of L)
        is set (lanes narrower than `pos` give 0)."""
        x = self.signal(x, name + "_in")

        def f(L):
            p = pos(L) if callable(pos) else pos
            if p >= L:
                return Const(0, self.n)
            return Cat(x[k * L + p].replicate(L) for k in range(self.n // L))
        return self.per_lane(name, f)

    def sel(self, mask, a, b, name="sel"):
        """Lane-wise `a` where `mask` is set, else `b`."""
        return self.comb((a & mask) | (b & ~mask), name)

    # --- addition ---------------------------------------------------------------------------

    def lane_sum(self, x, y, cin=0, name="s"):
        """(x & NH) + (y & NH) + cin, one carry chain per 64-bit group: every lane MSB is
        masked off and no lane crosses a group, so no carry leaves a group and the word
        needs no carry chain longer than 64 bits (one 256-bit chain is four times as long).

        `cin` (bits at lane LSBs only) is no third addend: the carry into a lane comes
        from the MSB position below it, set to 1 in both addends (its sum bit is still the
        carry out of the lane's low bits), and into a group's first lane through an extra
        bit below the group's LSB."""
        NH = self.NH
        x, y, cin = (Const(v, self.n) if isinstance(v, int) else v for v in (x, y, cin))
        cs = self.signal(cin, name + "_c")
        up = (cs >> 1)[:self.n]                          # lane k's cin at lane k-1's MSB
        xs, ys = self.comb((x & NH) | up, name + "_x"), self.comb((y & NH) | up, name + "_y")
        g = min(self.n, LANE_BITS[-1])
        return self.comb(Cat((Cat(cs[i], xs[i:i + g]) + Cat(cs[i], ys[i:i + g]))[1:g + 1]
                             for i in range(0, self.n, g)), name)

    def add(self, a, a_s, b, b_s, cin, name="add"):
        """Exact lane-wise a + b + cin of (L+1)-bit values (`a_s`, `b_s`: sign flags at
        H; `cin`: 0/1 at the lane LSBs). Returns (low, neg, fit), flags at H."""
        H = self.H
        a, a_s, b, b_s, cin = (Const(v, self.n) if isinstance(v, int) else v for v in (a, a_s, b, b_s, cin))
        s = self.lane_sum(a, b, cin, name + "_s")
        low = self.comb(s ^ ((a ^ b) & H), name)
        cout = ((a & b) | ((a ^ b) & s)) & H
        neg = self.comb(((~cout & (a_s | b_s)) | (cout & a_s & b_s)) & H, name + "_neg")
        fit = self.comb(~((cout & ~a_s & ~b_s) | (~cout & a_s & b_s)) & H, name + "_fit")
        return low, neg, fit

    def sub(self, a, a_s, b, b_s, name="sub"):
        """Exact lane-wise a - b (see `add`)."""
        return self.add(a, a_s, ~b, ~b_s & self.H, self.LO, name)

    def carry(self, a, b, name="cy"):
        """Lane-wise unsigned a >= b of L-bit lanes (the carry of a + ~b + 1), at H,
        and the difference modulo 2**L."""
        H = self.H
        nb = self.comb(~b, name + "_nb")
        s = self.lane_sum(a, nb, self.LO, name + "_s")
        diff = self.comb(s ^ ((a ^ nb) & H), name + "_d")
        ge = self.comb(((a & nb) | ((a ^ nb) & s)) & H, name + "_ge")
        return ge, diff

    def neg_if(self, x, mask, name="ng"):
        """Lane-wise -x (mod 2**L) where `mask` is set, else x."""
        xm = self.comb(x ^ mask, name + "_x")
        s = self.lane_sum(xm, mask & self.LO, 0, name + "_s")
        return self.comb(s ^ (xm & self.H), name)

    def magnitude(self, x, x_s, name="mag"):
        """|value| of (L+1)-bit values whose magnitude fits L bits (signed sources,
        unsigned sources of L bits or fewer)."""
        return self.neg_if(x, self.lane_flag(x_s, name + "_m"), name)

    def less(self, a, a_s, b, b_s, name="lt"):
        """Lane-wide mask of a < b (exact)."""
        _, neg, _ = self.sub(a, a_s, b, b_s, name)
        return self.lane_flag(neg, name + "_m")

    # --- shifts ---------------------------------------------------------------------------------

    def shift(self, x, amount, keep, *, left, stages=6, keys=None, name="sh"):
        """Lane-wise shift of `x` by the per-lane `amount` (bits 0..stages-1 of each
        lane are used). ``keep(L, j)`` gives the lane bits that stay valid after a
        stage shifting by 2**j (an int mask per lane); the others are cleared (an
        arithmetic right shift is the complement of a shifted complement).
        `keys` as for `per_lane` (``keep(L, j, *key_values)``)."""
        cur = x
        for j in range(stages):
            d = 1 << j
            km = self.const(lambda L, *kv, j=j: keep(L, j, *kv), f"{name}_k{j}", keys=keys)
            moved = (cur << d)[:self.n] if left else (cur >> d)
            new = moved & km
            bit = self.lane_bit(amount, j, f"{name}_b{j}")
            cur = self.sel(bit, new, cur, f"{name}_{j}")
        return cur
