from django.urls import path

from planner.hardware import views

app_name = "hardware"
urlpatterns = [
    path("", views.catalogue_list, name="list"),
    path("upload/", views.upload, name="upload"),
    path("deployments/new/", views.deployment_create, name="deployment-create"),
    path("deployments/<int:pk>/", views.deployment_detail, name="deployment"),
    path("deployments/<int:pk>/edit/", views.deployment_edit, name="deployment-edit"),
    path("deployments/<int:pk>/copy/", views.deployment_copy, name="deployment-copy"),
    path("deployments/<int:pk>/delete/", views.deployment_delete, name="deployment-delete"),
    path("gpus/new/", views.gpu_create, name="gpu-create"),
    path("gpus/<int:pk>/edit/", views.gpu_edit, name="gpu-edit"),
    path("gpus/<int:pk>/copy/", views.gpu_copy, name="gpu-copy"),
    path("models/new/", views.model_create, name="model-create"),
    path("models/<int:pk>/edit/", views.model_edit, name="model-edit"),
]
