# amaranth: UnusedElaboratable=no

"""The sync unit (hw/sync.py) against a Python model of the key tables (D-KEYS).

Cycle numbering in these tests: a `Bench` counts the clock edges its testbench has
awaited; "cycle c" is the cycle before edge c + 1. A request *accepted in cycle a*
transferred at the edge that ends cycle a. An answer first seen in cycle r took
effect (read-modify-write of the entry) in cycle r - 1, which orders the
operations of concurrent ports for the model. Set XDSA_VCD=1 to write waveforms.
"""

import os
import random

import pytest
from amaranth.back import verilog
from amaranth.sim import Simulator

from xdsa.golden.isa import Fault
from xdsa.hw.bus import KeyHostOp
from xdsa.hw.config import get_config
from xdsa.hw.sync import SyncUnit

CFG = get_config("tiny")
OK, TIMEOUT, OVERFLOW = 0, Fault.KEY_TIMEOUT.value, Fault.KEY_OVERFLOW.value
READ, WRITE, DEPOSIT = KeyHostOp.READ, KeyHostOp.WRITE, KeyHostOp.DEPOSIT
LATENCY = 3                          # answer valid this many cycles after acceptance
BOUNDARY = [(t, i) for t in range(4) for i in (0, 1, 254, 255)]


class KeyModel:
    """The key tables as D-KEYS and golden.machine define them."""

    def __init__(self):
        self.keys = [[0] * 256 for _ in range(4)]

    def fetch(self, t, i, n):
        """True (keys consumed) if the entry holds n keys, else False (nothing changes)."""
        if self.keys[t][i] < n:
            return False
        self.keys[t][i] -= n
        return True

    def deposit(self, t, i):
        if self.keys[t][i] == 255:
            return OVERFLOW
        self.keys[t][i] += 1
        return OK

    def host(self, op, t, i, value=0):
        """The host answer: READ the count, WRITE the previous count, DEPOSIT the new count."""
        old = self.keys[t][i]
        if op == WRITE:
            self.keys[t][i] = value
        elif op == DEPOSIT:
            self.keys[t][i] = min(255, old + 1)
            return self.keys[t][i]
        return old


class Bench:
    """One testbench's view of the clock, with stream helpers that count cycles."""

    def __init__(self, ctx):
        self.ctx, self.cycle = ctx, 0

    async def tick(self, *exprs):
        _, _, *values = await self.ctx.tick().sample(*exprs)
        self.cycle += 1
        return values

    async def idle(self, n):
        for _ in range(n):
            await self.tick()

    async def put(self, port, payload, limit=10_000):
        """Send one request; returns the cycle it was accepted in."""
        self.ctx.set(port.payload, payload)
        self.ctx.set(port.valid, 1)
        for _ in range(limit):
            cycle = self.cycle
            ready, = await self.tick(port.ready)
            if ready:
                self.ctx.set(port.valid, 0)
                return cycle
        raise AssertionError(f"request {payload} not accepted within {limit} cycles")

    async def get(self, port, stall=0, limit=10_000):
        """Take one answer after holding ready low for `stall` cycles once it is valid.
        Returns (cycle the answer was first valid, raw payload)."""
        for _ in range(limit):
            if self.ctx.get(port.valid):
                break
            await self.tick()
        else:
            raise AssertionError(f"no answer within {limit} cycles")
        first, value = self.cycle, self.ctx.get(port.payload.as_value())
        for _ in range(stall):
            await self.tick()
            assert self.ctx.get(port.valid), "answer withdrawn before it was taken"
            assert self.ctx.get(port.payload.as_value()) == value, "answer changed before it was taken"
        self.ctx.set(port.ready, 1)
        await self.tick()
        self.ctx.set(port.ready, 0)
        return first, value

    # Whole transactions: (accept cycle, first answer cycle, answer).
    async def fetch(self, dut, t, i, n, stall=0):
        a = await self.put(dut.fetch, {"table": t, "index": i, "n": n})
        return (a, *await self.get(dut.fetch_done, stall))

    async def deposit(self, dut, t, i, stall=0):
        a = await self.put(dut.deposit, {"table": t, "index": i})
        return (a, *await self.get(dut.deposit_done, stall))

    async def host(self, dut, op, t, i, value=0, stall=0):
        a = await self.put(dut.host, {"op": op, "table": t, "index": i, "value": value})
        return (a, *await self.get(dut.host_rsp, stall))


