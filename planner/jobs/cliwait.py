"""Waiting on a job from a management command (``manage.py compare``, ``manage.py serverless --compare``).

With Celery the command only queues the job: if no worker is running it would sit silently until ``--timeout``.
So before waiting it pings the workers once and, when none answers, says so on stderr (what is wrong, how to fix
it, how long it will wait); the job stays queued and runs as soon as a worker starts.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.core.management.base import CommandError


def _no_worker_notice(what: str, timeout_s: float) -> str | None:
    if settings.JOBS_RUNNER != "celery":
        return None
    from planner import health

    try:
        answer = health.workers()
    except Exception as exc:  # the broker itself is unreachable: the job could not even be queued for long
        return f"{what} is queued but the Celery broker did not answer ({type(exc).__name__}: {exc})"
    if answer.get("ok"):
        return None
    return (f"{what} is queued but no Celery worker is running ({answer.get('error')}). Start one with "
            f"`celery -A planner worker -l info` (make worker), or unset REDIS_URL to run jobs in this process. "
            f"Waiting up to {timeout_s:g} s (--timeout).")


def wait_for(load, *, what: str, url: str, timeout_s: float, stderr=None):
    """Reload with ``load()`` every second until its ``job`` is no longer active; returns the last object.
    ``CommandError`` after ``timeout_s`` (the job itself keeps its state: see ``url``)."""
    obj = load()
    if obj.job is not None and obj.job.is_active and stderr is not None:
        notice = _no_worker_notice(what, timeout_s)
        if notice:
            stderr.write(notice)
    deadline = time.monotonic() + timeout_s
    while obj.job is not None and obj.job.is_active:
        if time.monotonic() > deadline:
            raise CommandError(f"{what} still running after {timeout_s:g} s; see {url}")
        time.sleep(1.0)
        obj = load()
    return obj
