"""Job handlers: a run fans out to one job per series (parallel on Celery workers)."""

from __future__ import annotations

from dataclasses import fields

from forecasts import services
from forecasts.core.pipeline import SeriesOptions, analyse_series
from forecasts.models import ForecastRun, ForecastSeries
from planner.jobs.models import Job
from planner.jobs.registry import JobError, handler
from planner.jobs.services import create_job


@handler(services.RUN_KIND)
def forecast_run(job, ctx):
    """Bin the trace into series, then create one child job per series."""
    from planner.ingest.normalised import read_trace

    run = ForecastRun.objects.select_related("trace").filter(pk=job.params.get("run_id"), team=job.team).first()
    if run is None:
        raise JobError(
            "the forecast run no longer exists",
            where=f"run #{job.params.get('run_id')}",
            hint="it was deleted; start a new run",
        )
    trace = run.trace
    if not trace.normalised_file.exists():
        raise JobError(
            "the normalised file of this trace is missing",
            where=str(trace.normalised_file),
            hint="import the trace again",
        )
    ctx.progress(5, "reading the trace", force=True)
    columns = ["arrival_s", "input_tokens", "output_tokens", *run.params["group_by"]]
    frame = read_trace(trace.normalised_file, columns=columns)
    if len(frame) == 0:
        raise JobError("the trace has no requests", where=f"trace #{trace.pk}", hint="pick another trace")
    ctx.progress(20, "binning into series", force=True)
    rows = services.build_run_series(run, frame)
    inline = bool(job.params.get("inline_children"))
    children = []
    for row in rows:
        child = create_job(
            team=job.team,
            kind=services.SERIES_KIND,
            user=job.created_by,
            parent=job,
            params={"series_id": row.pk, "label": row.label},
            enqueue=not inline,
        )
        ForecastSeries.objects.filter(pk=row.pk).update(job=child)
        children.append(child)
    if inline:
        from planner.jobs.tasks import execute

        for i, child in enumerate(children):
            ctx.progress(20 + 80 * i / max(1, len(children)), f"series {i + 1}/{len(children)}", force=True)
            execute(child.pk)
    return {"run_id": run.pk, "series": len(rows), "bins": int(run.trace.span_s // run.params["resolution_s"])}


def _series_lost(job) -> None:
    """A series job's worker died (planner/jobs/reaper.py): the run summary still gets written."""
    series = ForecastSeries.objects.select_related("run").filter(pk=job.params.get("series_id")).first()
    if series is not None:
        _maybe_summarise(series.run, ending=series.pk)


@handler(services.SERIES_KIND, idempotent=True, on_lost=_series_lost)
def forecast_series(job, ctx):
    series = ForecastSeries.objects.select_related("run").filter(pk=job.params.get("series_id")).first()
    if series is None or series.run.team_id != job.team_id:
        raise JobError(
            "the series no longer exists", where=f"series #{job.params.get('series_id')}", hint="its run was deleted"
        )
    p = series.run.params
    allowed = {f.name for f in fields(SeriesOptions)}
    options = SeriesOptions(**{k: (tuple(v) if k == "candidates" else v) for k, v in p.items() if k in allowed})
    try:
        values = services.load_series_values(series)
        result = analyse_series(values, options, progress=ctx.callback(0.0, 98.0))
        services.store_series_result(series, result)
    except ValueError as exc:
        raise JobError(str(exc), where=series.label, hint="change the run parameters") from exc
    finally:  # failed or not, the last series to end writes the run summary
        _maybe_summarise(series.run, ending=series.pk)
    return {"series": series.label, "chosen": result["chosen"], "peak": result["forecast"]["peak"]}


def _maybe_summarise(run: ForecastRun, ending: int) -> None:
    """Write the run summary if no other series is still to finish (idempotent if two end together)."""
    pending = run.series.filter(chosen_method="", job__status__in=Job.ACTIVE).exclude(pk=ending)
    if not pending.exists():
        services.summarise_run(run)
