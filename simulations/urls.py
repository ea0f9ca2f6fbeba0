from django.urls import path

from simulations import serverless_views, views

app_name = "simulations"
urlpatterns = [
    path("", views.run_list, name="list"),
    path("<int:pk>/", views.run_detail, name="detail"),
    path("<int:pk>/hourly.csv", views.run_hourly_csv, name="hourly_csv"),  # streamed runs
    path("<int:pk>/labels/", views.run_labels, name="labels"),
    path("serverless/", serverless_views.serverless_page, name="serverless"),
]
