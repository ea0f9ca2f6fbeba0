from rest_framework.routers import SimpleRouter

from planner.capacity.api.views import CapacitySearchViewSet

router = SimpleRouter()
router.register("capacity-searches", CapacitySearchViewSet, basename="capacity-search")
urlpatterns = router.urls
