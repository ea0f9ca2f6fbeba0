"""Benchmark the capacity optimiser: SageServe's hourly ILP and the multi-period plan.

    .venv/bin/python tests/benchmarks/bench_ilp.py            # all cases
    .venv/bin/python tests/benchmarks/bench_ilp.py --quick    # only the small ones

Random but seeded instances: theta per (model, GPU) uniform 50-500 TPS, VM costs uniform 10-100, current
fleet 0-5 per (model, region, GPU), 12 five-minute windows of 100-2000 TPS (hourly ILP); diurnal demand
with a per-endpoint phase for the plans. Prints one line per case and, last, ONE JSON object.
Targets: hourly 20x20x5 < 1 s; 24-hour plan 20x20x5 < 30 s, optimal or within a 1 % gap.
SageServe reports 1.41 s (4x3x1) and 33 s (20x20x5) for its hourly ILP.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from planner.optimizer import HourlyInputs, SolverOptions, solve_hourly  # noqa: E402
from planner.optimizer.multiperiod import solve_plan  # noqa: E402
from planner.optimizer.scenario import parse_scenario  # noqa: E402


def hourly_inputs(n_models, r, g, seed=0, **kw):
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


def plan_scenario(
    n_models,
    r,
    g,
    hours=24,
    seed=0,
    rerouting=False,
    gap=0.01,
    time_limit=60.0,
    solver="highs",
    demand_lo=5000.0,
    demand_hi=40000.0,
):
    rng = np.random.default_rng(seed)
    gpus = {}
    for k in range(g):
        od = float(rng.uniform(2, 13))
        gpus[f"g{k}"] = {"on_demand": round(od, 3), "reserved": round(od * 0.63, 3), "spot": round(od * 0.4, 3)}
    deployments = []
    for i in range(n_models):
        for k in range(g):
            gpi = int(rng.choice([1, 2, 4, 8]))
            deployments.append(
                {
                    "model": f"m{i}",
                    "gpu": f"g{k}",
                    "gpus_per_instance": gpi,
                    "theta_tps": round(float(rng.uniform(100, 600)) * gpi, 1),
                    "startup_s": float(rng.choice([155, 600, 900])),
                }
            )
    demand = []
    for i in range(n_models):
        for j in range(r):
            base, phase = float(rng.uniform(demand_lo, demand_hi)), float(rng.uniform(0, 24))
            series = [
                round(base * (0.5 + 0.5 * math.sin(math.pi * ((h + phase) % 24) / 24) ** 2), 1) for h in range(hours)
            ]
            demand.append({"model": f"m{i}", "region": f"r{j}", "tps": series, "cv": 0.1})
    regions = [f"r{j}" for j in range(r)]
    sc = {
        "name": f"bench {n_models}x{r}x{g} {hours}h",
        "hours": hours,
        "risk_quantile": 0.9,
        "regions": regions,
        "gpus": gpus,
        "deployments": deployments,
        "demand": demand,
        "quotas": [{"region": f"r{j}", "gpu": f"g{k}", "max_gpus": 4000} for j in range(r) for k in range(g)],
        "spot": {
            "risk_discount": 0.3,
            "available": [{"region": f"r{j}", "gpu": f"g{k}", "max_gpus": 32} for j in range(r) for k in range(g)],
        },
        "solver": {"name": solver, "time_limit_s": time_limit, "gap_rel": gap},
    }
    if rerouting:  # a ring: each region may send to its two neighbours
        lat = [{"from": regions[j], "to": regions[(j + 1) % r], "ms": 40} for j in range(r)]
        sc["rerouting"] = {"enabled": True, "max_latency_ms": 50, "min_local_share": 0.5, "latency_ms": lat}
    return sc


def run_hourly(name, inputs, results):
    t0 = time.perf_counter()
    plan = solve_hourly(inputs)
    wall = time.perf_counter() - t0
    row = {
        "case": name,
        "status": plan.status,
        "wall_s": round(wall, 3),
        "solve_s": round(plan.solve_time_s, 3),
        "build_s": round(plan.build_time_s, 3),
        "gap": None if plan.gap is None else round(plan.gap, 5),
        "detail": plan.detail[-60:],
    }
    print(json.dumps(row), flush=True)
    results.append(row)


def run_plan(name, scenario, results, **kw):
    t0 = time.perf_counter()
    plan = solve_plan(parse_scenario(scenario), **kw)
    wall = time.perf_counter() - t0
    row = {
        "case": name,
        "status": plan.status,
        "wall_s": round(wall, 3),
        "solve_s": round(plan.solve_time_s, 3),
        "build_s": round(plan.build_time_s, 3),
        "gap": None if plan.gap is None else round(plan.gap, 5),
        "size": plan.size,
        "cost": plan.cost.get("total"),
        "static_peak": plan.static_peak.get("total"),
        "uncovered": len(plan.shortfalls),
        "detail": plan.detail[-60:],
    }
    print(json.dumps(row), flush=True)
    results.append(row)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="only the 4x3x1 cases")
    ap.add_argument("--monolithic", action="store_true", help="also the undecomposed 20x20x5 hourly ILP (slow)")
    ap.add_argument("--slow", action="store_true", help="also the 20x20x5 plan with rerouting (no plan in 30 s)")
    args = ap.parse_args()
    results: list[dict] = []
    gap1 = SolverOptions(time_limit_s=60, gap_rel=0.01)
    exact = SolverOptions(time_limit_s=60, gap_rel=1e-4)
    run_hourly("hourly 4x3x1 highs gap 1e-4", hourly_inputs(4, 3, 1, options=exact), results)
    run_hourly(
        "hourly 4x3x1 cbc gap 1e-4",
        hourly_inputs(4, 3, 1, options=SolverOptions(solver="cbc", time_limit_s=60, gap_rel=1e-4)),
        results,
    )
    run_plan("plan 24h 4x3x1", plan_scenario(4, 3, 1), results)
    run_plan("plan 24h 4x3x1 ring rerouting", plan_scenario(4, 3, 1, rerouting=True), results)
    run_plan("plan 168h 4x3x1", plan_scenario(4, 3, 1, hours=168), results)
    if not args.quick:
        run_hourly("hourly 20x20x5 eps=1 highs gap 1%", hourly_inputs(20, 20, 5, options=gap1), results)
        run_hourly("hourly 20x20x5 eps=1 highs gap 1e-4", hourly_inputs(20, 20, 5, options=exact), results)
        run_hourly(
            "hourly 20x20x5 eps=1 highs gap 1% via PuLP (reference path)",
            hourly_inputs(20, 20, 5, use_pulp=True, options=gap1),
            results,
        )
        run_hourly("hourly 20x20x5 eps=0.8 highs gap 1%", hourly_inputs(20, 20, 5, epsilon=0.8, options=gap1), results)
        run_hourly(
            "hourly 20x20x5 eps=1 cbc gap 1%",
            hourly_inputs(20, 20, 5, options=SolverOptions(solver="cbc", time_limit_s=60, gap_rel=0.01)),
            results,
        )
        if args.monolithic:
            run_hourly(
                "hourly 20x20x5 eps=1 highs monolithic gap 1%",
                hourly_inputs(20, 20, 5, decompose=False, options=gap1),
                results,
            )
        run_plan("plan 24h 20x20x5 limit 30s", plan_scenario(20, 20, 5, time_limit=30.0), results)
        run_plan(
            "plan 24h 20x20x5 limit 30s one model (no pieces)",
            plan_scenario(20, 20, 5, time_limit=30.0),
            results,
            decompose=False,
        )
        run_plan("plan 24h 20x20x5 limit 120s", plan_scenario(20, 20, 5, time_limit=120.0), results)
        run_plan("plan 24h 10x10x2", plan_scenario(10, 10, 2, time_limit=30.0), results)
        run_plan("plan 24h 10x10x2 ring rerouting", plan_scenario(10, 10, 2, rerouting=True, time_limit=30.0), results)
        if args.slow:
            run_plan(
                "plan 24h 20x20x5 ring rerouting limit 30s",
                plan_scenario(20, 20, 5, rerouting=True, time_limit=30.0),
                results,
            )
    print(
        json.dumps(
            {
                "benchmark": "bench_ilp",
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "load_avg_1m": round(os.getloadavg()[0], 2),
                "results": results,
            }
        )
    )


if __name__ == "__main__":
    main()
