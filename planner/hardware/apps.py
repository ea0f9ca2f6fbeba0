from django.apps import AppConfig


class HardwareConfig(AppConfig):
    name = "planner.hardware"
    label = "hardware"
