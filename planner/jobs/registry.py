"""Job handlers, registered by kind. Each app declares its handlers in its ``jobs.py``.

A handler is ``fn(job, ctx) -> dict | Partial | None``; it reports progress through ``ctx``
and raises ``JobError`` for failures a user can fix (bad input), with where and how.

Registration options (see planner/jobs/reaper.py for how they are used):
- ``idempotent=True``: running it again from the start is safe (it overwrites its own outputs), so
  an attempt lost with its worker is re-queued (up to settings.JOBS_MAX_ATTEMPTS) instead of failed.
- ``on_lost=fn(job)``: called after the job was failed without its handler running to the end (its
  worker died, its heartbeat stopped), so a fan-in parent hears about the failed child.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_HANDLERS: dict[str, Callable[..., Any]] = {}
_SPECS: dict[str, KindSpec] = {}
_DISCOVERED = threading.Event()
_DISCOVERY_LOCK = threading.Lock()


def discover() -> None:
    """Import every app's ``jobs.py`` once, on the first look-up of a handler.

    Not at start-up: the handlers pull in the heavy libraries of their apps (pandas, scipy, statsmodels, Plotly),
    which a process that only serves pages or runs one command never needs.
    """
    if _DISCOVERED.is_set():
        return
    with _DISCOVERY_LOCK:
        if not _DISCOVERED.is_set():
            from django.utils.module_loading import autodiscover_modules

            autodiscover_modules("jobs")
            _DISCOVERED.set()


@dataclass(frozen=True)
class KindSpec:
    idempotent: bool = False
    on_lost: Callable[..., Any] | None = None


def handler(kind: str, *, idempotent: bool = False, on_lost: Callable[..., Any] | None = None):
    def register(fn):
        if kind in _HANDLERS and _HANDLERS[kind] is not fn:
            raise RuntimeError(f"job kind {kind!r} registered twice")
        _HANDLERS[kind] = fn
        _SPECS[kind] = KindSpec(idempotent=idempotent, on_lost=on_lost)
        return fn

    return register


def spec(kind: str) -> KindSpec:
    discover()
    return _SPECS.get(kind, KindSpec())


@dataclass
class Partial:
    """What a fan-in handler returns when it ended but some of its parts failed: the job ends
    ``partial`` (not ``succeeded``) with ``result`` kept and ``error`` as its last_error."""

    result: dict
    message: str
    where: str = ""
    hint: str = ""

    def error(self) -> dict[str, str]:
        return {"type": "PartialFailure", "message": self.message, "where": self.where, "hint": self.hint}


def get_handler(kind: str):
    discover()
    try:
        return _HANDLERS[kind]
    except KeyError:
        raise LookupError(f"no job handler for kind {kind!r}; known: {sorted(_HANDLERS)}") from None


def known_kinds() -> list[str]:
    discover()
    return sorted(_HANDLERS)


class JobCancelled(Exception):
    """Raised inside a handler when the job row was cancelled."""


class JobError(Exception):
    """A failure the user can act on: what went wrong, where, and how to fix it."""

    def __init__(self, message: str, *, where: str = "", hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint

    def as_dict(self) -> dict[str, str]:
        return {"type": "JobError", "message": self.message, "where": self.where, "hint": self.hint}


@dataclass
class JobContext:
    """What a handler gets to report progress and notice cancellation.

    ``progress`` writes at most every ``min_interval_s`` (the last call always wins at the end)
    and raises JobCancelled once the row has been cancelled.
    """

    job_id: int
    min_interval_s: float = 0.5
    _last_write: float = field(default=0.0, repr=False)

    def progress(self, percent: float, message: str = "", *, force: bool = False) -> None:
        """Write progress (and a heartbeat); transient database errors are retried with backoff."""
        now = time.monotonic()
        if not force and now - self._last_write < self.min_interval_s:
            return
        self._last_write = now
        from django.utils import timezone

        from planner.jobs.db import retry_db
        from planner.jobs.models import Job

        percent = max(0.0, min(100.0, float(percent)))
        updated = retry_db(lambda: Job.objects.filter(pk=self.job_id, status=Job.Status.RUNNING).update(
            progress=percent, message=message[:300], heartbeat=timezone.now()
        ), what=f"progress of job {self.job_id}")
        if not updated:
            raise JobCancelled()

    def check_cancelled(self) -> None:
        from planner.jobs.db import retry_db
        from planner.jobs.models import Job

        if not retry_db(lambda: Job.objects.filter(pk=self.job_id, status=Job.Status.RUNNING).exists(),
                        what=f"status of job {self.job_id}"):
            raise JobCancelled()

    def callback(self, start: float = 0.0, end: float = 100.0):
        """A plain ``fn(fraction, message)`` for Django-free cores, mapped into [start, end]."""

        def report(fraction: float, message: str = "") -> None:
            self.progress(start + (end - start) * fraction, message)

        return report
