from rest_framework.routers import SimpleRouter

from planner.plans.api.views import CapacityPlanViewSet

router = SimpleRouter()
router.register("plans", CapacityPlanViewSet, basename="plan")
urlpatterns = router.urls
