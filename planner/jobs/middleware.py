"""Pages and API calls that would start work while the job queue is down answer 503, never 500; those that would
start a team's long job past its limit answer 429.

DRF views already turn ``QueueUnavailable`` and ``TooManyLongJobs`` (APIExceptions) into JSON errors; this catches
them in plain Django views (upload forms, "run" buttons) and answers with the same status there too: the
documented JSON error shape under /api/, a short HTML page elsewhere. Nothing was stored in either case.
"""

from __future__ import annotations

from django.http import HttpResponse, JsonResponse
from django.utils.html import escape

from planner.jobs.services import QueueUnavailable, TooManyLongJobs


class QueueUnavailableMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, (QueueUnavailable, TooManyLongJobs)):
            return None
        error = {k: str(v) for k, v in exception.detail["error"].items()}
        error["request_id"] = getattr(request, "request_id", "")
        status = exception.status_code
        title = "Job queue unavailable" if status == 503 else "Too many long jobs"
        if request.path.startswith("/api/"):
            response = JsonResponse({"error": error}, status=status)
        else:
            response = HttpResponse(
                f"<!doctype html><title>{title}</title><h1>{title}</h1>"
                f"<p>{escape(error['message'])}.</p><p>{escape(error['hint'])}.</p>"
                f'<p><a href="javascript:history.back()">Back</a></p>', status=status)
        response["Retry-After"] = str(exception.wait)
        return response
