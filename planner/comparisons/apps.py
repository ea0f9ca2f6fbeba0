from django.apps import AppConfig


class ComparisonsConfig(AppConfig):
    name = "planner.comparisons"
    label = "comparisons"
