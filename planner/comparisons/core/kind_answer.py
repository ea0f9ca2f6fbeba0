"""The decision card's ``answer`` (the shape of planner/decisions/answer.py) of a serverless and an operator-level
comparison, from their aggregates. Django-free.

Neither kind's result holds prices, so the cost is not known: the card says so and why (``cost_note``) and gives
what the result measures instead (node-hours or GPU-hours over the simulated span, energy). Both run each system or
plan once on a recorded trace (no workload seeds), so attainment is a single figure, not a band (``single_run``).

Fields beyond the fleet card's: ``single_run``, ``cost_note``; per candidate ``what`` (what to run, in words),
``plan`` ({"columns", "rows"}: the table that stands for the fleet table) and ``usage`` ([{"key", "label",
"value", "unit", "note"}]: the measured resources); ``rejected.usage`` (its resources in words).
"""

from __future__ import annotations

from collections.abc import Mapping

from planner.capacity.core.bands import band, probability
from planner.decisions.answer import HOURS_PER_MONTH

SLO_TARGET = 0.99  # a serverless system meets the target when this share of its requests meets their SLO
SERVERLESS_TIER = "requests within their SLO"
OPERATOR_TIER = "window-phases within their SLO"


def _pct(x, digits: int = 1) -> str:
    return "\u2013" if x is None else f"{100.0 * x:.{digits}f} %"


def _num(x, digits: int = 2) -> str:
    return "\u2013" if x is None else f"{x:,.{digits}f}"


def _base(span_s: float, tier: str, target: float, draws_label: str, cost_note: str) -> dict:
    return {"span_h": round(span_s / 3600.0, 3), "hours_per_month": HOURS_PER_MONTH, "extrapolated": False,
            "single_run": True, "cost_note": cost_note, "failed": {}, "required_probability": 1.0,
            "targets": {tier: target}, "tier_targets": [{"tier": tier, "target": target}], "seeds": 0,
            "draws_label": draws_label, "sensitivity": [], "most_sensitive": None, "rejected": None, "best": None}


def _slo(tier: str, target: float, share: float | None) -> tuple[list[dict], dict]:
    """The one tier's row and "meets every SLO" of a single run whose ``share`` of requests met their SLO."""
    met = probability([share is not None and share >= target])
    return [{"tier": tier, "target": target, "probability": met, "attainment": band([share])}], met


# --- serverless (SLINFER against ServerlessLLM) ----------------------------------------------------------------


def meets_target(row: Mapping, target: float = SLO_TARGET) -> bool:
    return (row.get("slo_attainment") or 0.0) >= target


def _nodes_key(r: Mapping) -> tuple:
    return (r.get("avg_gpu_nodes") or 0.0, r.get("avg_cpu_nodes") or 0.0, r.get("energy_kwh") or 0.0)


def serverless_choice(summary: Mapping, target: float = SLO_TARGET) -> tuple[dict | None, bool]:
    """(the recommended system's row, whether it meets the target): the one meeting it on the fewest GPU nodes
    (then CPU nodes, then energy: nodes in use are what a serverless fleet pays for); else the aggregate's best
    (most SLO-met requests). (None, False) before any system finished."""
    rows = summary.get("rows") or []
    meeting = [r for r in rows if meets_target(r, target)]
    if meeting:
        return min(meeting, key=_nodes_key), True
    return next((r for r in rows if r["key"] == summary.get("best")), None), False


def _nodes_words(r: Mapping) -> str:
    return f"{_num(r.get('avg_cpu_nodes'))} CPU + {_num(r.get('avg_gpu_nodes'))} GPU nodes on average"


