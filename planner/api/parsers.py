"""Request-body parsers that refuse JSON nested too deeply before parsing it.

Python's json module recurses once per level: a 100,000-deep array is a RecursionError (a 500, which under DEBUG
used to render the settings page to anonymous callers). The depth is measured first, in linear time and without
recursion, so such a body is a 400 in the documented shape. DRF uses these parsers for every API view
(settings.REST_FRAMEWORK); page views that read JSON from a form field go through ``loads`` or are guarded by
planner.middleware.FormJsonDepthMiddleware.
"""

from __future__ import annotations

import json
import re

import numpy as np
from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import ParseError

# A JSON string (escapes included); brackets inside strings do not nest.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))


class JSONTooDeep(ValueError):
    def __init__(self, limit: int):
        super().__init__(f"the JSON is nested more than {limit} levels deep")
        self.limit = limit


def json_depth(data: bytes | str) -> int:
    """How deeply arrays/objects nest in ``data`` (0 for a scalar). Linear time, no recursion; for text that is
    not JSON the figure is only indicative (the parser then rejects it anyway)."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    if not brackets:
        return 0
    codes = np.frombuffer(brackets, dtype=np.uint8)
    steps = np.where((codes == ord("[")) | (codes == ord("{")), 1, -1).astype(np.int32)
    return int(np.cumsum(steps).max())


def max_depth() -> int:
    return settings.JSON_MAX_DEPTH


def check_depth(data: bytes | str, limit: int | None = None) -> None:
    limit = max_depth() if limit is None else limit
    if json_depth(data) > limit:
        raise JSONTooDeep(limit)


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number; send a finite number or null")


def loads(text: bytes | str, *, limit: int | None = None):
    """``json.loads`` for untrusted text: refuses nesting deeper than JSON_MAX_DEPTH (JSONTooDeep) and the
    non-standard NaN / Infinity constants (ValueError, like any other malformed JSON)."""
    check_depth(text, limit)
    return json.loads(text, parse_constant=_refuse_constant)


def looks_like_json(value) -> bool:
    return isinstance(value, str) and value.lstrip()[:1] in ("[", "{")


def _too_deep(where: str, limit: int) -> ParseError:
    return ParseError({"error": {
        "message": f"the JSON is nested more than {limit} levels deep",
        "where": where,
        "hint": f"no planner input nests anywhere near {limit} levels; send the document itself, not a wrapper",
    }})


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = parser_context or {}
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        raw = stream.read()
        limit = max_depth()
        if json_depth(raw) > limit:
            raise _too_deep("request body", limit)
        try:
            text = raw.decode(encoding)
            return json.loads(text, parse_constant=_refuse_constant if self.strict else None)
        except (UnicodeDecodeError, LookupError) as exc:
            raise ParseError({"error": {"message": f"the request body is not {encoding} text ({exc})",
                                        "where": "request body", "hint": "send UTF-8 encoded JSON"}}) from None
        except ValueError as exc:
            raise ParseError({"error": {"message": f"JSON parse error: {exc}", "where": "request body",
                                        "hint": "send one valid JSON document"}}) from None


def _check_fields(data) -> None:
    limit = max_depth()
    for key, values in data.lists():
        for value in values:
            if looks_like_json(value) and json_depth(value) > limit:
                raise _too_deep(f"form field {key!r}", limit)


class FormParser(parsers.FormParser):
    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        _check_fields(data)
        return data


class MultiPartParser(parsers.MultiPartParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            result = super().parse(stream, media_type, parser_context)
        except ParseError as exc:
            if "header size" not in str(exc.detail):
                raise
            # Django reads at most 1,024 bytes of a part's headers, and a file's name is one of them
            raise ParseError({"error": {
                "message": "a part of the multipart body has headers over 1,024 bytes (usually a very long file name)",
                "where": "request body: file (its file name)",
                "hint": "rename the file to a name of at most 255 characters and upload it again",
            }}) from None
        _check_fields(result.data)
        return result
