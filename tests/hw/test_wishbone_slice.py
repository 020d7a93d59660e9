# amaranth: UnusedElaboratable=no
"""`hw.wishbone_slice.WishboneSlice` between a Wishbone B4 classic master model
(random accesses, random gaps, the next access presented in the cycle after
``ack`` too) and a slave model that acks after 1 to 4 cycles and drives garbage on
``dat_r`` outside its ``ack``: the slave sees each access exactly once, in order,
with the master's fields held until its ``ack``; the master gets the slave's data
with an ``ack`` of one cycle, two cycles after the slave's."""

import random

from amaranth.sim import Simulator

from xdsa.hw.wishbone_slice import WishboneSlice


def test_against_master_and_slave_models():
    dut = WishboneSlice()
    rng = random.Random(11)
    issued, seen, done = [], [], []
    n_accesses = 400

    def new_access():
        return {"adr": rng.getrandbits(30), "we": rng.getrandbits(1), "dat_w": rng.getrandbits(32),
                "sel": rng.getrandbits(4), "rdata": rng.getrandbits(32), "wait": rng.randint(1, 4)}

    async def bench(ctx):
        cur, t0, gap = None, 0, 0            # the master's access, the cycle it was presented
        held, ack_at = None, None            # the slave's access, the cycle it acks in
        for cycle in range(4000):
            # the master: presents its access until it sees ack (also in the ack's cycle)
            if cur is None and len(issued) < n_accesses:
                if gap:
                    gap -= 1
                else:
                    cur, t0 = new_access(), cycle
                    issued.append(cur)
            ctx.set(dut.up.cyc, cur is not None)
            ctx.set(dut.up.stb, cur is not None)
            for k in ("adr", "we", "dat_w", "sel"):
                ctx.set(getattr(dut.up, k), cur[k] if cur else rng.getrandbits(len(getattr(dut.up, k))))
            # the slave: acks its access `wait` cycles after it first saw it (a register
            # output, for one cycle); garbage read data outside the ack
            acking = held is not None and cycle == ack_at
            ctx.set(dut.down.ack, acking)
            ctx.set(dut.down.dat_r, held["rdata"] if acking else rng.getrandbits(32))
            stb = ctx.get(dut.down.cyc) and ctx.get(dut.down.stb)
            fields = {k: ctx.get(getattr(dut.down, k)) for k in ("adr", "we", "dat_w", "sel")}
            if held is not None:
                assert stb, f"cycle {cycle}: stb dropped before the slave's ack"
                assert fields == {k: held[k] for k in fields}, f"cycle {cycle}: the access changed before ack"
            elif stb:
                assert len(seen) < len(issued), f"cycle {cycle}: an access the master did not issue"
                held = issued[len(seen)]
                assert fields == {k: held[k] for k in fields}, f"cycle {cycle}: access {len(seen)}'s fields"
                seen.append(cycle)
                ack_at = cycle + held["wait"]
            if acking:
                held = None
            # the master sees ack: two cycles after the slave's, with the slave's data
            if ctx.get(dut.up.ack):
                assert cur is not None, f"cycle {cycle}: ack without an access"
                assert cycle == t0 + 2 + cur["wait"], f"cycle {cycle}: ack latency {cycle - t0}, wait {cur['wait']}"
                assert ctx.get(dut.up.dat_r) == cur["rdata"], f"cycle {cycle}: read data"
                done.append(cycle)
                cur, gap = None, rng.choice([0, 0, 1, 3])
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert len(issued) == len(seen) == len(done) == n_accesses
    # back-to-back accesses occurred: the next presented in the cycle after an ack
    assert sum(1 for a, b in zip(done, seen[1:]) if b == a + 2) > 50
