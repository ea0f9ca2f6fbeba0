"""The recorded replica file: CSV ``timestamp,endpoint,replicas``, one row per (time, endpoint), as exported from
``kube_deployment_status_replicas`` or written by hand. Parsed once, here; every error names the row and column.

- ``timestamp``: seconds from the trace's start (a number), or an ISO 8601 time when ``origin`` (the ISO time of
  the trace's t = 0) is given;
- ``endpoint``: a fleet endpoint, ``region/model`` (``region/model/pool`` for a siloed pool);
- ``replicas``: a non-negative integer, holding until the endpoint's next row.

Refused: a missing column, an unknown endpoint, a negative or non-integer count, a repeated (time, endpoint), a
gap between an endpoint's rows longer than ``max_gap_s``, a record that does not overlap the trace, more than
``MAX_ROWS`` rows.
"""

from __future__ import annotations

import csv
import io
import math
from datetime import datetime

MAX_ROWS = 200_000
COLUMNS = ("timestamp", "endpoint", "replicas")


class ReplicaFileError(ValueError):
    def __init__(self, where: str, message: str, hint: str = "") -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message
        self.hint = hint


def _where(row: int, column: str) -> str:
    return f"replicas row {row}, column {column}"


def _time(text: str, row: int, origin: datetime | None) -> float:
    text = text.strip()
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is not None:
        if not math.isfinite(value):
            raise ReplicaFileError(_where(row, "timestamp"), f"{text!r} is not a finite number of seconds")
        return value
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ReplicaFileError(_where(row, "timestamp"), f"{text!r} is neither seconds nor an ISO 8601 time",
                               "write seconds from the trace's start, e.g. 120, or 2026-11-01T10:02:00Z") from None
    if origin is None:
        raise ReplicaFileError(_where(row, "timestamp"), "an ISO time needs the trace's start time (origin)",
                               "give origin (the ISO time of the trace's t = 0) or write seconds")
    if (when.tzinfo is None) != (origin.tzinfo is None):
        raise ReplicaFileError(_where(row, "timestamp"), "mixes a time zone with the origin's (or lack of one)",
                               "write both with a zone, e.g. Z")
    return (when - origin).total_seconds()


def parse_replicas(text: str, endpoints: list[str], *, trace_end_s: float, origin: str | None = None,
                   max_gap_s: float = 900.0) -> dict[str, list[list[float]]]:
    """``{endpoint: [[t_s, count], ...]}`` sorted by time, or ReplicaFileError naming the row and column.
    ``trace_end_s``: the last arrival of the trace (the record must overlap [0, trace_end_s])."""
    org = None
    if origin:
        try:
            org = datetime.fromisoformat(str(origin).replace("Z", "+00:00"))
        except ValueError:
            raise ReplicaFileError("origin", f"{origin!r} is not an ISO 8601 time") from None
    if "\x00" in text:
        raise ReplicaFileError("replicas", "contains a NUL byte: not a text CSV file")
    reader = csv.reader(io.StringIO(text))
    try:
        return _read(reader, endpoints, trace_end_s=trace_end_s, origin=org, max_gap_s=max_gap_s)
    except csv.Error as exc:
        raise ReplicaFileError(f"replicas row {reader.line_num}", f"is not valid CSV ({exc})") from None


def _read(reader, endpoints, *, trace_end_s, origin, max_gap_s):
    org = origin
    header = next(reader, None)
    if header is None:
        raise ReplicaFileError("replicas row 1", "the file is empty", "write the header timestamp,endpoint,replicas")
    names = [h.strip().lower() for h in header]
    for col in COLUMNS:
        if col not in names:
            raise ReplicaFileError(f"replicas row 1, column {col}", "is missing from the header",
                                   "the header is timestamp,endpoint,replicas")
    idx = {c: names.index(c) for c in COLUMNS}
    known = set(endpoints)
    out: dict[str, list] = {}
    rows: dict[str, list] = {}
    for n, rec in enumerate(reader, start=2):
        if not rec or all(not x.strip() for x in rec):
            continue
        if n - 1 > MAX_ROWS:
            raise ReplicaFileError(f"replicas row {n}", f"more than {MAX_ROWS:,} rows", "resample to one row a minute")
        if len(rec) < len(names):
            missing = names[len(rec)]
            raise ReplicaFileError(_where(n, missing), "is empty (the row has too few fields)")
        t = _time(rec[idx["timestamp"]], n, org)
        ep = rec[idx["endpoint"]].strip()
        if ep not in known:
            raise ReplicaFileError(_where(n, "endpoint"), f"{ep!r} is not an endpoint of the scenario's fleet",
                                   f"use one of {sorted(known)}")
        raw = rec[idx["replicas"]].strip()
        try:
            count = int(raw)
        except ValueError:
            raise ReplicaFileError(_where(n, "replicas"), f"{raw!r} is not a whole number of replicas") from None
        if count < 0:
            raise ReplicaFileError(_where(n, "replicas"), f"{count} is negative")
        out.setdefault(ep, []).append([t, count])
        rows.setdefault(ep, []).append(n)
    if not out:
        raise ReplicaFileError("replicas row 2", "the file has a header but no rows")
    for ep, pts in out.items():
        order = sorted(range(len(pts)), key=lambda i: pts[i][0])
        pts[:] = [pts[i] for i in order]
        rows[ep] = [rows[ep][i] for i in order]
        for i in range(1, len(pts)):
            gap = pts[i][0] - pts[i - 1][0]
            if gap == 0:
                raise ReplicaFileError(_where(rows[ep][i], "timestamp"),
                                       f"repeats the time of row {rows[ep][i - 1]} for {ep}")
            if gap > max_gap_s:
                raise ReplicaFileError(_where(rows[ep][i], "timestamp"),
                                       f"leaves a gap of {gap:g} s after row {rows[ep][i - 1]} for {ep} "
                                       f"(at most {max_gap_s:g} s)", "fill the gap or raise max_gap_s")
    first = min(p[0][0] for p in out.values())
    last = max(p[-1][0] for p in out.values())
    if last < 0 or first > trace_end_s:
        row = min(r[0] for r in rows.values())
        raise ReplicaFileError(_where(row, "timestamp"),
                               f"the record spans {first:g}-{last:g} s and does not overlap the trace (0-"
                               f"{trace_end_s:g} s)", "check the origin or the trace")
    return out


def count_before(points: list, t: float) -> int:
    """The recorded count holding just before ``t`` (a timeline sample at t shows the fleet before t's events);
    before the first row, the first count."""
    n = points[0][1]
    for ts, c in points:
        if ts < t:
            n = c
        else:
            break
    return int(n)
