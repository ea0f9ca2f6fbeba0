from django.urls import path

from forecasts import views

app_name = "forecasts"
urlpatterns = [
    path("", views.run_list, name="list"),
    path("<int:pk>/", views.run_detail, name="detail"),
    path("<int:pk>/delete/", views.run_delete, name="delete"),
    path("<int:pk>/labels/", views.run_labels, name="labels"),
]
