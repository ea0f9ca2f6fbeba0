"""The decision, the compact table and the reasons for missed SLOs of a serverless and an operator-level comparison,
in the layout of a fleet comparison's page: a decision card at the top (``comparisons/_kind_card.html``), why
targets are missed, one row per system or plan (``comparisons/_kind_table.html``); the details fold below.

Serverless (SLINFER against ServerlessLLM): a system meets the target when at least ``SLO_TARGET`` of the requests
meet their SLO (TTFT and average time per output token). The answer is the system that meets it on the fewest
GPU nodes (then CPU nodes, then energy: nodes in use are what a serverless fleet pays for); when none meets it, the
closest (most SLO-met requests) with the reasons. Operator-level: the plan with fewer GPU-hours (then energy),
over the simulated span only (nothing is extrapolated).
"""

from __future__ import annotations

SLO_TARGET = 0.99


def _pct(x, digits: int = 1) -> str:
    return "–" if x is None else f"{100.0 * x:.{digits}f} %"


def _num(x, digits: int = 2) -> str:
    return "–" if x is None else f"{x:,.{digits}f}"


def _meets(r: dict) -> bool:
    return (r.get("slo_attainment") or 0.0) >= SLO_TARGET


def serverless_answer(summary: dict) -> tuple[dict | None, bool]:
    """(the recommended system's row, whether it meets the target); (None, False) before any system finished."""
    rows = summary.get("rows") or []
    meeting = [r for r in rows if _meets(r)]
    if meeting:
        return min(meeting, key=lambda r: (r["avg_gpu_nodes"] or 0.0, r["avg_cpu_nodes"] or 0.0,
                                           r["energy_kwh"] or 0.0)), True
    best = next((r for r in rows if r["key"] == summary.get("best")), None)
    return best, False


def _nodes(r: dict) -> str:
    return f"{_num(r.get('avg_cpu_nodes'))} CPU + {_num(r.get('avg_gpu_nodes'))} GPU"


def _versus(r: dict, baseline: str) -> str:
    if r["is_baseline"]:
        return "baseline"
    ratio = r.get("slo_met_vs_baseline")
    return "–" if ratio is None else f"{ratio:.2f}x {baseline}'s SLO-met requests"


def serverless_reasons(r: dict) -> list[dict]:
    """Why a system's requests miss their SLO, in words, largest cause first."""
    n = r.get("requests") or 0
    missed = n - (r.get("slo_met") or 0)
    if not n or not missed:
        return []
    dropped = r.get("dropped") or 0
    late = missed - dropped
    out = []
    if dropped:
        out.append({"kind": "overload", "count": dropped,
                    "text": f"{r['key']}: {dropped:,} of {n:,} requests ({_pct(dropped / n)}) were dropped: they waited "
                            "longer than their time-to-first-token target for a free node. The nodes are overloaded "
                            "at the peaks: add nodes, or let models share them (CPU nodes, sharing)."})
    if late:
        out.append({"kind": "late", "count": late,
                    "text": f"{r['key']}: {late:,} requests ({_pct(late / n)}) were served but late: the first token "
                            f"after its target (a cold start loads the model first; p99 time to first token "
                            f"{_num(r.get('ttft_p99_s'))} s) or more than 0.25 s per output token on average."})
    return sorted(out, key=lambda x: -x["count"])


def serverless_context(comp) -> dict:
    summary = comp.summary or {}
    rows = summary.get("rows") or []
    answer, meets = serverless_answer(summary)
    if answer is None:
        return {}
    baseline = summary.get("baseline") or comp.baseline
    base = next((r for r in rows if r["is_baseline"]), None)
    vs = "" if answer["is_baseline"] or base is None else (
        f", {answer['slo_met_vs_baseline']:.2f}x the SLO-met requests of {baseline}"
        if answer.get("slo_met_vs_baseline") is not None else "")
    if meets:
        headline = (f"Run {answer['key']}: {_pct(answer['slo_attainment'])} of requests within their SLO on "
                    f"{_nodes(answer)} nodes on average{vs}")
    else:
        headline = (f"No system meets the {_pct(SLO_TARGET, 0)} SLO target; the closest is {answer['key']} with "
                    f"{_pct(answer['slo_attainment'])} of requests within their SLO{vs}")
    others = [r for r in rows if r["key"] != answer["key"]]
    rejected = min((r for r in others if _meets(r)), key=lambda r: r["avg_gpu_nodes"] or 0.0, default=None)
    if rejected is None and others:
        runner = max(others, key=lambda r: r["slo_met"] or 0)
        why = (f"{runner['key']} meets the target on {_num(runner['avg_gpu_nodes'])} GPU nodes" if _meets(runner)
               else f"{runner['key']} reaches {_pct(runner['slo_attainment'])}")
    else:
        why = "" if rejected is None else (f"{rejected['key']} also meets it, on {_num(rejected['avg_gpu_nodes'])} "
                                           "GPU nodes on average")
    card = {"status": "answer" if meets else "no_answer", "headline": headline, "alternative": why,
            "kpis": [
                {"key": "slo", "label": f"Requests within their SLO (target {_pct(SLO_TARGET, 0)})",
                 "value": _pct(answer["slo_attainment"]), "note": f"{answer['slo_met']:,} of {answer['requests']:,}"},
                {"key": "nodes", "label": "Nodes in use, average", "value": _nodes(answer),
                 "note": "a node hosting at least one instance"},
                {"key": "energy", "label": "Energy over the run", "value": f"{_num(answer['energy_kwh'], 3)} kWh",
                 "note": f"{_num(answer.get('wh_per_slo_met'), 3)} Wh per SLO-met request"}],
            "span": f"{_num((summary.get('run_length_s') or 0.0) / 60.0, 1)} simulated minutes, one trace"}
    table = {"columns": ["System", "Requests within their SLO", f"Against {baseline}", "Nodes in use (average)",
                         "Energy", "SLO target"],
             "rows": [{"key": r["key"], "is_baseline": r["is_baseline"], "is_answer": r["key"] == answer["key"],
                       "title": r.get("description", ""), "meets": _meets(r),
                       "verdict": "meets" if _meets(r) else f"misses ({_pct(r['slo_attainment'])})",
                       "cells": [f"{_pct(r['slo_attainment'])} ({r['slo_met']:,} of {r['requests']:,})",
                                 _versus(r, baseline), _nodes(r), f"{_num(r['energy_kwh'], 3)} kWh"]}
                      for r in rows],
             "note": "One run per system on the same function trace (the SLINFER artefact's, replayed as recorded: no "
                     "workload seeds, so no band). SLO: first token within min(max(0.5, prompt/512), 8) s plus the "
                     "cold-start grace, and at most 0.25 s per output token on average; dropped requests miss. "
                     f"A system meets the target when at least {_pct(SLO_TARGET, 0)} of its requests meet their SLO."}
    reasons = serverless_reasons(answer) if not meets else []
    return {"card": card, "table": table, "reasons": reasons}


