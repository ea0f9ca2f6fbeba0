"""The decision card's ``answer`` for a finished fleet comparison (same shape as planner/decisions/answer.py).

Each strategy is one candidate: its fleet is the scenario's endpoints (floor = ``min``, ceiling = ``max``), its
figures are bands over the comparison's seeds, and the probability of meeting a tier's SLO is the share of seeds
whose run met it, with its Wilson interval. The choice is the compact table's answer (the cheapest strategy that
meets every target on every seed), so the card and the table never disagree. Monthly figures are the simulated
span's figures x (730 h / span): labelled as extrapolated. Django-free.
"""

from __future__ import annotations

from collections.abc import Mapping

from planner.capacity.core.bands import band, fmt_band, probability
from planner.comparisons.core.sensitivity import comparison_sensitivity, most_sensitive
from planner.comparisons.core.table import TARGETS, TIERS, _groups, attainment, misses, strategy_table
from planner.decisions.answer import HOURS_PER_MONTH, _dearer, _worst_attainment


def _fleet(scenario: Mapping) -> list[dict]:
    deps = scenario.get("deployments") or {}
    rows = []
    for e in (scenario.get("fleet") or {}).get("endpoints") or []:
        name = e.get("deployment", "")
        dep = deps.get(name, {}) if isinstance(deps, Mapping) else {}
        parts = name.split("/")
        per = int(dep.get("gpus_per_instance") or 1)
        floor = int(e.get("min", e.get("initial", 0)) or 0)
        rows.append({"region": e.get("region", ""), "model": e.get("model", ""),
                     "gpu": dep.get("gpu") or (parts[1] if len(parts) > 1 else name), "deployment": name,
                     "count": floor, "ceiling": e.get("max"), "gpus": floor * per})
    return rows


def _candidate(row: Mapping, runs: list[dict], fleet: list[dict], span_h: float, targets: Mapping) -> dict:
    per_month = HOURS_PER_MONTH / span_h if span_h > 0 else None
    slo = []
    for tier in TIERS:
        shares = [attainment(r, tier) for r in runs]
        if tier not in targets or all(s is None for s in shares):
            continue
        slo.append({"tier": tier, "target": targets[tier],
                    "probability": probability([s is not None and s >= targets[tier] for s in shares]),
                    "attainment": band(shares)})
    meets_all = probability([not misses(r, dict(targets)) for r in runs])
    why = ""
    if not row["meets"]:
        why = (f"misses the SLO on {meets_all['n'] - meets_all['met']} of {meets_all['n']} seeds "
               f"({'; '.join(row['misses'])})")
    gpus_by_region: dict[str, int] = {}
    for f in fleet:
        gpus_by_region[f["region"]] = gpus_by_region.get(f["region"], 0) + f["gpus"]
    return {"key": row["key"], "strategy": row["key"], "option": "", "mode": "autoscaled",
            "accepted": bool(row["meets"]), "why": why, "fleet": fleet, "gpus_by_region": gpus_by_region,
            "span_cost_usd": band(r.get("cost_usd") for r in runs),
            "monthly_cost_usd": band(None if per_month is None or r.get("cost_usd") is None
                                     else r["cost_usd"] * per_month for r in runs),
            "gpu_hours": band(r.get("gpu_hours") for r in runs), "energy_kwh": band([]),
            "meets_all": meets_all, "slo": slo, "draws": len(runs), "span_s": span_h * 3600.0,
            "is_baseline": row["is_baseline"], "saving_words": row["saving_words"]}


def comparison_answer(summary: Mapping, variants: list, scenario: Mapping,
                      targets: Mapping | None = None) -> dict | None:
    """The decision from a comparison's aggregate; None when it has no strategy rows yet."""
    if not summary.get("rows"):
        return None
    targets = dict(targets or TARGETS)
    table = strategy_table(dict(summary), variants or [], targets)
    groups = _groups(summary["rows"], variants or [])
    span_h = float(summary.get("duration_h") or 0.0)
    fleet = _fleet(scenario or {})
    cands = [_candidate(r, groups.get(r["key"], []), fleet, span_h, targets) for r in table["rows"]]
    seeds = table["seeds"]
    out = {"span_h": round(span_h, 3), "hours_per_month": HOURS_PER_MONTH, "extrapolated": span_h > 0,
           "candidates": cands, "failed": {}, "required_probability": 1.0, "targets": targets,
           "tier_targets": [{"tier": t, "target": targets[t]} for t in TIERS if t in targets],
           "seeds": seeds, "draws_label": "workload seeds" if seeds != 1 else "workload seed",
           "sensitivity": [], "most_sensitive": None, "rejected": None}
    by_key = {c["key"]: c for c in cands}
    choice = by_key.get(table["answer"])
    if choice is None:
        ranked = [c for c in cands if _worst_attainment(c)]
        best = max(ranked, key=lambda c: _worst_attainment(c)[1]["median"], default=None)
        headline = "no strategy meets every SLO target on every seed"
        if best is not None:
            tier, att = _worst_attainment(best)
            headline += (f"; the closest ({best['key']}) reaches {fmt_band(att, '{:.1%}')} of {tier} requests "
                         f"within target (needs {targets[tier]:.1%})")
        return {**out, "status": "no_fleet", "choice": None, "best": best, "headline": headline}
    cheaper_rejected = sorted((c for c in cands if not c["accepted"] and c["monthly_cost_usd"]["median"] is not None
                               and c["monthly_cost_usd"]["median"] < choice["monthly_cost_usd"]["median"]),
                              key=lambda c: c["monthly_cost_usd"]["median"])
    accepted = sorted((c for c in cands if c["accepted"] and c is not choice
                       and c["monthly_cost_usd"]["median"] is not None), key=lambda c: c["monthly_cost_usd"]["median"])
    rejected = cheaper_rejected[0] if cheaper_rejected else (accepted[0] if accepted else None)
    if rejected is not None:
        out["rejected"] = {"key": rejected["key"], "monthly_cost_usd": rejected["monthly_cost_usd"],
                           "why": rejected["why"] or _dearer(rejected, choice)}
    verdict = ("keep the baseline" if choice["is_baseline"] else f"run {choice['key']}")
    p = choice["meets_all"]
    headline = (f"{verdict}: {fmt_band(choice['monthly_cost_usd'], '${:,.0f}')} a month (extrapolated), every SLO "
                f"met on {p['met']} of {p['n']} seed{'s' if p['n'] != 1 else ''}")
    sens = comparison_sensitivity(summary, variants or [], targets, choice["key"])
    return {**out, "status": "answer", "choice": choice, "headline": headline, "sensitivity": sens,
            "most_sensitive": most_sensitive(sens)}
