"""Job handlers of the traces app."""

from __future__ import annotations

import errno
import json
import os

from django.utils import timezone

from planner.hardware.models import ModelProfile
from planner.ingest.characterise import characterise
from planner.ingest.errors import TraceFormatError
from planner.ingest.pipeline import ingest
from planner.ingest.transforms import TransformOptions
from planner.jobs.registry import JobCancelled, JobError, handler
from planner.limits import ingest_limits
from planner.traces.models import NORMALISE, Trace


def _context_limits(team) -> dict[str, int]:
    """{model name: max_model_len} of the catalogue models the team sees (its own override built-ins)."""
    limits: dict[str, int] = {}
    for qs_filter in ({"builtin": True, "team__isnull": True}, {"team": team}):
        for name, limit in ModelProfile.objects.filter(max_model_len__isnull=False, **qs_filter).values_list(
            "name", "max_model_len"
        ):
            limits[name] = limit
    return limits


@handler("trace.characterise", idempotent=True)
def characterise_trace(job, ctx):
    """Compute the characterisation of a trace; store the summary on the row and the series in a file."""
    trace = Trace.objects.filter(pk=job.params.get("trace_id"), team=job.team).first()
    if trace is None:
        raise JobError(
            "the trace no longer exists",
            where=f"trace #{job.params.get('trace_id')}",
            hint="it was deleted; upload it again to characterise it",
        )
    if not trace.normalised_file.exists():
        raise JobError(
            "the normalised file of this trace is missing",
            where=str(trace.normalised_file),
            hint="delete the trace and import it again",
        )
    result = characterise(trace.normalised_file, progress=ctx.callback(0.0, 95.0), context_limits=_context_limits(job.team))
    ctx.progress(96.0, "saving", force=True)
    tmp = trace.characterisation_file.with_suffix(".json.tmp")
    with open(tmp, "w") as fh:
        json.dump({"series": result["series"], "cdf": result["cdf"]}, fh, separators=(",", ":"))
    os.replace(tmp, trace.characterisation_file)
    Trace.objects.filter(pk=trace.pk).update(characterisation=result["summary"], characterised=timezone.now())
    s = result["summary"]
    return {
        "trace_id": trace.pk,
        "requests": s["requests"],
        "span_s": s["span_s"],
        "groups": len(s["groups"]),
        "interarrival_cv": s["interarrival_cv"],
    }


def _fail_trace(trace: Trace, reason: dict) -> None:
    """Record why a trace could not be normalised; its partial outputs go, the original stays for download, and
    the fingerprint is freed so the same file can be uploaded again."""
    for name in ("normalised.parquet", "normalised.parquet.tmp"):
        (trace.directory / name).unlink(missing_ok=True)
    for tmp in trace.directory.glob("*.tmp*") if trace.directory.exists() else ():
        if tmp.is_file():
            tmp.unlink(missing_ok=True)
    Trace.objects.filter(pk=trace.pk).update(
        status=Trace.Status.FAILED, status_reason=reason, fingerprint=f"failed:{trace.storage_key}"
    )


def _lost(job) -> None:
    """The normalisation's worker was lost for good: the trace says so."""
    trace = Trace.objects.filter(pk=job.params.get("trace_id"), status__in=(Trace.Status.PENDING,
                                                                          Trace.Status.NORMALISING)).first()
    if trace is not None:
        _fail_trace(trace, {"message": "the worker normalising this trace was lost", "where": f"job #{job.pk}",
                            "hint": "upload the file again", "file": trace.original_name})


@handler(NORMALISE, idempotent=True, on_lost=_lost)
def normalise_trace(job, ctx):
    """Normalise a stored upload to Parquet, fill in the trace's totals, mark it ready, queue its characterisation.
    A bad file fails the job and the trace with what, where (file, line, column) and how to fix it."""
    from planner.jobs.services import create_job
    from planner.traces.services import CHARACTERISE, write_manifest

    trace = Trace.objects.filter(pk=job.params.get("trace_id"), team=job.team).first()
    if trace is None:
        raise JobError("the trace no longer exists", where=f"trace #{job.params.get('trace_id')}",
                       hint="it was deleted while it waited; upload it again")
    if trace.original_path is None or not trace.original_path.exists():
        reason = {"message": "the stored upload is missing", "where": str(trace.original_file),
                  "hint": "upload the file again", "file": trace.original_name}
        _fail_trace(trace, reason)
        raise JobError(reason["message"], where=f"{trace.original_name}", hint=reason["hint"])
    Trace.objects.filter(pk=trace.pk).update(status=Trace.Status.NORMALISING, status_reason=None)
    try:
        result = ingest(trace.original_path, trace.normalised_file, fmt=trace.format,
                        options=TransformOptions.from_dict(trace.options), work_dir=trace.directory,
                        progress=ctx.callback(0.0, 95.0), limits=ingest_limits())
    except TraceFormatError as exc:
        where = f"{trace.original_name}: {exc.where}" if exc.where else trace.original_name
        reason = {"message": exc.message, "where": where, "hint": exc.hint, "file": trace.original_name}
        if exc.line is not None:
            reason["line"] = exc.line
        if exc.column:
            reason["column"] = exc.column
        _fail_trace(trace, reason)
        raise JobError(exc.message, where=where, hint=exc.hint) from None
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        reason = {"message": "the server's trace storage filled up while normalising; nothing of it was kept",
                  "where": "server storage (PLANNER_DATA_DIR)", "file": trace.original_name,
                  "hint": "try again later; the operator must free space or grow the disk"}
        _fail_trace(trace, reason)
        raise JobError(reason["message"], where=reason["where"], hint=reason["hint"]) from None
    except JobCancelled:
        _fail_trace(trace, {"message": "the normalisation was cancelled", "where": f"job #{job.pk}",
                            "hint": "upload the file again", "file": trace.original_name})
        raise
    ctx.progress(96.0, "saving", force=True)
    write_manifest(trace.directory, {trace.original_file: trace.content_sha256})
    Trace.objects.filter(pk=trace.pk).update(
        status=Trace.Status.READY, status_reason=None, format=result.format, requests=result.requests,
        span_s=result.span_s, input_tokens=result.input_tokens, output_tokens=result.output_tokens,
        failed_requests=result.failed, source_rows=result.source_rows, was_sorted=result.was_sorted,
        start_epoch_s=result.start_epoch_s, columns=result.columns, groups=result.groups,
    )
    follow = create_job(team=job.team, kind=CHARACTERISE, user=job.created_by, params={"trace_id": trace.pk})
    Trace.objects.filter(pk=trace.pk).update(job=follow)
    return {"trace_id": trace.pk, "requests": result.requests, "span_s": result.span_s, "format": result.format,
            "characterisation_job": follow.pk}