def operator_context(comp) -> dict:
    """The operator-level comparison's card, table and reasons (its two rows: model level and operator level)."""
    summary = comp.summary or {}
    rows = {r["key"]: r for r in summary.get("rows") or []}
    if "operator-level" not in rows:
        return {}
    op, base = rows["operator-level"], rows["model-level"]
    answer = min((base, op), key=lambda r: (round(r["gpu_hours"], 9), r["energy_kwh"] or 0.0))
    hours = (summary.get("windows") or 0) * (summary.get("window_s") or 0.0) / 3600.0

    def versus(r):
        if r["is_baseline"]:
            return "baseline"
        d = base["gpu_hours"] - r["gpu_hours"]
        words = ("the same GPU-hours" if abs(d) < 1e-9 else f"saves {_num(d)} GPU-h ({_pct(d / base['gpu_hours'])})"
                 if d > 0 else f"needs {_num(-d)} GPU-h more")
        if r["energy_kwh"] is not None and base["energy_kwh"]:
            e = base["energy_kwh"] - r["energy_kwh"]
            share = _pct(abs(e) / base["energy_kwh"])
            words += f"; saves {share} of the energy" if e >= 0 else f"; needs {share} more energy"
        return words

    infeasible = summary.get("infeasible_windows") or 0
    if answer is op:
        headline = (f"Scale per operator: {_num(op['gpu_hours'])} GPU-hours over the {_num(hours, 1)} h of the trace "
                    f"against {_num(base['gpu_hours'])} at model level ({versus(op)})")
    else:
        headline = (f"Keep model-level scaling: operator level {versus(op).replace('the same', 'needs the same')} "
                    f"({_num(op['gpu_hours'])} over the {_num(hours, 1)} h of the trace)")
    card = {"status": "no_answer" if infeasible else "answer", "headline": headline,
            "alternative": "" if answer is op else f"operator level: {versus(op)}",
            "kpis": [{"key": "gpu_hours", "label": "GPU-hours over the trace", "value": _num(answer["gpu_hours"]),
                      "note": f"prefill {_num(answer['prefill_gpu_hours'])} + decode {_num(answer['decode_gpu_hours'])}"},
                     {"key": "energy", "label": "Energy", "value": f"{_num(answer['energy_kwh'], 3)} kWh",
                      "note": f"model level {_num(base['energy_kwh'], 3)} kWh; per-request attribution (the paper's Eq. 9)"},
                     {"key": "windows", "label": "Windows meeting their SLOs",
                      "value": f"{(summary.get('windows') or 0) - infeasible} of {summary.get('windows') or 0}",
                      "note": f"windows of {_num(summary.get('window_s'), 0)} s, prefill and decode planned apart"}],
            "span": f"{_num(hours, 1)} h of trace, planned window by window (not extrapolated)"}
    table = {"columns": ["Plan", "GPU-hours", "Against model level", "Energy", "Memory", "SLO target"],
             "rows": [{"key": r["key"], "is_baseline": r["is_baseline"], "is_answer": r is answer, "title": "",
                       "meets": not infeasible, "verdict": "meets" if not infeasible else "some windows miss",
                       "cells": [_num(r["gpu_hours"]), versus(r), f"{_num(r['energy_kwh'], 3)} kWh",
                                 f"{_num(r['memory_gb_hours'], 1)} GB-h"]} for r in (base, op)],
             "note": "Both plans serve the same windows of the trace; GPU-hours and energy are summed over the trace's "
                     "span. One run (the trace as recorded): no band. SLO: each window's TTFT and time between "
                     "tokens targets (docs/opscale.md)."}
    reasons = []
    if infeasible:
        reasons.append({"kind": "unreachable", "text": f"{infeasible} window-phases cannot meet their SLO under some "
                                                       f"plan and are left out of the totals: "
                                                       f"{summary.get('infeasible_reason') or 'see the timeline'}."})
    if op.get("fallback_windows"):
        reasons.append({"kind": "fallback", "text": f"{op['fallback_windows']} windows fell back to the model-level "
                                                    "placement (operator level found no cheaper placement there)."})
    return {"card": card, "table": table, "reasons": reasons}