def simulate(dut, *testbenches, name="sync"):
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    for tb in testbenches:
        sim.add_testbench(tb)
    if os.environ.get("XDSA_VCD"):
        with sim.write_vcd(f"{name}.vcd"):
            sim.run()
    else:
        sim.run()


async def read_all(b, dut, entries=None):
    """{(t, i): count} for `entries` (all 1024 by default), read by the host."""
    out = {}
    for t, i in entries or [(t, i) for t in range(4) for i in range(256)]:
        out[t, i] = (await b.host(dut, READ, t, i))[2]
    return out


# --- parameters and conversion ---------------------------------------------------------

def test_key_timeout_parameter():
    assert SyncUnit(CFG).key_timeout == CFG.key_timeout
    assert SyncUnit(CFG, key_timeout=None).key_timeout == CFG.key_timeout
    assert SyncUnit(CFG, key_timeout=7).key_timeout == 7
    with pytest.raises(ValueError, match="at least 1 cycle, not 0"):
        SyncUnit(CFG, key_timeout=0)
    with pytest.raises(TypeError, match="not '3'"):
        SyncUnit(CFG, key_timeout="3")


def test_converts_to_verilog():
    text = verilog.convert(SyncUnit(CFG, key_timeout=5), name="sync_unit", emit_src=False)
    assert "module sync_unit" in text
    assert "reg [7:0] keys [1023:0]" in text       # one 1 KiB memory, a block RAM candidate


# --- directed tests --------------------------------------------------------------------

def test_latency_and_timeout_timing():
    kt = 9
    dut = SyncUnit(CFG, key_timeout=kt)

    async def tb(ctx):
        b = Bench(ctx)
        a, r, v = await b.host(dut, WRITE, 2, 17, 5)
        assert (r - a, v) == (LATENCY, 0)
        a, r, v = await b.host(dut, READ, 2, 17)
        assert (r - a, v) == (LATENCY, 5)
        a, r, v = await b.deposit(dut, 2, 17)
        assert (r - a, v) == (LATENCY, OK)
        a, r, v = await b.fetch(dut, 2, 17, 6)
        assert (r - a, v) == (LATENCY, OK)
        a, r, v = await b.fetch(dut, 2, 17, 1)
        assert (r - a, v) == (kt + 1, TIMEOUT)
        a, r, v = await b.host(dut, DEPOSIT, 2, 17)
        assert (r - a, v) == (LATENCY, 1)

    simulate(dut, tb)


def test_wait_satisfied_by_host_deposit_mid_wait():
    kt = 200
    dut = SyncUnit(CFG, key_timeout=kt)
    log = {}

    async def core(ctx):
        b = Bench(ctx)
        await b.idle(3)                              # the host sets the entry to 1 first
        log["fetch"] = await b.fetch(dut, 3, 200, 3)

    async def host(ctx):
        b = Bench(ctx)
        await b.host(dut, WRITE, 3, 200, 1)
        await b.idle(20)
        a, r, v = await b.host(dut, DEPOSIT, 3, 200)
        assert (r - a, v) == (LATENCY, 2)            # served at full speed while the fetch waits
        for k in range(5):
            a, r, v = await b.host(dut, READ, 3, 200)
            assert (r - a, v) == (LATENCY, 2)
            assert not ctx.get(dut.fetch_done.valid)
            await b.idle(k)
        a, r, v = await b.host(dut, WRITE, 3, 201, 99)  # another entry: no effect on the wait
        await b.idle(7)
        assert not ctx.get(dut.fetch_done.valid)
        a, r, v = await b.host(dut, DEPOSIT, 3, 200)
        assert v == 3
        log["deposit_effect"] = r - 1
        await b.idle(10)
        log["after"] = await read_all(b, dut, [(3, 199), (3, 200), (3, 201)])

    simulate(dut, core, host)
    a, r, fault = log["fetch"]
    assert fault == OK
    e = log["deposit_effect"]
    assert e < r - 1 <= e + 2, (e, r)              # answered at most 3 cycles after the key arrived
    assert r - a < kt
    assert log["after"] == {(3, 199): 0, (3, 200): 0, (3, 201): 99}


