"""One login budget, shared by every way in: the API token endpoint, the login form and the admin's login.

Attempts are counted per client address (LOGIN_RATE_PER_IP) and per username as typed, case-insensitive
(LOGIN_RATE_PER_USERNAME), on the Django cache (Redis with REDIS_URL: shared by every web process). The count is
one atomic increment (``cache.add`` then ``cache.incr``: Redis INCR), so parallel attempts cannot slip past the
limit between a read and a write. Each key counts attempts in a fixed window; the attempt that goes over the
limit puts the key in a penalty box for a whole window, so a burst of wrong passwords cannot be followed by the
right one in the same window, even across a window boundary.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from functools import wraps

from django.conf import settings
from django.core.cache import cache
from django.http import HttpResponse
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle


def _rate(text: str) -> tuple[int, int]:
    return SimpleRateThrottle.parse_rate(None, text)


def username_key(username) -> str | None:
    """A cache-safe key for a username as typed (case-insensitive); None when there is none."""
    if not isinstance(username, str) or not username.strip():
        return None
    return hashlib.sha256(username.strip().lower().encode("utf-8", "surrogatepass")).hexdigest()


def hit(key: str, limit: int, window: int) -> int:
    """Count one attempt on ``key``; return 0 when allowed, else the seconds to wait."""
    now = time.time()
    blocked_until = cache.get(f"rl:block:{key}")
    if blocked_until is not None and blocked_until > now:
        return max(1, int(blocked_until - now + 0.999))
    counter = f"rl:{key}:{int(now // window)}"
    cache.add(counter, 0, timeout=window + 1)
    try:
        count = cache.incr(counter)
    except ValueError:  # expired between add and incr
        cache.add(counter, 0, timeout=window + 1)
        count = cache.incr(counter)
    if count > limit:
        cache.set(f"rl:block:{key}", now + window, timeout=window + 1)
        return window
    return 0


def login_attempt_wait(request, username) -> int:
    """Count a login attempt from this client and on this username; the seconds to wait when over a limit."""
    limit, window = _rate(settings.LOGIN_RATE_PER_IP)
    wait = hit(f"login:ip:{BaseThrottle().get_ident(request)}", limit, window)
    key = username_key(username)
    if key is not None:
        limit, window = _rate(settings.LOGIN_RATE_PER_USERNAME)
        wait = max(wait, hit(f"login:user:{key}", limit, window))
    return wait


class LoginBudgetThrottle(BaseThrottle):
    """The token endpoint's throttle: the same counters as the login form and the admin (``login_attempt_wait``)."""

    def allow_request(self, request, view) -> bool:
        data = request.data
        username = data.get("username") if isinstance(data, Mapping) else None
        self._wait = login_attempt_wait(request, username)
        return self._wait == 0

    def wait(self) -> float | None:
        return self._wait or None


def rate_limited_login(view):
    """Wrap another login view (the admin's) with the same limits as the login form."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.method == "POST":
            wait = login_attempt_wait(request, request.POST.get("username"))
            if wait:
                return HttpResponse(f"Too many login attempts; wait {wait} s before trying again.\n", status=429,
                                    content_type="text/plain", headers={"Retry-After": str(wait)})
        return view(request, *args, **kwargs)

    return wrapper
