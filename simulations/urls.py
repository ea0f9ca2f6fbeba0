from django.urls import path

app_name = "simulations"
urlpatterns: list = []
