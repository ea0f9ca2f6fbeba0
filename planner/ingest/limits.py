"""Caps on the work one trace import may cause (Django-free); the Django app fills them from settings.

A small upload must not turn into unbounded work: the rate multiplier is capped (and the parse chunk
shrinks as it grows, so replicas never pile up in memory), gzip is decompressed as a stream with an
absolute cap and a compression-ratio cap (a bomb is refused after its first few MiB), and the stored
trace is capped in requests and in span (first to last arrival) while it is written, not afterwards.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass

MAX_RATE = 1000.0  # hard cap of the core; settings may only lower it
MAX_TIME_SCALE = 1e6
# below these a trace collapses to one instant (time scale) or to no request at all (rate)
MIN_TIME_SCALE = 1e-6
MIN_RATE = 1e-6
SEED_MAX = 2**63 - 1  # seeds are stored and handed to numpy as 64-bit integers
ASSIGNMENT_MAX_CHARS = 2000  # a region/model/tier value, ratios or a JSON column mapping, as typed
MAX_SECONDS = 1e10  # an arrival beyond ~317 years cannot be held in int64 nanoseconds


@dataclass(frozen=True)
class IngestLimits:
    max_rows: int = 50_000_000  # requests in the stored trace (after the rate multiplier)
    max_span_s: float = 400 * 86400.0  # first to last arrival of the stored trace
    max_rate: float = 100.0  # the rate multiplier
    max_decompressed_bytes: int = 16 * 1024**3
    max_compression_ratio: float = 100.0  # decompressed / compressed bytes, checked past ratio_after_bytes
    ratio_after_bytes: int = 16 * 1024**2


_ACTIVE: contextvars.ContextVar[IngestLimits | None] = contextvars.ContextVar("ingest_limits", default=None)


@contextlib.contextmanager
def active(limits: IngestLimits):
    """The limits the readers of this import check (a context variable: per thread, never shared)."""
    token = _ACTIVE.set(limits)
    try:
        yield limits
    finally:
        _ACTIVE.reset(token)


def current() -> IngestLimits:
    return _ACTIVE.get() or IngestLimits()
