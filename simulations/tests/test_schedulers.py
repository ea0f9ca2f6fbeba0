"""DPA's lazy bucket order equals the reference definition (a full sort by SageServe 6.5's rank)."""

from __future__ import annotations

import numpy as np
import pytest

from simulations.engine.policies.schedulers import DPA, PRIO_SHIFT
from simulations.tests.engine_helpers import FakeView


def reference_order(entries, now, tiers, tau_n, tau_p):
    """SageServe 6.5 as written: bucket by slack d = deadline - now, then d, then arrival order (seq)."""

    def rank(entry):
        key, seq, rid = entry
        prio = 1 if key >= PRIO_SHIFT else 0
        d = (key - prio * PRIO_SHIFT) - now
        t = tiers[rid]
        if d < -tau_n:
            bucket = 0  # severely expired
        elif d < 0:
            bucket = 5  # recently expired
        elif d <= tau_p:
            bucket = 1 if t == 0 else 2  # urgent IW-F, urgent others
        else:
            bucket = 3 if t == 0 else 4  # non-urgent IW-F, non-urgent others
        return (prio, bucket, d, seq)

    return sorted(entries, key=rank)


@pytest.mark.parametrize("seed", range(40))
def test_the_lazy_dpa_order_is_the_reference_order(seed):
    rng = np.random.default_rng(seed)
    tau_n, tau_p = (5.0, 0.5) if seed % 2 else (1.0, 1.0)
    sched = DPA({"tau_n": tau_n, "tau_p": tau_p}, [1.0, 60.0, 86400.0])
    now = float(rng.uniform(100, 5000))
    n = int(rng.integers(0, 300))
    tiers = rng.integers(0, 3, n)
    # deadlines around now, including the exact bucket boundaries and repeated deadlines (ties broken by seq)
    pool = np.r_[now + rng.uniform(-3 * tau_n, 3 * tau_p + 60, max(n, 1)),
                 [now - tau_n, now, now + tau_p, np.nextafter(now, 0), np.nextafter(now + tau_p, np.inf)]]
    deadlines = rng.choice(pool, n)
    prio = (rng.random(n) < 0.3).astype(int)
    entries = [(p * PRIO_SHIFT + d, int(s), rid) for rid, (p, d, s) in
               enumerate(zip(prio, deadlines, rng.permutation(n), strict=True))]
    sim = FakeView(tiers=tiers)
    got = list(sched.order(sorted(entries), now, sim))
    assert got == reference_order(entries, now, tiers, tau_n, tau_p)


def test_the_dpa_order_is_lazy():
    # admission usually takes the head of the first bucket: the generator must not walk the whole queue first
    sched = DPA({"tau_n": 5.0, "tau_p": 0.5}, [1.0, 60.0, 86400.0])
    n = 100_000
    tiers = np.zeros(n, dtype=int)
    entries = [(float(i), i, i) for i in range(n)]
    seen = []

    class Tiers:
        def __getitem__(self, rid):
            seen.append(rid)
            return tiers[rid]

    it = sched.order(entries, 50_000.0, FakeView(tiers=Tiers()))
    first = [next(it) for _ in range(3)]
    assert first == entries[:3]  # severely expired (d < -5) come first, in deadline order
    assert len(seen) == 0  # and were yielded without looking at a single tier
