"""What a comparison honestly is, from its parent job AND its strategy runs (pages, list, API, PDF, CLI).

The parent job stays queued while the children run and only runs the aggregation, so its own status,
progress and timings do not describe the comparison: ``status_of`` says ``running`` while strategies run,
``partial`` when some strategies failed or were cancelled (the savings table then covers the others),
``failed`` when the baseline (or everything) failed; ``progress_of`` averages the children; ``wall_s_of``
is the wall time from the first strategy's start to the aggregation's end.
"""

from __future__ import annotations

FAILED_STATES = ("failed", "cancelled")


def _results(comp):
    return list(comp.results.all())  # prefetched by the list and the page


def status_of(comp) -> str:
    job = comp.job if comp.job_id else None
    results = _results(comp)
    if job is None:
        return "queued"
    if job.status in ("queued", "running"):
        started = any(r.status != "pending" or (r.job is not None and r.job.started) for r in results)
        return "running" if started or job.status == "running" else "queued"
    if job.status in ("failed", "cancelled"):
        return job.status
    bad = [r for r in results if r.status in FAILED_STATES]
    if bad and len(bad) == len(results):
        return "failed"
    return "partial" if bad or job.status == "partial" else job.status


def failures_of(comp) -> list[dict]:
    """[{key, status, message, where, hint}] for every strategy run that did not finish."""
    out = []
    for r in _results(comp):
        if r.status in FAILED_STATES:
            e = r.error or {}
            out.append({"key": r.key, "status": r.status, "message": e.get("message") or r.status,
                        "where": e.get("where", ""), "hint": e.get("hint", "")})
    return out


def progress_of(comp) -> float:
    results = _results(comp)
    if not results:
        return float(comp.job.progress) if comp.job_id else 0.0
    total = 0.0
    for r in results:
        if r.status in ("done", *FAILED_STATES):
            total += 100.0
        elif r.job is not None:
            total += float(r.job.progress or 0.0)
    share = total / len(results)
    if comp.job_id and comp.job.status not in ("queued", "running"):
        return 100.0
    return round(0.95 * share, 1)  # the last 5 % is the aggregation


def wall_s_of(comp) -> float | None:
    starts = [r.job.started for r in _results(comp) if r.job is not None and r.job.started]
    if not starts:
        return None
    from django.utils import timezone

    end = comp.job.finished if comp.job_id and comp.job.finished else None
    if end is None:
        ends = [r.job.finished for r in _results(comp) if r.job is not None and r.job.finished]
        active = comp.job_id and comp.job.status in ("queued", "running")
        end = timezone.now() if active or not ends else max(ends)
    return max(0.0, (end - min(starts)).total_seconds())
