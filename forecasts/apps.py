from django.apps import AppConfig


class ForecastsConfig(AppConfig):
    name = "forecasts"
