from django.apps import AppConfig


class BenchmarksConfig(AppConfig):
    name = "planner.benchmarks"
    label = "benchmarks"
    verbose_name = "Benchmarks and validation"
