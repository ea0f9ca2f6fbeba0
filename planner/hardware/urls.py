from django.urls import path

app_name = "hardware"
urlpatterns: list = []
