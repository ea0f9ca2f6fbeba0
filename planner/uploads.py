"""Request bodies are bounded before they are read: by Content-Length, and again while a file streams in.
A JSON or form body holding a NUL character (which PostgreSQL cannot store in text or JSON) is refused
with a 400 before any view parses it.

``BodySizeLimitMiddleware`` answers 413 (JSON on /api/, text elsewhere) when the declared length is above
the cap of the path: trace uploads ``TRACE_UPLOAD_MAX_BYTES``, hardware files ``HARDWARE_UPLOAD_MAX_BYTES``
(each plus 1 MiB of multipart framing), everything else ``DATA_UPLOAD_MAX_MEMORY_SIZE``; nothing is spooled
to disk first. ``CappedUploadHandler`` (first in FILE_UPLOAD_HANDLERS) counts the file bytes as they arrive
and stops at the same cap, so no upload can outgrow it on the way to the temporary file.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.files.uploadhandler import FileUploadHandler
from django.http import HttpResponse
from rest_framework.exceptions import APIException

from planner.api.errors import error_response

FRAMING = 1024 * 1024  # multipart boundaries and form fields around the file
UPLOAD_PATHS = (
    ("/api/traces/", "TRACE_UPLOAD_MAX_BYTES"),
    ("/traces/upload/", "TRACE_UPLOAD_MAX_BYTES"),
    ("/api/hardware/import/", "HARDWARE_UPLOAD_MAX_BYTES"),
    ("/hardware/upload/", "HARDWARE_UPLOAD_MAX_BYTES"),
    ("/api/benchmarks/runs/", "BENCHMARK_UPLOAD_MAX_BYTES"),
    ("/benchmarks/", "BENCHMARK_UPLOAD_MAX_BYTES"),
)


def file_cap(path: str) -> tuple[int | None, str]:
    """The cap on one uploaded file at ``path`` and its setting's name (None: no file uploads there)."""
    for prefix, name in UPLOAD_PATHS:
        if path.startswith(prefix):
            return int(getattr(settings, name)), name
    return None, "DATA_UPLOAD_MAX_MEMORY_SIZE"


def body_cap(path: str) -> tuple[int, str]:
    cap, name = file_cap(path)
    if cap is None:
        return int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE), name
    return cap + FRAMING, name


def _error(request, status: int, message: str, hint: str, where: str = "request body"):
    """The project's error shape (with the request id) on /api/, plain text on the pages."""
    if request.path.startswith("/api/"):
        return error_response(status, message, request=request, where=where, hint=hint)
    return HttpResponse(f"{message} ({hint})", status=status, content_type="text/plain; charset=utf-8")


def _too_large(request, size: int, cap: int, name: str):
    return _error(request, 413, f"the request body is {size:,} bytes, above the limit of {cap:,} bytes here",
                  f"send less, compress the file, or raise {name}")


def _has_nul(request) -> bool:
    """A NUL in a JSON body (always escaped there) or a url-encoded form; multipart bodies carry files and
    are left to their parsers."""
    ctype = request.META.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
    if ctype == "application/json" or ctype.endswith("+json"):
        body = request.body
        return b"\\u0000" in body.lower() or b"\x00" in body
    if ctype == "application/x-www-form-urlencoded":
        body = request.body
        return b"%00" in body or b"%5cu0000" in body.lower() or b"\x00" in body
    return False


class RequestBodyGuardMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        raw = request.META.get("CONTENT_LENGTH") or "0"
        try:
            size = int(raw)
        except ValueError:
            size = -1
        if size < 0:
            return _error(request, 400, "the Content-Length header is not a number",
                          "send the body's length in bytes as a whole number, or let the client set it",
                          where="request headers: Content-Length")
        cap, name = body_cap(request.path)
        if size > cap:
            return _too_large(request, size, cap, name)
        if size and _has_nul(request):
            return _error(request, 400, "the request body contains a NUL character (\\u0000), which cannot "
                                             "be stored", "remove the NUL character")
        return self.get_response(request)


class UploadTooLarge(APIException, RequestDataTooBig):
    """413 JSON from DRF views; pages see a SuspiciousOperation (400) as Django words it."""

    status_code = 413
    default_code = "too_large"


class CappedUploadHandler(FileUploadHandler):
    """Counts every uploaded file's bytes as they stream in and stops past the path's cap."""

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        self.cap, self.setting = file_cap(self.request.path if self.request else "")
        if self.cap is None:
            self.cap, self.setting = int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE), "DATA_UPLOAD_MAX_MEMORY_SIZE"
        self.seen = 0

    def receive_data_chunk(self, raw_data, start):
        self.seen += len(raw_data)
        if self.seen > self.cap:
            raise UploadTooLarge({"error": {"message": f"the uploaded file is above the limit of {self.cap:,} bytes",
                                            "where": "file", "hint": f"split or compress it, or raise {self.setting}"}})
        return raw_data

    def file_complete(self, file_size):
        return None
