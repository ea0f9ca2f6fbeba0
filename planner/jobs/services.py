"""Creating, dispatching and cancelling jobs.

Dispatch happens after commit (``transaction.on_commit``), and the row carries its own outbox mark
(``dispatched``, set in the creating transaction), so a dispatch that never happened (the process
died after the commit, the broker was down) is found and repeated by the reaper's re-dispatch sweep
(planner/jobs/reaper.py). ``dispatch`` never raises on a broker failure: the row stays queued.

A web request that would create a job while the broker is down is refused up front with
``QueueUnavailable`` (HTTP 503, the documented JSON error shape, ``Retry-After``), before anything
is stored; only a failure in the short window between that check and the commit leaves a queued row
for the sweep, which sends it once the broker is back.
"""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from rest_framework.exceptions import APIException

from planner.accounts.models import Team
from planner.jobs.db import retry_db
from planner.jobs.models import Job
from planner.jobs.tasks import CURRENT_JOB, execute, run_job

log = logging.getLogger(__name__)


class QueueUnavailable(APIException):
    """The job queue (the Celery broker) cannot be reached: nothing was stored; try again later."""

    status_code = 503
    default_code = "queue_unavailable"
    wait = 15  # DRF turns this into a Retry-After header

    def __init__(self, reason: str = "") -> None:
        self.reason = reason
        super().__init__(detail={"error": {
            "message": "the job queue is unavailable, so no work can be started now; nothing was stored",
            "where": "job queue (Redis)",
            "hint": "try again in a minute; if it persists, check REDIS_URL and that Redis is running"
                    + (f" ({reason})" if reason else ""),
        }})


_queue_ok_until = 0.0


def ensure_queue_available() -> None:
    """Raise QueueUnavailable if jobs cannot be handed to workers now (Celery runner only).

    Not checked inside a running job (its fan-out rows are dispatched by the sweep if need be).
    A success is remembered for one second, so a fan-out of many children pings once.
    """
    global _queue_ok_until
    if settings.JOBS_RUNNER != "celery" or CURRENT_JOB.get() is not None:
        return
    if time.monotonic() < _queue_ok_until:
        return
    import redis

    try:
        redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_connect_timeout=2, socket_timeout=3).ping()
    except Exception as exc:
        raise QueueUnavailable(type(exc).__name__) from None
    _queue_ok_until = time.monotonic() + 1.0


class TooManyLongJobs(APIException):
    """The team already has JOBS_MAX_LONG_PER_TEAM long jobs queued or running: nothing was stored."""

    status_code = 429
    default_code = "too_many_long_jobs"
    wait = 60

    def __init__(self, running: int, limit: int, requests: int) -> None:
        super().__init__(detail={"error": {
            "message": f"your team already has {running} long job(s) queued or running (the limit is {limit}); "
                       f"this one simulates {requests:,} requests, which is long work; nothing was stored",
            "where": "job queue (long work)",
            "hint": f"wait for one to end or cancel one (GET /api/jobs/?status=running), or simulate fewer than "
                    f"{settings.JOBS_LONG_REQUESTS:,} requests, which runs as short work",
        }})


def check_long_job_budget(team, requests: int | None) -> None:
    """Refuse new long work (``requests`` at JOBS_LONG_REQUESTS or more) when the team has JOBS_MAX_LONG_PER_TEAM
    long jobs active: top-level jobs that are long themselves or have a long child (a comparison counts once).

    Call it inside the creating transaction: the team row is locked for the count (PostgreSQL), so parallel
    requests cannot all slip under the limit."""
    if requests is None or requests < settings.JOBS_LONG_REQUESTS:
        return
    Team.objects.select_for_update().filter(pk=team.pk).first()
    long = Q(work_requests__gte=settings.JOBS_LONG_REQUESTS) | Q(children__work_requests__gte=settings.JOBS_LONG_REQUESTS)
    running = Job.objects.filter(long, team=team, parent=None, status__in=Job.ACTIVE).distinct().count()
    if running >= settings.JOBS_MAX_LONG_PER_TEAM:
        raise TooManyLongJobs(running, settings.JOBS_MAX_LONG_PER_TEAM, requests)


