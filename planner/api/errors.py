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
        error.setdefault("where", "")
        error.setdefault("hint", "")
        error.pop("request_id", None)
        response.data = error_body(**error, request_id=request_id) if "message" in error else data
        return response
    if isinstance(data, dict) and set(data) == {"detail"}:
        response.data = error_body(str(data["detail"]), request_id=request_id)
    else:
        response.data = error_body("the request is invalid; see fields", where="request body", fields=data,
                                   request_id=request_id)
    return response
