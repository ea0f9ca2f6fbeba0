from django.apps import AppConfig


class PlannerConfig(AppConfig):
    name = "planner"
    verbose_name = "Planner"

    def ready(self) -> None:
        # Load the Celery app so @shared_task binds to it in web processes too.
        from planner.celery import app  # noqa: F401
