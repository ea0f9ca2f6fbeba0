from django.apps import AppConfig


class PlansConfig(AppConfig):
    name = "planner.plans"
    label = "plans"
