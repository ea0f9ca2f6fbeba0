"""One error shape for the whole API: {"error": {"message", "where", "hint", "fields"?, "request_id"}}.

DRF's own errors go through ``exception_handler``; everything else that goes wrong under /api/ (an unhandled
exception, Django's 404/405/413 pages, a database or broker outage) is turned into the same shape by
planner.middleware.ApiErrorMiddleware with ``error_response``.
"""

from __future__ import annotations

from django.http import JsonResponse
from rest_framework.views import exception_handler as drf_exception_handler


def error_body(message: str, *, where: str = "", hint: str = "", request_id: str = "", **extra) -> dict:
    body = {"message": message, "where": where, "hint": hint, **extra}
    if request_id:
        body["request_id"] = request_id
    # Keep DRF's "detail" for clients that expect it.
    return {"error": body, "detail": message}


def error_response(status: int, message: str, *, request=None, where: str = "", hint: str = "",
                   headers: dict | None = None) -> JsonResponse:
    request_id = getattr(request, "request_id", "") if request is not None else ""
    return JsonResponse(error_body(message, where=where, hint=hint, request_id=request_id), status=status,
                        headers=headers)


def field_problems(data, path: str = "") -> list[tuple[str, str]]:
    """DRF's nested validation errors as (field path, message) pairs: ``strategies[0]``, ``spec.kind``."""
    if isinstance(data, dict):
        out = []
        for key, value in data.items():
            key = str(key)
            sub = f"{path}[{key}]" if key.isdigit() else (f"{path}.{key}" if path else key)
            out += field_problems(value, sub)
        return out
    if isinstance(data, (list, tuple)):
        if all(isinstance(item, str) for item in data):
            return [(path, str(item)) for item in data]
        out = []
        for i, item in enumerate(data):
            if item:  # a valid item of a list of objects has an empty error
                out += field_problems(item, f"{path}[{i}]")
        return out
    return [(path, str(data))]


def _where_and_hint(problems: list[tuple[str, str]], request) -> tuple[str, str]:
    """Where the first problem is (query string or request body, and the field) and how to fix it."""
    if not problems:
        return "request body", ""
    path, message = problems[0]
    field = path.split(".")[0].split("[")[0]
    in_query = request is not None and (request.method in ("GET", "HEAD") or field in request.query_params)
    where = f"{'query string' if in_query else 'request body'}: {path or 'the whole document'}"
    more = f" ({len(problems) - 1} more problem(s): see fields)" if len(problems) > 1 else ""
    return where, f"{path}: {message}{more}" if path else f"{message}{more}"


def exception_handler(exc, context):
    response = drf_exception_handler(exc, context)
    if response is None:
        return None  # not an API error: ApiErrorMiddleware answers 500 JSON and logs it
    request = context.get("request")
    request_id = getattr(request, "request_id", "") if request is not None else ""
    data = response.data
    if isinstance(data, dict) and "error" in data and isinstance(data["error"], dict):
        error = {key: str(value) if key in ("message", "where", "hint") else value
                 for key, value in data["error"].items()}
        if error.get("fields") and not (error.get("where") and error.get("hint")):
            where, hint = _where_and_hint(field_problems(error["fields"]), request)
            error["where"] = error.get("where") or where
            error["hint"] = error.get("hint") or hint
        error.setdefault("where", "")
        error.setdefault("hint", "")
        error.pop("request_id", None)
        response.data = error_body(**error, request_id=request_id) if "message" in error else data
        return response
    if isinstance(data, dict) and set(data) == {"detail"}:
        response.data = error_body(str(data["detail"]), request_id=request_id)
    else:
        where, hint = _where_and_hint(field_problems(data), request)
        response.data = error_body("the request is invalid; see fields", where=where, hint=hint, fields=data,
                                   request_id=request_id)
    return response
