"""SageServe's hourly ILP against hand-computed cases."""

import subprocess
import sys

import numpy as np
import pytest

from planner.optimizer import HourlyInputs, SolverOptions, solve_hourly

H100 = "h100"


def two_regions(epsilon, solver="highs"):
    # One model, theta = 100 TPS per instance, alpha = 10 per instance, start-up 2 h -> sigma = 20.
    # Region A has 2 instances for a 300 TPS peak; region B has 3 for a 100 TPS peak.
    # Global peak = max(250 + 100, 300 + 80) = 380 TPS -> 4 instances in total.
    return solve_hourly(
        HourlyInputs(
            models=["m"],
            regions=["A", "B"],
            gpus=[H100],
            n={("m", "A", H100): 2, ("m", "B", H100): 3},
            rho={("m", "A"): [250, 300], ("m", "B"): [100, 80]},
            theta={("m", H100): 100},
            alpha={H100: 10},
            startup_s={("m", H100): 7200},
            epsilon=epsilon,
            # a generous limit: this checks the optimum, not the speed (a loaded CI host stalled one solve past 10 s)
            options=SolverOptions(solver=solver, time_limit_s=120),
        )
    )


@pytest.mark.parametrize("solver", ["highs", "cbc"])
def test_with_epsilon_one_each_region_scales_to_its_own_peak(solver):
    plan = two_regions(1.0, solver)
    # A needs 3 (+1: alpha + sigma = 30), B needs 1 (-2: -20); objective = 10.
    assert plan.status == "optimal"
    assert plan.delta == {("m", "A", H100): 1, ("m", "B", H100): -2}
    assert plan.objective == pytest.approx(10.0)
    assert plan.gamma == pytest.approx(-10.0) and plan.mu == pytest.approx(20.0)
    assert plan.rerouted_tps == {}


@pytest.mark.parametrize("solver", ["highs", "cbc"])
def test_rerouting_to_another_region_is_cheaper_than_scaling_locally_when_epsilon_is_below_one(solver):
    plan = two_regions(0.5, solver)
    # A must serve 150 locally (2 instances suffice), the global 380 TPS needs 4 instances:
    # keep A at 2, shrink B from 3 to 2 (-10) and reroute A's excess 100 TPS to B. No start-up paid.
    assert plan.status == "optimal"
    assert plan.delta == {("m", "B", H100): -1}
    assert plan.objective == pytest.approx(-10.0)
    assert plan.mu == pytest.approx(0.0)
    assert plan.rerouted_tps == {("m", "A"): pytest.approx(100.0)}
    assert plan.objective < two_regions(1.0, solver).objective


def one_endpoint(**kw):
    base = dict(
        models=["m"],
        regions=["r"],
        gpus=[H100],
        n={("m", "r", H100): 1},
        rho={("m", "r"): [150, 420, 300]},
        theta={("m", H100): 100},
        alpha={H100: 10},
        startup_s={("m", H100): 1800},
    )
    base.update(kw)
    return solve_hourly(HourlyInputs(**base))


def test_it_scales_out_to_the_peak_of_the_next_hour_and_pays_sigma_on_additions_only():
    plan = one_endpoint()
    # ceil(420 / 100) = 5 -> delta = +4; gamma = 40, mu = 4 * 10 * 0.5 = 20.
    assert plan.delta == {("m", "r", H100): 4}
    assert plan.objective == pytest.approx(60.0)
    assert plan.target("m", "r") == 5


def test_the_beta_buffer_adds_ten_percent_of_last_hours_niw_load():
    # beta = 0.1 * 900 = 90 -> peak 510 -> 6 instances; 0.1 * 300 = 30 -> 450 -> still 5.
    assert one_endpoint(niw_past_hour_tps={("m", "r"): 900}).target("m", "r") == 6
    assert one_endpoint(niw_past_hour_tps={("m", "r"): 300}).target("m", "r") == 5
    assert one_endpoint(niw_past_hour_tps={("m", "r"): 900}).demand_tps[("m", "r")] == pytest.approx(510)


def test_it_scales_in_to_the_smallest_covering_fleet_because_gamma_is_signed():
    plan = one_endpoint(n={("m", "r", H100): 5}, rho={("m", "r"): [120]})
    assert plan.delta == {("m", "r", H100): -3}
    assert plan.objective == pytest.approx(-30.0)


