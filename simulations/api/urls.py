from rest_framework.routers import SimpleRouter

from simulations.api.views import SimulationRunViewSet

router = SimpleRouter()
router.register("simulations", SimulationRunViewSet, basename="simulation")
urlpatterns = router.urls
