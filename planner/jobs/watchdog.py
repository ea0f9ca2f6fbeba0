"""A thread beside every running job: it writes the heartbeat and stops the job when it is cancelled.

The heartbeat (``Job.heartbeat``) is how the reaper tells a live attempt from one whose worker died.
Cancellation is cooperative through ``ctx.progress``; but a handler deep in one long computation
(characterising a trace, binning a forecast) may not report for minutes, so the watchdog also
raises ``JobCancelled`` inside the job's thread once the row says ``cancelled``
(``PyThreadState_SetAsyncExc``: it takes effect at the next Python bytecode, i.e. between two numpy
calls). It acts only on a row it can read as cancelled, never on a read error or a missing row, and
only after the handler had two polls' time to notice the cancel itself at a progress report (an
asynchronous exception is the last resort: ``with`` blocks release their locks, but it can land
anywhere).
"""

from __future__ import annotations

import ctypes
import logging
import threading
import time

from django.conf import settings
from django.db import connection
from django.utils import timezone

from planner.jobs.registry import JobCancelled

log = logging.getLogger(__name__)


class Watchdog(threading.Thread):
    def __init__(self, job_id: int, worker: str, target_ident: int) -> None:
        super().__init__(name=f"job-{job_id}-watchdog", daemon=True)
        self.job_id = job_id
        self.worker = worker
        self.target_ident = target_ident
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._armed = True
        self.cancelled_work = False

    def disarm(self) -> None:
        """Called by the job's thread when its handler returned or raised: no interruption after this."""
        with self._lock:
            self._armed = False
        self._done.set()

    def stop(self) -> None:
        self.disarm()
        if self.is_alive():
            self.join(timeout=10)

    def run(self) -> None:
        from planner.jobs.models import Job

        beat_every = float(settings.JOBS_HEARTBEAT_S)
        poll = min(float(settings.JOBS_CANCEL_POLL_S), beat_every)
        last_beat = time.monotonic()
        seen_cancelled = 0.0
        try:
            while not self._done.wait(poll):
                try:
                    status = Job.objects.filter(pk=self.job_id).values_list("status", flat=True).first()
                    if status == Job.Status.CANCELLED:
                        seen_cancelled = seen_cancelled or time.monotonic()
                        if time.monotonic() - seen_cancelled >= 2 * poll:
                            self._interrupt()
                            return
                    if time.monotonic() - last_beat >= beat_every:
                        Job.objects.filter(pk=self.job_id, status=Job.Status.RUNNING, worker=self.worker).update(
                            heartbeat=timezone.now())
                        last_beat = time.monotonic()
                except Exception as exc:  # the database is away: no heartbeat now, try again next round
                    log.debug("watchdog of job %s: %s", self.job_id, exc)
                    try:
                        connection.close()
                    except Exception:
                        pass
        finally:
            connection.close()

    def _interrupt(self) -> None:
        with self._lock:
            if not self._armed:
                return
            done = ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(self.target_ident), ctypes.py_object(JobCancelled))
            self.cancelled_work = done == 1
            log.info("job %s was cancelled; interrupted its thread (%s)", self.job_id, done)
