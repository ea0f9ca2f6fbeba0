"""Fair comparisons: savings over several workload seeds, against the untuned baseline and against the
cheapest tuned baseline that is at least as good on every tier's SLO attainment. Django-free.

Input: the normalised summaries (summary.py) of a comparison whose variants may carry ``group`` / ``seed`` (one
run per seed) and ``role: "tuning"`` (the baseline-knob sweep, ``tune_point`` its knobs). Output, per strategy
(group, tuning runs excluded)::

    {"key", "strategy", "bundle", "seeds": [...], "n": runs,
     "gpu_hours": {min, mean, max}, "gpu_hours_above_floor": {...}, "provisioning_gpu_hours": {...},
     "attainment": {tier: {min, mean, max}}, "niw_ttft_p95_s": {...}, "llama2_instance_hours": {...},
     "vs_untuned": {"baseline": group, "saved_gpu_hours_pct": {min, mean, max}},
     "vs_tuned": {"baseline": group or None, "point": knobs, "saved_gpu_hours_pct": {...}, "why": text}}

Equal-SLO rule: a baseline candidate (the untuned baseline or any tuning point) qualifies for a strategy when,
for every tier both have, its mean attainment over the seeds is >= the strategy's mean minus ``tolerance``;
the cheapest qualifying candidate by mean GPU-hours is that strategy's tuned baseline. Savings are then taken
seed by seed (same workload) and reported as min / mean / max.
"""

from __future__ import annotations

import math

TIERS = ("IW-F", "IW-N", "NIW")
DEFAULT_TOLERANCE = 0.005


def _stats(values) -> dict | None:
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not vals:
        return None
    return {"min": min(vals), "mean": sum(vals) / len(vals), "max": max(vals), "n": len(vals)}


def _tot(s: dict, field: str):
    return (s.get("totals") or {}).get(field)


def _att(s: dict, tier: str):
    return ((s.get("tiers") or {}).get(tier) or {}).get("attainment")


def _model_ih(s: dict, model: str):
    rows = [e for e in s.get("endpoints", []) if e.get("model") == model]
    return sum(float(e.get("instance_hours") or 0.0) for e in rows) if rows else None


def _saving(base: dict, run: dict):
    b, r = _tot(base, "gpu_hours"), _tot(run, "gpu_hours")
    if not b or r is None:
        return None
    return 100.0 * (float(b) - float(r)) / float(b)


def _niw(s: dict) -> dict:
    return (s.get("tiers") or {}).get("NIW") or {}


def _unserved_pct(t: dict) -> float | None:
    n, done = t.get("n"), t.get("completed")
    return 100.0 * (1.0 - float(done) / n) if n and done is not None else None


def _methods(summaries) -> dict:
    """Which forecast method actually ran the hourly decisions, fallbacks included, summed over the runs."""
    out: dict[str, int] = {}
    for s in summaries:
        for m, k in ((s.get("totals") or {}).get("forecast_methods") or {}).items():
            out[m] = out.get(m, 0) + int(k)
    return out


def methods_text(methods: dict | None) -> str:
    """"arima 72, naive (fallback) 3": the forecast method that ran each hourly decision, over the seeds."""
    return ", ".join(f"{m} {n}" for m, n in sorted((methods or {}).items(), key=lambda x: -x[1])) or "-"


