"""The instance event queue pops live events in (time, seq) order, whatever the reschedules (either build)."""

from __future__ import annotations

import numpy as np
import pytest

from simulations.engine.core.evq import InstanceEvents


@pytest.mark.parametrize("seed", range(20))
def test_pops_follow_time_then_seq_through_reschedules_and_cancels(seed):
    rng = np.random.default_rng(seed)
    q = InstanceEvents()
    live: dict[int, tuple[float, int]] = {}  # the reference: each instance's one pending event
    seq = 0
    popped = []
    for _ in range(3000):
        op = rng.random()
        if op < 0.05 or not live and op < 0.6:
            q.add_instance()
        n = q.size
        if n and op < 0.6:
            iid = int(rng.integers(n))
            seq += 1
            t = float(rng.integers(0, 50))  # coarse times: many ties, broken by seq
            q.schedule(iid, t, seq)
            live[iid] = (t, seq)
        elif n and op < 0.7:
            iid = int(rng.integers(n))
            q.cancel(iid)
            live.pop(iid, None)
        elif live:
            expect = min(live, key=lambda i: live[i])
            assert q.top_time() == live[expect][0] and q.top_seq() == live[expect][1]
            got = q.pop()
            assert got == expect
            popped.append(live.pop(got))
        assert len(q) == len(live)
    assert len(popped) > 100
    assert q.top_time() == float("inf") or live


def test_many_instances_grow_the_queue_and_keep_the_order():
    """Past the initial 64 slots (the compiled build grows its C arrays): every instance's event pops in order."""
    rng = np.random.default_rng(3)
    q = InstanceEvents()
    n = 1000
    for _ in range(n):
        q.add_instance()
    assert q.size == n
    times = rng.integers(0, 100, size=n).astype(float)
    for iid in range(n):
        q.schedule(iid, float(times[iid]), iid + 1)
    for iid in range(0, n, 7):  # reschedule some later, cancel a few
        times[iid] += 1000.0
        q.schedule(iid, float(times[iid]), n + iid + 1)
    for iid in range(3, n, 101):
        q.cancel(iid)
    expect = sorted((float(times[i]), (n + i + 1) if i % 7 == 0 else i + 1, i) for i in range(n) if (i - 3) % 101)
    got = []
    while len(q):
        got.append(q.pop())
    assert got == [e[2] for e in expect]
    assert q.top_time() == float("inf")
