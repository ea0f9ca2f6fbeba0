"""The Celery app for workers. ``celery -A planner worker`` finds this module by name.

Every worker runs the job reaper (planner/jobs/reaper.py) in a thread of its main process once it is
ready, every JOBS_REAPER_INTERVAL_S: no celery beat to deploy, and reconciliation keeps running as
long as any worker does (several at once are safe: every transition is a conditional UPDATE).
The app itself is built in planner/celeryapp.py, which a process that only sends jobs loads alone.
"""

from __future__ import annotations

from celery.signals import worker_ready

from planner.celeryapp import app  # noqa: F401  (celery -A planner looks for planner.celery.app)


@worker_ready.connect
def _start_the_reaper(**_kwargs) -> None:
    from planner.jobs.reaper import start_reaper_thread

    start_reaper_thread()
