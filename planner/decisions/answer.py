"""Build the ``answer`` object from a capacity search's state and probes. Django-free.

Shape (JSON)::

    {"status": "answer" | "no_fleet" | "empty", "headline": str, "span_h", "hours_per_month", "extrapolated",
     "choice": candidate | None, "rejected": {"key", "monthly_cost_usd", "why"} | None,
     "candidates": [candidate, ...], "sensitivity": [{"input", "effect", "changes_answer", "magnitude"}],
     "most_sensitive": str | None, "serving": None | {"aggregated": row, "disaggregated": row, "runs", "verdict"}}

    candidate = {"key", "strategy", "option", "mode", "serving", "accepted", "why", "fleet": [{"region", "model",
                 "pool" ("" aggregated, "prefill" / "decode"), "gpu",
                 "deployment", "count", "ceiling", "gpus"}], "gpus_by_region", "monthly_cost_usd": band,
                 "gpu_hours": band, "energy_kwh": band, "meets_all": probability, "slo": [{"tier", "target",
                 "probability", "attainment": band}], "draws"}

Monthly figures are the simulated span's figures x (730 h / span): labelled as extrapolated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from planner.capacity.core.bands import band, fmt_band, probability
from planner.capacity.core.disagg import serving_choice, split_group
from planner.capacity.core.driver import deployment_of, group_deployments
from planner.capacity.core.probe import TIERS, attainment, meets, parse_fleet_key

HOURS_PER_MONTH = 730.0


def _monthly(outcome: Mapping, span_s: float, price_scale: Mapping[str, float] | None = None) -> float | None:
    cost = outcome.get("cost_usd")
    if cost is None or span_s <= 0:
        return None
    if price_scale:
        cost = sum((p.get("cost_usd") or 0.0) * price_scale.get(_gpu(p.get("deployment", "")), 1.0)
                   for e in (outcome.get("endpoints") or {}).values() for p in e.get("pools") or [e])
    return cost * HOURS_PER_MONTH * 3600.0 / span_s


def _gpu(deployment: str) -> str:
    parts = deployment.split("/")
    return parts[1] if len(parts) > 1 else deployment


def _fleet_rows(base: Mapping, entry: Mapping) -> list[dict]:
    search = entry["search"]
    counts = parse_fleet_key(search["fleet"]) if search.get("fleet") else search.get("counts", {})
    deps = group_deployments(base)
    chosen = entry["sub"].get("deployments") or {}
    pools = entry["sub"].get("pools") or {}
    ceilings = {f"{e['region']}/{e['model']}": int(e.get("max", 0)) for e in base["fleet"]["endpoints"]}
    rows = []
    for g in sorted(counts, key=lambda k: (split_group(k)[0], split_group(k)[1] != "prefill")):
        group, pool = split_group(g)  # a disaggregated endpoint: one row per pool
        region, model = group.split("/", 1)
        if pool:
            name = pools[group][pool]
            dep = deployment_of(base, name)
        else:
            dep = deployment_of(base, chosen[g]) if g in chosen else deps.get(g, {})
            name = chosen.get(g) or dep.get("name", "")
        per = int(dep.get("gpus_per_instance") or 1)
        rows.append({"region": region, "model": model, "pool": pool, "gpu": dep.get("gpu") or _gpu(name),
                     "deployment": name, "count": int(counts[g]), "gpus": int(counts[g]) * per,
                     "ceiling": ceilings.get(g) if entry["sub"]["mode"] != "static" else None,
                     "feasible": bool(search["feasible"].get(g, False))})
    return rows


def candidate(spec, base: Mapping, entry: Mapping) -> dict:
    """One sub-search's result with its bands over the new seeds."""
    search = entry["search"] or {}
    sub = entry["sub"]
    pruned = entry.get("pruned") or {}
    draws = entry.get("bands") or pruned.get("outcomes") or []  # a pruned candidate: its search seeds
    span = max((o.get("duration_s") or 0.0) for o in draws) if draws else 0.0
    targets = {t: spec.targets[t] for t in TIERS if t in spec.targets}  # tier order (JSONB sorts keys)
    slo = []
    for tier, target in targets.items():
        shares = [attainment(o["tiers"], tier) for o in draws]
        if all(s is None for s in shares):
            continue
        slo.append({"tier": tier, "target": target,
                    "probability": probability([s is not None and s >= target for s in shares]),
                    "attainment": band(shares)})
    meets_all = probability([meets(o["tiers"], targets) for o in draws]) if draws else probability([])
    fleet = _fleet_rows(base, entry) if search.get("fleet") else []
    gpus_by_region: dict[str, int] = {}
    for r in fleet:
        gpus_by_region[r["region"]] = gpus_by_region.get(r["region"], 0) + r["gpus"]
    why = ""
    if entry.get("failed"):
        err = entry["failed"].get("error") or {}
        why = f"the search stopped: a simulation failed ({err.get('message') or err.get('type') or 'unknown'})"
    elif search.get("excluded") == "quota":
        why = ("the GPU quotas leave no room for one instance of every endpoint" if spec.quota_gpus else
               "an endpoint's ceiling (max) is below one instance: the search space is empty")
    elif not search:
        why = "the search did not finish"
    elif not all(search["feasible"].values()):
        bad = sorted(g for g, ok in search["feasible"].items() if not ok)
        verb = f"miss{'es' if len(bad) == 1 else ''}"
        why = (f"{', '.join(bad)} {verb} the SLO on more than {1 - spec.probability:.0%} of the first "
               f"{len(spec.seeds)} draws" if spec.mode == "check" else
               f"{', '.join(bad)} {verb} the SLO even at the ceiling" + (" the quota allows" if spec.quota_gpus else "")
               + f" on more than {1 - spec.probability:.0%} of the search's seeds")
    elif pruned:
        why = (f"dominated by {pruned['by']} on the search's {len(draws)} seeds (costs no less, meets no SLO more "
               "often), so not replayed on new seeds; its figures are over the search seeds")
    elif meets_all["n"] and meets_all["p"] < spec.probability:
        why = (f"meets every SLO on only {meets_all['met']} of {meets_all['n']} new seeds "
               f"({meets_all['p']:.0%} < the required {spec.probability:.0%})")
    return {"key": sub["key"], "strategy": sub["strategy"].get("key", sub["strategy"]["strategy"]),
            "option": sub.get("option", ""), "mode": sub["mode"], "accepted": not why, "why": why,
            "serving": "disaggregated" if sub.get("pools") else "aggregated",
            "fleet": fleet, "gpus_by_region": gpus_by_region,
            "monthly_cost_usd": band(_monthly(o, span) for o in draws),
            "gpu_hours": band(o.get("gpu_hours") for o in draws), "energy_kwh": band(o.get("energy_kwh") for o in draws),
            "meets_all": meets_all, "slo": slo, "draws": len(draws), "span_s": span,
            "verified": bool(search.get("verified")), "pruned_by": pruned.get("by")}


