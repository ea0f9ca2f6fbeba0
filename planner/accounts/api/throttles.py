"""Rate limits on the token endpoint (DRF throttles): per client address and per username.

The rates come from settings (LOGIN_RATE_PER_IP, LOGIN_RATE_PER_USERNAME) at each request, so an operator's
change needs no code, and the history lives in the cache (Redis with REDIS_URL, shared by the gunicorn workers).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle


class LoginIPThrottle(SimpleRateThrottle):
    scope = "login_ip"

    def get_rate(self):
        return settings.LOGIN_RATE_PER_IP

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


def username_key(username) -> str | None:
    """A cache-safe key for a username as typed (case-insensitive); None when there is none."""
    if not isinstance(username, str) or not username.strip():
        return None
    return hashlib.sha256(username.strip().lower().encode("utf-8", "surrogatepass")).hexdigest()


class LoginUsernameThrottle(SimpleRateThrottle):
    """Counts attempts on one username from any address, so spreading guesses over many addresses does not help."""

    scope = "login_username"

    def get_rate(self):
        return settings.LOGIN_RATE_PER_USERNAME

    def get_cache_key(self, request, view):
        data = request.data
        key = username_key(data.get("username")) if isinstance(data, Mapping) else None
        return None if key is None else self.cache_format % {"scope": self.scope, "ident": key}