def _serverless_candidate(r: Mapping, scenario: Mapping, span_s: float) -> dict:
    nodes = scenario.get("nodes") or {}
    hours = span_s / 3600.0
    share = r.get("slo_attainment")
    slo, meets_all = _slo(SERVERLESS_TIER, SLO_TARGET, share)
    n, dropped = r.get("requests") or 0, r.get("dropped") or 0
    why = "" if meets_target(r) else (
        f"misses the SLO target: {_pct(share)} of requests within their SLO (needs {_pct(SLO_TARGET, 0)})"
        + (f"; {dropped:,} of {n:,} requests dropped waiting for a node" if dropped else ""))
    gpu_h, cpu_h = (r.get("avg_gpu_nodes") or 0.0) * hours, (r.get("avg_cpu_nodes") or 0.0) * hours
    return {"key": r["key"], "strategy": r["key"], "option": "", "mode": "serverless", "serving": "aggregated",
            "accepted": not why, "why": why, "fleet": [], "gpus_by_region": {},
            "what": f"{r['key']} on {nodes.get('cpu')} CPU + {nodes.get('gpu')} GPU nodes, serving "
                    f"{scenario.get('model') or 'the scenario models'}",
            "plan": {"columns": ["Nodes", "Provisioned", "In use, average", "Node-hours over the run"],
                     "rows": [["CPU (Xeon 6462C, AMX)", nodes.get("cpu"), _num(r.get("avg_cpu_nodes")),
                               _num(cpu_h, 3)],
                              ["GPU (A100-80GB)", nodes.get("gpu"), _num(r.get("avg_gpu_nodes")), _num(gpu_h, 3)]]},
            "usage": [{"key": "gpu_node_hours", "label": "GPU node-hours over the run", "value": gpu_h, "unit": "h",
                       "note": f"{_num(r.get('avg_gpu_nodes'))} GPU nodes in use on average"},
                      {"key": "cpu_node_hours", "label": "CPU node-hours over the run", "value": cpu_h, "unit": "h",
                       "note": f"{_num(r.get('avg_cpu_nodes'))} CPU nodes in use on average"},
                      {"key": "energy", "label": "Energy over the run", "value": r.get("energy_kwh"), "unit": "kWh",
                       "note": f"{_num(r.get('wh_per_slo_met'), 3)} Wh per SLO-met request"}],
            "monthly_cost_usd": band([]), "gpu_hours": band([gpu_h]), "cpu_hours": band([cpu_h]),
            "energy_kwh": band([r.get("energy_kwh")]), "meets_all": meets_all, "slo": slo, "draws": 1,
            "span_s": span_s, "is_baseline": bool(r.get("is_baseline")),
            "requests": n, "slo_met": r.get("slo_met"), "avg_cpu_nodes": r.get("avg_cpu_nodes"),
            "avg_gpu_nodes": r.get("avg_gpu_nodes")}


def _serverless_rejected(choice: Mapping, cands: list[dict]) -> dict | None:
    """The cheapest alternative that lost (fewest GPU then CPU node-hours; no prices): one using no more nodes
    that misses the target, else the next system that meets it too."""
    def cost(c):
        return (c["gpu_hours"]["median"], c["cpu_hours"]["median"], c["energy_kwh"]["median"] or 0.0)

    others = sorted((c for c in cands if c["key"] != choice["key"]), key=cost)
    cheaper = [c for c in others if not c["accepted"] and cost(c) <= cost(choice)]
    accepted = [c for c in others if c["accepted"]]
    rejected = cheaper[0] if cheaper else (accepted[0] if accepted else (others[0] if others else None))
    if rejected is None:
        return None
    return {"key": rejected["key"], "monthly_cost_usd": rejected["monthly_cost_usd"],
            "why": rejected["why"] or _needs_more(rejected, choice), "usage": _nodes_words(rejected)}


def _needs_more(other: Mapping, choice: Mapping) -> str:
    """Why a system that meets the target too lost: the node-hours (or energy) it needs beyond the choice's."""
    extra = {k: (other[k]["median"] or 0.0) - (choice[k]["median"] or 0.0)
             for k in ("gpu_hours", "cpu_hours", "energy_kwh")}
    parts = [f"{_num(extra['gpu_hours'], 3)} more GPU node-hours"] if extra["gpu_hours"] > 1e-9 else []
    if extra["cpu_hours"] > 1e-9:
        parts.append(f"{_num(extra['cpu_hours'], 3)} more CPU node-hours")
    if not parts:
        parts.append(f"{_num(extra['energy_kwh'], 3)} kWh more energy on as many nodes")
    return "meets the target too but needs " + " and ".join(parts)


