"""One probe: a fleet (instance counts per (region, model)) replayed on one workload seed, reduced to what a
search needs: SLO attainment per origin (region, model) and tier, cost and GPU-hours. Django-free.

The engine is used through the comparison runner's public pieces (``engine_scenario_dict``, ``load_workload``,
``summarise``), so a probe runs a strategy exactly as a comparison does. A request counts for the (region, model)
it was sent from, so a group's attainment includes what other regions served for it.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Mapping

import numpy as np

from planner.capacity.core.disagg import disaggregate, pool_outcomes
from planner.comparisons.core.runner import LT_STRATEGIES, engine_scenario_dict, history_tps, load_workload, with_seed
from planner.comparisons.core.summary import summarise
from simulations.engine import parse_scenario, simulate

TIERS = ("IW-F", "IW-N", "NIW")
MODES = ("static", "floor")  # static: initial = min = max = count; floor: initial = min = count, max = the ceiling


def group_of(endpoint: Mapping) -> str:
    return f"{endpoint['region']}/{endpoint['model']}"


def groups_of(scenario: Mapping) -> list[str]:
    return sorted({group_of(e) for e in (scenario.get("fleet") or {}).get("endpoints", [])})


def fleet_key(fleet: Mapping[str, int]) -> str:
    """Canonical text of a fleet, the memo's key with the seed: 'us-east/llama2-70b=3,us-west/llama2-70b=4'."""
    return ",".join(f"{g}={int(n)}" for g, n in sorted(fleet.items()))


def parse_fleet_key(key: str) -> dict[str, int]:
    return {g: int(n) for g, n in (part.rsplit("=", 1) for part in key.split(",") if part)}


def fleet_scenario(base: Mapping, fleet: Mapping[str, int], *, mode: str = "static",
                   deployments: Mapping[str, str] | None = None, pools: Mapping[str, dict] | None = None) -> dict:
    """The base scenario with each (region, model) endpoint at its probed count (and deployment, if given); an
    endpoint in ``pools`` disaggregated, each pool at its count (planner.capacity.core.disagg)."""
    d = copy.deepcopy(dict(base))
    for e in d["fleet"]["endpoints"]:
        g = group_of(e)
        if g in (pools or {}):
            disaggregate(e, pools[g], fleet, mode)
            continue
        if g in (deployments or {}):
            e["deployment"] = deployments[g]
        if g not in fleet:
            continue
        n = int(fleet[g])
        ceiling = max(int(e.get("max", n)), n)
        e.update({"initial": n, "min": n, "max": n if mode == "static" else ceiling})
    return d


def slo_met(requests: Mapping, workload, slo) -> np.ndarray:
    """Per request: completed, TTFT within its tier's target, end-to-end within its tier's (or its deadline)."""
    tier = np.asarray(workload.tier)
    ttft = np.asarray(requests["ttft_s"], dtype=float)
    e2e = np.asarray(requests["e2e_s"], dtype=float)
    met = np.asarray(requests["completed"], dtype=bool).copy()
    for i, name in enumerate(TIERS):
        sel = tier == i
        if not sel.any():
            continue
        ok = ttft[sel] <= float(slo.ttft_s.get(name, math.inf))
        e2e_target = float(slo.e2e_s.get(name, math.inf))
        if workload.deadline_s is not None:
            dl = np.asarray(workload.deadline_s, dtype=float)[sel]
            arr = np.asarray(workload.arrival_s)[sel]
            ok &= np.where(np.isnan(dl), e2e[sel] <= e2e_target, arr + e2e[sel] <= dl)
        else:
            ok &= e2e[sel] <= e2e_target
        met[sel] &= ok
    return met


def unfixable_counts(workload, eng) -> dict[str, dict[str, int]]:
    """Per origin (region, model) and tier: requests whose prompt alone, prefilled on an idle instance of the
    group's fastest deployment, takes longer than the tier's TTFT target, so no count of that group serves them in
    time. A hint that steers the count search (a group these make miss is probed at its ceiling next), not a bound
    the answer relies on: a request served in another region, or a cached prefix, can beat it."""
    from simulations.engine.instance.perf import prefill_time

    tier = np.asarray(workload.tier)
    tokens = np.asarray(workload.input_tokens, dtype=float)
    code = np.asarray(workload.region, dtype=np.int64) * len(workload.model_names) + np.asarray(workload.model)
    specs: dict[int, list] = {}
    for e in eng.fleet.endpoints:
        if e.pool == "decode" or e.region not in workload.region_names or e.model not in workload.model_names:
            continue
        c = workload.region_names.index(e.region) * len(workload.model_names) + workload.model_names.index(e.model)
        specs.setdefault(c, []).append(e.deployment)
    out: dict[str, dict[str, int]] = {}
    for c, deps in specs.items():
        sel = code == c
        if not sel.any():
            continue
        floor = np.min([prefill_time(d, tokens[sel]) for d in deps], axis=0)
        row = {}
        for i, name in enumerate(TIERS):
            k = int(np.count_nonzero((tier[sel] == i) & (floor > float(eng.slo.ttft_s.get(name, math.inf)))))
            if k:
                row[name] = k
        if row:
            r, m = divmod(int(c), len(workload.model_names))
            out[f"{workload.region_names[r]}/{workload.model_names[m]}"] = row
    return out


