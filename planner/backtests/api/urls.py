from rest_framework.routers import SimpleRouter

from planner.backtests.api.views import BacktestViewSet

router = SimpleRouter()
router.register("backtests", BacktestViewSet, basename="backtest")
urlpatterns = router.urls
