"""The OpenAPI schema documents every status the API can answer (drf-spectacular postprocessing hook).

Views declare their success responses (and some errors); the error statuses every endpoint shares come from the
middleware, authentication, throttles and the exception handler, so they are added here, once, with the one
error shape (README "API"): ``{"error": {"message", "where", "hint", "request_id", ...}}``.
"""

from __future__ import annotations

ERROR_COMPONENT = "Error"
ERROR_SCHEMA = {
    "type": "object",
    "description": "The error shape of every 4xx and 5xx answer under /api/.",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "message": {"type": "string", "description": "what went wrong"},
                "where": {"type": "string", "description": "the place: a field, a query parameter, a line"},
                "hint": {"type": "string", "description": "how to fix it"},
                "request_id": {"type": "string", "description": "also in the X-Request-ID header and the log"},
                "fields": {"type": "object", "additionalProperties": True,
                           "description": "every invalid field of a validation error"},
            },
            "required": ["message"],
            "additionalProperties": True,
        },
        "detail": {"description": "the same error in words (kept for DRF clients)"},
    },
    "required": ["error"],
    "additionalProperties": True,
}

# What any operation can answer besides its own responses: bad query parameters or body (400), no or a bad token
# (401), another team's or a forbidden object (403), not found or a page past the end (404), an unsupported
# Accept (406), too many login attempts or long jobs (429), the database or the job queue down (503).
COMMON = {
    "400": "invalid query parameters or request body",
    "401": "no token, or an expired or revoked one",
    "403": "not allowed for this account or team",
    "404": "not found in your team, or a page past the end",
    "406": "no representation matches the Accept header",
    "429": "too many requests (login budget, long-job limit); see Retry-After",
    "503": "the database or the job queue is unavailable; nothing was stored; see Retry-After",
}
# Requests with a body can also answer these.
WITH_BODY = {
    "409": "conflicts with what is stored (a duplicate, or an object in use or not ready)",
    "413": "the request body is above the limit of this path",
    "415": "the request body's content type is not accepted here",
    "507": "the server's storage is full; nothing was stored",
}
DELETE = {"409": "the object is still in use"}


def add_error_responses(result, generator, request, public):
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components.setdefault(ERROR_COMPONENT, ERROR_SCHEMA)
    ref = {"$ref": f"#/components/schemas/{ERROR_COMPONENT}"}
    for path, operations in result.get("paths", {}).items():
        if not path.startswith("/api/"):
            continue
        for method, operation in operations.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            extra = dict(COMMON)
            if method in ("post", "put", "patch"):
                extra.update(WITH_BODY)
            elif method == "delete":
                extra.update(DELETE)
            responses = operation.setdefault("responses", {})
            for code, description in extra.items():
                if code not in responses:
                    responses[code] = {"description": description, "content": {"application/json": {"schema": ref}}}
                else:
                    _loosen_error_response(responses[code], ref)
    return result


def _loosen_error_response(response: dict, ref: dict) -> None:
    """A view that declared an error status with a bare object gets the error shape for it."""
    content = response.setdefault("content", {})
    media = content.get("application/json")
    if media is None or media.get("schema") in (None, {"type": "object"}, {"type": "object", "additionalProperties": {}}):
        content["application/json"] = {"schema": ref}
