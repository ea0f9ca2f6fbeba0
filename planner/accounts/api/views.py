"""API tokens: obtain with username + password, rotate, revoke. Tokens are django-rest-knox tokens: hashed at rest,
expiring after API_TOKEN_TTL_DAYS; send them as ``Authorization: Token <key>``."""

from __future__ import annotations

from django.contrib.auth import authenticate
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import APIException
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from planner.accounts.api.auth import TokenAuthentication
from planner.accounts.ratelimit import LoginBudgetThrottle
from planner.accounts.services import TooManyTokens, issue_token, rotate_token


class _Refused(APIException):
    def __init__(self, status_code: int, message: str, where: str, hint: str, wait: int | None = None):
        self.status_code = status_code
        self.wait = wait
        super().__init__({"error": {"message": message, "where": where, "hint": hint}})


class CredentialsSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=4096, trim_whitespace=False, style={"input_type": "password"})


TokenSerializer = inline_serializer("Token", {"token": serializers.CharField(), "expiry": serializers.DateTimeField()})


def _token_response(instance, key, code=status.HTTP_200_OK):
    return Response({"token": key, "expiry": instance.expiry}, status=code)


class TokenView(APIView):
    """POST username and password, get a new API token and its expiry (send it as `Authorization: Token <key>`).
    Rate-limited per client address and per username, in one budget with the login form and the admin (429 with
    Retry-After)."""

    permission_classes = [AllowAny]
    authentication_classes: list = []
    throttle_classes = [LoginBudgetThrottle]  # one budget with the login form and the admin

    def throttled(self, request, wait):
        raise _Refused(429, "too many login attempts", "credentials",
                       f"wait {int(wait or 60)} s before trying again", wait=int(wait or 60))

    @extend_schema(request=CredentialsSerializer, responses={200: TokenSerializer}, auth=[])
    def post(self, request):
        credentials = CredentialsSerializer(data=request.data)
        credentials.is_valid(raise_exception=True)
        user = authenticate(request=request._request, **credentials.validated_data)
        if user is None:
            raise _Refused(400, "wrong username or password", "credentials",
                           "check both; repeated failures are rate-limited")
        try:
            return _token_response(*issue_token(user))
        except TooManyTokens as exc:
            raise _Refused(403, str(exc), "credentials", "reuse a token you have, or end them all with "
                           "POST /api/auth/token/revoke-all/") from None


class TokenRotateView(APIView):
    """POST with a valid token: get a new token; the one sent stops working at once."""

    authentication_classes = [TokenAuthentication]
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={200: TokenSerializer})
    def post(self, request):
        return _token_response(*rotate_token(request.auth))


class TokenRevokeView(APIView):
    """POST with a valid token: that token stops working (204)."""

    authentication_classes = [TokenAuthentication]
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={204: None})
    def post(self, request):
        request.auth.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class TokenRevokeAllView(APIView):
    """POST with a valid token: every token of this user stops working (204)."""

    authentication_classes = [TokenAuthentication]
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={204: None})
    def post(self, request):
        request.user.auth_token_set.all().delete()
        return Response(status=status.HTTP_204_NO_CONTENT)