@pytest.mark.parametrize("kt", [1, 2, 3, 4, 8, 34])
def test_timeout(kt):
    """KEY_TIMEOUT appears key_timeout cycles after acceptance (2 for key_timeout 1,
    when the acceptance poll is decided), with host traffic on the same entry, and
    consumes nothing."""
    dut = SyncUnit(CFG, key_timeout=kt)
    rng = random.Random(kt)
    log = {}

    async def core(ctx):
        b = Bench(ctx)
        await b.idle(4)
        for n in (1, 4, 8):
            await b.idle(rng.randrange(3))
            log[n] = await b.fetch(dut, 1, 255, n, stall=rng.randrange(3))
        log["done"] = True

    async def host(ctx):
        b = Bench(ctx)
        await b.host(dut, WRITE, 1, 255, 0)
        while "done" not in log:                     # keep reading the entry and writing another one
            await b.host(dut, rng.choice([READ, WRITE]), 1, rng.choice([254, 255]), 0)
        log["after"] = await read_all(b, dut, [(1, 255)])

    simulate(dut, core, host)
    for n in (1, 4, 8):
        a, r, fault = log[n]
        assert fault == TIMEOUT
        waited = r - a - 1                           # edges after the acceptance edge
        assert waited == max(kt, 2), (n, waited)
    assert log["after"] == {(1, 255): 0}


def test_timeout_keeps_partial_keys():
    dut = SyncUnit(CFG, key_timeout=6)

    async def tb(ctx):
        b = Bench(ctx)
        for n in range(1, 9):
            await b.host(dut, WRITE, 0, 0, n - 1)
            a, r, v = await b.fetch(dut, 0, 0, n)
            assert v == TIMEOUT
            assert (await b.host(dut, READ, 0, 0))[2] == n - 1
            await b.host(dut, WRITE, 0, 0, n)
            a, r, v = await b.fetch(dut, 0, 0, n)
            assert (r - a, v) == (LATENCY, OK)
            assert (await b.host(dut, READ, 0, 0))[2] == 0

    simulate(dut, tb)


def test_deposit_overflow_at_255():
    dut = SyncUnit(CFG, key_timeout=4)

    async def tb(ctx):
        b = Bench(ctx)
        for t in range(4):
            await b.host(dut, WRITE, t, 255, 253)
            for want_fault, want_count in ((OK, 254), (OK, 255), (OVERFLOW, 255), (OVERFLOW, 255)):
                a, r, v = await b.deposit(dut, t, 255, stall=t)
                assert v == want_fault
                assert (await b.host(dut, READ, t, 255))[2] == want_count
            a, r, v = await b.fetch(dut, t, 255, 8)         # a full entry still serves fetches
            assert v == OK
            assert (await b.deposit(dut, t, 255))[2] == OK
            assert (await b.host(dut, READ, t, 255))[2] == 248

    simulate(dut, tb)


def test_host_deposit_saturates_at_255():
    dut = SyncUnit(CFG, key_timeout=4)

    async def tb(ctx):
        b = Bench(ctx)
        await b.host(dut, WRITE, 2, 0, 254)
        for _ in range(3):
            a, r, v = await b.host(dut, DEPOSIT, 2, 0)
            assert v == 255
        assert (await b.host(dut, READ, 2, 0))[2] == 255
        assert not ctx.get(dut.deposit_done.valid) and not ctx.get(dut.fetch_done.valid)
        await b.host(dut, WRITE, 2, 0, 0)
        assert [(await b.host(dut, DEPOSIT, 2, 0))[2] for _ in range(3)] == [1, 2, 3]

    simulate(dut, tb)


