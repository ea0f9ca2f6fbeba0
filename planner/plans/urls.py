from django.urls import path

from planner.plans import views

app_name = "plans"
urlpatterns = [
    path("", views.plan_list, name="list"),
    path("new/", views.plan_create, name="create"),
    path("build/", views.plan_build, name="build"),
    path("<int:pk>/", views.plan_detail, name="detail"),
    path("<int:pk>/plan.csv", views.plan_csv_download, name="csv"),
    path("<int:pk>/check/", views.plan_check, name="check"),
    path("<int:pk>/labels/", views.plan_labels, name="labels"),
]
