"""Request ids, JSON errors on /api/, and the deep-JSON guard for page forms.

- ``RequestIdMiddleware`` (outermost) gives every request an id: in ``request.request_id``, in every log line
  (planner.request_id.RequestIdFilter), in the ``X-Request-ID`` response header and in API error bodies.
- ``ApiErrorMiddleware`` makes every error under /api/ the documented JSON shape, whatever raised it: an
  unhandled exception is logged with its traceback and answered 500 JSON (no details, the request id to quote);
  a database, Redis or broker outage is 503 JSON with Retry-After; Django's own HTML 404/405/400 pages
  (unknown URL, oversized body, bad Host) become JSON with the same status.
- ``FormJsonDepthMiddleware`` refuses a page form whose field holds JSON nested deeper than JSON_MAX_DEPTH with a
  plain 400 page before the view parses it (the API's parsers do the same for API requests).
"""

from __future__ import annotations

import errno
import json
import logging
from http import HTTPStatus

from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.db import InterfaceError as DbInterfaceError
from django.db import OperationalError as DbOperationalError
from django.http import Http404
from django.shortcuts import render

from planner.api.errors import error_response
from planner.api.parsers import json_depth, looks_like_json, max_depth
from planner.request_id import current_request_id, new_request_id

logger = logging.getLogger("planner.errors")


