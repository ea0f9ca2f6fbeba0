"""The Celery app. ``celery -A planner worker`` finds this module by name."""

from __future__ import annotations

import os

from celery import Celery

# One BLAS thread per process: parallelism comes from worker processes (see manage.py).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planner.settings")

app = Celery("planner")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
