"""A small rate limiter for the login form, on the Django cache (Redis with REDIS_URL: shared by every worker).

Each key counts attempts in a fixed window; the attempt that goes over the limit puts the key in a penalty box
for a whole window, so a burst of wrong passwords cannot be followed by the right one in the same window, even
across a window boundary.
"""

from __future__ import annotations

import time
from functools import wraps

from django.conf import settings
from django.core.cache import cache
from django.http import HttpResponse
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle

from planner.accounts.api.throttles import username_key


def _rate(text: str) -> tuple[int, int]:
    return SimpleRateThrottle.parse_rate(None, text)


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
        cache.set(counter, 1, timeout=window + 1)
        count = 1
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