def _target_sensitivity(summary: Mapping, choice_key: str | None) -> list[dict]:
    """The SLO target, tighter (half the misses allowed) and looser (twice): the system the rule picks then."""
    out = []
    for target, words in ((1.0 - (1.0 - SLO_TARGET) / 2.0, "tighter, half the misses allowed"),
                          (1.0 - (1.0 - SLO_TARGET) * 2.0, "looser, twice the misses allowed")):
        row, meets = serverless_choice(summary, target)
        picked = row["key"] if row is not None and meets else None
        effect = (f"at {_pct(target)} the answer is {picked}" if picked else
                  f"at {_pct(target)} no system meets the target")
        changes = picked != choice_key
        out.append({"input": f"SLO target {_pct(target)} ({words})", "effect": effect, "changes_answer": changes,
                    "magnitude": abs(target - SLO_TARGET)})
    return out


def serverless_answer(summary: Mapping, scenario: Mapping) -> dict | None:
    """The serverless comparison's answer; None before any system finished."""
    rows = summary.get("rows") or []
    if not rows:
        return None
    span_s = float(summary.get("run_length_s") or 0.0)
    minutes = f"{_num(span_s / 60.0, 1)} simulated minutes"
    out = _base(span_s, SERVERLESS_TIER, SLO_TARGET, "run of the recorded trace (no workload seeds, so no band)",
                f"the serverless scenario carries no node prices; node-hours over the {minutes} instead")
    cands = [_serverless_candidate(r, scenario, span_s) for r in rows]
    by_key = {c["key"]: c for c in cands}
    out["candidates"] = cands
    row, meets = serverless_choice(summary)
    choice = by_key[row["key"]]
    sens = _target_sensitivity(summary, choice["key"] if meets else None)
    top = max(sens, key=lambda s: (s["changes_answer"], -s["magnitude"]))
    out.update(sensitivity=sens, most_sensitive=top["input"] if top["changes_answer"] else
               f"none of the targets tried changes it; nearest: {top['input']}")
    if not meets:
        headline = (f"no system meets the {_pct(SLO_TARGET, 0)} SLO target; the closest is {choice['key']} with "
                    f"{_pct(row['slo_attainment'])} of requests within their SLO (one run, no band)")
        return {**out, "status": "no_fleet", "choice": None, "best": choice, "headline": headline}
    versus = "" if row["is_baseline"] or row.get("slo_met_vs_baseline") is None else (
        f", {row['slo_met_vs_baseline']:.2f}x the SLO-met requests of {summary.get('baseline')}")
    headline = (f"run {choice['key']}: {_pct(row['slo_attainment'])} of requests within their SLO (one run) on "
                f"{_nodes_words(row)}{versus}; cost not known (no prices)")
    return {**out, "status": "answer", "choice": choice, "rejected": _serverless_rejected(choice, cands),
            "headline": headline}


# --- operator-level against model-level scaling ----------------------------------------------------------------


def operator_choice(rows: Mapping) -> dict:
    """The plan with fewer GPU-hours over the trace (then less energy); model level on a tie."""
    return min((rows["model-level"], rows["operator-level"]),
               key=lambda r: (round(r["gpu_hours"], 9), r["energy_kwh"] or 0.0))


def _operator_candidate(r: Mapping, summary: Mapping, scenario: Mapping, span_s: float) -> dict:
    phases = 2 * int(summary.get("windows") or 0)  # each window is planned twice: prefill and decode
    infeasible = int(summary.get("infeasible_windows") or 0)
    share = (phases - infeasible) / phases if phases else None
    slo, meets_all = _slo(OPERATOR_TIER, 1.0, share)
    why = "" if not infeasible else (f"{infeasible} of {phases} window-phases cannot meet their SLO under either "
                                     f"plan: {summary.get('infeasible_reason') or 'see the timeline'}")
    hours = span_s / 3600.0
    per_month = r["gpu_hours"] * HOURS_PER_MONTH / hours if hours > 0 else None
    level = "per operator" if r["key"] == "operator-level" else "per model replica"
    rows = [["prefill", _num(r.get("prefill_gpu_hours"))], ["decode", _num(r.get("decode_gpu_hours"))]]
    return {"key": r["key"], "strategy": r["key"], "option": "", "mode": "planned", "serving": "disaggregated",
            "accepted": not why, "why": why, "fleet": [], "gpus_by_region": {},
            "what": f"{scenario.get('model')} on {scenario.get('gpu')}, scaled {level}, window by window "
                    f"(prefill and decode planned apart)",
            "plan": {"columns": ["Phase", "GPU-hours over the trace"], "rows": rows},
            "usage": [{"key": "gpu_hours", "label": "GPU-hours over the trace", "value": r["gpu_hours"], "unit": "h",
                       "note": f"{_num(hours, 1)} h of trace, not extrapolated"},
                      {"key": "gpu_hours_month", "label": "GPU-hours a month (extrapolated)", "value": per_month,
                       "unit": "h", "note": f"x {HOURS_PER_MONTH:.0f} h / {_num(hours, 1)} h of trace"},
                      {"key": "energy", "label": "Energy over the trace", "value": r.get("energy_kwh"), "unit": "kWh",
                       "note": "per-request attribution (the paper's Eq. 9)"}],
            "monthly_cost_usd": band([]), "gpu_hours": band([r["gpu_hours"]]), "energy_kwh": band([r.get("energy_kwh")]),
            "meets_all": meets_all, "slo": slo, "draws": 1, "span_s": span_s, "is_baseline": bool(r["is_baseline"]),
            "memory_gb_hours": r.get("memory_gb_hours"), "fallback_windows": r.get("fallback_windows") or 0}


