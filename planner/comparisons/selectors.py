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
    """The comparison page's KPI cards: the answer (cheapest strategy; the baseline when nothing beats it),
    GPU-hours and $ saved per week against the baseline, SLO attainment per tier and pass/fail."""
    from planner.comparisons.core.report import slo_verdict

    summary = comp.summary or {}
    rows = {r["key"]: r for r in summary.get("rows", [])}
    if not rows:
        return None
    from planner.comparisons.core.report import choose_answer

    choice = choose_answer(summary)
    cheapest = rows[choice["cheapest"]]
    per_week = 24.0 / max(float(summary.get("duration_h") or 24.0), 1e-9) * 7.0
    cards = []
    for key in summary.get("order", list(rows)):
        r = rows.get(key)
        if r is None:
            continue
        tiers = {t: (r["tiers"].get(t) or {}).get("attainment") for t in ("IW-F", "IW-N")}
        tiers["NIW"] = r.get("niw_deadline_met")
        cards.append({"key": key, "is_baseline": r["is_baseline"], "is_cheapest": key == cheapest["key"],
                      "is_answer": key == choice["key"],
                      "saved_gpu_hours_week": r["saved_gpu_hours"] * per_week,
                      "saved_usd_week": r["saved_usd_per_week"], "saved_pct": r["saved_gpu_hours_pct"],
                      "cost_usd_week": r["cost_usd"] * per_week,
                      "tiers": [(t, None if v is None else 100.0 * v) for t, v in tiers.items()],
                      "verdict": slo_verdict(r)})
    answer = rows.get(choice["key"] or "")
    return {"answer": choice["key"], "cheapest": cheapest["key"], "baseline_is_cheapest": cheapest["is_baseline"],
            "answer_is_baseline": bool(answer and answer["is_baseline"]), "cards": cards}


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
