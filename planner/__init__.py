"""The planner project: Django wiring plus the planning domain.

This package's ``__init__`` stays empty on purpose: Django-free cores such as
``planner.ingest`` and ``planner.optimizer`` live below it and must import
without Django or Celery. The Celery app is loaded when a process first sends
a job (``planner.jobs.services``), and ``celery -A planner`` finds
``planner/celery.py`` itself.
"""
