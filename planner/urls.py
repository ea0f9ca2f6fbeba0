from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from planner import views
from planner.accounts.ratelimit import rate_limited_login
from planner.accounts.views import LoginView

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("healthz", views.healthz, name="healthz"),
    path("login/", LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/login/", rate_limited_login(admin.site.login)),  # before admin.site.urls: same limits as /login/
    path("admin/", admin.site.urls),
    path("api/", include("planner.api.urls")),
    path("jobs/", include("planner.jobs.urls")),
    path("traces/", include("planner.traces.urls")),
    path("hardware/", include("planner.hardware.urls")),
    path("benchmarks/", include("planner.benchmarks.urls")),
    path("plans/", include("planner.plans.urls")),
    path("comparisons/", include("planner.comparisons.urls")),
    path("operator-plans/", include("planner.opscaling.urls")),
    path("capacity/", include("planner.capacity.urls")),
    path("backtests/", include("planner.backtests.urls")),
    path("leaderboard/", include("planner.leaderboard.urls")),
    path("simulations/", include("simulations.urls")),
    path("forecasts/", include("forecasts.urls")),
    # workspace: the docs in the browser
    path("docs/", views.doc_page, name="docs"),
    path("docs/<slug:name>/", views.doc_page, name="doc"),
]
