"""Is a job's attempt alive, and what happens to a running job whose attempt died.

Used by the worker (a duplicate message for an attempt that died) and by the reaper's sweep
(planner/jobs/reaper.py); it does not dispatch anything itself.
"""

from __future__ import annotations

import logging
import os
import socket
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from planner.jobs.db import retry_db
from planner.jobs.models import Job
from planner.jobs.registry import spec

log = logging.getLogger(__name__)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def owner_is_dead_here(worker: str) -> bool:
    """True if ``worker`` ("runner:host:pid") names a process on this host that no longer exists."""
    try:
        _runner, host, pid = worker.rsplit(":", 2)
        pid_n = int(pid)
    except ValueError:
        return False
    return host == socket.gethostname() and not _pid_alive(pid_n)


def attempt_is_dead(job: Job, now=None) -> bool:
    now = now or timezone.now()
    stale_before = now - timedelta(seconds=float(settings.JOBS_HEARTBEAT_TIMEOUT_S))
    last_sign = job.heartbeat or job.started
    if last_sign is None or last_sign < stale_before:
        return True
    return owner_is_dead_here(job.worker)


def handle_lost(job: Job, *, why: str) -> str:
    """Re-queue (idempotent kinds with attempts left) or fail a running job whose attempt died.

    ``job`` is the row as read; the transition only happens if the row is still that attempt.
    Returns "requeued", "failed" or "raced" (someone else changed the row first).
    """
    now = timezone.now()
    same_attempt = Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING, worker=job.worker,
                                      attempts=job.attempts)
    kind = spec(job.kind)
    if kind.idempotent and job.attempts < int(settings.JOBS_MAX_ATTEMPTS):
        n = retry_db(lambda: same_attempt.update(
            status=Job.Status.QUEUED, heartbeat=None, worker="", dispatched=now,
            message=f"re-queued after attempt {job.attempts} was lost: {why}"[:300]), what=f"re-queuing job {job.pk}")
        if n:
            log.warning("job %s (%s) re-queued: %s", job.pk, job.kind, why)
        return "requeued" if n else "raced"
    last_sign = job.heartbeat or job.started
    error = {
        "type": "WorkerLost",
        "message": f"worker lost: {why}",
        "where": f"job {job.kind}, attempt {job.attempts} on {job.worker or 'an unknown worker'}"
                 + (f", last heartbeat {last_sign.isoformat(timespec='seconds')}" if last_sign else ""),
        "hint": "the process running it died (killed, out of memory, a restart) or lost the database; "
                "start the job again, and if it happens again make the job smaller or give the worker more memory",
    }
    n = retry_db(lambda: same_attempt.update(status=Job.Status.FAILED, finished=now, last_error=error,
                                             message=error["message"][:300]), what=f"failing job {job.pk}")
    if not n:
        return "raced"
    log.warning("job %s (%s) failed: worker lost (%s)", job.pk, job.kind, why)
    if kind.on_lost is not None:
        try:
            kind.on_lost(Job.objects.get(pk=job.pk))
        except Exception:
            log.exception("on_lost hook of job %s (%s) failed", job.pk, job.kind)
    return "failed"
