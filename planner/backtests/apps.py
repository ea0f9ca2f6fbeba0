from django.apps import AppConfig


class BacktestsConfig(AppConfig):
    name = "planner.backtests"
    label = "backtests"
    verbose_name = "Advisory back-tests"
