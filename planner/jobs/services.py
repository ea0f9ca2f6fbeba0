"""Creating, dispatching and cancelling jobs."""

from __future__ import annotations

import threading

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from planner.jobs.models import Job


def create_job(*, team, kind: str, user=None, params: dict | None = None, parent: Job | None = None,
               enqueue: bool = True) -> Job:
    """Create a queued job row and dispatch it once the surrounding transaction commits."""
    job = Job.objects.create(team=team, created_by=user, kind=kind, params=params or {}, parent=parent)
    if enqueue:
        transaction.on_commit(lambda: dispatch(job.pk))
    return job


def dispatch(job_id: int) -> None:
    """Hand a job to the runner chosen by settings.JOBS_RUNNER."""
    from planner.jobs.tasks import execute, run_job

    runner = settings.JOBS_RUNNER
    if runner == "celery":
        async_result = run_job.delay(job_id)
        Job.objects.filter(pk=job_id).update(celery_task_id=async_result.id)
    elif runner == "thread":
        threading.Thread(target=_run_in_thread, args=(job_id,), name=f"job-{job_id}", daemon=True).start()
    else:
        execute(job_id)


def _run_in_thread(job_id: int) -> None:
    from planner.jobs.tasks import execute

    try:
        execute(job_id)
    finally:
        connection.close()


def cancel_job(job: Job) -> bool:
    """Cancel a queued or running job (and its children). Returns False if it had already ended."""
    now = timezone.now()
    updated = Job.objects.filter(pk=job.pk, status__in=Job.ACTIVE).update(
        status=Job.Status.CANCELLED, message="cancelled by user", finished=now
    )
    Job.objects.filter(parent=job, status__in=Job.ACTIVE).update(
        status=Job.Status.CANCELLED, message="parent cancelled", finished=now
    )
    if updated and job.celery_task_id and settings.JOBS_RUNNER == "celery":
        from planner.celery import app

        app.control.revoke(job.celery_task_id)  # a queued task is dropped; a running one stops at its next progress call
    job.refresh_from_db()
    return bool(updated)
