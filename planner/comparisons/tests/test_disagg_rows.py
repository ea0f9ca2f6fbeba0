"""A comparison's per-region-and-model rows show each pool of a disaggregated endpoint apart: its own GPU type,
hours and cost (summed, the endpoint's row is the same as before)."""

from __future__ import annotations

import pytest

from planner.comparisons.core.aggregate import _cost_by_gpu, aggregate
from planner.comparisons.core.runner import load_workload
from planner.comparisons.core.summary import summarise
from simulations.engine import parse_scenario, simulate
from simulations.tests.test_disagg_runs import TOY, disagg_scenario


def _summary():
    d = disagg_scenario()
    e = d["fleet"]["endpoints"][0]
    e["prefill_pool"]["deployment"] = dict(TOY, name="toy/fast/tp1", gpu="fast",
                                           price_per_instance_hour={"on_demand": 50.0})
    e["decode_pool"]["deployment"] = dict(TOY, name="toy/slow/tp1", gpu="slow",
                                          price_per_instance_hour={"on_demand": 10.0})
    eng = parse_scenario(d)
    result = simulate(eng, load_workload(d, eng))
    return summarise(result, key="static", strategy="static"), result


def test_each_pool_keeps_its_gpu_hours_and_cost():
    s, result = _summary()
    (ep,) = s["endpoints"]
    pools = {p["pool"]: p for p in ep["pools"]}
    assert [p["pool"] for p in ep["pools"]] == ["prefill", "decode"]
    assert pools["prefill"]["gpu"] == "fast" and pools["decode"]["gpu"] == "slow"
    assert ep["gpu"] == "fast + slow" and ep["deployment"] == "toy/fast/tp1 + toy/slow/tp1"
    usage = {u["pool"]: u for u in result.usage}  # the engine's own per-pool usage rows
    for pool in ("prefill", "decode"):
        assert pools[pool]["cost_usd"] == usage[pool]["cost_usd"] > 0
        # instance-hours x the pool's own price: 1 prefill instance at $50/h, 2 decode instances at $10/h
        price = 50.0 if pool == "prefill" else 10.0
        assert pools[pool]["cost_usd"] == pytest.approx(pools[pool]["instance_hours"] * price)
    assert ep["cost_usd"] == pytest.approx(sum(p["cost_usd"] for p in ep["pools"]))
    by_gpu = _cost_by_gpu(s)
    assert set(by_gpu) == {"fast", "slow"} and by_gpu["fast"] == pools["prefill"]["cost_usd"]


def test_the_breakdown_has_one_row_per_pool():
    s, _ = _summary()
    rows = aggregate({"static": s}, "static")["breakdown"]
    assert [(r["pool"], r["gpu"]) for r in rows] == [("prefill", "fast"), ("decode", "slow")]
    assert all(r["region"] == "r1" and r["model"] == "toy" for r in rows)
