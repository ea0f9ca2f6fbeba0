from rest_framework.routers import SimpleRouter

from forecasts.api.views import ForecastRunViewSet

router = SimpleRouter()
router.register("forecasts", ForecastRunViewSet, basename="forecast")
urlpatterns = router.urls
