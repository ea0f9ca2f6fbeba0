from django.urls import path
from rest_framework.routers import SimpleRouter

from simulations.api.serverless import ServerlessRunView
from simulations.api.views import SimulationRunViewSet

router = SimpleRouter()
router.register("simulations", SimulationRunViewSet, basename="simulation")
urlpatterns = router.urls + [
    path("serverless/", ServerlessRunView.as_view(), name="serverless-run"),
]
