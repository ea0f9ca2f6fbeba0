"""The runner: claim a job row, run its handler beside a watchdog, record the terminal state.

The row is the truth. A message (Celery) or a thread start is only a request to run the row; the
claim decides. A redelivered message finds the row ``running``: if the attempt that claimed it is
provably dead (its process is gone on this host, or its heartbeat is older than
JOBS_HEARTBEAT_TIMEOUT_S) the job is re-queued (idempotent kinds) or failed as "worker lost";
otherwise the message is a duplicate and is skipped.
"""

from __future__ import annotations

import contextvars
import logging
import os
import socket
import threading
import traceback

from celery import shared_task
from django.db import close_old_connections
from django.db.models import F
from django.utils import timezone

from planner.jobs.db import is_transient, retry_db
from planner.jobs.liveness import attempt_is_dead, handle_lost
from planner.jobs.models import Job
from planner.jobs.registry import JobCancelled, JobContext, JobError, Partial, get_handler

log = logging.getLogger(__name__)

# The id of the job whose handler runs in this context (None outside a job): jobs that create
# jobs (fan-out) do not need the web request's "is the queue up" check.
CURRENT_JOB: contextvars.ContextVar[int | None] = contextvars.ContextVar("planner_current_job", default=None)


def worker_id(runner: str | None = None) -> str:
    from django.conf import settings

    return f"{runner or settings.JOBS_RUNNER}:{socket.gethostname()}:{os.getpid()}"


def execute(job_id: int) -> str:
    """Claim and run one job. Returns its final status, or 'skipped' if there was nothing to run."""
    me = worker_id()
    claimed = _claim(job_id, me)
    if not claimed:
        job = retry_db(lambda: Job.objects.filter(pk=job_id).first(), what=f"reading job {job_id}")
        if job is None or job.status != Job.Status.RUNNING or not attempt_is_dead(job):
            return "skipped"  # ended, or a duplicate message for an attempt that is alive
        outcome = handle_lost(job, why="its previous attempt died and the message was delivered again")
        if outcome != "requeued" or not _claim(job_id, me):
            return Job.Status.FAILED if outcome == "failed" else "skipped"
    job = Job.objects.get(pk=job_id)
    return _run(job, me)


def _claim(job_id: int, me: str) -> bool:
    now = timezone.now()
    return bool(retry_db(lambda: Job.objects.filter(pk=job_id, status=Job.Status.QUEUED).update(
        status=Job.Status.RUNNING, started=now, heartbeat=now, finished=None, worker=me,
        attempts=F("attempts") + 1, progress=0.0, message="started",
    ), what=f"claiming job {job_id}"))


def _run(job: Job, me: str) -> str:
    from planner.jobs.watchdog import Watchdog

    ctx = JobContext(job.pk)
    token = CURRENT_JOB.set(job.pk)
    dog = Watchdog(job.pk, me, threading.get_ident())
    dog.start()
    try:
        try:
            result = get_handler(job.kind)(job, ctx)
        finally:
            dog.disarm()
    except JobCancelled:
        _finish_cancelled(job.pk)
        return Job.Status.CANCELLED
    except JobError as exc:
        _finish(job.pk, Job.Status.FAILED, last_error=exc.as_dict(), message=exc.message)
        return Job.Status.FAILED
    except Exception as exc:  # a bug or an outage: record it, keep the worker alive
        log.exception("job %s (%s) crashed", job.pk, job.kind)
        error = _crash_error(job, exc)
        _finish(job.pk, Job.Status.FAILED, last_error=error, message=error["message"])
        return Job.Status.FAILED
    finally:
        dog.stop()
        CURRENT_JOB.reset(token)
    if isinstance(result, Partial):
        _finish(job.pk, Job.Status.PARTIAL, result=result.result, last_error=result.error(), progress=100.0,
                message=result.message)
        return Job.Status.PARTIAL
    _finish(job.pk, Job.Status.SUCCEEDED, result=result or {}, progress=100.0, message="done")
    return Job.Status.SUCCEEDED


def _crash_error(job: Job, exc: Exception) -> dict:
    if is_transient(exc):
        return {
            "type": "DatabaseUnavailable",
            "message": f"database unavailable: {str(exc).strip() or type(exc).__name__}"[:500],
            "where": f"job {job.kind}",
            "hint": "the database could not be reached while the job ran; start it again once it is back",
        }
    return {
        "type": type(exc).__name__,
        "message": str(exc) or type(exc).__name__,
        "where": f"job {job.kind}",
        "hint": "this is an internal error; the traceback is in the worker log",
        "traceback": traceback.format_exc(limit=8),
    }


def _finish(job_id: int, status: str, **fields) -> None:
    fields.setdefault("message", "")
    fields["message"] = str(fields["message"])[:300]
    now = timezone.now()
    # Only a running job finishes; a cancelled one stays cancelled.
    retry_db(lambda: Job.objects.filter(pk=job_id, status=Job.Status.RUNNING).update(
        status=status, finished=now, heartbeat=now, **fields
    ), what=f"finishing job {job_id}")


def _finish_cancelled(job_id: int) -> None:
    now = timezone.now()
    retry_db(lambda: Job.objects.filter(pk=job_id, status=Job.Status.CANCELLED).update(finished=now, heartbeat=now),
             what=f"finishing job {job_id}")
    # A cancelled row whose cancel landed between claim and run still reads "running": settle it.
    retry_db(lambda: Job.objects.filter(pk=job_id, status=Job.Status.RUNNING).update(
        status=Job.Status.CANCELLED, message="cancelled"), what=f"finishing job {job_id}")


@shared_task(name="planner.jobs.run_job", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_job(job_id: int) -> str:
    close_old_connections()
    try:
        return execute(job_id)
    finally:
        close_old_connections()
