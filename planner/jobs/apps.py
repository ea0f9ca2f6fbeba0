from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class JobsConfig(AppConfig):
    name = "planner.jobs"
    label = "jobs"

    def ready(self) -> None:
        # Each app registers its job handlers in its own jobs.py.
        autodiscover_modules("jobs")
