"""The hourly ILP's two-pool form: a disaggregated endpoint's prefill pool covers its prompt TPS and its decode pool
its output TPS, each on the GPU type that does its phase cheapest (ai-dynamo/aiconfigurator's heterogeneous P/D)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.optimizer import HourlyInputs, SolverOptions, solve_hourly


def _hand_case(**kw) -> HourlyInputs:
    # GPU h: $10/h, 1,000 prompt TPS or 100 output TPS per instance; GPU a: $4/h, 300 prompt TPS or 80 output TPS.
    # Prompt peak 2,000 TPS: 2 h ($20) beats 7 a ($28) and 1 h + 4 a ($26). Output peak 400 TPS: 5 a ($20) beats
    # 4 h ($40) and any mix (1 h + 4 a = 420 TPS, $26). The two pools' cheapest answer: 2 h prefill + 5 a decode, $40.
    return HourlyInputs(models=["m"], regions=["r"], gpus=["h", "a"], n={}, rho={("m", "r"): [1500.0, 2000.0]},
                        theta={("m", "h"): 1000.0, ("m", "a"): 300.0}, alpha={"h": 10.0, "a": 4.0},
                        decode_rho={("m", "r"): [400.0, 250.0]}, decode_theta={("m", "h"): 100.0, ("m", "a"): 80.0},
                        options=SolverOptions(time_limit_s=30.0, gap_rel=0.0), **kw)


@pytest.mark.parametrize("how", [{}, {"use_pulp": True}, {"options": SolverOptions(solver="cbc", gap_rel=0.0)}])
def test_each_pool_on_the_gpu_that_does_its_phase_cheapest(how):
    plan = solve_hourly(replace(_hand_case(), **how))
    assert plan.status == "optimal"
    assert plan.instances == {("m", "r", "h"): 2}
    assert plan.decode_instances == {("m", "r", "a"): 5}
    assert plan.objective == pytest.approx(40.0) and plan.gamma == pytest.approx(40.0)
    assert plan.capacity_tps[("m", "r")] == pytest.approx(2000.0)
    assert plan.decode_capacity_tps[("m", "r")] == pytest.approx(400.0) and plan.decode_demand_tps[("m", "r")] == 400.0


def test_both_pools_count_in_the_quota_and_the_endpoint_maximum():
    # a quota of 4 a-GPUs: the decode pool takes 4 a (320 TPS) + 1 h (100) = 420 >= 400 at $26 (3 a + 2 h: $32)
    plan = solve_hourly(_hand_case(quota_gpus={("r", "a"): 4}))
    assert plan.instances == {("m", "r", "h"): 2}
    assert plan.decode_instances == {("m", "r", "a"): 4, ("m", "r", "h"): 1}
    assert plan.objective == pytest.approx(20.0 + 16.0 + 10.0)
    # at most 6 instances over both pools: prefill still needs 2 h, so the decode pool gets 4, and only 4 h cover
    # 400 output TPS with 4 instances ($40; 4 a give 320)
    capped = solve_hourly(_hand_case(max_instances={("m", "r"): 6}))
    assert capped.instances == {("m", "r", "h"): 2} and capped.decode_instances == {("m", "r", "h"): 4}
    assert capped.objective == pytest.approx(60.0)


def test_without_decode_demand_the_model_is_the_one_pool_model():
    one = solve_hourly(replace(_hand_case(), decode_rho={}, decode_theta={}))
    assert one.instances == {("m", "r", "h"): 2} and one.decode_instances == {} and one.objective == pytest.approx(20.0)


def test_decode_instances_of_an_aggregated_endpoint_are_refused():
    with pytest.raises(ValueError, match="decode_n"):
        solve_hourly(_hand_case(decode_n={("m", "x", "a"): 1}))