def fair_summary(summaries: dict[str, dict], variants: list[dict], baseline: str, *,
                 tolerance: float | None = None, model_of_interest: str = "llama2-70b") -> dict:
    """See the module docstring. ``baseline``: the untuned baseline's key (any of its seeds)."""
    by_key = {v["key"]: v for v in variants}
    groups: dict[str, dict[object, str]] = {}  # group -> seed -> key
    meta: dict[str, dict] = {}
    for v in variants:
        g = v.get("group", v["key"])
        groups.setdefault(g, {})[v.get("seed")] = v["key"]
        meta.setdefault(g, v)
    if tolerance is None:
        tolerance = next((float(v["tune_tolerance"]) for v in variants if "tune_tolerance" in v), DEFAULT_TOLERANCE)
    base_group = by_key.get(baseline, {}).get("group", baseline)
    base_runs = groups.get(base_group, {})

    def runs(g):
        return {seed: summaries[k] for seed, k in groups.get(g, {}).items() if k in summaries}

    def mean_att(g):
        out = {}
        for tier in TIERS:
            st = _stats(_att(s, tier) for s in runs(g).values())
            if st:
                out[tier] = st["mean"]
        return out

    candidates = [base_group] + [g for g, v in meta.items() if v.get("role") == "tuning"]
    rows = []
    for g, v in meta.items():
        if v.get("role") == "tuning":
            continue
        mine = runs(g)
        if not mine:
            continue
        seeds = sorted(mine, key=lambda x: (x is None, x))
        row = {
            "key": g, "strategy": v.get("strategy"), "bundle": v.get("bundle", ""), "is_baseline": g == base_group,
            "seeds": [x for x in seeds if x is not None], "n": len(mine),
            "gpu_hours": _stats(_tot(s, "gpu_hours") for s in mine.values()),
            "gpu_hours_above_floor": _stats(_tot(s, "gpu_hours_above_floor") for s in mine.values()),
            "floor_gpu_hours": _stats(_tot(s, "floor_gpu_hours") for s in mine.values()),
            "provisioning_gpu_hours": _stats(_tot(s, "provisioning_gpu_hours") for s in mine.values()),
            "gpu_hours_without_provisioning": _stats(_tot(s, "gpu_hours_without_provisioning") for s in mine.values()),
            "attainment": {t: st for t in TIERS if (st := _stats(_att(s, t) for s in mine.values()))},
            "niw_ttft_p95_s": _stats(((s.get("tiers") or {}).get("NIW") or {}).get("ttft_p95") for s in mine.values()),
            # where the savings come from: NIW deferred (arrival -> admission) and left unserved
            "niw_deferral_p95_s": _stats(_niw(s).get("queueing_p95") for s in mine.values()),
            "niw_unserved_pct": _stats(_unserved_pct(_niw(s)) for s in mine.values()),
            "forecast_methods": _methods(mine.values()),
            f"{model_of_interest}_instance_hours": _stats(_model_ih(s, model_of_interest) for s in mine.values()),
            "vs_untuned": {"baseline": base_group, "saved_gpu_hours_pct": _stats(
                _saving(base_runs_s, mine[seed]) for seed in seeds
                if (base_runs_s := summaries.get(base_runs.get(seed, ""))) is not None)},
        }
        row["vs_tuned"] = _vs_tuned(g, mine, seeds, candidates, runs, mean_att, tolerance, meta)
        rows.append(row)
    tuning = [{"key": g, "point": meta[g].get("tune_point", {}), "gpu_hours": _stats(
        _tot(s, "gpu_hours") for s in runs(g).values()), "attainment": mean_att(g)}
        for g in candidates[1:]]
    return {"baseline": base_group, "tolerance": tolerance, "rows": rows, "tuning": tuning,
            "model_of_interest": model_of_interest,
            "rule": (f"tuned baseline = the cheapest of the untuned baseline and the tuning runs whose mean SLO "
                     f"attainment on every tier is >= the strategy's minus {100 * tolerance:.1f} points; savings "
                     "are per seed against that baseline's run on the same seed")}


def _vs_tuned(g, mine, seeds, candidates, runs, mean_att, tolerance, meta) -> dict:
    if len(candidates) == 1:
        return {"baseline": None, "why": "no tuning runs in this comparison", "saved_gpu_hours_pct": None}
    target = mean_att(g)
    ok = []
    for c in candidates:
        att = mean_att(c)
        if all(t in att and att[t] >= target[t] - tolerance for t in target):
            cost = _stats(_tot(s, "gpu_hours") for s in runs(c).values())
            if cost:
                ok.append((cost["mean"], c))
    if not ok:
        return {"baseline": None, "saved_gpu_hours_pct": None,
                "why": "no baseline variant reaches this strategy's attainment on every tier; widen the grid"}
    _, best = min(ok)
    other = runs(best)
    return {"baseline": best, "point": meta.get(best, {}).get("tune_point", {}),
            "saved_gpu_hours_pct": _stats(_saving(other[seed], mine[seed]) for seed in seeds if seed in other),
            "why": ""}
