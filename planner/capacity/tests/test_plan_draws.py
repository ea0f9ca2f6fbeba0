"""A plan's check, hour by hour: the demand drawn from the forecast's intervals, spot preemptions drawn, the
hours at risk counted by hand."""

from __future__ import annotations

import numpy as np
import pytest

from planner.capacity.core.plan_draws import (
    PLAN_TOKENS,
    demand_draw,
    drawn_scenario,
    draws_block,
    hours_at_risk,
    replicas_draw,
    sigma_of,
)

PLAN = {"hours": 3, "demand": [{"model": "m", "region": "r1", "tps": [800.0, 1600.0, 1200.0],
                                "quantiles": {"0.5": [800.0, 1600.0, 1200.0], "0.9": [1000.0, 2400.0, 1300.0]}}]}
RESULT = {"hours": 3,
          "instances": [{"hour": h, "model": "m", "region": "r1", "gpu": "g", "instances": n}
                        for h, n in enumerate([2, 4, 3])],
          "supply": [{"hour": h, "region": "r1", "gpu": "g", "used": n, "spot": s}
                     for h, (n, s) in enumerate([(2, 0), (4, 4), (3, 1)])]}


def test_the_spread_comes_from_the_std_the_cv_or_the_upper_quantile():
    z90 = 1.2815515655446004
    assert sigma_of(PLAN["demand"][0], 1) == pytest.approx(800.0 / z90)
    assert sigma_of({"tps": [100.0], "cv": 0.3}, 0) == pytest.approx(30.0)
    assert sigma_of({"tps": [100.0], "std": [7.0]}, 0) == 7.0
    assert sigma_of({"tps": [100.0]}, 0) == 0.0  # a point forecast: no spread


def test_hourly_demand_draws_have_the_forecasts_mean_and_spread():
    block = draws_block(PLAN, RESULT, spot_rate=0.0, tokens=PLAN_TOKENS)
    rng = np.random.default_rng(1)
    draws = np.array([demand_draw(block, rng)[("r1", "m")] for _ in range(4000)])
    assert draws.mean(axis=0) == pytest.approx([800.0, 1600.0, 1200.0], rel=0.02)
    assert draws.std(axis=0) == pytest.approx(block["groups"][0]["sigma"], rel=0.05)


def test_spot_preemptions_take_spot_instances_out_until_the_next_hour():
    block = draws_block(PLAN, RESULT, spot_rate=1.0, tokens=PLAN_TOKENS)  # every spot instance is reclaimed
    assert block["spot"]["share"]["r1/m"] == [0.0, 1.0, pytest.approx(1 / 3, abs=1e-3)]
    points = replicas_draw(block, np.random.default_rng(3))["r1/m"]
    hour1 = [c for t, c in points if 3600.0 <= t < 7200.0]
    assert hour1[0] == 4 and hour1[-1] == 0 and hour1 == sorted(hour1, reverse=True)  # all four go, one by one
    assert [c for t, c in points if t == 7200.0] == [3]  # the plan's next count comes back
    assert replicas_draw(draws_block(PLAN, RESULT, spot_rate=0.0, tokens=PLAN_TOKENS),
                         np.random.default_rng(3))["r1/m"] == [[0.0, 2], [3600.0, 4], [7200.0, 3]]


def test_a_draw_is_a_poisson_mix_per_hour_at_the_drawn_rate_and_the_same_seed_gives_the_same_draw():
    base = {"name": "x", "fleet": {}, "workload": {}, "plan_draws": draws_block(PLAN, RESULT, spot_rate=0.5,
                                                                                tokens=PLAN_TOKENS)}
    a, knobs = drawn_scenario(base, 7)
    b, knobs_b = drawn_scenario(base, 7)
    assert a == b and knobs == knobs_b and "plan_draws" not in a
    parts = a["workload"]["synthetic"]["parts"]
    assert [p["start_s"] for p in parts] == [0.0, 3600.0, 7200.0]
    assert all(p["rate_rps"] > 0 and p["duration_s"] == 3600.0 for p in parts)
    assert drawn_scenario(base, 8)[0] != a


def test_hours_at_risk_by_hand():
    ok, bad = [10, 10], [10, 8]
    draws = [{"hourly": {"IW-F": [ok, bad]}}, {"hourly": {"IW-F": [ok, ok]}}, {"hourly": {"IW-F": [ok, bad]}},
             {"hourly": {"IW-F": [ok, [0, 0]]}}]
    hours = hours_at_risk(draws, {"IW-F": 0.9}, probability=0.75)
    assert [h["p_miss"] for h in hours] == [0.0, pytest.approx(2 / 3)]  # hour 1: 2 of the 3 draws with requests
    assert [h["at_risk"] for h in hours] == [False, True]
