"""Job handlers of the traces app."""

from __future__ import annotations

import json
import os

from django.utils import timezone

from planner.hardware.models import ModelProfile
from planner.ingest.characterise import characterise
from planner.jobs.registry import JobError, handler
from planner.traces.models import Trace


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
