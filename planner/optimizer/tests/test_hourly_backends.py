"""The hourly ILP is described once (hourly_model.describe); its array (highspy) and PuLP backends must agree.

Random small instances cover every part of the description: GPU types a model cannot use, existing instances,
several windows, the NIW buffer, epsilon < 1 (the global row), both gamma modes, min / max instances, GPU quotas,
the shortfall penalty, with and without the block decomposition. Each instance is solved to optimality by the
array path (HiGHS), by PuLP with HiGHS and by PuLP with CBC; the optima and the statuses must agree, and each
plan must satisfy the constraints as recomputed here from the inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.optimizer import HourlyInputs, SolverOptions, solve_hourly
from planner.optimizer.hourly import planned_demand


def random_inputs(seed: int) -> HourlyInputs:
    rng = np.random.default_rng(seed)
    models = [f"m{a}" for a in range(rng.integers(1, 4))]
    regions = [f"r{b}" for b in range(rng.integers(1, 4))]
    gpus = [f"g{c}" for c in range(rng.integers(1, 3))]
    theta = {(i, k): float(rng.choice([0.0, 50.0, 80.0, 120.0])) for i in models for k in gpus}
    theta[(models[0], gpus[0])] = 100.0  # every instance has one placeable pair
    windows = int(rng.integers(1, 4))
    kw: dict = dict(
        models=models, regions=regions, gpus=gpus,
        n={(i, j, k): int(rng.integers(0, 4)) for i in models for j in regions for k in gpus if rng.random() < 0.6},
        rho={(i, j): [float(x) for x in rng.uniform(0, 400, windows)] for i in models for j in regions},
        theta=theta,
        alpha={k: float(rng.choice([3.0, 7.0, 10.0])) for k in gpus},
        startup_s={(i, k): float(rng.choice([0.0, 600.0, 3600.0])) for i in models for k in gpus},
        niw_past_hour_tps={(i, j): float(rng.uniform(0, 100)) for i in models for j in regions},
        epsilon=float(rng.choice([1.0, 0.6])),
        gamma_mode=str(rng.choice(["signed", "additions"])),
        decompose=bool(rng.random() < 0.7),
    )
    if rng.random() < 0.4:
        kw["min_instances"] = {(models[0], regions[-1]): int(rng.integers(1, 4))}
    if rng.random() < 0.4:
        kw["max_instances"] = {(models[-1], regions[0]): int(rng.integers(2, 8))}
    if rng.random() < 0.4:
        kw["quota_gpus"] = {(regions[0], gpus[0]): int(rng.integers(2, 12))}
        kw["gpus_per_instance"] = {(i, gpus[0]): int(rng.choice([1, 2])) for i in models}
    if rng.random() < 0.4:
        kw["shortfall_penalty"] = float(rng.choice([0.5, 5.0]))
    if rng.random() < 0.5:  # the two-pool form: some endpoints disaggregated, a decode pool of their own
        disagg = [(i, j) for i in models for j in regions if rng.random() < 0.6] or [(models[0], regions[0])]
        kw["decode_rho"] = {key: [float(x) for x in rng.uniform(0, 60, windows)] for key in disagg}
        kw["decode_theta"] = {(i, k): float(rng.choice([0.0, 8.0, 15.0])) for i in models for k in gpus}
        for i in models:  # every model can decode somewhere
            kw["decode_theta"][(i, gpus[-1])] = max(kw["decode_theta"][(i, gpus[-1])], 10.0)
        kw["decode_n"] = {(i, j, k): int(rng.integers(0, 3)) for (i, j) in disagg for k in gpus if rng.random() < 0.5}
    return HourlyInputs(**kw)


def _options(solver: str) -> SolverOptions:
    return SolverOptions(solver=solver, time_limit_s=60.0, gap_rel=0.0)


def _check_feasible(inputs: HourlyInputs, plan) -> None:
    """The plan's instances meet every hard row of the model, recomputed from the inputs."""
    local, global_ = planned_demand(inputs)
    inst = plan.instances

    def capacity(i, regions):
        return sum(v * inputs.theta.get((i, k), 0.0) for (m, j, k), v in inst.items() if m == i and j in regions)

    for key, v in inst.items():
        assert v >= 0, key
    soft = inputs.shortfall_penalty is not None
    for i in inputs.models:
        for j in inputs.regions:
            if not soft:
                assert capacity(i, [j]) >= inputs.epsilon * local[(i, j)] - 1e-6, (i, j)
            count = sum(v for (m, r, _k), v in inst.items() if (m, r) == (i, j))
            assert count >= inputs.min_instances.get((i, j), 0)
            assert count <= inputs.max_instances.get((i, j), math.inf)
        if not soft:
            assert capacity(i, inputs.regions) >= global_[i] - 1e-6, i
    for (j, k), quota in inputs.quota_gpus.items():
        used = sum(v * inputs.gpus_per_instance.get((m, k), 1) for (m, r, g), v in inst.items() if (r, g) == (j, k))
        n_used = sum(v * inputs.gpus_per_instance.get((m, k), 1) for (m, r, g), v in inputs.n.items() if (r, g) == (j, k))
        assert used <= max(quota, n_used), (j, k)  # existing instances above a quota may stay if they cannot go
    _check_decode(inputs, plan)


