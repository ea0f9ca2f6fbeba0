from django.urls import path

from planner.capacity import views

app_name = "capacity"
urlpatterns = [
    path("", views.search_list, name="list"),
    path("new/", views.search_create, name="create"),
    path("<int:pk>/", views.search_detail, name="detail"),
    path("<int:pk>/export.csv", views.search_csv, name="csv"),
    path("<int:pk>/report.pdf", views.search_pdf, name="pdf"),
]
