from django.apps import AppConfig


class DecisionsConfig(AppConfig):
    name = "planner.decisions"
    label = "decisions"
    verbose_name = "Decision card"
