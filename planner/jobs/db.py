"""Transient database errors (a PostgreSQL restart, a dropped connection) are retried with backoff.

Only the job machinery's own small writes go through here (claim, progress, heartbeat, finish),
so a short outage does not leave a job ``running`` with its last writes lost. Outside a transaction
the broken connection is closed first, so the next try opens a fresh one.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

log = logging.getLogger(__name__)

TRANSIENT = (OperationalError, InterfaceError)


def retry_db(fn, *, what: str, window_s: float | None = None):
    """Call ``fn()``; on a transient database error retry with exponential backoff for up to
    ``window_s`` seconds (default settings.JOBS_DB_RETRY_S), then re-raise the last error."""
    window = float(settings.JOBS_DB_RETRY_S if window_s is None else window_s)
    deadline = time.monotonic() + window
    delay = 0.2
    while True:
        try:
            return fn()
        except TRANSIENT as exc:
            if connection.in_atomic_block or time.monotonic() + delay > deadline:
                raise
            log.warning("database unavailable during %s (%s); retrying in %.1f s", what, exc, delay)
            try:
                connection.close()
            except Exception:  # closing a dead connection can fail too
                pass
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


def is_transient(exc: BaseException) -> bool:
    return isinstance(exc, TRANSIENT)
