from django.urls import path

from planner.comparisons import routing_views, views

app_name = "comparisons"
urlpatterns = [
    path("", views.comparison_list, name="list"),
    path("new/", views.comparison_create, name="create"),
    path("build/", views.comparison_build, name="build"),
    path("routing-sweep/", routing_views.routing_sweep_page, name="routing-sweep"),
    path("routing-sweep/<int:pk>/", routing_views.routing_sweep_detail, name="routing-sweep-detail"),
    path("<int:pk>/", views.comparison_detail, name="detail"),
    path("<int:pk>/export.csv", views.comparison_csv, name="csv"),
    path("<int:pk>/export.json", views.comparison_json, name="json"),
    path("<int:pk>/report.pdf", views.comparison_pdf, name="pdf"),
    path("<int:pk>/labels/", views.comparison_labels, name="labels"),
]
