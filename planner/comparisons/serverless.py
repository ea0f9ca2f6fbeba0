"""Serverless comparisons through the comparison machinery: same models, same job kinds, same fan-out.

A comparison whose ``scenario`` has ``"kind": "serverless"`` (core/serverless.is_serverless) holds a serverless
spec (simulations/engine/serverless/spec.py); each of its systems (SLINFER, sllm, sllm+c, sllm+c+s, ablations)
is a ``comparisons.variant`` child job and a VariantResult row, and the parent ``comparisons.aggregate`` job
aggregates. planner/comparisons/kinds/serverless.py is the kind the job handlers, pages and exports dispatch to; status,
progress, cancellation, the lost-worker reaper and the list page are the comparison's own
(planner/comparisons/outcome.py): a system that failed makes the comparison partial.
"""

from __future__ import annotations

from django.db import transaction

from planner.comparisons.core.serverless import (
    KIND,
    ServerlessVariantError,
    build_variants,
    is_serverless,
    spec_of,
    totals,
)
from planner.comparisons.models import Comparison, VariantResult
from planner.jobs.models import Job
from planner.jobs.services import create_job

__all__ = ["ServerlessVariantError", "is_serverless", "start_serverless_comparison"]


def parse_scenario(scenario):
    """The serverless spec of a comparison scenario (SpecError names the field)."""
    from simulations.engine.serverless.spec import SpecError, parse

    if not isinstance(scenario, dict):
        raise SpecError("a serverless scenario is a JSON object", where="", hint="see docs/comparisons.md")
    return parse(spec_of(scenario))


@transaction.atomic
def start_serverless_comparison(*, team, user=None, scenario: dict, systems=None, baseline: str | None = None,
                                name: str = "") -> Comparison:
    """Create the comparison, its parent job and one child job per system (dispatched after commit). Raises
    SpecError (bad scenario) or ServerlessVariantError (bad systems / baseline) before creating anything."""
    spec = parse_scenario(scenario)
    variants, base = build_variants(systems or _systems_of(scenario) or None, baseline)
    engine_systems = list(dict.fromkeys(v["strategy"] for v in variants))
    stored = {"kind": KIND, **spec.model_dump(), "systems": engine_systems}
    parent = create_job(team=team, user=user, kind="comparisons.aggregate", params={}, enqueue=False)
    comp = Comparison.objects.create(team=team, created_by=user, name=name or spec.name, scenario=stored,
                                     variants=variants, baseline=base, job=parent)
    Job.objects.filter(pk=parent.pk).update(
        params={"comparison": comp.pk, "variants": [v["key"] for v in variants], "kind": KIND},
        message=f"waiting for {len(variants)} system runs")
    for i, v in enumerate(variants):
        child = create_job(team=team, user=user, kind="comparisons.variant", parent=parent,
                           params={"comparison": comp.pk, "key": v["key"], "kind": KIND})
        VariantResult.objects.create(comparison=comp, key=v["key"], position=i, strategy=v["strategy"],
                                     scheduler="", knobs=v["knobs"], job=child)
    return comp


def _systems_of(scenario: dict) -> list[str]:
    return [s for s in scenario.get("systems") or [] if isinstance(s, str)]


def simulate_variant(scenario: dict, variant: dict) -> dict:
    """Run one system on the comparison's serverless scenario; the metrics dict plus ``totals`` (the API's
    per-run figures). Raises SpecError for a bad scenario, OutOfMemory if the no-OOM invariant breaks."""
    from simulations.engine.serverless import simulate
    from simulations.engine.serverless.spec import workload_frame

    spec = parse_scenario(scenario)
    base_cfg = spec.config(variant["strategy"])
    cfg = type(base_cfg)(**{**base_cfg.to_dict(), **(variant.get("knobs") or {})})
    metrics = simulate(workload_frame(spec), cfg)
    metrics["totals"] = totals(metrics)
    return metrics