def create_job(*, team, kind: str, user=None, params: dict | None = None, parent: Job | None = None,
               enqueue: bool = True, requests: int | None = None) -> Job:
    """Create a queued job row and dispatch it once the surrounding transaction commits.

    With ``enqueue=False`` the row waits (a fan-in parent) until someone calls ``mark_and_dispatch``.
    ``requests``: how many requests the job simulates. At JOBS_LONG_REQUESTS or more it goes to the long-work
    queue, and a top-level one counts against the team's JOBS_MAX_LONG_PER_TEAM (TooManyLongJobs, 429).
    """
    if enqueue:
        ensure_queue_available()
    with transaction.atomic():
        if parent is None:
            check_long_job_budget(team, requests)
        job = Job.objects.create(team=team, created_by=user, kind=kind, params=params or {}, parent=parent,
                                 dispatched=timezone.now() if enqueue else None, work_requests=requests)
    if enqueue:
        transaction.on_commit(lambda: dispatch(job.pk))
    return job


def queue_for(job_id: int) -> str:
    """The Celery queue of a job: long work (JOBS_LONG_REQUESTS or more requests) apart from short work."""
    requests = Job.objects.filter(pk=job_id).values_list("work_requests", flat=True).first()
    return settings.JOBS_LONG_QUEUE if (requests or 0) >= settings.JOBS_LONG_REQUESTS else settings.JOBS_QUEUE


def _celery_task():
    """The job task, bound to the planner's Celery app (loaded here, on the first message, not at start-up)."""
    import planner.celeryapp  # noqa: F401  (makes the planner's app the current one)

    return run_job


def mark_and_dispatch(job_id: int) -> None:
    """Set the outbox mark of a waiting job (in the current transaction) and dispatch it after commit."""
    Job.objects.filter(pk=job_id, status=Job.Status.QUEUED).update(dispatched=timezone.now())
    transaction.on_commit(lambda: dispatch(job_id))


def dispatch(job_id: int) -> bool:
    """Hand a job to the runner chosen by settings.JOBS_RUNNER. False if the broker refused it
    (the row stays queued with its outbox mark; the reaper's sweep sends it again)."""
    runner = settings.JOBS_RUNNER
    if runner == "celery":
        try:
            async_result = _celery_task().apply_async((job_id,), queue=queue_for(job_id), retry=True,
                                               retry_policy=settings.JOBS_PUBLISH_RETRY)
        except Exception as exc:  # broker down: the sweep re-sends it
            log.warning("could not send job %s to the broker (%s); it stays queued for the re-dispatch sweep",
                        job_id, exc)
            return False
        retry_db(lambda: Job.objects.filter(pk=job_id).update(celery_task_id=async_result.id),
                 what=f"recording the task id of job {job_id}")
    elif runner == "thread":
        threading.Thread(target=_run_in_thread, args=(job_id,), name=f"job-{job_id}", daemon=True).start()
    else:
        execute(job_id)
    return True


def _run_in_thread(job_id: int) -> None:
    try:
        execute(job_id)
    except Exception:
        log.exception("job %s: the in-process runner failed", job_id)
    finally:
        connection.close()


def cancel_job(job: Job) -> bool:
    """Cancel a queued or running job (and its children). Returns False if it had already ended.

    A running job stops at its next progress report, or within JOBS_CANCEL_POLL_S through its
    watchdog (planner/jobs/watchdog.py) if it is deep in one computation.
    """
    now = timezone.now()
    updated = Job.objects.filter(pk=job.pk, status__in=Job.ACTIVE).update(
        status=Job.Status.CANCELLED, message="cancelled by user", finished=now
    )
    children = list(Job.objects.filter(parent=job, status__in=Job.ACTIVE).values_list("celery_task_id", flat=True))
    Job.objects.filter(parent=job, status__in=Job.ACTIVE).update(
        status=Job.Status.CANCELLED, message="parent cancelled", finished=now
    )
    if updated and settings.JOBS_RUNNER == "celery":
        for task_id in [job.celery_task_id, *children]:
            if task_id:
                try:  # a queued task is dropped; a running one is stopped by its watchdog
                    _celery_task().app.control.revoke(task_id)
                except Exception as exc:
                    log.warning("could not broadcast the revoke of %s (%s); the row is cancelled anyway", task_id, exc)
    job.refresh_from_db()
    return bool(updated)