def test_all_tables_and_boundary_entries():
    dut = SyncUnit(CFG, key_timeout=4)
    model = KeyModel()
    value = {e: 20 + 40 * e[0] + {0: 0, 1: 5, 254: 10, 255: 15}[e[1]] for e in BOUNDARY}

    async def tb(ctx):
        b = Bench(ctx)
        for (t, i), v in value.items():
            assert (await b.host(dut, WRITE, t, i, v))[2] == model.host(WRITE, t, i, v)
        for t, i in BOUNDARY:
            assert (await b.fetch(dut, t, i, 8))[2] == OK
            model.fetch(t, i, 8)
            assert (await b.deposit(dut, t, i))[2] == model.deposit(t, i)
            assert (await b.host(dut, DEPOSIT, t, i))[2] == model.host(DEPOSIT, t, i)
        got = await read_all(b, dut)                 # every entry: no aliasing between tables
        want = {(t, i): model.keys[t][i] for t in range(4) for i in range(256)}
        assert got == want
        assert got[0, 0] == 20 - 8 + 2 and got[3, 255] == 155 - 8 + 2

    simulate(dut, tb)


def test_clear_zeroes_nothing():
    dut = SyncUnit(CFG, key_timeout=4)

    async def tb(ctx):
        b = Bench(ctx)
        for t, i in BOUNDARY:
            await b.host(dut, WRITE, t, i, 7 + t)
        ctx.set(dut.clear, 1)
        await b.tick()
        ctx.set(dut.clear, 0)
        await b.idle(2)
        assert await read_all(b, dut, BOUNDARY) == {(t, i): 7 + t for t, i in BOUNDARY}

    simulate(dut, tb)


def test_host_progresses_during_wait_and_deposit_stream():
    """A waiting fetch polls every other cycle and a deposit stream wants every other
    cycle: the host still gets the memory within a few cycles (grants alternate)."""
    dut = SyncUnit(CFG, key_timeout=300)
    log = {"host_waits": []}

    async def core_fetch(ctx):
        b = Bench(ctx)
        log["fetch"] = await b.fetch(dut, 0, 5, 1)

    async def core_deposit(ctx):
        b = Bench(ctx)
        ctx.set(dut.deposit_done.ready, 1)
        for _ in range(80):
            await b.put(dut.deposit, {"table": 0, "index": 6})
        await b.idle(4)
        await b.put(dut.deposit, {"table": 0, "index": 5})   # finally satisfy the fetch

    async def host(ctx):
        b = Bench(ctx)
        await b.idle(3)
        for k in range(12):
            offered = b.cycle
            a, r, v = await b.host(dut, READ, 0, 6)
            log["host_waits"].append(a - offered)
            assert not ctx.get(dut.fetch_done.valid)

    simulate(dut, core_fetch, core_deposit, host)
    assert max(log["host_waits"]) <= 3, log["host_waits"]
    assert log["fetch"][2] == OK


def test_throughput_host_and_deposit_streams():
    """Each port takes a request every 3 cycles; together they use the memory in 2
    cycles of 3."""
    dut = SyncUnit(CFG, key_timeout=4)
    N = 40
    accepts = {"host": [], "deposit": []}
    answers = {"host": [], "deposit": []}

    def producer(port, name, payloads):
        async def tb(ctx):
            b = Bench(ctx)
            for p in payloads:
                accepts[name].append(await b.put(port, p))
        return tb

    def consumer(port, name):
        async def tb(ctx):
            ctx.set(port.ready, 1)
            async for _, _, valid, value in ctx.tick().sample(port.valid, port.payload.as_value()):
                if valid:
                    answers[name].append(value)
                    if len(answers[name]) == N:
                        return
        return tb

    simulate(dut,
             producer(dut.host, "host", [{"op": DEPOSIT, "table": 1, "index": 9}] * N),
             consumer(dut.host_rsp, "host"),
             producer(dut.deposit, "deposit", [{"table": 1, "index": 10}] * N),
             consumer(dut.deposit_done, "deposit"))
    for name in accepts:
        gaps = {b - a for a, b in zip(accepts[name], accepts[name][1:])}
        assert gaps == {3}, (name, gaps)
    assert answers["host"] == list(range(1, N + 1))
    assert answers["deposit"] == [OK] * N


