"""The compact table and the reasons for missed SLOs of a serverless and an operator-level comparison, in the layout
of a fleet comparison's page: the decision card leads (its kind's ``answer``, core/kind_answer.py, rendered by
``decisions/_card.html``), then why targets are missed and one row per system or plan
(``comparisons/_kind_table.html``); the details fold below.

Serverless (SLINFER against ServerlessLLM): a system meets the target when at least ``SLO_TARGET`` of the requests
meet their SLO (TTFT and average time per output token); the answer is core/kind_answer.serverless_choice's.
Operator-level: the plan with fewer GPU-hours (then energy), over the simulated span only.
"""

from __future__ import annotations

from planner.comparisons.core.kind_answer import SLO_TARGET, meets_target, operator_choice, serverless_choice


def _pct(x, digits: int = 1) -> str:
    return "–" if x is None else f"{100.0 * x:.{digits}f} %"


def _num(x, digits: int = 2) -> str:
    return "–" if x is None else f"{x:,.{digits}f}"


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
    """The serverless comparison's compact table and, when no system meets the target, the closest one's reasons."""
    summary = comp.summary or {}
    rows = summary.get("rows") or []
    answer, meets = serverless_choice(summary)
    if answer is None:
        return {}
    baseline = summary.get("baseline") or comp.baseline
    table = {"columns": ["System", "Requests within their SLO", f"Against {baseline}", "Nodes in use (average)",
                         "Energy", "SLO target"],
             "rows": [{"key": r["key"], "is_baseline": r["is_baseline"], "is_answer": r["key"] == answer["key"],
                       "title": r.get("description", ""), "meets": meets_target(r),
                       "verdict": "meets" if meets_target(r) else f"misses ({_pct(r['slo_attainment'])})",
                       "cells": [f"{_pct(r['slo_attainment'])} ({r['slo_met']:,} of {r['requests']:,})",
                                 _versus(r, baseline), _nodes(r), f"{_num(r['energy_kwh'], 3)} kWh"]}
                      for r in rows],
             "note": "One run per system on the same function trace (the SLINFER artefact's, replayed as recorded: no "
                     "workload seeds, so no band). SLO: first token within min(max(0.5, prompt/512), 8) s plus the "
                     "cold-start grace, and at most 0.25 s per output token on average; dropped requests miss. "
                     f"A system meets the target when at least {_pct(SLO_TARGET, 0)} of its requests meet their SLO."}
    reasons = serverless_reasons(answer) if not meets else []
    return {"table": table, "reasons": reasons}


def operator_context(comp) -> dict:
    """The operator-level comparison's table and reasons (its two rows: model level and operator level)."""
    summary = comp.summary or {}
    rows = {r["key"]: r for r in summary.get("rows") or []}
    if "operator-level" not in rows:
        return {}
    op, base = rows["operator-level"], rows["model-level"]
    answer = operator_choice(rows)

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
    return {"table": table, "reasons": reasons}
