from __future__ import annotations

import logging
import traceback

from celery import shared_task
from django.db import close_old_connections
from django.utils import timezone

from planner.jobs.models import Job
from planner.jobs.registry import JobCancelled, JobContext, JobError, get_handler

log = logging.getLogger(__name__)


def execute(job_id: int) -> str:
    """Claim and run one job. Returns its final status (or 'skipped' if it was not queued)."""
    claimed = Job.objects.filter(pk=job_id, status=Job.Status.QUEUED).update(
        status=Job.Status.RUNNING, started=timezone.now(), progress=0.0, message="started"
    )
    if not claimed:
        return "skipped"
    job = Job.objects.get(pk=job_id)
    ctx = JobContext(job_id)
    try:
        result = get_handler(job.kind)(job, ctx)
    except JobCancelled:
        Job.objects.filter(pk=job_id).update(finished=timezone.now())
        return Job.Status.CANCELLED
    except JobError as exc:
        _finish(job_id, Job.Status.FAILED, last_error=exc.as_dict(), message=exc.message)
        return Job.Status.FAILED
    except Exception as exc:  # a bug or an outage: record it, keep the worker alive
        log.exception("job %s (%s) crashed", job_id, job.kind)
        error = {
            "type": type(exc).__name__,
            "message": str(exc) or type(exc).__name__,
            "where": f"job {job.kind}",
            "hint": "this is an internal error; the traceback is in the worker log",
            "traceback": traceback.format_exc(limit=8),
        }
        _finish(job_id, Job.Status.FAILED, last_error=error, message=error["message"])
        return Job.Status.FAILED
    _finish(job_id, Job.Status.SUCCEEDED, result=result or {}, progress=100.0, message="done")
    return Job.Status.SUCCEEDED


def _finish(job_id: int, status: str, **fields) -> None:
    fields.setdefault("message", "")
    fields["message"] = str(fields["message"])[:300]
    # Only a running job finishes; a cancelled one stays cancelled.
    Job.objects.filter(pk=job_id, status=Job.Status.RUNNING).update(
        status=status, finished=timezone.now(), **fields
    )


@shared_task(name="planner.jobs.run_job", acks_late=True)
def run_job(job_id: int) -> str:
    close_old_connections()
    try:
        return execute(job_id)
    finally:
        close_old_connections()
