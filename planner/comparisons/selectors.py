"""Reads: comparisons visible to a user, the per-variant summaries, fixtures, exports and figures."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings

from planner.accounts.access import visible_to
from planner.comparisons.models import Comparison, VariantResult

FIXTURE_DIR = Path(settings.BASE_DIR) / "fixtures" / "scenarios"


def comparisons_for(user):
    return visible_to(user, Comparison.objects.select_related("job").prefetch_related("results__job"))


def summaries_of(comp: Comparison) -> dict[str, dict]:
    return {r.key: r.metrics for r in comp.results.all() if r.status == VariantResult.Status.DONE and r.metrics}


def scenario_fixtures() -> list[str]:
    return sorted(p.stem for p in FIXTURE_DIR.glob("*.json"))


def load_fixture(name: str) -> dict:
    if name not in scenario_fixtures():
        raise KeyError(name)
    return json.loads((FIXTURE_DIR / f"{name}.json").read_text())


def export_meta(comp: Comparison) -> dict:
    from planner.comparisons.outcome import failures_of

    return {"comparison": comp.pk, "name": str(comp), "baseline": comp.baseline, "variants": comp.variants,
            "scenario": comp.scenario, "status": comp.status, "failed_runs": failures_of(comp)}


def kpis(comp: Comparison) -> dict | None:
    """The top of a fleet comparison's page: the answer (the cheapest strategy that meets the SLO targets), why
    targets are missed, and the compact table (one row per strategy, bands across seeds; core/table.py). Costs
    are over the simulated span; the week figure is labelled as the span repeated."""
    from planner.comparisons.core.table import saving_words, slo_reasons, strategy_table

    summary = comp.summary or {}
    if not summary.get("rows"):
        return None
    table = strategy_table(summary, comp.variants or [])
    duration_h = float(summary.get("duration_h") or 24.0)
    per_week = 24.0 / max(duration_h, 1e-9) * 7.0
    rows = []
    for r in table["rows"]:
        s = r["saved_usd"]
        week = None if s is None else s["median"] * per_week
        words = "" if week is None else saving_words(week, r["saved_pct"] and r["saved_pct"]["median"])
        rows.append({**r, "verdict": "meets" if r["meets"] else "misses: " + "; ".join(r["misses"]),
                     "week_words": words if words in ("", "costs the same") else f"{words} per week"})
    answer = next((r for r in rows if r["is_answer"]), None)
    return {"answer": table["answer"], "cheapest": table["cheapest"], "rows": rows, "answer_row": answer,
            "answer_is_baseline": bool(answer and answer["is_baseline"]), "seeds": table["seeds"],
            "span": table["span"], "extrapolated": duration_h < 24 * 7,
            "reasons": slo_reasons(table, summaries_of(comp))}


def fleet_answer(comp: Comparison) -> dict | None:
    """The decision card's answer of a fleet comparison (core/decision.py); None without strategy rows. Callers
    that may hold another kind use ``kinds.answer_of``."""
    from planner.comparisons.core.decision import comparison_answer
    from planner.comparisons.outcome import failures_of

    answer = comparison_answer(comp.summary or {}, comp.variants or [], comp.scenario or {})
    if answer is not None:
        answer["failed"] = {f["key"]: f for f in failures_of(comp)}
    return answer


def export_json(comp: Comparison) -> str:
    from planner.comparisons.core.export import to_json

    return to_json(export_meta(comp), summaries_of(comp), comp.summary if comp.summary.get("rows") else None)


def figures_json(comp: Comparison) -> dict[str, str]:
    from planner.comparisons.core.figures import all_figures

    summaries = summaries_of(comp)
    if not summaries:
        return {}
    order = [r.key for r in comp.results.all()]
    return {name: fig.to_json() for name, fig in all_figures(summaries, order).items()}
