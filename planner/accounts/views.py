from __future__ import annotations

from django.contrib.auth import views as auth_views

from planner.accounts.ratelimit import login_attempt_wait


class LoginView(auth_views.LoginView):
    """Django's login form, rate-limited per client address and per username (429 with Retry-After)."""

    def post(self, request, *args, **kwargs):
        wait = login_attempt_wait(request, request.POST.get("username"))
        if wait:
            response = self.render_to_response(self.get_context_data(form=self.get_form(), throttled_wait=wait),
                                               status=429)
            response["Retry-After"] = str(wait)
            return response
        return super().post(request, *args, **kwargs)
