"""Job handlers of a capacity search: a step (replay and fan out), one probe (one simulation), the parent's finish."""

from __future__ import annotations

import time

from planner.capacity.models import CapacitySearch, Probe
from planner.capacity.services import finish_search, maybe_step, record_probe, run_step
from planner.jobs.models import Job
from planner.jobs.registry import JobCancelled, JobError, Partial, handler

SEARCH_ENDED = {"type": "SearchEnded", "message": "the search had ended before this probe started, so it did not run",
                "where": "probe", "hint": "nothing to do: the search's answer did not need it (spare work)"}


def _search(job) -> CapacitySearch:
    try:
        return CapacitySearch.objects.select_related("team", "created_by").get(pk=job.params.get("search"))
    except CapacitySearch.DoesNotExist:
        raise JobError("the capacity search no longer exists", where="job params", hint="nothing to do") from None


def _step_lost(job) -> None:
    """A step's worker died twice, or the step failed: finish with what the probes so far say (a partial
    answer); probes still running end on their own, and no step is claimed after the parent has ended."""
    search = CapacitySearch.objects.filter(pk=job.params.get("search")).first()
    if search is None:
        return
    from planner.jobs.services import mark_and_dispatch

    if CapacitySearch.objects.filter(pk=search.pk, finishing=False).update(finishing=True) and search.job_id:
        mark_and_dispatch(search.job_id)


@handler("capacity.step", idempotent=True, on_lost=_step_lost)
def step_job(job, ctx):
    search = _search(job)
    ctx.progress(5, f"step {job.params.get('round')}: replaying the search", force=True)
    from simulations.engine import ScenarioError

    try:
        return run_step(search, ctx)
    except ScenarioError as exc:
        _step_lost(job)
        raise JobError(exc.message, where=f"scenario.{exc.field}", hint="fix the scenario and start again") from None
    except JobCancelled:
        raise
    except Exception:
        _step_lost(job)  # a step that fails leaves no search waiting for it
        raise


def _probe_lost(job) -> None:
    """The probe's worker died (planner/jobs/reaper.py, after its retries): record it and let the search go on."""
    probe = Probe.objects.select_related("search").filter(pk=job.params.get("probe")).first()
    if probe is None or probe.status in Probe.FINAL:
        return
    record_probe(probe, status=Probe.Status.FAILED, error=job.last_error)


@handler("capacity.probe", idempotent=True, on_lost=_probe_lost)
def probe_job(job, ctx):
    from planner.capacity.core.driver import probe_inputs, run_probe_inputs
    from planner.capacity.services import trace_file
    from planner.limits import scenario_limits

    probe = Probe.objects.select_related("search", "search__team").filter(pk=job.params.get("probe")).first()
    if probe is None:
        raise JobError("the probe no longer exists", where="job params", hint="the search was deleted")
    if probe.status == Probe.Status.DONE:
        return {"probe": probe.pk, "memo": True}
    search = probe.search
    if not Job.objects.filter(pk=search.job_id, status__in=Job.ACTIVE).exists():
        # the search has its answer (or was stopped) before this probe started: spare work nobody will read
        record_probe(probe, status=Probe.Status.CANCELLED, error=SEARCH_ENDED)
        return {"probe": probe.pk, "skipped": SEARCH_ENDED["message"]}
    started = time.perf_counter()
    try:
        inputs = probe_inputs((search.state or {}).get("subs") or {}, probe.pid)
        ctx.progress(1, f"simulating {probe.pid[:200]}", force=True)
        outcome = run_probe_inputs(search.scenario, inputs, trace=trace_file(search.scenario, search.team),
                                   limits=scenario_limits(), progress=ctx.callback(2, 99))
    except JobCancelled:
        record_probe(probe, status=Probe.Status.CANCELLED, wall_s=time.perf_counter() - started)
        raise
    except Exception as exc:
        from simulations.engine import ScenarioError

        error = ({"type": "ScenarioError", "message": exc.message, "where": exc.field, "hint": exc.hint or ""}
                 if isinstance(exc, ScenarioError) else
                 {"type": type(exc).__name__, "message": str(exc) or type(exc).__name__, "where": probe.pid[:200],
                  "hint": "internal error; see the worker log"})
        record_probe(probe, status=Probe.Status.FAILED, error=error, wall_s=time.perf_counter() - started)
        if isinstance(exc, ScenarioError):
            raise JobError(exc.message, where=exc.field, hint=error["hint"]) from exc
        raise
    wall = time.perf_counter() - started
    record_probe(probe, status=Probe.Status.DONE, outcome=outcome, wall_s=wall)
    return {"probe": probe.pk, "cost_usd": outcome.get("cost_usd"), "wall_s": round(wall, 3)}


@handler("capacity.search", idempotent=True)
def search_job(job, ctx):
    search = _search(job)
    ctx.progress(97, "building the answer", force=True)
    answer = finish_search(search)
    failed = (search.state or {}).get("probes_failed") or search.probes.filter(
        status__in=[Probe.Status.FAILED, Probe.Status.CANCELLED]).count()
    result = {"status": answer["status"], "headline": answer["headline"],
              "probes": search.probes.count(), "failed_probes": failed}
    if failed:
        return Partial(result, f"{failed} of {search.probes.count()} simulations did not finish; the answer uses "
                               "the rest", where="probes",
                       hint="open the search's failed probes for their errors; the card says which strategies "
                            "are affected")
    return result


def resume(search: CapacitySearch) -> bool:
    """Nudge a search with no step queued or running: claim one even if no probe finished since the last."""
    if search.job_id and Job.objects.filter(pk=search.job_id, status__in=Job.ACTIVE).exists():
        return maybe_step(search, force=True)
    return False
