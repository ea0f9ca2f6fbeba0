from django.urls import path

app_name = "forecasts"
urlpatterns: list = []
