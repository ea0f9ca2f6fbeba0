"""The multi-period plan's two-pool form: a disaggregated endpoint's prefill and decode pools, each with its own
deployments (theta in its phase's tokens/s), demand, initial fleet and limits, solved by hand; the refusals
naming the field."""

import pytest

from planner.optimizer.multiperiod import solve_plan
from planner.optimizer.scenario import ScenarioError, parse_scenario


def _dep(pool, gpu, theta):
    return {"model": "m", "pool": pool, "gpu": gpu, "gpus_per_instance": 1, "theta_tps": theta, "startup_s": 0}


BASE = {
    "hours": 2,
    "regions": ["A", "B"],
    "gpus": {"h100": {"on_demand": 10.0}, "a100": {"on_demand": 4.0}},
    # prefill: prompt tokens/s an instance sustains at its TTFT target; decode: output tokens/s at its ITL target
    "deployments": [_dep("prefill", "h100", 1000), _dep("prefill", "a100", 300),
                    _dep("decode", "h100", 200), _dep("decode", "a100", 150)],
    "demand": [{"model": "m", "region": "A", "pool": "prefill", "tps": 2000},
               {"model": "m", "region": "A", "pool": "decode", "tps": 600}],
    "solver": {"gap_rel": 0.0, "time_limit_s": 30},
}


def test_each_pool_lands_on_the_gpu_that_does_its_phase_cheapest():
    """Prefill 2,000 prompt TPS: 2 H100 ($20/h) against 7 A100 ($28/h); decode 600 output TPS: 4 A100 ($16/h)
    against 3 H100 ($30/h). Hand optimum: 2 H100 prefill + 4 A100 decode, $36/h, $72 over 2 h."""
    plan = solve_plan(parse_scenario(BASE))
    assert plan.status == "optimal" and plan.feasible
    rows = {(r["model"], r["pool"], r["gpu"], r["instances"]) for r in plan.instances}
    assert rows == {("m", "prefill", "h100", 2), ("m", "decode", "a100", 4)}
    assert plan.cost["total"] == pytest.approx(72.0)
    cov = {(c["pool"], c["hour"]): c["capacity"] for c in plan.coverage}
    assert cov[("prefill", 0)] == pytest.approx(2000.0) and cov[("decode", 0)] == pytest.approx(600.0)


def test_limits_and_initial_fleet_apply_per_pool():
    """At most 3 decode instances in A: 3 x 150 = 450 < 600 on A100, so the decode pool takes H100s as well:
    the cheapest 3 instances covering 600 are 3 H100 ($30/h) (2 A100 + 1 H100 give 500); the prefill pool keeps
    its 2 H100. An initial fleet is given per pool."""
    d = dict(BASE, limits=[{"model": "m", "region": "A", "pool": "decode", "max_instances": 3}])
    plan = solve_plan(parse_scenario(d))
    rows = {(r["pool"], r["gpu"], r["instances"]) for r in plan.instances if r["hour"] == 0}
    assert rows == {("prefill", "h100", 2), ("decode", "h100", 3)}
    assert plan.cost["total"] == pytest.approx(2 * (20 + 30))
    init = parse_scenario(dict(BASE, initial=[{"model": "m", "region": "A", "pool": "decode", "gpu": "a100",
                                               "instances": 2}]))
    assert init.initial == {("m#decode", "A", "a100"): 2}


def test_pools_are_not_rerouted():
    """Region B is 1 ms away and rerouting is on, but a pool's demand stays in its region (a request's KV moves
    between its pools, not between regions): B gets no instances."""
    d = dict(BASE, rerouting={"enabled": True, "latency_ms": [{"from": "A", "to": "B", "ms": 1}]},
             limits=[{"model": "m", "region": "A", "pool": "prefill", "max_instances": 1}])
    plan = solve_plan(parse_scenario(d))
    assert {r["region"] for r in plan.instances} == {"A"}
    assert plan.shortfalls and {s["pool"] for s in plan.shortfalls} == {"prefill"}  # 1 H100 covers 1,000 of 2,000
    assert any(w.startswith("m (prefill pool) in A: up to 1,000.0 TPS") for w in plan.diagnosis), plan.diagnosis


@pytest.mark.parametrize("change, field", [
    (lambda d: (d["deployments"].__delitem__(slice(2, 4)), d["demand"].pop()), "deployments[0].pool"),  # no decode
    (lambda d: d["demand"].pop(), "demand[0].pool"),  # prefill demand without decode demand
    (lambda d: d["demand"].append({"model": "m", "region": "B", "tps": 5}), "demand[2].model"),  # no aggregated m
    (lambda d: d["deployments"].append(_dep("prefill", "h100", 5)), "deployments[4]"),  # a second one
    (lambda d: d["demand"][0].update(pool="both"), "demand[0].pool"),
])
def test_bad_pools_are_refused_naming_the_field(change, field):
    import copy

    d = copy.deepcopy(BASE)
    change(d)
    with pytest.raises(ScenarioError) as exc:
        parse_scenario(d)
    assert exc.value.field == field, (exc.value.field, exc.value.message)
