"""Every app's API under /api/. Each app exposes its own router in <app>/api/urls.py."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
    path("", include("planner.accounts.api.urls")),
    path("", include("planner.jobs.api.urls")),
    path("", include("planner.traces.api.urls")),
    path("", include("planner.hardware.api.urls")),
    path("", include("planner.benchmarks.api.urls")),
    path("", include("planner.plans.api.urls")),
    path("", include("planner.comparisons.api.urls")),
    path("", include("planner.opscaling.api.urls")),
    path("", include("planner.capacity.api.urls")),
    path("", include("planner.backtests.api.urls")),
    path("", include("planner.leaderboard.api.urls")),
    path("", include("simulations.api.urls")),
    path("", include("forecasts.api.urls")),
]
