from django.urls import path

from planner.benchmarks import views

app_name = "benchmarks"
urlpatterns = [
    path("", views.run_list, name="list"),
    path("calibrate/", views.calibrate, name="calibrate"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("deployments/<int:pk>/", views.deployment_validation, name="deployment"),
]
