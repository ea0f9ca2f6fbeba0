from django.urls import path

from planner.accounts.api.views import TokenRevokeAllView, TokenRevokeView, TokenRotateView, TokenView

urlpatterns = [
    path("auth/token/", TokenView.as_view(), name="api-token"),
    path("auth/token/rotate/", TokenRotateView.as_view(), name="api-token-rotate"),
    path("auth/token/revoke/", TokenRevokeView.as_view(), name="api-token-revoke"),
    path("auth/token/revoke-all/", TokenRevokeAllView.as_view(), name="api-token-revoke-all"),
]
