"""Pages and API calls that would start work while the job queue is down answer 503, never 500.

DRF views already turn ``QueueUnavailable`` (an APIException) into a 503 JSON error; this catches it
in plain Django views (upload forms, "run" buttons) and answers 503 there too: the documented JSON
error shape under /api/, a short HTML page elsewhere. Nothing was stored in either case.
"""

from __future__ import annotations

from django.http import HttpResponse, JsonResponse
from django.utils.html import escape

from planner.jobs.services import QueueUnavailable


class QueueUnavailableMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, QueueUnavailable):
            return None
        error = {k: str(v) for k, v in exception.detail["error"].items()}
        if request.path.startswith("/api/"):
            response = JsonResponse({"error": error}, status=503)
        else:
            response = HttpResponse(
                f"<!doctype html><title>Job queue unavailable</title><h1>Job queue unavailable</h1>"
                f"<p>{escape(error['message'])}.</p><p>{escape(error['hint'])}.</p>"
                f'<p><a href="javascript:history.back()">Back</a></p>', status=503)
        response["Retry-After"] = str(exception.wait)
        return response
