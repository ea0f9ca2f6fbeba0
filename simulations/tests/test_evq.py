"""The instance event queue pops live events in (time, seq) order, whatever the reschedules (either build)."""

from __future__ import annotations

import numpy as np
import pytest

from simulations.engine.evq import InstanceEvents


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
        n = len(q.t)
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
