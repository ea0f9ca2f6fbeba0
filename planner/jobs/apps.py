from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "planner.jobs"
    label = "jobs"
    # Each app registers its job handlers in its own jobs.py, imported on the first look-up of a handler
    # (planner.jobs.registry.discover), not here: start-up stays free of the handlers' heavy libraries.
