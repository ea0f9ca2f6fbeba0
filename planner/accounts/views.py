from __future__ import annotations

import logging

from django.contrib.auth import views as auth_views

from planner.accounts.ratelimit import login_attempt_wait
from planner.middleware import SERVICE_ERRORS

logger = logging.getLogger(__name__)


class LoginView(auth_views.LoginView):
    """Django's login form, rate-limited per client address and per username (429 with Retry-After)."""

    def post(self, request, *args, **kwargs):
        try:
            wait = login_attempt_wait(request, request.POST.get("username"))
        except SERVICE_ERRORS:  # the counters' cache (Redis) is down: fail closed, say so
            logger.warning("login refused: the rate-limit cache is unavailable", exc_info=True)
            context = self.get_context_data(form=self.get_form(), service_unavailable=True)
            return self.render_to_response(context, status=503, headers={"Retry-After": "30"})
        if wait:
            response = self.render_to_response(self.get_context_data(form=self.get_form(), throttled_wait=wait),
                                               status=429)
            response["Retry-After"] = str(wait)
            return response
        return super().post(request, *args, **kwargs)
