"""The Celery app object, configured from Django's settings (the CELERY_ namespace).

Web and command processes load it on the first job they send (planner.jobs.services); a worker loads it through
``planner/celery.py`` (``celery -A planner``), which also starts the job reaper in the worker.
"""

from __future__ import annotations

import os

from celery import Celery

# One BLAS thread per process: parallelism comes from worker processes (see manage.py).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planner.settings")

app = Celery("planner")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