def test_stream_with_stalled_answers():
    """A host stream whose answers are taken late: a request is granted only when its
    answer cannot overwrite one that was not taken (every answer, in order)."""
    dut = SyncUnit(CFG, key_timeout=4)
    N = 25
    rng = random.Random(7)
    answers = []

    async def producer(ctx):
        b = Bench(ctx)
        await b.host(dut, WRITE, 0, 3, 0)
        for _ in range(N):
            await b.put(dut.host, {"op": DEPOSIT, "table": 0, "index": 3})

    async def consumer(ctx):
        b = Bench(ctx)
        await b.get(dut.host_rsp)                    # the WRITE's answer
        for _ in range(N):
            answers.append((await b.get(dut.host_rsp, stall=rng.choice([0, 1, 2, 5])))[1])

    simulate(dut, producer, consumer)
    assert answers == list(range(1, N + 1))


def test_back_to_back_on_one_entry():
    """A deposit stream and a host DEPOSIT stream on the same entry are granted in
    adjacent cycles, so each read misses the previous operation's write, which
    stage 1 takes from the write port: no deposit is lost."""
    dut = SyncUnit(CFG, key_timeout=4)
    N = 30
    host_answers, grants = [], []

    async def depositor(ctx):
        b = Bench(ctx)
        ctx.set(dut.deposit_done.ready, 1)
        for _ in range(N):
            grants.append(("deposit", await b.put(dut.deposit, {"table": 2, "index": 7})))

    async def host(ctx):
        b = Bench(ctx)
        for _ in range(N):
            a, _, v = await b.host(dut, DEPOSIT, 2, 7)
            grants.append(("host", a))
            host_answers.append(v)
        await b.idle(6)
        host_answers.append((await b.host(dut, READ, 2, 7))[2])

    simulate(dut, depositor, host)
    cycles = sorted(c for _, c in grants)
    assert 1 in {b - a for a, b in zip(cycles, cycles[1:])}, "no grants in adjacent cycles"
    assert host_answers[-1] == 2 * N
    assert host_answers[:-1] == sorted(set(host_answers[:-1])), host_answers


# --- random sequences ------------------------------------------------------------------

def _random_entry(rng, hot):
    return rng.choice(hot) if rng.random() < 0.9 else (rng.randrange(4), rng.randrange(256))


def _random_host_op(rng, hot, low=12):
    """Written values are mostly below `low` (fetches wait) or near 255 (overflow)."""
    t, i = _random_entry(rng, hot)
    op = rng.choice([READ, READ, WRITE, WRITE, DEPOSIT, DEPOSIT, DEPOSIT])
    value = rng.choice([rng.randrange(0, low)] * 4 + [rng.randrange(250, 256), rng.randrange(256)])
    return op, t, i, value


@pytest.mark.parametrize("seed", range(3))
def test_random_sequential(seed):
    """One operation at a time on a random port, with random gaps and back-pressure:
    every answer, its latency, and the final tables match the model exactly."""
    kt = 5
    rng = random.Random(seed)
    hot = rng.sample(BOUNDARY, 4)
    dut = SyncUnit(CFG, key_timeout=kt)
    model = KeyModel()

    async def tb(ctx):
        b = Bench(ctx)
        for _ in range(300):
            await b.idle(rng.choice([0, 0, 0, 1, 3]))
            stall = rng.choice([0, 0, 1, 4])
            kind = rng.choice(["fetch", "deposit", "host", "host"])
            if kind == "fetch":
                (t, i), n = _random_entry(rng, hot), rng.randint(1, 8)
                a, r, v = await b.fetch(dut, t, i, n, stall)
                want = OK if model.fetch(t, i, n) else TIMEOUT
                assert v == want, (t, i, n, v)
                assert r - a == (LATENCY if want == OK else kt + 1)
            elif kind == "deposit":
                t, i = _random_entry(rng, hot)
                a, r, v = await b.deposit(dut, t, i, stall)
                assert (r - a, v) == (LATENCY, model.deposit(t, i)), (t, i)
            else:
                op, t, i, value = _random_host_op(rng, hot)
                a, r, v = await b.host(dut, op, t, i, value, stall)
                assert (r - a, v) == (LATENCY, model.host(op, t, i, value)), (op, t, i, value)
        got = await read_all(b, dut)
        assert got == {(t, i): model.keys[t][i] for t in range(4) for i in range(256)}

    simulate(dut, tb, name=f"sync_seq_{seed}")


