"""One error shape for the whole API: {"error": {"message", "where", "hint", "fields"?}}."""

from __future__ import annotations

from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    data = response.data
    if isinstance(data, dict) and "error" in data:
        return response
    if isinstance(data, dict) and set(data) == {"detail"}:
        body = {"message": str(data["detail"]), "where": "", "hint": ""}
    else:
        body = {"message": "the request is invalid; see fields", "where": "request body", "hint": "", "fields": data}
    # Keep DRF's "detail" for clients that expect it.
    response.data = {"error": body, "detail": body["message"]}
    return response