def _worst_attainment(c: Mapping) -> tuple[str, dict] | None:
    rows = [(s["attainment"]["median"] - s["target"], s) for s in c["slo"] if s["attainment"]["median"] is not None]
    if not rows:
        return None
    _, s = min(rows, key=lambda r: r[0])
    return s["tier"], s["attainment"]


def build_answer(spec, base: Mapping, state_subs: Mapping, *, failed: Mapping | None = None) -> dict:
    """The decision from a finished (or partly failed) search; a plan's check adds its hours at risk."""
    out = _build_answer(spec, base, state_subs, failed=failed)
    if spec.mode == "check" and "plan_draws" in base:
        out.update(plan_check(spec, base, state_subs, out))
    return out


def plan_check(spec, base: Mapping, state_subs: Mapping, out: Mapping) -> dict:
    """The plan's hour-by-hour verdict: per hour, the chance over the draws that some tier misses its target that
    hour; hours where it exceeds 1 - the required probability are at risk."""
    from planner.capacity.core.plan_draws import hours_at_risk

    entry = next(iter(state_subs.values()), {}) or {}
    draws = entry.get("bands") or []
    hours = hours_at_risk(draws, spec.targets, spec.probability)
    risky = [h for h in hours if h["at_risk"]]
    cand = (out.get("candidates") or [{}])[0]
    p = (cand.get("meets_all") or {}).get("p")
    cost = fmt_band(cand.get("monthly_cost_usd") or {}, "${:,.0f}")
    verdict = (f"the plan's hourly fleet meets every SLO over the whole span in {p:.0%} of {len(draws)} forecast "
               f"draws ({cost} a month)") if p is not None else "the plan's hourly fleet could not be replayed"
    if risky:
        named = ", ".join(f"hour {h['hour']} ({h['p_miss']:.0%})" for h in risky[:6])
        verdict += (f"; {len(risky)} hour{'s' if len(risky) != 1 else ''} where the chance of missing an SLO exceeds "
                    f"{1 - spec.probability:.0%}: {named}" + (" ..." if len(risky) > 6 else ""))
    elif hours:
        verdict += f"; no hour's chance of missing an SLO exceeds {1 - spec.probability:.0%}"
    return {"hours": hours, "hours_at_risk": [h["hour"] for h in risky], "headline": verdict,
            "draws_label": "forecast draws (hourly demand and spot preemptions)"}


