from rest_framework.routers import SimpleRouter

from planner.benchmarks.api.views import BenchmarkRunViewSet, ValidationViewSet

router = SimpleRouter()
router.register("benchmarks/runs", BenchmarkRunViewSet, basename="benchmark-run")
router.register("benchmarks/validations", ValidationViewSet, basename="benchmark-validation")
urlpatterns = router.urls
