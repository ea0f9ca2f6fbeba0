"""A capacity plan checked hour by hour: each draw samples the hourly demand from the forecast's intervals and
the spot preemptions, and replays the plan's hourly instance counts against it. Django-free.

The check scenario carries a ``plan_draws`` block (built by ``draws_block`` from the plan's input and result)::

    {"hours": H, "seconds_per_hour": 3600, "tokens": {"input_mean", "input_sigma", "output_mean", "output_sigma"},
     "groups": [{"region", "model", "tps": [H], "sigma": [H]}],        # demand: the forecast and its spread
     "counts": {"region/model": [H]},                                  # the plan's instances per hour
     "spot": {"rate_per_hour": q, "share": {"region/model": [H]}}}     # spot share of each hour's instances

``drawn_scenario(base, seed)`` turns it into one draw (everything from ``seed``, so a probe is reproducible and
the memo holds): per (group, hour) the demand is Normal(tps, sigma) clipped at 0 (sigma from the forecast's
std, cv or its upper quantile: ``sigma_of``), the workload is Poisson per (hour, model) at that demand / the
mean prompt length, spread over the regions by their drawn demand; the fleet follows the plan's counts hour by
hour (the ``as-run`` autoscaler: instances of an hour serve from its start, the plan having paid their start-up),
and each spot instance of an hour is preempted with probability ``rate_per_hour`` at a uniform time in the hour
(it is drained: requests it runs finish, optimistic) and replaced at the next hour's count.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping

import numpy as np
from scipy.stats import norm

TIERS = ("IW-F", "IW-N", "NIW")
# assumed: a spot GPU instance is reclaimed about once in 1,000 instance-hours (0.73 a month; the cloud advisors'
# highest interruption bucket is "more than 20 % a month"); a check may give another rate
SPOT_INTERRUPTIONS_PER_HOUR = 0.001
# the plan's demand is prompt tokens/s; requests of these mean lengths (as simulations.plan_chain sizes them)
PLAN_TOKENS = {"input_mean": 1024.0, "input_sigma": 1.0, "output_mean": 256.0, "output_sigma": 1.0}
MAX_PARTS = 100  # the generator's limit on a mix's parts: hours are merged into blocks beyond it


def sigma_of(entry: Mapping, hour: int) -> float:
    """The hour's demand spread (TPS): the entry's std, else cv x tps, else from its highest quantile above the
    median (a normal through the median and that quantile), else 0."""
    tps = float(entry["tps"][hour])
    if entry.get("std"):
        return max(0.0, float(entry["std"][hour]))
    if entry.get("cv") is not None:
        return max(0.0, float(entry["cv"]) * tps)
    best = 0.0
    for q, series in (entry.get("quantiles") or {}).items():
        level = float(q)
        if 0.5 < level < 1.0 and hour < len(series):
            median = float((entry.get("quantiles") or {}).get("0.5", entry["tps"])[hour])
            best = max(best, (float(series[hour]) - median) / float(norm.ppf(level)))
    return max(0.0, best)


def draws_block(plan_input: Mapping, result: Mapping, *, spot_rate: float, tokens: Mapping) -> dict:
    """The ``plan_draws`` block of a plan's check: its demand (with spread), hourly counts and spot shares."""
    hours = int(result.get("hours") or plan_input.get("hours") or 24)
    groups = []
    for entry in plan_input.get("demand") or []:
        tps = [float(x) for x in entry["tps"]][:hours]
        tps += [tps[-1] if tps else 0.0] * (hours - len(tps))
        e = dict(entry, tps=tps)
        groups.append({"region": entry["region"], "model": entry["model"], "tps": tps,
                       "sigma": [round(sigma_of(e, h), 4) for h in range(hours)]})
    counts: dict[str, list[int]] = {}
    used: dict[tuple, int] = {}
    for row in result.get("instances") or []:
        key = f"{row['region']}/{row['model']}"
        counts.setdefault(key, [0] * hours)
        if 0 <= int(row["hour"]) < hours:
            counts[key][int(row["hour"])] += int(row["instances"])
            used[(row["region"], row["model"], int(row["hour"]))] = row.get("gpu")
    spot_share: dict[str, list[float]] = {}
    supply = {(s["region"], s["gpu"], int(s["hour"])): s for s in result.get("supply") or []}
    for key in counts:
        region, model = key.split("/", 1)
        shares = []
        for h in range(hours):
            s = supply.get((region, used.get((region, model, h)), h)) or {}
            total = float(s.get("used") or 0.0)
            shares.append(round(float(s.get("spot") or 0.0) / total, 4) if total > 0 else 0.0)
        spot_share[key] = shares
    return {"hours": hours, "seconds_per_hour": 3600.0, "tokens": dict(tokens), "groups": groups,
            "counts": counts, "spot": {"rate_per_hour": float(spot_rate), "share": spot_share}}