def _build_answer(spec, base: Mapping, state_subs: Mapping, *, failed: Mapping | None = None) -> dict:
    cands = [candidate(spec, base, e) for e in state_subs.values()]
    accepted = sorted((c for c in cands if c["accepted"] and c["monthly_cost_usd"]["median"] is not None),
                      key=lambda c: c["monthly_cost_usd"]["median"])
    span = max((c["span_s"] for c in cands), default=0.0)
    out = {"serving": serving_choice(cands),"span_h": round(span / 3600.0, 3), "hours_per_month": HOURS_PER_MONTH, "extrapolated": span > 0,
           "candidates": cands, "failed": dict(failed or {}), "required_probability": spec.probability,
           "targets": dict(spec.targets),
           "tier_targets": [{"tier": t, "target": spec.targets[t]} for t in TIERS if t in spec.targets
                            and (not cands or any(x["tier"] == t for c in cands for x in c["slo"]))]}
    for c in cands:  # one cell per column: a tier without requests in a candidate's draws reads "-"
        have = {x["tier"]: x for x in c["slo"]}
        c["slo_cells"] = [have.get(t["tier"]) for t in out["tier_targets"]]
    if not cands:
        return {**out, "status": "empty", "choice": None, "rejected": None, "sensitivity": [], "most_sensitive": None,
                "headline": "the search space is empty: no strategy and fleet to try"}
    if not accepted:
        ranked = [c for c in cands if _worst_attainment(c)]
        best = max(ranked, key=lambda c: _worst_attainment(c)[1]["median"], default=None)
        if best is None:
            headline = "no fleet within the quotas could be simulated: " + (cands[0]["why"] or "see the candidates")
        else:
            tier, att = _worst_attainment(best)
            headline = (f"no fleet within the {'quotas' if spec.quota_gpus else 'ceilings'} meets the SLO; the best "
                        f"({best['key']}) reaches {fmt_band(att, '{:.1%}')} of {tier} requests within target "
                        f"(needs {spec.targets.get(tier, 0):.1%})")
        return {**out, "status": "no_fleet", "choice": None, "best": best, "rejected": None, "sensitivity": [],
                "most_sensitive": None, "headline": headline}
    choice = accepted[0]
    others = [c for c in cands if c is not choice and c["monthly_cost_usd"]["median"] is not None]
    cheaper_rejected = sorted((c for c in others if not c["accepted"]), key=lambda c: c["monthly_cost_usd"]["median"])
    runner_up = accepted[1] if len(accepted) > 1 else None
    rejected = cheaper_rejected[0] if cheaper_rejected else runner_up
    rej = None
    if rejected is not None:
        why = rejected["why"] or _dearer(rejected, choice)
        rej = {"key": rejected["key"], "monthly_cost_usd": rejected["monthly_cost_usd"], "why": why}
    sens = sensitivity(spec, choice, cands, state_subs)
    top = max(sens, key=lambda s: (s["changes_answer"], s["magnitude"]), default=None)
    if top is not None and not top["changes_answer"]:
        top = dict(top, input=f"none of the inputs tried changes it; the largest effect: {top['input']}")
    cost = choice["monthly_cost_usd"]
    headline = (f"run {choice['key']}: {fmt_band(cost, '${:,.0f}')} a month, every SLO met with probability "
                f"{choice['meets_all']['p']:.0%} over {choice['meets_all']['n']} new seeds")
    return {**out, "status": "answer", "choice": choice, "rejected": rej, "sensitivity": sens,
            "most_sensitive": top["input"] if top else None, "headline": headline}


