"""The as-run replay: the recorded replica timeline is reproduced exactly (serving + starting instances)."""

from __future__ import annotations

import numpy as np
import pytest

from simulations.engine import ScenarioError, simulate
from simulations.tests.engine_helpers import scenario, workload

RECORD = [[0, 2], [600, 5], [1500, 3], [2400, 1], [3000, 4]]


def _run(record, **params):
    rng = np.random.default_rng(2)
    t = np.sort(rng.uniform(0, 3600, 3000))
    w = workload(t, rng.integers(100, 400, t.size), rng.integers(20, 120, t.size))
    sc = scenario(initial=1, lo=1, hi=2, strategy={"autoscaler": "as-run",
                                                   "params": {"replicas": {"r1/toy": record}, **params}})
    return simulate(sc, w).to_dict()


def test_as_run_reproduces_the_recorded_replica_timeline_exactly():
    d = _run(RECORD, startup_s=120)
    tl = d["timeline"]
    t = np.asarray(tl["t"])
    active = np.add(tl["series"]["serving"][0], tl["series"]["provisioning"][0])
    # a timeline sample at t shows the fleet before the events of t: the count holding just before t
    want = [next((c for ts, c in reversed(RECORD) if ts < x), RECORD[0][1]) for x in t]
    assert list(active) == want
    # a scale-up serves only after the start-up delay: two minutes after t=600 three instances are still starting
    i = int(np.searchsorted(t, 660))
    assert tl["series"]["provisioning"][0][i] == 3


def test_as_run_ignores_the_endpoints_bounds_and_the_spot_pool():
    d = _run([[0, 1], [100, 8]], startup_s=0)
    assert max(d["timeline"]["series"]["serving"][0]) == 8  # the endpoint's max is 2, no spot, no VM capacity


def test_a_negative_count_is_refused():
    with pytest.raises(ScenarioError):
        scenario(strategy={"autoscaler": "as-run", "params": {"replicas": {"r1/toy": [[0, -1]]}}})


def test_a_lower_count_removes_starting_instances_before_serving_ones():
    d = _run([[0, 1], [100, 4], [130, 1]], startup_s=60)
    s = d["timeline"]["series"]
    t = d["timeline"]["t"]
    i = t.index(180.0)
    assert s["serving"][0][i] == 1 and s["provisioning"][0][i] == 0 and s["draining"][0][i] == 0
    assert s["serving"][0][t.index(120.0)] == 1 and s["provisioning"][0][t.index(120.0)] == 3
