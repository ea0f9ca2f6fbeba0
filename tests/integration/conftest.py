"""Helpers for integration tests. The `celery_worker_process` fixture lives in the root conftest.py so
that every app's integration tests share one worker per session."""

from __future__ import annotations

import time


def wait_for_job(job, *, timeout=120.0, until=("succeeded", "failed", "cancelled")):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in until:
            return job
        time.sleep(0.25)
    raise AssertionError(f"job {job.pk} still {job.status} ({job.progress:.0f}% {job.message}) after {timeout} s")
