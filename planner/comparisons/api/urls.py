from rest_framework.routers import SimpleRouter

from planner.comparisons.api.views import ComparisonViewSet

router = SimpleRouter()
router.register("comparisons", ComparisonViewSet, basename="comparison")
urlpatterns = router.urls
