"""Job handlers: one child job per variant (a simulation or plan), and the parent's aggregation step. What a
variant runs and how the results aggregate is the comparison's kind's (planner/comparisons/kinds)."""

from __future__ import annotations

import time

from planner.comparisons.kinds import RequestError, kind_of_comparison
from planner.comparisons.models import Comparison, VariantResult
from planner.comparisons.services import maybe_trigger_aggregation, record_variant
from planner.jobs.registry import JobCancelled, JobError, Partial, handler


def _variant_lost(job) -> None:
    """The variant's worker died (planner/jobs/reaper.py): record the failure and let fan-in proceed."""
    result = VariantResult.all_runs.select_related("comparison").filter(
        comparison_id=job.params.get("comparison"), key=job.params.get("key")).first()
    if result is None or result.status in VariantResult.FINAL:
        return
    record_variant(result, status=VariantResult.Status.FAILED, error=job.last_error)
    maybe_trigger_aggregation(result.comparison, kind_of_comparison(result.comparison))


@handler("comparisons.variant", on_lost=_variant_lost)
def run_variant_job(job, ctx):
    comp_id, key = job.params.get("comparison"), job.params.get("key")
    try:
        result = VariantResult.all_runs.select_related("comparison").get(comparison_id=comp_id, key=key)
    except VariantResult.DoesNotExist:
        raise JobError(f"comparison {comp_id} has no variant {key!r}", where="job params",
                       hint="the comparison was deleted; nothing to run") from None
    comp = result.comparison
    kind = kind_of_comparison(comp)
    VariantResult.objects.filter(pk=result.pk).update(status=VariantResult.Status.RUNNING)
    ctx.progress(1, f"{key}: building the workload", force=True)
    started = time.perf_counter()
    try:
        metrics = kind.simulate(comp, result, progress=ctx.callback(2, 99), base_dir=job.params.get("base_dir", ""))
    except JobCancelled:
        record_variant(result, status=VariantResult.Status.CANCELLED, wall_s=time.perf_counter() - started)
        maybe_trigger_aggregation(comp, kind)
        raise
    except Exception as exc:
        if isinstance(exc, RequestError):
            error = {"type": type(exc.__cause__ or exc).__name__, "message": exc.message, "where": exc.field,
                     "hint": exc.hint}
        else:  # a bug or a broken invariant: the run failed, the comparison is partial
            error = {"type": type(exc).__name__, "message": str(exc) or type(exc).__name__,
                     "where": f"{kind.noun} {result.key}", "hint": "internal error; see the worker log"}
        record_variant(result, status=VariantResult.Status.FAILED, error=error, wall_s=time.perf_counter() - started)
        maybe_trigger_aggregation(comp, kind)
        if isinstance(exc, RequestError):
            raise JobError(exc.message, where=exc.field, hint=exc.hint) from exc
        raise
    wall = time.perf_counter() - started
    record_variant(result, status=VariantResult.Status.DONE, metrics=metrics, wall_s=wall)
    maybe_trigger_aggregation(comp, kind)
    return {**kind.job_summary(key, metrics), "wall_s": round(wall, 3)}


def aggregate_comparison(comp: Comparison) -> dict:
    """The comparison's summary from its finished variants (failed ones are listed under ``missing``)."""
    results = list(comp.results.all())
    summaries = {r.key: r.metrics for r in results if r.status == VariantResult.Status.DONE and r.metrics}
    summary = kind_of_comparison(comp).aggregate(comp, summaries)
    summary["missing"] = {r.key: r.status for r in results if r.key not in summaries}
    comp.summary = summary
    comp.save(update_fields=["summary"])
    return summary


@handler("comparisons.aggregate", idempotent=True)
def aggregate_job(job, ctx):
    try:
        comp = Comparison.objects.get(pk=job.params.get("comparison"))
    except Comparison.DoesNotExist:
        raise JobError("the comparison no longer exists", where="job params", hint="nothing to do") from None
    noun = kind_of_comparison(comp).noun
    ctx.progress(95, "aggregating", force=True)
    summary = aggregate_comparison(comp)
    if "error" in summary:
        raise JobError(summary["error"], where=f"variant {comp.baseline}",
                       hint=f"open the failed {noun}'s job for its error, fix the scenario and run again")
    best = next((r for r in summary["rows"] if r["key"] == summary.get("best")), None)
    missing = summary.get("missing", {})
    result = {"baseline": comp.baseline, "best": summary.get("best"), "missing": missing,
              "best_saved_gpu_hours_pct": (best or {}).get("saved_gpu_hours_pct")}
    if missing:  # an honest terminal state: the table is there, but not every variant ran
        names = ", ".join(f"{k} ({v})" for k, v in missing.items())
        why = "" if comp.baseline not in missing else " (the baseline among them: no ratios against it)"
        return Partial(result, f"{len(missing)} of {len(comp.variants)} {noun} runs did not finish: {names}{why}",
                       where="variants", hint=f"open each failed {noun}'s job for its error; the table compares "
                                          f"only the {noun} runs that finished")
    return result


@handler("comparisons.routing_sweep", idempotent=True)
def run_routing_sweep(job, ctx):
    """Instance routers side by side as the rate steps past the knee (planner/comparisons/routing.py)."""
    from planner.comparisons.routing import base_scenario
    from simulations.engine import ScenarioError
    from simulations.engine.sweep import routing_sweep

    p = job.params
    try:
        return routing_sweep(base_scenario(p["minutes"]), p["rates"], p["routers"],
                             knee_attainment=p["knee_attainment"], progress=ctx.callback(0.0, 99.0))
    except ScenarioError as exc:
        raise JobError(exc.message, where=exc.field, hint="check the sweep's rates and routers") from None
