from rest_framework.routers import SimpleRouter

from planner.traces.api.views import TraceViewSet

router = SimpleRouter()
router.register("traces", TraceViewSet, basename="trace")
urlpatterns = router.urls