@pytest.mark.parametrize("seed", range(3))
def test_random_concurrent(seed):
    """Fetches, deposits and host accesses on all three ports at once. Each answer's
    cycle gives the cycle its operation took effect; replaying the operations in
    that order on the model must reproduce every answer and the final tables."""
    kt = 24
    rng = random.Random(100 + seed)
    hot = rng.sample(BOUNDARY, 2)
    dut = SyncUnit(CFG, key_timeout=kt)
    events = []                                      # (effect cycle, kind, args, answer, accept cycle)
    done = set()
    final = {}

    async def fetcher(ctx):
        b, r_ = Bench(ctx), random.Random(rng.random())
        for _ in range(60):
            await b.idle(r_.choice([0, 0, 2, 5]))
            (t, i), n = _random_entry(r_, hot), r_.randint(1, 8)
            a, r, v = await b.fetch(dut, t, i, n, r_.choice([0, 0, 2]))
            events.append((r - 1, "fetch", (t, i, n), v, a))
        done.add("fetch")

    async def depositor(ctx):
        b, r_ = Bench(ctx), random.Random(rng.random())
        for _ in range(120):
            await b.idle(r_.choice([0, 1, 3, 8]))
            t, i = _random_entry(r_, hot)
            a, r, v = await b.deposit(dut, t, i, r_.choice([0, 0, 3]))
            events.append((r - 1, "deposit", (t, i), v, a))
        done.add("deposit")

    async def host(ctx):
        b, r_ = Bench(ctx), random.Random(rng.random())
        while len(done) < 2:
            await b.idle(r_.choice([0, 0, 1, 4]))
            op, t, i, value = _random_host_op(r_, hot, low=3)
            a, r, v = await b.host(dut, op, t, i, value, r_.choice([0, 0, 1]))
            events.append((r - 1, "host", (op, t, i, value), v, a))
        final.update(await read_all(b, dut))

    simulate(dut, fetcher, depositor, host, name=f"sync_conc_{seed}")

    effects = [e for e in events if not (e[1] == "fetch" and e[3] == TIMEOUT)]
    cycles = [e[0] for e in effects]
    assert len(set(cycles)) == len(cycles), "two operations took effect in the same cycle"
    by_cycle = {e[0]: e for e in effects}
    timeouts = [e for e in events if e[1] == "fetch" and e[3] == TIMEOUT]
    # count[(t, i)][c]: the entry's count after the effects of cycles <= c, for timed-out fetches
    watch = {(t, i) for _, _, (t, i, n), _, _ in timeouts}
    history = {e: [] for e in watch}
    model = KeyModel()
    for c in range(max(cycles) + 1):
        e = by_cycle.get(c)
        if e is not None:
            _, kind, args, answer, accept = e
            if kind == "fetch":
                assert answer == OK and c - accept <= kt, e
                assert model.fetch(*args), f"fetch {args} answered in cycle {c + 1} without the keys"
            elif kind == "deposit":
                assert answer == model.deposit(*args), e
            else:
                assert answer == model.host(*args), e
        for t, i in watch:
            history[t, i].append(model.keys[t][i])
    for c, _, (t, i, n), _, a in timeouts:
        assert kt <= c - a <= kt + 2, (t, i, n, a, c)
        # Polls come every third cycle and every change takes a grant of its own, so keys
        # present for two cycles in a row would be seen (one of the three grants is a poll).
        window = history[t, i][a:a + kt]
        assert not any(x >= n and y >= n for x, y in zip(window, window[1:])), (t, i, n, a, window)
    assert final == {(t, i): model.keys[t][i] for t in range(4) for i in range(256)}
    kinds = {(e[1], e[3]) for e in events}
    assert {("fetch", OK), ("fetch", TIMEOUT), ("deposit", OK)} <= kinds, kinds
    assert any(e[1] == "fetch" and e[3] == OK and e[0] - e[4] > 1 for e in events), "no fetch waited"