def test_it_never_removes_more_instances_than_exist():
    plan = one_endpoint(n={("m", "r", H100): 2}, rho={("m", "r"): [0]})
    assert plan.delta == {("m", "r", H100): -2}
    assert plan.instances == {}


def test_min_instances_per_endpoint_keep_an_idle_endpoint_alive():
    plan = one_endpoint(n={}, rho={("m", "r"): [0]}, min_instances={("m", "r"): 2})
    assert plan.delta == {("m", "r", H100): 2}


two_gpus = dict(
    gpus=["a100", H100],
    n={},
    rho={("m", "r"): [300]},
    theta={("m", "a100"): 100, ("m", H100): 300},
    alpha={"a100": 6, H100: 20},
    startup_s={("m", "a100"): 1800, ("m", H100): 1800},
)


def test_it_picks_the_gpu_type_with_the_cheapest_covering_mix():
    # 3 x A100 = 3 * (6 + 3) = 27 beats 1 x H100 = 20 + 10 = 30 and 2 A100 + 1 H100 = 48.
    plan = one_endpoint(**two_gpus)
    assert plan.delta == {("m", "r", "a100"): 3}
    assert plan.objective == pytest.approx(27.0)


def test_a_gpu_quota_pushes_the_choice_to_another_gpu_type():
    # Only 2 A100 GPUs allowed (1 GPU per instance): 2 A100 + 1 H100 = 48 > 1 H100 = 30.
    plan = one_endpoint(**two_gpus, quota_gpus={("r", "a100"): 2})
    assert plan.delta == {("m", "r", H100): 1}
    assert plan.objective == pytest.approx(30.0)
    # With 8 GPUs per A100 instance, a 16-GPU quota is also 2 instances.
    plan = one_endpoint(**two_gpus, quota_gpus={("r", "a100"): 16}, gpus_per_instance={("m", "a100"): 8})
    assert plan.delta == {("m", "r", H100): 1}


def test_an_impossible_hour_is_reported_infeasible_not_optimal():
    plan = one_endpoint(max_instances={("m", "r"): 3})
    assert plan.status == "infeasible"
    assert not plan.ok and plan.delta == {}


def test_with_a_shortfall_penalty_an_impossible_hour_returns_a_plan_and_names_the_gap():
    plan = one_endpoint(max_instances={("m", "r"): 3}, shortfall_penalty=1000.0)
    assert plan.status == "optimal"
    assert plan.target("m", "r") == 3
    assert plan.shortfall_tps["m@r"] == pytest.approx(120.0)  # 420 - 3 * 100
    assert plan.shortfall_tps["m"] == pytest.approx(120.0)


def test_a_model_that_cannot_run_on_a_gpu_type_only_shrinks_there():
    plan = one_endpoint(
        gpus=["a100", H100], n={("m", "r", "a100"): 2}, theta={("m", H100): 100}, alpha={"a100": 5, H100: 10}
    )
    assert plan.delta == {("m", "r", "a100"): -2, ("m", "r", H100): 5}


def random_inputs(n_models, r, g, seed=0, **kw):
    rng = np.random.default_rng(seed)
    models, regions, gpus = [f"m{i}" for i in range(n_models)], [f"r{j}" for j in range(r)], [f"g{k}" for k in range(g)]
    theta = {(i, k): float(rng.uniform(50, 500)) for i in models for k in gpus}
    alpha = {k: float(rng.uniform(10, 100)) for k in gpus}
    n = {(i, j, k): int(rng.integers(0, 6)) for i in models for j in regions for k in gpus}
    rho = {(i, j): list(rng.uniform(100, 2000, size=12)) for i in models for j in regions}
    startup = {(i, k): 600.0 for i in models for k in gpus}
    return HourlyInputs(
        models=models, regions=regions, gpus=gpus, n=n, rho=rho, theta=theta, alpha=alpha, startup_s=startup, **kw
    )


def test_a_solve_stopped_by_its_time_limit_is_never_called_optimal():
    plan = solve_hourly(random_inputs(20, 20, 5, options=SolverOptions(time_limit_s=1e-4, gap_rel=0.0)))
    assert plan.status in ("time_limit", "no_solution")


