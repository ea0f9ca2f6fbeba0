from rest_framework.routers import SimpleRouter

from planner.opscaling.api.views import OperatorPlanViewSet

router = SimpleRouter()
router.register("operator-plans", OperatorPlanViewSet, basename="operator-plan")
urlpatterns = router.urls
