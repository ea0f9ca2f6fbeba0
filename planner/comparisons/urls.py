from django.urls import path

app_name = "comparisons"
urlpatterns: list = []
