from django.urls import path

from planner.accounts.api.views import TokenView

urlpatterns = [path("auth/token/", TokenView.as_view(), name="api-token")]
