from django.urls import path

from planner.traces import views

app_name = "traces"
urlpatterns = [
    path("", views.trace_list, name="list"),
    path("upload/", views.trace_upload, name="upload"),
    path("synthesise/", views.trace_synthesise, name="synthesise"),
    path("<int:pk>/", views.trace_detail, name="detail"),
    path("<int:pk>/delete/", views.trace_delete, name="delete"),
    path("<int:pk>/characterise/", views.trace_characterise, name="characterise"),
]
