"""Run an advisory back-test: the window "as run" (replicas forced as recorded) and each alternative strategy on the
same workload; their GPU-hours and SLO deltas against the as-run replay and, per endpoint, a timeline of the
active instances (serving + starting) each would have had against the recorded replicas: the mean absolute
replica-count error and the share of timeline samples whose count matches the record. Django-free.

The as-run replay reproduces the record exactly (``as_run_exact``; the timeline samples every
``engine.timeline_step_s``, a sample at t showing the fleet before the events of t).
"""

from __future__ import annotations

import numpy as np

from planner.backtests.core.latency import latency_gap, simulated_minutes
from planner.backtests.core.replicas import count_before
from planner.comparisons.core.runner import engine_scenario_dict, load_workload, with_seed
from planner.comparisons.core.summary import summarise
from planner.comparisons.core.variants import BUNDLE_STRATEGIES

AS_RUN = "as-run"
BUNDLE_STRATEGIES.setdefault(AS_RUN, "the recorded replica timeline, forced (an advisory back-test's baseline)")
MAX_ALTERNATIVES = 12
MAX_SEEDS = 10


def as_run_variant(recorded: dict, startup_s: float | None = None) -> dict:
    knobs = {"replicas": recorded}
    if startup_s is not None:
        knobs["startup_s"] = float(startup_s)
    return {"key": AS_RUN, "strategy": AS_RUN, "scheduler": "", "knobs": knobs}


def _active(result) -> tuple[list, dict]:
    tl = result.timeline or {}
    t = [float(x) for x in tl.get("t", [])]
    series = tl.get("series", {})
    S = np.asarray(series.get("serving", []), dtype=float)
    P = np.asarray(series.get("provisioning", []), dtype=float)
    return t, {name: (S[e] + P[e]).astype(int).tolist() for e, name in enumerate(tl.get("endpoints", []))}


def replica_error(recorded: dict, t: list, active: dict) -> dict:
    """Per recorded endpoint: mean |simulated - recorded| over the timeline samples and the share that match."""
    out = {}
    for ep, pts in recorded.items():
        sim = np.asarray(active.get(ep, [0] * len(t)), dtype=float)
        rec = np.asarray([count_before(pts, x) for x in t], dtype=float)
        diff = np.abs(sim - rec)
        out[ep] = {"mae": float(diff.mean()) if diff.size else 0.0,
                   "match_share": float((diff == 0).mean()) if diff.size else 1.0}
    return out


def _one(scenario: dict, variant: dict, workload, recorded: dict, limits=None) -> dict:
    from simulations.engine import parse_scenario, simulate

    eng = parse_scenario(engine_scenario_dict(with_seed(scenario, variant.get("seed")), variant), limits=limits)
    if workload is None:
        workload = load_workload(scenario, eng)
    result = simulate(eng, workload)
    summary = summarise(result, key=variant["key"], strategy=variant["strategy"],
                        scheduler=variant.get("scheduler", ""))
    t, active = _active(result)
    return {"summary": summary, "t": t, "active": active, "error": replica_error(recorded, t, active),
            "workload": workload, "requests": result.requests}


def _attainment(summary: dict) -> float | None:
    tiers = summary.get("tiers") or {}
    n = sum(v.get("n", 0) for v in tiers.values())
    if not n:
        return None
    return sum(v.get("attainment", 0.0) * v.get("n", 0) for v in tiers.values()) / n


def _pass(scenario, runs, recorded, *, measured, limits, progress, done, total):
    """One seed: the as-run replay then each alternative on the same workload. (rows, latency gap or None)."""
    rows, gap, workload, base = [], None, None, None
    for i, v in enumerate(runs):
        if progress is not None:
            progress(done / total, f"running {v['key']}" + (f" (seed {v['seed']})" if v.get("seed") is not None
                                                            else ""))
        done += 1
        r = _one(scenario, v, workload, recorded, limits=limits)
        workload = r.pop("workload")  # the same requests for every run of this seed
        requests = r.pop("requests")
        if i == 0 and measured:
            gap = latency_gap(measured, simulated_minutes(requests, list(measured)))
        summ = r["summary"]
        row = {"key": v["key"], "strategy": v["strategy"], "gpu_hours": summ["totals"]["gpu_hours"],
               "cost_usd": summ["totals"].get("cost_usd"), "attainment": _attainment(summ),
               "tiers": summ.get("tiers", {}), "replica_error": r["error"], "active": r["active"], "t": r["t"]}
        if base is None:
            base = row
        row["gpu_hours_delta"] = row["gpu_hours"] - base["gpu_hours"]
        row["attainment_delta"] = (None if row["attainment"] is None or base["attainment"] is None
                                   else row["attainment"] - base["attainment"])
        rows.append(row)
    return rows, gap


def _bands(passes: list[list[dict]]) -> dict:
    """Per run key: the min and max of its deltas over the seeds, and the seed count."""
    out = {}
    for rows in zip(*passes, strict=True):
        g = [r["gpu_hours_delta"] for r in rows]
        a = [r["attainment_delta"] for r in rows if r["attainment_delta"] is not None]
        out[rows[0]["key"]] = {"seeds": len(rows), "gpu_hours_delta": [min(g), max(g)],
                               "attainment_delta": [min(a), max(a)] if a else None}
    return out


def run_backtest(scenario: dict, recorded: dict, alternatives: list[dict], *, startup_s: float | None = None,
                 measured: dict | None = None, seeds: list[int] | None = None, progress=None, limits=None) -> dict:
    """The back-test's result (JSON-able). ``alternatives``: comparison variants (core/variants.build_variants);
    ``measured``: per-minute latency percentiles (core/latency.parse_latency) put beside the as-run replay's;
    ``seeds``: run everything once per seed (the scenario's seed: the engine's randomness and a synthetic
    workload) and give each delta's band (min-max over the seeds); the rows and timelines are the first seed's."""
    runs = [as_run_variant(recorded, startup_s)] + list(alternatives)[:MAX_ALTERNATIVES]
    seed_list = list(seeds or [None])[:MAX_SEEDS]
    total = len(runs) * len(seed_list)
    passes, gap = [], None
    for k, seed in enumerate(seed_list):
        vs = [dict(v, seed=seed) if seed is not None else v for v in runs]
        rows, g = _pass(scenario, vs, recorded, measured=measured if k == 0 else None, limits=limits,
                        progress=progress, done=k * len(runs), total=total)
        gap = g if k == 0 else gap
        passes.append(rows)
    out_runs = passes[0]
    exact = all(all(e["mae"] == 0 for e in p[0]["replica_error"].values()) for p in passes)
    recorded_series = {ep: [count_before(pts, x) for x in out_runs[0]["t"]] for ep, pts in recorded.items()}
    if progress is not None:
        progress(1.0, "back-test finished")
    return {"as_run_exact": exact, "t": out_runs[0]["t"], "recorded": recorded_series, "runs": out_runs,
            "latency_gap": gap, "seeds": [s for s in seed_list if s is not None],
            "bands": _bands(passes) if len(passes) > 1 else None}
