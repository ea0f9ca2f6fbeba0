"""The Celery app. ``celery -A planner worker`` finds this module by name.

Every worker runs the job reaper (planner/jobs/reaper.py) in a thread of its main process once it is
ready, every JOBS_REAPER_INTERVAL_S: no celery beat to deploy, and reconciliation keeps running as
long as any worker does (several at once are safe: every transition is a conditional UPDATE).
"""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_ready

# One BLAS thread per process: parallelism comes from worker processes (see manage.py).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planner.settings")

app = Celery("planner")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
def _start_the_reaper(**_kwargs) -> None:
    from planner.jobs.reaper import start_reaper_thread

    start_reaper_thread()
