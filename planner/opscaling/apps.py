from django.apps import AppConfig


class OpscalingConfig(AppConfig):
    name = "planner.opscaling"
    label = "opscaling"
    verbose_name = "Operator-level plans"
