"""The leaderboard on a reduced scale, pinned: two traces cut to their first 5 minutes, two seeds, two strategies.

Direction: more static instances never lower attainment; HPA with a lower running-requests target (more replicas)
never meets the SLO less often; every strategy's row has its defaults and both matched-SLO ways. Digest: the runs' figures, so any
change of the engine, the policies, the workloads or the rules shows here (regenerate docs/leaderboard.md then).
"""

from __future__ import annotations

import pytest

from planner.leaderboard.core import publish

# the reduced board's digest (6 significant digits of every run's figures)
DIGEST = "230a5dbeb3d6e48cbf2c390500cc8451adc709355e6083e4207d874822883251"


@pytest.fixture(scope="module")
def reduced():
    return publish.generate(traces=["azure-code", "burstgpt"], seeds=[1, 2], strategies=["hpa-running", "chiron"],
                            limit_s=300, workers=1)


def test_reduced_board_direction(reduced):
    for t in reduced["traces"]:
        curve = [c["attainment"] for c in t["static_curve"]]
        assert all(b >= a - 1e-12 for a, b in zip(curve, curve[1:], strict=False)), curve
        runs = [r for r in reduced["runs"] if r["trace"] == t["trace"] and r["strategy"] == "hpa-running"]
        att = {p: sum(r["attainment"] for r in runs if r["point"] == p) for p in range(4)}
        assert att[0] >= att[3], att  # target 4 running requests per pod vs 32
        rows = {r["strategy"]: r for r in t["rows"]}
        assert set(rows) == {"static", "hpa-running", "chiron"}
        assert rows["hpa-running"]["default"]["point"] == {"target": 16}
        assert all(r["rank"] == i for i, r in enumerate(t["rows"], start=1))
    assert reduced["meta"]["runs"] == 2 * 2 * (10 + 4 + 1)


def test_reduced_board_digest(reduced):
    assert reduced["digest"] == DIGEST
