"""Disaggregated candidates of the capacity search: per endpoint, a prefill pool and a decode pool. Django-free.

The spec's ``disaggregated`` names, per model, the deployments to try for each pool (and the KV link). For every
strategy and every (prefill, decode) pair the search runs one more sub-search beside the aggregated ones; its
groups are the two pools of each disaggregated endpoint (``region/model#prefill``, ``region/model#decode``), so
the bisection finds the prefill count and the decode count (the P/D ratio) at once, each by its own signal:

- the prefill pool meets when enough requests get their first token within the TTFT target (the first token is
  produced on the prefill instance);
- the decode pool meets when enough requests complete within the end-to-end target *had their TTFT been at most
  its target* (e2e - ttft + min(ttft, TTFT target)): a slow prefill is the prefill pool's miss, not the decode's.

A request meeting both meets the full SLO; the shares of the two need not imply the full SLO's share, so a
candidate is accepted only on the full SLO over the new seeds, as every candidate is (planner.capacity.core.driver).
The cheapest accepted candidate wins, aggregated or not; ``serving_choice`` says why (cost and SLO attainment of
the best aggregated against the best disaggregated candidate).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping

import numpy as np

POOLS = ("prefill", "decode")
SEP = "#"


def pool_group(group: str, pool: str) -> str:
    return f"{group}{SEP}{pool}"


def split_group(key: str) -> tuple[str, str]:
    """'r/m#prefill' -> ('r/m', 'prefill'); 'r/m' -> ('r/m', '')."""
    group, _, pool = key.partition(SEP)
    return group, pool


def gpu_label(name: str) -> str:
    return name.split("/")[1] if name.count("/") >= 1 else name


def pairs(options: Mapping) -> list[tuple[str, str]]:
    """Every (prefill, decode) deployment pair of one model's option (the spec's model or its dict), in order."""
    if not isinstance(options, Mapping):
        options = options.model_dump()
    return [(p, d) for p in options["prefill"] for d in options["decode"]]


def pool_choice(option, pre: str, dec: str) -> dict:
    """One endpoint's pools as a probe builds them: the pair's deployments, the model's KV link and mixed pool (or
    None)."""
    out = {"prefill": pre, "decode": dec,
           "kv_link": option.kv_link.model_dump(exclude_none=True) if option.kv_link is not None else None}
    if option.mixed_pool is not None:  # only then: existing searches keep their probe inputs (and memo keys)
        out["mixed_pool"] = option.mixed_pool.model_dump()
    return out


def split_sets(spec) -> list[tuple[str, ...]]:
    """The models whose endpoints one disaggregated sub-search splits (the others stay aggregated): every model
    with options; with two or more, also each of them alone, so the search can mix aggregated and disaggregated
    endpoints (one model split, the others not)."""
    models = tuple(spec.disaggregated)
    return [models] + ([(m,) for m in models] if len(models) >= 2 else [])


def pair_count(spec) -> int:
    """How many disaggregated sub-searches per strategy: the most pairs any one model has (models with fewer
    repeat their last pair, as GPU options do), for each set of split models (``split_sets``)."""
    if spec.mode != "search" or not spec.disaggregated:
        return 0
    return max(len(pairs(o)) for o in spec.disaggregated.values()) * len(split_sets(spec))


def disagg_subs(spec, base: Mapping, name: str, ref: dict, mode: str, sub_cls) -> list:
    """The disaggregated sub-searches of one strategy: one per (prefill, decode) pair index and set of split
    models; a sub-search that splits only some models is labelled with them (``pd[model]:...``)."""
    out = []
    n = max([len(pairs(o)) for o in spec.disaggregated.values()] + [0]) if pair_count(spec) else 0
    sets = split_sets(spec)
    for split in sets:
        for i in range(n):
            pools, labels = {}, set()
            for e in base["fleet"]["endpoints"]:
                opt = spec.disaggregated.get(e["model"])
                if opt is None or e["model"] not in split:
                    continue
                ps = pairs(opt)
                pre, dec = ps[min(i, len(ps) - 1)]
                pools[f"{e['region']}/{e['model']}"] = pool_choice(opt, pre, dec)
                labels.add(f"{gpu_label(pre)}>{gpu_label(dec)}")
            if pools:
                only = f"[{'+'.join(split)}]" if len(split) < len(sets[0]) else ""
                label = f"pd{only}:" + "+".join(sorted(labels))
                out.append(sub_cls(key=f"{name}@{label}", strategy=ref, mode=mode, option=label, pools=pools))
    return out


def pool_bounds(spec, base: Mapping, sub, deployment_of) -> tuple[dict, dict, dict]:
    """(lower, upper, GPUs per instance) per group of a disaggregated sub-search: each pool up to the endpoint's
    ceiling, capped by its region's GPU quota; the aggregated groups as the driver bounds them."""
    lower, upper, gpus = {}, {}, {}
    for e in base["fleet"]["endpoints"]:
        g = f"{e['region']}/{e['model']}"
        quota = spec.quota_gpus.get(e["region"])
        cap = int(e.get("max", 20))
        names = ({pool_group(g, p): sub.pools[g][p] for p in POOLS} if g in sub.pools
                 else {g: sub.deployments.get(g, e["deployment"])})
        for key, name in names.items():
            per = int(deployment_of(base, name).get("gpus_per_instance") or 1)
            lower[key], gpus[key] = 1, per
            upper[key] = min(cap, quota // per) if quota is not None else cap
    return lower, upper, gpus


def pool_order(sub) -> dict[str, str]:
    """Each decode pool is searched after its prefill pool (search.min_counts ``after``)."""
    return {pool_group(g, "decode"): pool_group(g, "prefill") for g in (getattr(sub, "pools", None) or {})}


def pool_start(sub, start: Mapping[str, int]) -> dict[str, int]:
    """First counts of a disaggregated sub-search: each pool of an endpoint from the endpoint's aggregated
    estimate (the goodput table's theta; only the number of probes depends on it)."""
    if not getattr(sub, "pools", None):
        return dict(start)
    out = {}
    for g, n in start.items():
        if g in sub.pools:
            out.update({pool_group(g, p): int(n) for p in POOLS})
        else:
            out[g] = int(n)
    return out


def disaggregate(endpoint: dict, pools: Mapping, counts: Mapping[str, int], mode: str) -> None:
    """Turn one aggregated endpoint of the scenario into its disaggregated form, each pool at its probed count
    (static: initial = min = max; floor: initial = min = the count, max = the endpoint's ceiling)."""
    g = f"{endpoint['region']}/{endpoint['model']}"
    ceiling = int(endpoint.get("max", 20))
    for key in ("deployment", "initial", "min", "max"):
        endpoint.pop(key, None)
    for p in POOLS:
        n = int(counts.get(pool_group(g, p), 1))
        endpoint[f"{p}_pool"] = {"deployment": pools[p], "initial": n, "min": n,
                                 "max": n if mode == "static" else max(n, ceiling)}
    if pools.get("kv_link"):
        endpoint["kv_link"] = copy.deepcopy(dict(pools["kv_link"]))
    if pools.get("mixed_pool"):
        endpoint["mixed_pool"] = dict(pools["mixed_pool"])


def pool_attainment(requests: Mapping, workload, slo, slo_met) -> dict[str, np.ndarray]:
    """Per request, the two pools' signals (module docstring), through the SLO check itself (``slo_met``)."""
    ttft = np.asarray(requests["ttft_s"], dtype=float)
    e2e = np.asarray(requests["e2e_s"], dtype=float)
    done = np.asarray(requests["completed"], dtype=bool)
    tier = np.asarray(workload.tier)
    cap = np.full(ttft.shape, math.inf)
    for i, name in enumerate(("IW-F", "IW-N", "NIW")):
        cap[tier == i] = float(slo.ttft_s.get(name, math.inf))
    first = np.isfinite(ttft)
    prefill = slo_met({"ttft_s": ttft, "e2e_s": np.zeros_like(e2e), "completed": first}, workload, slo)
    credited = np.where(first, e2e - ttft + np.minimum(ttft, cap), e2e)
    decode = slo_met({"ttft_s": np.zeros_like(ttft), "e2e_s": credited, "completed": done}, workload, slo)
    return {"prefill": prefill, "decode": decode}


def pool_outcomes(requests: Mapping, workload, slo, slo_met, attainment_counts) -> dict:
    """{group: {pool: {tier: [n, met]}}} by origin, for the outcome's ``pools``."""
    out: dict[str, dict] = {}
    for pool, met in pool_attainment(requests, workload, slo, slo_met).items():
        groups, _ = attainment_counts(met, workload)
        for g, counts in groups.items():
            out.setdefault(g, {})[pool] = counts
    return out


def group_ok(outcome: Mapping, key: str, targets: Mapping[str, float], meets) -> bool:
    """A group of the search meets its targets: an aggregated endpoint on the full SLO, a pool on its signal."""
    group, pool = split_group(key)
    if not pool:
        return meets(outcome["groups"].get(group), targets)
    return meets(((outcome.get("pools") or {}).get(group) or {}).get(pool), targets)


def group_shortfall(outcome: Mapping, key: str, targets: Mapping[str, float], shortfall):
    """A group's (gap to its targets, worst tier's attainment) on the signal ``group_ok`` reads."""
    group, pool = split_group(key)
    if not pool:
        return shortfall(outcome["groups"].get(group), targets)
    return shortfall(((outcome.get("pools") or {}).get(group) or {}).get(pool), targets)


def group_hopeless(outcome: Mapping, key: str, targets: Mapping[str, float], hopeless) -> bool:
    """An aggregated group that misses on this seed whatever its count (probe.unfixable_counts: a hint); a pool
    never is (its signal is its own)."""
    group, pool = split_group(key)
    if pool:
        return False
    return hopeless(outcome["groups"].get(group), (outcome.get("unfixable") or {}).get(group), targets)


def serving_choice(candidates: list[dict]) -> dict | None:
    """Aggregated against disaggregated serving: the best candidate of each kind (the cheapest accepted one, else
    the one meeting every SLO most often), their monthly cost and SLO attainment, and which the answer runs.
    None when the search tried only one kind."""
    kinds = {k: [c for c in candidates if c.get("serving") == k] for k in ("aggregated", "disaggregated")}
    if not all(kinds.values()):
        return None

    def best(cs: list[dict]) -> dict:
        ok = [c for c in cs if c["accepted"] and c["monthly_cost_usd"]["median"] is not None]
        if ok:
            return min(ok, key=lambda c: c["monthly_cost_usd"]["median"])
        return max(cs, key=lambda c: (c["meets_all"].get("p") or 0.0, -(c["monthly_cost_usd"]["median"] or math.inf)))

    rows = {}
    for kind, cs in kinds.items():
        c = best(cs)
        rows[kind] = {"key": c["key"], "accepted": c["accepted"], "why": c["why"],
                      "monthly_cost_usd": c["monthly_cost_usd"], "meets_all": c["meets_all"],
                      "slo": [{"tier": s["tier"], "attainment": s["attainment"]} for s in c["slo"]],
                      "pools": [{"region": r["region"], "model": r["model"], "pool": r.get("pool", ""),
                                 "gpu": r["gpu"], "count": r["count"]} for r in c["fleet"]]}
    agg, dis = rows["aggregated"], rows["disaggregated"]
    return {**rows, "runs": _winner(agg, dis), "verdict": _verdict(agg, dis)}


def _winner(agg: Mapping, dis: Mapping) -> str | None:
    accepted = [(r["monthly_cost_usd"]["median"], k) for k, r in (("aggregated", agg), ("disaggregated", dis))
                if r["accepted"] and r["monthly_cost_usd"]["median"] is not None]
    return min(accepted)[1] if accepted else None


def _verdict(agg: Mapping, dis: Mapping) -> str:
    def money(r: Mapping) -> str:
        x = r["monthly_cost_usd"]["median"]
        return "\u2014" if x is None else f"${x:,.0f}"

    def meets(r: Mapping) -> str:
        p = r["meets_all"]
        return f"meets every SLO on {p.get('met', 0)} of {p.get('n', 0)} new seeds" if p.get("n") else "not replayed"

    ratio = " + ".join(f"{r['count']} {r['pool'] or 'aggregated'} on {r['gpu']}" for r in dis["pools"])
    winner = _winner(agg, dis)
    if winner is None:
        return (f"neither kind is accepted: aggregated ({agg['key']}) {money(agg)} a month, {meets(agg)}; "
                f"disaggregated ({dis['key']}: {ratio}) {money(dis)} a month, {meets(dis)}")
    if winner == "disaggregated":
        lead = f"disaggregated serving ({ratio}) at {money(dis)} a month, {meets(dis)}"
        other = agg
    else:
        lead = f"aggregated serving ({agg['key']}) at {money(agg)} a month, {meets(agg)}"
        other = dis
    tail = (f"; the best {'aggregated' if other is agg else 'disaggregated'} candidate ({other['key']}"
            + (f": {ratio}" if other is dis else "") + f") costs {money(other)} a month and "
            + ("meets the SLOs too" if other["accepted"] else f"is rejected: {other['why']}"))
    return lead + tail
