"""The reaper: reconcile job rows with reality (the row is the truth; messages and threads can vanish).

One sweep (``sweep()``) does two things:

1. **Running jobs whose attempt died.** A running row whose heartbeat is older than
   JOBS_HEARTBEAT_TIMEOUT_S, or whose process is gone on this host, lost its worker (kill -9, the
   OOM killer, a machine restart, a database outage longer than the retry window). An idempotent
   kind is re-queued and dispatched again (up to JOBS_MAX_ATTEMPTS attempts); any other is failed
   with ``last_error.type == "WorkerLost"`` and its kind's ``on_lost`` hook runs, so a fan-in
   parent (comparison, forecast run) still completes and reports the failed child.
2. **Queued jobs with no live message.** A queued row that was dispatched more than
   JOBS_REDISPATCH_AFTER_S ago and whose Celery message is neither in the Redis queue nor
   delivered-but-unacknowledged (a Redis restart without persistence, a dispatch that failed
   because the broker was down) is dispatched again. Duplicates are harmless: the claim is a
   conditional UPDATE, so only one message runs the job.

Where it runs: every Celery worker starts a reaper thread when it is ready (planner/celery.py), the
in-process runner starts one in the web process (planner/wsgi.py, after failing the jobs that a
restart orphaned), and ``manage.py reap_jobs`` runs one sweep (or ``--loop``) for cron or a
sidecar. Several reapers at once are safe: every transition is a conditional UPDATE.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from planner.jobs import services
from planner.jobs.liveness import attempt_is_dead, handle_lost, owner_is_dead_here
from planner.jobs.models import Job

log = logging.getLogger(__name__)

_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def reap_running(now=None) -> dict[int, str]:
    """Settle running jobs whose attempt is dead. Returns {job id: outcome}."""
    now = now or timezone.now()
    stale_before = now - timedelta(seconds=float(settings.JOBS_HEARTBEAT_TIMEOUT_S))
    outcomes: dict[int, str] = {}
    for job in Job.objects.filter(status=Job.Status.RUNNING).only(
            "id", "kind", "status", "worker", "attempts", "heartbeat", "started", "team_id"):
        if not attempt_is_dead(job, now):
            continue
        last_sign = job.heartbeat or job.started
        if last_sign is not None and last_sign < stale_before:
            why = f"no heartbeat for {(now - last_sign).total_seconds():.0f} s"
        else:
            why = f"its process {job.worker} is gone"
        outcome = handle_lost(job, why=why)
        outcomes[job.pk] = outcome
        if outcome == "requeued":
            services.dispatch(job.pk)
    return outcomes


def live_task_ids() -> set[str] | None:
    """Celery task ids with a live message in the Redis broker (queued, or delivered and not yet
    acknowledged), or None when that cannot be told (broker down, not Redis)."""
    url = settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return None
    import redis

    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=10)
        ids: set[str] = set()
        queue = getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", "celery")
        # The queue lists first, then the unacked hash: a message moving between them is seen once.
        for key in client.scan_iter(match=f"{queue}*", count=1000):
            if client.type(key) == b"list":
                for raw in client.lrange(key, 0, -1):
                    ids.update(m.decode() for m in _UUID.findall(raw))
        for raw in client.hvals("unacked"):
            ids.update(m.decode() for m in _UUID.findall(raw))
        return ids
    except Exception as exc:
        log.warning("cannot list the broker's messages (%s); no re-dispatch this round", exc)
        return None


def redispatch_queued(now=None) -> list[int]:
    """Dispatch again the queued jobs whose message is gone. Returns their ids."""
    now = now or timezone.now()
    before = now - timedelta(seconds=float(settings.JOBS_REDISPATCH_AFTER_S))
    candidates = list(Job.objects.filter(status=Job.Status.QUEUED, dispatched__lt=before)
                      .values_list("id", "dispatched", "celery_task_id"))
    if not candidates:
        return []
    live: set[str] = set()
    if settings.JOBS_RUNNER == "celery":
        found = live_task_ids()
        if found is None:
            return []
        live = found
    sent = []
    for job_id, dispatched, task_id in candidates:
        if task_id and task_id in live:
            continue
        # Claim the re-dispatch (several reapers may run): only the one that moves the mark sends.
        if Job.objects.filter(pk=job_id, status=Job.Status.QUEUED, dispatched=dispatched).update(dispatched=now):
            log.warning("job %s was queued with no live message; dispatching it again", job_id)
            services.dispatch(job_id)
            sent.append(job_id)
    return sent


def sweep() -> dict:
    """One reconciliation round (see the module docstring)."""
    reaped = reap_running()
    redispatched = redispatch_queued()
    return {"reaped": reaped, "redispatched": redispatched}


def fail_orphans_of_this_runner() -> dict[int, str]:
    """In-process runner start-up: running jobs whose thread lived in a process on this host that
    is gone (the server restarted) are failed, or re-queued if idempotent; queued ones are dispatched
    again (their thread died with the old process before it claimed them)."""
    prefix = f"{settings.JOBS_RUNNER}:{socket.gethostname()}:"
    outcomes = {}
    for job in Job.objects.filter(status=Job.Status.RUNNING, worker__startswith=prefix):
        if owner_is_dead_here(job.worker):
            outcome = handle_lost(job, why="the server process that ran it in a thread exited (restart)")
            outcomes[job.pk] = outcome
            if outcome == "requeued":
                services.dispatch(job.pk)
    for job_id in Job.objects.filter(status=Job.Status.QUEUED, dispatched__isnull=False).values_list("id", flat=True):
        services.dispatch(job_id)
        outcomes.setdefault(job_id, "redispatched")
    return outcomes


_started = threading.Event()


def start_reaper_thread(interval_s: float | None = None) -> threading.Thread | None:
    """Start the periodic reaper in this process (once). A daemon thread: it dies with the process."""
    if _started.is_set():
        return None
    _started.set()
    interval = float(settings.JOBS_REAPER_INTERVAL_S if interval_s is None else interval_s)

    def loop() -> None:
        while True:
            time.sleep(interval)
            try:
                result = sweep()
                if result["reaped"] or result["redispatched"]:
                    log.info("reaper: %s", result)
            except Exception:
                log.exception("reaper sweep failed; trying again in %.0f s", interval)
            finally:
                connection.close()

    thread = threading.Thread(target=loop, name="job-reaper", daemon=True)
    thread.start()
    return thread