def _dearer(other: Mapping, choice: Mapping) -> str:
    """Why a feasible alternative lost: how much more it costs, or that the two are within each other's spread."""
    a, b = other["monthly_cost_usd"], choice["monthly_cost_usd"]
    diff = a["median"] - b["median"]
    spread = max((b["p95"] or 0) - (b["p5"] or 0), (a["p95"] or 0) - (a["p5"] or 0))
    if diff <= spread:
        return (f"meets the SLOs too, at the same cost within the draws' spread ({fmt_money(diff)} a month more at the "
                f"median); {choice['key']} is listed first as the cheaper median")
    return f"meets the SLOs too but costs {fmt_money(diff)} a month more at the median"


def sensitivity(spec, choice: Mapping, cands: list, state_subs: Mapping) -> list[dict]:
    """One input at a time: load (replayed), the SLO target (from the draws), the GPU price (from the costs)."""
    out = []
    entry = state_subs.get(choice["key"]) or {}
    at_load = entry.get("load") or []
    if at_load:
        p = probability([meets(o["tiers"], spec.targets) for o in at_load])
        out.append({"input": f"load x{spec.load_sensitivity:g}",
                    "effect": (f"the chosen fleet meets every SLO on {p['met']} of {p['n']} seeds "
                               f"at {spec.load_sensitivity:g}x the load"),
                    "changes_answer": p["p"] < spec.probability, "magnitude": 1.0 - p["p"]})
    draws = entry.get("bands") or []
    if draws:
        tight = {t: 1.0 - (1.0 - v) / 2.0 for t, v in spec.targets.items()}
        p = probability([meets(o["tiers"], tight) for o in draws])
        named = ", ".join(f"{t} {v:.2%}" for t, v in tight.items())
        out.append({"input": "SLO target (half the misses allowed)",
                    "effect": f"at {named} the chosen fleet meets every target on {p['met']} of {p['n']} draws",
                    "changes_answer": p["p"] < spec.probability, "magnitude": 1.0 - p["p"]})
    gpus = {r["gpu"] for r in choice["fleet"]}
    base_cost = choice["monthly_cost_usd"]["median"]
    for gpu in sorted(gpus):
        scale = {gpu: 1.2}
        costs = {}
        for c in cands:
            e = state_subs.get(c["key"]) or {}
            pruned = e.get("pruned") or {}
            vals = [_monthly(o, c["span_s"], scale) for o in (e.get("bands") or pruned.get("outcomes") or [])]
            feasible_pruned = bool(pruned) and c["fleet"] and all(r["feasible"] for r in c["fleet"])
            if (c["accepted"] or feasible_pruned) and vals:  # a pruned one: its search-seed costs
                costs[c["key"]] = band(vals)["median"]
        if not costs or base_cost in (None, 0):
            continue
        winner = min(costs, key=costs.get)
        change = costs[choice["key"]] / base_cost - 1.0
        out.append({"input": f"{gpu} price +20 %",
                    "effect": f"monthly cost {change:+.0%}; the cheapest becomes {winner}" if winner != choice["key"]
                    else f"monthly cost {change:+.0%}; {choice['key']} stays the cheapest",
                    "changes_answer": winner != choice["key"], "magnitude": abs(change)})
    return out


def fmt_money(x) -> str:
    return "\u2014" if x is None or not math.isfinite(x) else f"${x:,.0f}"
