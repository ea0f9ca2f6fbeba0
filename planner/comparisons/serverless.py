"""Serverless comparisons (issue 18) through the comparison machinery: same models, same job kinds, same fan-out.

A comparison whose ``scenario`` has ``"kind": "serverless"`` (core/serverless.is_serverless) holds a serverless
spec (simulations/engine/serverless/spec.py); each of its systems (SLINFER, sllm, sllm+c, sllm+c+s, ablations)
is a ``comparisons.variant`` child job and a VariantResult row, and the parent ``comparisons.aggregate`` job
aggregates. planner/comparisons/jobs.py hands the two handlers' work to ``run_variant`` / ``aggregate_job``
below when the scenario is serverless; status, progress, cancellation, the lost-worker reaper and the list page
are the comparison's own (planner/comparisons/outcome.py): a system that failed makes the comparison partial.
"""

from __future__ import annotations

import time

from django.db import transaction

from planner.comparisons.core.serverless import (
    KIND,
    ServerlessVariantError,
    aggregate,
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


def run_variant(job, ctx, result: VariantResult) -> dict:
    """The ``comparisons.variant`` handler's work for a serverless comparison."""
    from planner.comparisons.services import maybe_trigger_aggregation, record_variant
    from planner.jobs.registry import JobCancelled, JobError
    from simulations.engine.serverless.spec import SpecError

    comp = result.comparison
    VariantResult.objects.filter(pk=result.pk).update(status=VariantResult.Status.RUNNING)
    variant = {"key": result.key, "strategy": result.strategy, "knobs": result.knobs}
    ctx.progress(1, f"{result.key}: simulating the serverless scenario", force=True)
    started = time.perf_counter()
    try:
        metrics = simulate_variant(comp.scenario, variant)
    except JobCancelled:
        record_variant(result, status=VariantResult.Status.CANCELLED, wall_s=time.perf_counter() - started)
        maybe_trigger_aggregation(comp)
        raise
    except Exception as exc:
        if isinstance(exc, SpecError):
            error = {"type": "SpecError", "message": exc.message, "where": f"scenario.{exc.where}",
                     "hint": exc.hint or "fix this field of the serverless scenario and start again"}
        else:  # OutOfMemory (the no-OOM invariant broke) or a bug: the run failed, the comparison is partial
            error = {"type": type(exc).__name__, "message": str(exc) or type(exc).__name__,
                     "where": f"system {result.key}", "hint": "internal error; see the worker log"}
        record_variant(result, status=VariantResult.Status.FAILED, error=error, wall_s=time.perf_counter() - started)
        maybe_trigger_aggregation(comp)
        if isinstance(exc, SpecError):
            raise JobError(exc.message, where=error["where"], hint=error["hint"]) from exc
        raise
    wall = time.perf_counter() - started
    record_variant(result, status=VariantResult.Status.DONE, metrics=metrics, wall_s=wall)
    maybe_trigger_aggregation(comp)
    return {"key": result.key, "slo_met": metrics["slo_met"], "avg_gpu_nodes": metrics["avg_gpu_nodes"],
            "energy_kwh": metrics["energy_kwh"], "wall_s": round(wall, 3)}


def aggregate_comparison(comp: Comparison) -> dict:
    results = list(comp.results.all())
    summaries = {r.key: r.metrics for r in results if r.status == VariantResult.Status.DONE and r.metrics}
    summary = aggregate(summaries, comp.baseline, [r.key for r in results])
    summary["missing"] = {r.key: r.status for r in results if r.key not in summaries}
    comp.summary = summary
    comp.save(update_fields=["summary"])
    return summary


def aggregate_job(comp: Comparison, ctx):
    """The ``comparisons.aggregate`` handler's work for a serverless comparison: partial when a system did not
    finish (the table covers the others), failed when none did."""
    from planner.jobs.registry import JobError, Partial

    ctx.progress(95, "aggregating", force=True)
    summary = aggregate_comparison(comp)
    missing = summary["missing"]
    if not summary["rows"]:
        raise JobError("no system run finished", where="variants",
                       hint="open each system's job for its error, fix the scenario and run again")
    result = {"baseline": comp.baseline, "best": summary["best"], "missing": missing}
    if missing:
        names = ", ".join(f"{k} ({v})" for k, v in missing.items())
        why = "" if summary["baseline_finished"] else " (the baseline among them: no ratios against it)"
        return Partial(result, f"{len(missing)} of {len(comp.variants)} system runs did not finish: {names}{why}",
                       where="variants", hint="open each failed system's job for its error; the table compares only "
                                              "the systems that finished")
    return result