def _service_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean "a service we depend on is down", not "the code is wrong"."""
    errors: list[type[BaseException]] = [DbOperationalError, DbInterfaceError]
    try:
        import redis.exceptions

        errors += [redis.exceptions.ConnectionError, redis.exceptions.TimeoutError]
    except ImportError:  # pragma: no cover - redis is a requirement
        pass
    try:
        import kombu.exceptions

        errors.append(kombu.exceptions.OperationalError)
    except ImportError:  # pragma: no cover - celery is a requirement
        pass
    return tuple(errors)


SERVICE_ERRORS = _service_errors()


def is_api(request) -> bool:
    return request.path_info.startswith("/api/")


class RequestIdMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.request_id = new_request_id(request.META.get("HTTP_X_REQUEST_ID"))
        token = current_request_id.set(request.request_id)
        try:
            response = self.get_response(request)
        finally:
            current_request_id.reset(token)
        response["X-Request-ID"] = request.request_id
        return response


_HINTS = {
    404: "no such endpoint; the endpoints are listed at /api/docs/",
    405: "see /api/docs/ for the methods this endpoint accepts",
    400: "the request was refused before it reached the API (too large, malformed, or a Host not allowed)",
    413: "the request body is too large",
}
# How to fix an API error whose view said what was wrong but not how to fix it, by status.
_FIX_BY_STATUS = {
    400: "correct the request as the message says and send it again (the endpoints' inputs are at /api/docs/)",
    401: "log in, or send 'Authorization: Token <token>' (POST /api/auth/token/ with username and password gives one)",
    403: "this account may not do this; ask your team's owner, or work on a copy of your own",
    404: "check the id in the URL; list what exists with GET on the collection (for example /api/traces/)",
    405: "see /api/docs/ for the methods this endpoint accepts",
    409: "the stored state changed or already exists; reload it and decide again",
    413: "send less: see the size limits in the API docs",
    415: "send Content-Type: application/json (multipart/form-data for file uploads)",
    429: "wait for the number of seconds in the Retry-After header, then try again",
}
_JSON_TYPES = ("application/json", "application/problem+json")


class ApiErrorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not is_api(request) or response.status_code < 400 or getattr(response, "streaming", False):
            return response
        if not response.get("Content-Type", "").startswith("application/json"):
            return self._as_json(request, response)
        self._complete(request, response)
        return response

    def process_view(self, request, view_func, view_args, view_kwargs):
        """Every JSON body under /api/ is checked for depth before any view or parser reads it (a view with
        parsers of its own included): nested past JSON_MAX_DEPTH it is a 400, never a RecursionError. Every query
        parameter of the API takes one value (the schema says so): a repeated one is a 400, not a silent pick."""
        if not is_api(request):
            return None
        repeated = sorted(key for key, values in request.GET.lists() if len(values) > 1)
        if repeated:
            return error_response(
                400, f"the query parameter {repeated[0]!r} is given {len(request.GET.getlist(repeated[0]))} times",
                request=request, where=f"query string: {repeated[0]}"[:200],
                hint="give each query parameter once")
        if request.method not in ("POST", "PUT", "PATCH", "DELETE"):
            return None
        if request.content_type not in _JSON_TYPES and not request.content_type.endswith("+json"):
            return None
        try:
            body = request.body
        except Exception:  # too large or unreadable: the view's parser answers that in the same shape
            return None
        limit = max_depth()
        if json_depth(body) > limit:
            return error_response(
                400, f"the JSON is nested more than {limit} levels deep", request=request, where="request body",
                hint=f"no planner input nests anywhere near {limit} levels; send the document itself, not a wrapper")
        return None

    @staticmethod
    def _complete(request, response) -> None:
        """Fill in an API error body a view built by hand: the request id, and where / how to fix when empty."""
        try:
            body = json.loads(response.content)
        except ValueError:
            return
        error = body.get("error") if isinstance(body, dict) else None
        if not isinstance(error, dict):
            return
        before = dict(error)
        error.setdefault("message", body.get("detail") or "request refused")
        if not error.get("where"):
            error["where"] = f"{request.method} {request.path}"
        if not error.get("hint"):
            error["hint"] = _FIX_BY_STATUS.get(response.status_code, "see the message and /api/docs/")
        error.setdefault("request_id", getattr(request, "request_id", ""))
        if error != before:
            response.content = json.dumps(body, separators=(",", ":"))
            if response.has_header("Content-Length"):  # set on the shorter body (CommonMiddleware): a client
                response["Content-Length"] = str(len(response.content))  # would read only that many bytes

    def process_exception(self, request, exc):
        if not is_api(request):
            return None
        if isinstance(exc, (Http404, PermissionDenied, SuspiciousOperation)):
            return None  # Django answers 404/403/400; __call__ turns the page into JSON
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            logger.error("disk full on %s %s: %s", request.method, request.path, exc)
            return error_response(
                507, "the server's disk is full, so the request could not be stored; nothing of it was kept",
                request=request, where="server storage",
                hint="try again later; the operator must free space or grow the disk")
        if isinstance(exc, SERVICE_ERRORS):
            logger.warning("service unavailable on %s %s: %s: %s", request.method, request.path,
                           type(exc).__name__, exc, exc_info=exc)
            return error_response(
                503, "a service the planner needs (database, Redis or the job broker) is unavailable",
                request=request, where="server", hint="try again shortly; nothing was changed if this was a write "
                "that failed before it was stored (see the job's status)", headers={"Retry-After": "30"})
        logger.error("unhandled error on %s %s", request.method, request.path, exc_info=exc)
        return self._internal_error(request)

    @staticmethod
    def _internal_error(request):
        return error_response(
            500, "internal error; the server logged it", request=request, where="server",
            hint=f"quote request id {getattr(request, 'request_id', '-')} when you report it")

    def _as_json(self, request, response):
        status = response.status_code
        if status >= 500:
            # Raised outside a view (a middleware) and rendered by Django, which has logged it already.
            converted = self._internal_error(request)
            converted.status_code = status
            return converted
        try:
            phrase = HTTPStatus(status).phrase.lower()
        except ValueError:
            phrase = "request refused"
        headers = {name: response[name] for name in ("Allow", "Retry-After") if response.has_header(name)}
        return error_response(status, phrase, request=request, where="request", hint=_HINTS.get(status, ""),
                              headers=headers)


class FormJsonDepthMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        if is_api(request) or request.method not in ("POST", "PUT", "PATCH"):
            return None
        if request.content_type not in ("application/x-www-form-urlencoded", "multipart/form-data"):
            return None
        limit = max_depth()
        for key, values in request.POST.lists():
            for value in values:
                if looks_like_json(value) and json_depth(value) > limit:
                    message = f"The field {key!r} holds JSON nested more than {limit} levels deep; it was not read."
                    return render(request, "400.html", {"message": message}, status=400)
        return None
