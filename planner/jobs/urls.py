from django.urls import path

from planner.jobs import views

app_name = "jobs"
urlpatterns = [
    path("", views.job_list, name="list"),
    path("<int:pk>/", views.job_detail, name="detail"),
    path("<int:pk>/cancel/", views.job_cancel, name="cancel"),
]