def hopeless(counts: Mapping[str, list] | None, unfixable: Mapping[str, int] | None,
             targets: Mapping[str, float]) -> bool:
    """Some tier misses its target even if every request but the unfixable ones met its SLO."""
    for tier, target in targets.items():
        nk = (counts or {}).get(tier)
        k = (unfixable or {}).get(tier, 0)
        if nk and nk[0] and k and (nk[0] - k) / nk[0] < float(target):
            return True
    return False


def attainment_counts(met: np.ndarray, workload) -> tuple[dict, dict]:
    """({group: {tier: [n, met]}}, {tier: [n, met]}) by origin region and model."""
    tier = np.asarray(workload.tier)
    code = np.asarray(workload.region, dtype=np.int64) * len(workload.model_names) + np.asarray(workload.model)
    groups: dict[str, dict] = {}
    tiers: dict[str, list] = {}
    for i, name in enumerate(TIERS):
        sel = tier == i
        if not sel.any():
            continue
        tiers[name] = [int(sel.sum()), int(met[sel].sum())]
        n = np.bincount(code[sel], minlength=len(workload.region_names) * len(workload.model_names))
        k = np.bincount(code[sel], weights=met[sel].astype(float), minlength=n.size)
        for c in np.flatnonzero(n):
            r, m = divmod(int(c), len(workload.model_names))
            g = f"{workload.region_names[r]}/{workload.model_names[m]}"
            groups.setdefault(g, {})[name] = [int(n[c]), int(round(k[c]))]
    return groups, tiers


def deployment_of(base: Mapping, name_or_spec) -> dict:
    if isinstance(name_or_spec, dict):
        return name_or_spec
    named = (base.get("deployments") or {}).get(name_or_spec)
    if named is not None:
        return named
    from simulations.engine.simulator.scenario import _catalogue_lookup  # the catalogue's built-in deployments

    return _catalogue_lookup(name_or_spec) or {}


def group_deployments(base: Mapping) -> dict[str, dict]:
    return {group_of(e): deployment_of(base, e["deployment"]) for e in base["fleet"]["endpoints"]}


PRESERVE_WINDOW = ("preserve", "preserve-forecast", "preserve-hybrid")  # PreServe's window-target autoscalers


def preserve_capacity(scenario: Mapping, workload) -> dict[str, list[float]]:
    """PreServe's capacity profile per endpoint from the goodput table: mu_p = the deployment's ``theta_tps`` (input
    tokens/s one instance serves within the TTFT target), mu_d = mu_p x the group's mean output / input tokens (the
    same request rate), mu_t = mu_p + mu_d. {} when a deployment has no theta (then the bundle's profile stands)."""
    code = np.asarray(workload.region, dtype=np.int64) * len(workload.model_names) + np.asarray(workload.model)
    inp = np.asarray(workload.input_tokens, dtype=float)
    out_tokens = np.asarray(workload.output_tokens, dtype=float)
    capacity = {}
    for g, dep in group_deployments(scenario).items():
        theta = float(dep.get("theta_tps") or 0.0)
        region, model = g.split("/", 1)
        if theta <= 0:
            return {}
        if region not in workload.region_names or model not in workload.model_names:
            capacity[g] = [theta, theta, 2 * theta]
            continue
        sel = code == workload.region_names.index(region) * len(workload.model_names) + workload.model_names.index(model)
        ratio = float(out_tokens[sel].sum() / inp[sel].sum()) if sel.any() and inp[sel].sum() > 0 else 1.0
        capacity[g] = [round(theta, 3), round(theta * ratio, 3), round(theta * (1 + ratio), 3)]
    return capacity


