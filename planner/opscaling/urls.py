from django.urls import path

from planner.opscaling import views

app_name = "opscaling"
urlpatterns = [
    path("", views.plan_list, name="list"),
    path("new/", views.plan_create, name="create"),
    path("<int:pk>/", views.plan_detail, name="detail"),
    path("<int:pk>/report.pdf", views.plan_pdf, name="pdf"),
]
