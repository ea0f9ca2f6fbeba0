from django.urls import path
from rest_framework.routers import SimpleRouter

from planner.hardware.api.views import DeploymentViewSet, GpuTypeViewSet, ModelProfileViewSet, ProfileImportView

router = SimpleRouter()
router.register("hardware/gpus", GpuTypeViewSet, basename="hardware-gpu")
router.register("hardware/models", ModelProfileViewSet, basename="hardware-model")
router.register("hardware/deployments", DeploymentViewSet, basename="hardware-deployment")
urlpatterns = [
    path("hardware/import/", ProfileImportView.as_view(), name="hardware-import"),
    *router.urls,
]