def run_probe(base: Mapping, strategy: Mapping, fleet: Mapping[str, int], seed: int, *, mode: str = "static",
              deployments: Mapping[str, str] | None = None, pools: Mapping[str, dict] | None = None, progress=None,
              limits=None, trace=None, hourly: int | None = None) -> dict:
    """Simulate one (fleet, seed) under one strategy (``{"strategy", "bundle"?, "knobs"?}``); JSON-able outcome."""
    started = time.perf_counter()
    scenario = with_seed(fleet_scenario(base, fleet, mode=mode, deployments=deployments, pools=pools), seed)
    # the base scenario's own autoscaler knobs reach another family's strategy only as a comparison passes them
    # (planner.comparisons.core.runner.inherited_params)
    variant = {"key": strategy.get("key") or strategy["strategy"], "strategy": strategy["strategy"],
               "knobs": dict(strategy.get("knobs") or {}), "seed": int(seed)}
    if strategy.get("bundle"):
        variant["bundle"] = strategy["bundle"]
    if variant["strategy"] in LT_STRATEGIES:
        variant["knobs"].setdefault("niw_queue", bool(scenario.get("niw_queue", True)))
        if "history_tps" not in variant["knobs"]:
            hist = history_tps(scenario)
            if hist:
                variant["knobs"]["history_tps"] = hist
    eng = parse_scenario(engine_scenario_dict(scenario, variant), limits=limits)
    workload = load_workload(scenario, eng, trace=trace)
    if variant["strategy"] in PRESERVE_WINDOW and "capacity" not in variant["knobs"]:
        capacity = preserve_capacity(scenario, workload)
        if capacity:  # PreServe sized per endpoint from the goodput table (else the bundle's one profile)
            variant["knobs"]["capacity"] = capacity
            eng = parse_scenario(engine_scenario_dict(scenario, variant), limits=limits)
    result = simulate(eng, workload, progress=progress)
    summary = summarise(result, key=variant["key"], strategy=variant["strategy"])
    met = slo_met(result.requests, workload, eng.slo)
    groups, tiers = attainment_counts(met, workload)
    tot = summary["totals"]
    extra = {}
    if hourly:  # a plan's check: attainment per hour of arrival
        from planner.capacity.core.plan_draws import hourly_attainment

        extra["hourly"] = hourly_attainment(met, np.asarray(workload.arrival_s), np.asarray(workload.tier), hourly)
    extra["unfixable"] = unfixable_counts(workload, eng)
    if pools:  # each pool's own signal (the search's prefill and decode groups)
        extra["pools"] = pool_outcomes(result.requests, workload, eng.slo, slo_met, attainment_counts)
    return {**extra,
        "seed": int(seed), "fleet": fleet_key(fleet), "mode": mode, "groups": groups, "tiers": tiers,
        "cost_usd": tot.get("cost_usd"), "gpu_hours": tot.get("gpu_hours"), "instance_hours": tot.get("instance_hours"),
        "energy_kwh": (summary.get("energy") or {}).get("energy_kwh"),
        "requests": int(len(workload)), "duration_s": float(summary.get("duration_s") or workload.duration_s),
        "endpoints": {f"{e['region']}/{e['model']}": endpoint_costs(e) for e in summary["endpoints"]},
        "wall_s": round(time.perf_counter() - started, 3),
    }


def endpoint_costs(e: Mapping) -> dict:
    """An endpoint's cost, hours and deployment; a disaggregated one also each pool's (its own GPU's price)."""
    out = {"cost_usd": e["cost_usd"], "gpu_hours": e["gpu_hours"], "instance_hours": e["instance_hours"],
           "deployment": e.get("deployment", "")}
    if e.get("pools"):
        out["pools"] = [{k: p[k] for k in ("pool", "deployment", "cost_usd")} for p in e["pools"]]
    return out


def attainment(counts: Mapping[str, list] | None, tier: str) -> float | None:
    """met / n of one tier (None when the tier had no requests)."""
    nk = (counts or {}).get(tier)
    return None if not nk or not nk[0] else nk[1] / nk[0]


def shortfall(counts: Mapping[str, list] | None, targets: Mapping[str, float]) -> tuple[float, float] | None:
    """(the largest target - attainment over the tiers with requests, that tier's attainment): how far the group is
    from meeting its targets (<= 0: it meets them); None when no tier had requests."""
    worst = None
    for tier, target in targets.items():
        a = attainment(counts, tier)
        if a is not None and (worst is None or float(target) - a > worst[0]):
            worst = (float(target) - a, a)
    return worst


def meets(counts: Mapping[str, list] | None, targets: Mapping[str, float]) -> bool:
    """Every tier with requests attains its target share (a group or the whole run)."""
    return all(a is None or a >= float(t) for a, t in ((attainment(counts, tier), t) for tier, t in targets.items()))