def _lengths(tokens: Mapping) -> dict:
    """Log-normal lengths with the given means (median = mean / exp(sigma^2 / 2))."""
    def dist(mean: float, sigma: float, cap: int) -> dict:
        return {"lognormal": {"median": round(mean / math.exp(sigma * sigma / 2.0), 3), "sigma": sigma}, "max": cap}
    return {"input": dist(float(tokens["input_mean"]), float(tokens["input_sigma"]), 32_768),
            "output": dist(float(tokens["output_mean"]), float(tokens["output_sigma"]), 8192)}


def demand_draw(block: Mapping, rng: np.random.Generator) -> dict[tuple, np.ndarray]:
    """(region, model) -> drawn TPS per hour."""
    out = {}
    for g in block["groups"]:
        tps = np.asarray(g["tps"], dtype=float)
        sigma = np.asarray(g["sigma"], dtype=float)
        out[(g["region"], g["model"])] = np.maximum(0.0, tps + sigma * rng.standard_normal(tps.size))
    return out


def replicas_draw(block: Mapping, rng: np.random.Generator) -> dict[str, list[list[float]]]:
    """Per endpoint the plan's count per hour, less the spot instances preempted within the hour."""
    hour_s = float(block["seconds_per_hour"])
    q = float(block["spot"]["rate_per_hour"])
    out = {}
    for key in sorted(block["counts"]):
        counts = block["counts"][key]
        share = block["spot"]["share"].get(key) or [0.0] * len(counts)
        points: list[list[float]] = []
        for h, n in enumerate(counts):
            points.append([h * hour_s, int(n)])
            spot = int(round(n * share[h]))
            lost = int(rng.binomial(spot, q)) if spot and q > 0 else 0
            for i, t in enumerate(sorted(rng.uniform(h * hour_s, (h + 1) * hour_s, lost))):
                points.append([round(float(t), 3), int(n) - i - 1])
        out[key] = points
    return out


def drawn_scenario(base: Mapping, seed: int) -> tuple[dict, dict]:
    """(the scenario of draw ``seed``, the as-run knobs) from a check scenario with a ``plan_draws`` block."""
    block = base["plan_draws"]
    rng = np.random.default_rng([int(seed), 2718])
    demand = demand_draw(block, rng)
    replicas = replicas_draw(block, rng)
    hours = int(block["hours"])
    hour_s = float(block["seconds_per_hour"])
    models = sorted({m for _, m in demand})
    span = max(1, math.ceil(hours * len(models) / MAX_PARTS))  # hours per part
    mean_in = float(block["tokens"]["input_mean"])
    lengths = _lengths(block["tokens"])
    parts = []
    for start in range(0, hours, span):
        stop = min(hours, start + span)
        for model in models:
            by_region = {r: float(v[start:stop].mean()) for (r, m), v in demand.items() if m == model}
            total = sum(by_region.values())
            if total <= 0:
                continue
            parts.append({"kind": "poisson", "rate_rps": total / mean_in, "start_s": start * hour_s,
                          "duration_s": (stop - start) * hour_s, "model": model, "tier": "IW-F",
                          "regions": {r: round(v / total, 6) for r, v in by_region.items() if v > 0},
                          "lengths": lengths})
    d = copy.deepcopy({k: v for k, v in base.items() if k != "plan_draws"})
    d["workload"] = {"synthetic": {"kind": "mix", "parts": parts, "seed": int(seed)}} if parts else d["workload"]
    d["seed"] = int(seed)
    return d, {"replicas": replicas, "startup_s": 0.0}


def hourly_attainment(met: np.ndarray, arrival_s: np.ndarray, tier: np.ndarray, hours: int,
                      hour_s: float = 3600.0) -> dict[str, list[list[int]]]:
    """Per tier: [[requests, met], ...] per hour of arrival."""
    idx = np.minimum((np.asarray(arrival_s) // hour_s).astype(np.int64), hours - 1)
    out = {}
    for i, name in enumerate(TIERS):
        sel = np.asarray(tier) == i
        if not sel.any():
            continue
        n = np.bincount(idx[sel], minlength=hours)
        k = np.bincount(idx[sel], weights=np.asarray(met)[sel].astype(float), minlength=hours)
        out[name] = [[int(a), int(round(b))] for a, b in zip(n, k, strict=True)]
    return out


def hours_at_risk(draws: list[Mapping], targets: Mapping[str, float], probability: float) -> list[dict]:
    """Per hour: P(some tier misses its target that hour) over the draws, and whether it exceeds 1 - probability."""
    hourly = [o.get("hourly") for o in draws if o.get("hourly")]
    if not hourly:
        return []
    hours = max(len(v) for h in hourly for v in h.values())
    out = []
    for h in range(hours):
        missed = 0
        counted = 0
        for per_tier in hourly:
            rows = [(t, per_tier[t][h]) for t in targets if t in per_tier and h < len(per_tier[t])]
            rows = [(t, r) for t, r in rows if r[0] > 0]
            if not rows:
                continue
            counted += 1
            missed += any(r[1] / r[0] < float(targets[t]) for t, r in rows)
        p = missed / counted if counted else None
        out.append({"hour": h, "p_miss": p, "draws": counted,
                    "at_risk": p is not None and p > 1.0 - float(probability)})
    return out
