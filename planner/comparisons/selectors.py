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
    return {"comparison": comp.pk, "name": str(comp), "baseline": comp.baseline, "variants": comp.variants,
            "scenario": comp.scenario, "status": comp.status}


def export_csv(comp: Comparison) -> str:
    from planner.comparisons.core.export import to_csv

    return to_csv(summaries_of(comp), comp.summary if comp.summary.get("rows") else None)


def export_json(comp: Comparison) -> str:
    from planner.comparisons.core.export import to_json

    return to_json(export_meta(comp), summaries_of(comp), comp.summary if comp.summary.get("rows") else None)


def export_pdf(comp: Comparison) -> bytes:
    from planner.comparisons.core.report import build_pdf
    from planner.comparisons.core.runner import describe_assumptions
    from planner.opscaling.selectors import operator_level_story

    summaries = summaries_of(comp)
    aggregate = {**comp.summary, "extra_story": operator_level_story(comp.team)}
    return build_pdf(title=f"Cost report: {comp}", assumptions=describe_assumptions(comp.scenario, summaries),
                     aggregate=aggregate, summaries=summaries)


def figures_json(comp: Comparison) -> dict[str, str]:
    from planner.comparisons.core.figures import all_figures

    summaries = summaries_of(comp)
    if not summaries:
        return {}
    order = [r.key for r in comp.results.all()]
    return {name: fig.to_json() for name, fig in all_figures(summaries, order).items()}
