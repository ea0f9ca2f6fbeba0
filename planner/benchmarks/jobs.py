"""Job handlers of the benchmarks app: calibration and validation on the workers."""

from __future__ import annotations

from planner.benchmarks import services
from planner.benchmarks.core.errors import BenchmarkError
from planner.benchmarks.models import BenchmarkRun
from planner.catalogue.physics import Efficiency
from planner.hardware.models import Deployment
from planner.jobs.registry import JobError, handler


def _runs(job) -> list[BenchmarkRun]:
    ids = [int(i) for i in job.params.get("run_ids") or []]
    runs = list(BenchmarkRun.objects.filter(team=job.team, pk__in=ids))
    missing = sorted(set(ids) - {r.pk for r in runs})
    if missing:
        raise JobError(f"benchmark run(s) {missing} no longer exist", where="run_ids",
                       hint="they were deleted; choose other runs")
    return runs


@handler("benchmarks.calibrate", idempotent=True)
def calibrate(job, ctx):
    """Fit a GPU type's physics coefficients on some runs, score them on the held-out runs, save new versions."""
    p = job.params
    try:
        return services.calibrate(job.team, job.created_by, _runs(job), holdout=float(p.get("holdout", 0.25)),
                                  seed=int(p.get("seed", 0)), seeds=int(p.get("seeds", 3)),
                                  duration_scale=float(p.get("duration_scale", 0.2)),
                                  maxiter=int(p.get("maxiter", 80)), progress=ctx.callback(0.0, 99.0))
    except BenchmarkError as exc:
        raise JobError(exc.message, where=exc.where, hint=exc.hint) from None


@handler("benchmarks.validate", idempotent=True)
def validate(job, ctx):
    """Measured vs simulated for chosen runs, with a deployment's latency model or physics coefficients."""
    p = job.params
    dep = None
    if p.get("deployment_id"):
        dep = Deployment.objects.filter(pk=p["deployment_id"]).first()
        if dep is None:
            raise JobError("the deployment no longer exists", where="deployment_id", hint="choose another")
    eff = Efficiency.from_dict(p["efficiency"]) if p.get("efficiency") else None
    try:
        v = services.validate(job.team, job.created_by, _runs(job), deployment=dep, efficiency=eff,
                              seeds=int(p.get("seeds", 3)), progress=ctx.callback(0.0, 99.0))
    except BenchmarkError as exc:
        raise JobError(exc.message, where=exc.where, hint=exc.hint) from None
    return {"validation_id": v.pk, "pooled": v.pooled}