def _check_decode(inputs: HourlyInputs, plan) -> None:
    """The decode pools: output-TPS coverage per disaggregated endpoint (at epsilon) and per model, both pools'
    instances within the endpoint's min / max, both pools' GPUs within the quota, as recomputed from the inputs."""
    dec = plan.decode_instances
    assert all(v >= 0 for v in dec.values())
    assert set(dec) <= {(i, j, k) for (i, j) in inputs.decode_rho for k in inputs.gpus}

    def capacity(i, regions):
        return sum(v * inputs.decode_theta.get((i, k), 0.0) for (m, j, k), v in dec.items() if m == i and j in regions)

    if inputs.shortfall_penalty is None and inputs.decode_rho:
        for (i, j), windows in inputs.decode_rho.items():
            assert capacity(i, [j]) >= inputs.epsilon * max(windows) - 1e-6, (i, j)
    for i in inputs.models:
        for j in inputs.regions:
            count = sum(v for (m, r, _k), v in list(plan.instances.items()) + list(dec.items()) if (m, r) == (i, j))
            assert count >= inputs.min_instances.get((i, j), 0)
            assert count <= inputs.max_instances.get((i, j), math.inf)
    def gpus(counts, j, k):
        return sum(v * inputs.gpus_per_instance.get((m, k), 1) for (m, r, g), v in counts.items() if (r, g) == (j, k))

    for (j, k), quota in inputs.quota_gpus.items():
        now = gpus(dict(inputs.n), j, k) + gpus(dict(inputs.decode_n), j, k)
        assert gpus(plan.instances, j, k) + gpus(dec, j, k) <= max(quota, now), (j, k)


@pytest.mark.parametrize("seed", range(40))
def test_array_and_pulp_backends_reach_the_same_optimum(seed):
    inputs = random_inputs(seed)
    from dataclasses import replace

    arrays = solve_hourly(replace(inputs, options=_options("highs")))
    pulp_highs = solve_hourly(replace(inputs, options=_options("highs"), use_pulp=True))
    pulp_cbc = solve_hourly(replace(inputs, options=_options("cbc")))
    assert arrays.status == pulp_highs.status == pulp_cbc.status
    if arrays.status != "optimal":
        assert arrays.status == "infeasible"
        return
    assert pulp_highs.objective == pytest.approx(arrays.objective, rel=1e-6, abs=1e-6)
    assert pulp_cbc.objective == pytest.approx(arrays.objective, rel=1e-6, abs=1e-6)
    for plan in (arrays, pulp_highs, pulp_cbc):
        _check_feasible(inputs, plan)
        # the objective is gamma + mu (+ the penalty of the shortfall) of the plan's own deltas
        penalty = (inputs.shortfall_penalty or 0.0) * sum(plan.shortfall_tps.values())
        assert plan.objective == pytest.approx(plan.gamma + plan.mu + penalty, rel=1e-6, abs=1e-4)


def test_the_random_instances_cover_every_part_of_the_model():
    seen = {"quota": 0, "min": 0, "max": 0, "soft": 0, "eps": 0, "additions": 0, "monolithic": 0, "infeasible": 0,
            "two-pool": 0}
    for seed in range(40):
        x = random_inputs(seed)
        seen["quota"] += bool(x.quota_gpus)
        seen["min"] += bool(x.min_instances)
        seen["max"] += bool(x.max_instances)
        seen["soft"] += x.shortfall_penalty is not None
        seen["eps"] += x.epsilon < 1
        seen["additions"] += x.gamma_mode == "additions"
        seen["monolithic"] += not x.decompose
        seen["two-pool"] += bool(x.decode_rho)
    assert all(v >= 3 for k, v in seen.items() if k != "infeasible"), seen
