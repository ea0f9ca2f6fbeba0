"""Job handlers: one child job per variant (a simulation), and the parent's aggregation step."""

from __future__ import annotations

import time

from planner.comparisons.core.serverless import is_serverless
from planner.comparisons.models import Comparison, VariantResult
from planner.comparisons.services import aggregate_comparison, maybe_trigger_aggregation, record_variant
from planner.jobs.registry import JobCancelled, JobError, Partial, handler


def _run(scenario: dict, variant: dict, *, progress, base_dir: str, frame=None):
    """Indirection so tests can replace the engine run with a canned summary."""
    from planner.comparisons.core.runner import run_variant

    return run_variant(scenario, variant, progress=progress, base_dir=base_dir or None, frame=frame)


def _trace_kwargs(comp) -> dict:
    """{"frame": DataFrame} when the scenario replays one of the team's uploaded traces (``workload.trace_id``)."""
    trace_id = ((comp.scenario or {}).get("workload") or {}).get("trace_id")
    if trace_id is None:
        return {}
    from planner.comparisons.services import team_trace
    from planner.ingest.normalised import read_trace

    return {"frame": read_trace(team_trace(trace_id, comp.team).normalised_file)}


def _variant_lost(job) -> None:
    """The variant's worker died (planner/jobs/reaper.py): record the failure and let fan-in proceed."""
    result = VariantResult.objects.select_related("comparison").filter(
        comparison_id=job.params.get("comparison"), key=job.params.get("key")).first()
    if result is None or result.status in VariantResult.FINAL:
        return
    record_variant(result, status=VariantResult.Status.FAILED, error=job.last_error)
    maybe_trigger_aggregation(result.comparison)


@handler("comparisons.variant", on_lost=_variant_lost)
def run_variant_job(job, ctx):
    comp_id, key = job.params.get("comparison"), job.params.get("key")
    try:
        result = VariantResult.objects.select_related("comparison").get(comparison_id=comp_id, key=key)
    except VariantResult.DoesNotExist:
        raise JobError(f"comparison {comp_id} has no variant {key!r}", where="job params",
                       hint="the comparison was deleted; nothing to run") from None
    comp = result.comparison
    if is_serverless(comp.scenario):  # issue 18: a serverless system (planner/comparisons/serverless.py)
        from planner.comparisons.serverless import run_variant as run_serverless_variant

        return run_serverless_variant(job, ctx, result)
    VariantResult.objects.filter(pk=result.pk).update(status=VariantResult.Status.RUNNING)
    variant = {"key": result.key, "strategy": result.strategy, "scheduler": result.scheduler, "knobs": result.knobs}
    # the comparison's own variant list carries the rest (bundle, seed, tuning role; issue 19)
    variant.update({k: v for k, v in next((v for v in comp.variants or [] if v.get("key") == key), {}).items()
                    if k in ("bundle", "seed", "group", "role")})
    ctx.progress(1, f"{key}: building the workload", force=True)
    started = time.perf_counter()
    try:
        metrics = _run(comp.scenario, variant, progress=ctx.callback(2, 99), base_dir=job.params.get("base_dir", ""),
                       **_trace_kwargs(comp))
    except JobCancelled:
        record_variant(result, status=VariantResult.Status.CANCELLED, wall_s=time.perf_counter() - started)
        maybe_trigger_aggregation(comp)
        raise
    except Exception as exc:
        from simulations.engine import ScenarioError

        if isinstance(exc, ScenarioError):
            error = {"type": "ScenarioError", "message": exc.message, "where": exc.field,
                     "hint": "fix this field of the scenario and start the comparison again"}
        else:
            error = {"type": type(exc).__name__, "message": str(exc) or type(exc).__name__,
                     "where": f"strategy {variant['strategy']}", "hint": "internal error; see the worker log"}
        record_variant(result, status=VariantResult.Status.FAILED, error=error, wall_s=time.perf_counter() - started)
        maybe_trigger_aggregation(comp)
        if isinstance(exc, ScenarioError):
            raise JobError(exc.message, where=exc.field, hint=error["hint"]) from exc
        raise
    wall = time.perf_counter() - started
    record_variant(result, status=VariantResult.Status.DONE, metrics=metrics, wall_s=wall)
    maybe_trigger_aggregation(comp)
    tot = metrics.get("totals", {})
    return {"key": key, "instance_hours": tot.get("instance_hours"), "gpu_hours": tot.get("gpu_hours"),
            "cost_usd": tot.get("cost_usd"), "wall_s": round(wall, 3)}


@handler("comparisons.aggregate", idempotent=True)
def aggregate_job(job, ctx):
    try:
        comp = Comparison.objects.get(pk=job.params.get("comparison"))
    except Comparison.DoesNotExist:
        raise JobError("the comparison no longer exists", where="job params", hint="nothing to do") from None
    if is_serverless(comp.scenario):  # issue 18: systems side by side, not savings against a fleet baseline
        from planner.comparisons.serverless import aggregate_job as aggregate_serverless

        return aggregate_serverless(comp, ctx)
    ctx.progress(95, "aggregating", force=True)
    summary = aggregate_comparison(comp)
    if "error" in summary:
        raise JobError(summary["error"], where=f"variant {comp.baseline}",
                       hint="open the failed strategy's job for its error, fix the scenario and run again")
    best = next((r for r in summary["rows"] if r["key"] == summary.get("best")), None)
    result = {"baseline": comp.baseline, "best": summary.get("best"),
              "best_saved_gpu_hours_pct": best["saved_gpu_hours_pct"] if best else None,
              "missing": summary.get("missing", {})}
    missing = summary.get("missing", {})
    if missing:  # an honest terminal state: the table is there, but not every strategy ran
        names = ", ".join(f"{k} ({v})" for k, v in missing.items())
        return Partial(result, f"{len(missing)} of {len(comp.variants)} strategy runs did not finish: {names}",
                       where="variants", hint="open each failed strategy's job for its error; the savings table "
                                                "compares only the strategies that finished")
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