def test_highs_and_cbc_agree_on_a_random_small_case():
    a = solve_hourly(random_inputs(4, 3, 1, seed=3))
    b = solve_hourly(random_inputs(4, 3, 1, seed=3, options=SolverOptions(solver="cbc", time_limit_s=20)))
    assert a.status == b.status == "optimal"
    assert a.objective == pytest.approx(b.objective, rel=1e-6)


def test_the_plan_covers_every_regional_and_global_peak():
    inputs = random_inputs(4, 3, 2, seed=5, epsilon=0.7)
    plan = solve_hourly(inputs)
    assert plan.ok
    for (i, j), cap in plan.capacity_tps.items():
        assert cap >= 0.7 * plan.demand_tps[(i, j)] - 1e-6
    for i in inputs.models:
        total = sum(cap for (m, _j), cap in plan.capacity_tps.items() if m == i)
        peak = max(sum(inputs.rho[(i, j)][w] for j in inputs.regions) for w in range(12))
        assert total >= peak - 1e-6


def test_malformed_inputs_raise_a_value_error_naming_the_field():
    with pytest.raises(ValueError, match="epsilon"):
        one_endpoint(epsilon=0)
    with pytest.raises(ValueError, match="alpha"):
        one_endpoint(alpha={})


def test_the_optimiser_imports_without_django():
    code = (
        "import sys, json, planner.optimizer, planner.optimizer.multiperiod as m, planner.optimizer.scenario as s\n"
        "sc = s.parse_scenario({'regions': ['A'], 'hours': 1, 'deployments': [{'name': 'llama2-70b/h100-80gb/tp8'}],"
        " 'demand': [{'model': 'llama2-70b', 'region': 'A', 'tps': 100}]})\n"
        "assert m.solve_plan(sc).ok\n"
        "assert 'django' not in sys.modules, 'django imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"epsilon": 0.7},
        {"quota_gpus": {("r0", "g0"): 6, ("r2", "g1"): 4}},
        {"epsilon": 0.6, "quota_gpus": {("r1", "g0"): 5}, "max_instances": {("m0", "r0"): 12}},
    ],
)
def test_the_block_decomposition_finds_the_same_optimum_as_the_monolithic_model(extra):
    split = solve_hourly(random_inputs(3, 3, 2, seed=11, **extra))
    whole = solve_hourly(random_inputs(3, 3, 2, seed=11, decompose=False, **extra))
    assert split.status == whole.status == "optimal"
    assert split.objective == pytest.approx(whole.objective, rel=1e-6)


EXACT = SolverOptions(time_limit_s=30, gap_rel=0.0)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"epsilon": 0.7},
        {"gamma_mode": "additions", "min_instances": {("m1", "r0"): 3}},
        {"epsilon": 0.6, "quota_gpus": {("r1", "g0"): 5, ("r0", "g1"): 3}, "max_instances": {("m0", "r0"): 12}},
        {"shortfall_penalty": 50.0, "quota_gpus": {("r0", "g0"): 2, ("r0", "g1"): 2}, "decompose": False},
    ],
)
def test_the_highspy_fast_path_finds_the_same_optimum_as_the_pulp_reference(seed, extra):
    fast = solve_hourly(random_inputs(3, 3, 2, seed=seed, options=EXACT, **extra))
    ref = solve_hourly(random_inputs(3, 3, 2, seed=seed, options=EXACT, use_pulp=True, **extra))
    cbc = solve_hourly(random_inputs(3, 3, 2, seed=seed, options=SolverOptions(solver="cbc", time_limit_s=30), **extra))
    assert fast.status == ref.status == cbc.status == "optimal"
    assert fast.objective == pytest.approx(ref.objective, rel=1e-7, abs=1e-6)
    assert fast.objective == pytest.approx(cbc.objective, rel=1e-6, abs=1e-6)
    assert sum(fast.shortfall_tps.values()) == pytest.approx(sum(ref.shortfall_tps.values()), abs=1e-6)


def test_the_highspy_fast_path_reports_an_impossible_hour_as_infeasible():
    inputs = dict(quota_gpus={("r0", "g0"): 0, ("r0", "g1"): 0})
    fast = solve_hourly(random_inputs(2, 2, 2, seed=1, options=EXACT, **inputs))
    ref = solve_hourly(random_inputs(2, 2, 2, seed=1, options=EXACT, use_pulp=True, **inputs))
    assert fast.status == ref.status == "infeasible"
