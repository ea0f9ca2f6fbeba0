"""Job handlers, registered by kind. Each app declares its handlers in its ``jobs.py``.

A handler is ``fn(job, ctx) -> dict | None``; it reports progress through ``ctx``
and raises ``JobError`` for failures a user can fix (bad input), with where and how.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_HANDLERS: dict[str, Callable[..., Any]] = {}


def handler(kind: str):
    def register(fn):
        if kind in _HANDLERS and _HANDLERS[kind] is not fn:
            raise RuntimeError(f"job kind {kind!r} registered twice")
        _HANDLERS[kind] = fn
        return fn

    return register


def get_handler(kind: str):
    try:
        return _HANDLERS[kind]
    except KeyError:
        raise LookupError(f"no job handler for kind {kind!r}; known: {sorted(_HANDLERS)}") from None


def known_kinds() -> list[str]:
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
        now = time.monotonic()
        if not force and now - self._last_write < self.min_interval_s:
            return
        self._last_write = now
        from planner.jobs.models import Job

        percent = max(0.0, min(100.0, float(percent)))
        updated = Job.objects.filter(pk=self.job_id, status=Job.Status.RUNNING).update(
            progress=percent, message=message[:300]
        )
        if not updated:
            raise JobCancelled()

    def check_cancelled(self) -> None:
        from planner.jobs.models import Job

        if not Job.objects.filter(pk=self.job_id, status=Job.Status.RUNNING).exists():
            raise JobCancelled()

    def callback(self, start: float = 0.0, end: float = 100.0):
        """A plain ``fn(fraction, message)`` for Django-free cores, mapped into [start, end]."""

        def report(fraction: float, message: str = "") -> None:
            self.progress(start + (end - start) * fraction, message)

        return report
