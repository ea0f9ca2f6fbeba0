"""The id of the request being served, for logs and error bodies (no Django imports: logging loads it early)."""

from __future__ import annotations

import contextvars
import logging
import re
import uuid

current_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("planner_request_id", default="-")

# An id a trusted proxy sent (X-Request-ID) is kept when it looks like one; anything else gets a fresh id, so a
# client cannot inject text into the logs.
_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")


def new_request_id(incoming: str | None = None) -> str:
    if incoming and _SAFE_ID.match(incoming):
        return incoming
    return uuid.uuid4().hex


class RequestIdFilter(logging.Filter):
    """Adds ``record.request_id``: the current request's id, or the one of the request a record is about."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            request = getattr(record, "request", None)
            record.request_id = getattr(request, "request_id", None) or current_request_id.get()
        return True