def _operator_rejected(choice: Mapping, other: Mapping) -> dict:
    more = other["gpu_hours"]["median"] - choice["gpu_hours"]["median"]
    base = max(other["gpu_hours"]["median"], choice["gpu_hours"]["median"])
    if abs(more) < 1e-9:
        e_other, e_choice = other["energy_kwh"]["median"], choice["energy_kwh"]["median"]
        why = "needs the same GPU-hours"
        if e_other is not None and e_choice is not None and e_other > e_choice:
            why += f" and {_num(e_other - e_choice, 3)} kWh more energy"
        elif choice["key"] == "model-level":
            why += "; model level is kept as the simpler plan on a tie"
    else:
        why = f"needs {_num(more)} GPU-hours more over the trace ({_pct(more / base) if base else '-'} more)"
    return {"key": other["key"], "monthly_cost_usd": other["monthly_cost_usd"], "why": why,
            "usage": f"{_num(other['gpu_hours']['median'])} GPU-hours over the trace"}


def operator_answer(summary: Mapping, scenario: Mapping) -> dict | None:
    """The operator-level comparison's answer; None before the plan finished."""
    rows = {r["key"]: r for r in summary.get("rows") or []}
    if "operator-level" not in rows or "model-level" not in rows:
        return None
    span_s = float(summary.get("windows") or 0) * float(summary.get("window_s") or 0.0)
    out = _base(span_s, OPERATOR_TIER, 1.0, "plan of the recorded trace (no workload seeds, so no band)",
                "the plan carries no GPU prices; GPU-hours over the trace instead")
    cands = {k: _operator_candidate(r, summary, scenario, span_s) for k, r in rows.items()
             if k in ("model-level", "operator-level")}
    out["candidates"] = [cands["model-level"], cands["operator-level"]]
    choice = cands[operator_choice(rows)["key"]]
    other = next(c for c in out["candidates"] if c is not choice)
    words = ("scale per operator" if choice["key"] == "operator-level" else "keep model-level scaling")
    gpu_h = f"{_num(choice['gpu_hours']['median'])} GPU-hours over the {_num(span_s / 3600.0, 1)} h of the trace"
    if not choice["accepted"]:
        headline = (f"some windows cannot meet their SLO under either plan; of the rest, {words}: {gpu_h} against "
                    f"{_num(other['gpu_hours']['median'])} ({other['key']})")
        return {**out, "status": "no_fleet", "choice": None, "best": choice, "headline": headline}
    versus = f" against {_num(other['gpu_hours']['median'])} for {other['key']}"
    e_choice, e_other = choice["energy_kwh"]["median"], other["energy_kwh"]["median"]
    if abs(other["gpu_hours"]["median"] - choice["gpu_hours"]["median"]) < 1e-9:
        versus = f", as many as {other['key']}" + (f", with {_num(e_other - e_choice, 3)} kWh less energy"
                                                 if e_choice is not None and e_other is not None
                                                 and e_other > e_choice else "")
    headline = f"{words}: {gpu_h}{versus}, every window within its SLO; cost not known (no prices)"
    return {**out, "status": "answer", "choice": choice, "rejected": _operator_rejected(choice, other),
            "headline": headline}
