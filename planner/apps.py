from django.apps import AppConfig


class PlannerConfig(AppConfig):
    name = "planner"
    verbose_name = "Planner"
    # The Celery app (planner/celery.py) is not loaded here: a worker loads it by name (``celery -A planner``), and
    # a web or command process on the first message it sends (planner.jobs.services._celery_task), so start-up
    # does not pay for Celery and kombu.
