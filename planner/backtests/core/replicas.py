"""The recorded replica file: CSV ``timestamp,endpoint,replicas``, one row per (time, endpoint), as exported from
``kube_deployment_status_replicas`` or written by hand. Parsed once, here; every error names the row and column.

- ``timestamp``: seconds from the trace's start (a number), or an ISO 8601 time when ``origin`` (the ISO time of
  the trace's t = 0) is given;
- ``endpoint``: a fleet endpoint, ``region/model`` (``region/model/pool`` for a siloed pool);
- ``replicas``: a non-negative integer, holding until the endpoint's next row.

A Prometheus range-query answer (JSON, ``/api/v1/query_range`` of ``kube_deployment_status_replicas``) is read
too: each series' ``endpoint`` (else ``deployment``) label names the endpoint, its unix times are placed on the
trace's clock by ``origin``; errors name ``result[i].values[j]``. HPA events (``kubectl get events -o json``, the
``SuccessfulRescale`` "New size: N" events) are read by ``hpa_events.py``; errors name ``items[i]``.

Refused: a missing column, an unknown endpoint, a negative or non-integer count, a repeated (time, endpoint), a
gap between an endpoint's rows longer than ``max_gap_s``, a record that does not overlap the trace, more than
``MAX_ROWS`` rows.
"""

from __future__ import annotations

import csv
import io
import json
import math
from datetime import UTC, datetime

from planner.backtests.core.hpa_events import check_known_start, event_records, is_event_list
from planner.backtests.core.replica_errors import MAX_ROWS, ReplicaFileError, whole_number

__all__ = ["MAX_ROWS", "ReplicaFileError", "count_before", "parse_replicas", "whole_number"]

COLUMNS = ("timestamp", "endpoint", "replicas")


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
    if text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):
            doc = None
        if is_event_list(doc):
            records = event_records(doc, endpoints, origin=org)
            out = assemble(records, set(endpoints), trace_end_s=trace_end_s, max_gap_s=math.inf)
            check_known_start(out, records)
            return out
        return _from_prometheus(text, endpoints, trace_end_s=trace_end_s, origin=org, max_gap_s=max_gap_s)
    reader = csv.reader(io.StringIO(text))
    try:
        return _read(reader, endpoints, trace_end_s=trace_end_s, origin=org, max_gap_s=max_gap_s)
    except csv.Error as exc:
        raise ReplicaFileError(f"replicas row {reader.line_num}", f"is not valid CSV ({exc})") from None


def _read(reader, endpoints, *, trace_end_s, origin, max_gap_s):
    header = next(reader, None)
    if header is None:
        raise ReplicaFileError("replicas row 1", "the file is empty", "write the header timestamp,endpoint,replicas")
    names = [h.strip().lower() for h in header]
    for col in COLUMNS:
        if col not in names:
            raise ReplicaFileError(f"replicas row 1, column {col}", "is missing from the header",
                                   "the header is timestamp,endpoint,replicas")
    idx = {c: names.index(c) for c in COLUMNS}
    records = []
    for n, rec in enumerate(reader, start=2):
        if not rec or all(not x.strip() for x in rec):
            continue
        if n - 1 > MAX_ROWS:
            raise ReplicaFileError(f"replicas row {n}", f"more than {MAX_ROWS:,} rows", "resample to one row a minute")
        if len(rec) < len(names):
            raise ReplicaFileError(_where(n, names[len(rec)]), "is empty (the row has too few fields)")
        t = _time(rec[idx["timestamp"]], n, origin)
        records.append((f"row {n}", t, rec[idx["endpoint"]].strip(), rec[idx["replicas"]].strip()))
    if not records:
        raise ReplicaFileError("replicas row 2", "the file has a header but no rows")
    return assemble(records, set(endpoints), trace_end_s=trace_end_s, max_gap_s=max_gap_s)


def _from_prometheus(text: str, endpoints, *, trace_end_s, origin, max_gap_s):
    """A Prometheus range-query answer (``/api/v1/query_range`` of ``kube_deployment_status_replicas``, JSON):
    each series' ``endpoint`` label (else its ``deployment`` label) names the fleet endpoint (relabel with
    ``label_replace`` in the query); its values are [unix seconds, "count"], placed on the trace's clock by
    ``origin``."""
    try:
        doc = json.loads(text)
        series = doc["data"]["result"]
        if not isinstance(series, list):
            raise TypeError
    except (ValueError, KeyError, TypeError, RecursionError):
        raise ReplicaFileError("replicas", "is neither CSV timestamp,endpoint,replicas nor a Prometheus "
                                           "query_range answer ({\"data\": {\"result\": [...]}})") from None
    if origin is None:
        raise ReplicaFileError("origin", "a Prometheus export has unix times: give the ISO time of the trace's t = 0")
    zero = origin.timestamp() if origin.tzinfo is not None else origin.replace(tzinfo=UTC).timestamp()
    records = []
    for i, s in enumerate(series):
        labels = s.get("metric") if isinstance(s, dict) else None
        values = s.get("values") if isinstance(s, dict) else None
        if not isinstance(labels, dict) or not isinstance(values, list):
            raise ReplicaFileError(f"replicas result[{i}]", "needs \"metric\" labels and \"values\" (a range query)")
        ep = str(labels.get("endpoint") or labels.get("deployment") or "")
        for j, v in enumerate(values):
            label = f"result[{i}].values[{j}]"
            if not (isinstance(v, list) and len(v) == 2):
                raise ReplicaFileError(f"replicas {label}", "is not a [unix time, \"value\"] pair")
            if len(records) >= MAX_ROWS:
                raise ReplicaFileError(f"replicas {label}", f"more than {MAX_ROWS:,} points", "query a coarser step")
            try:
                t = float(v[0]) - zero
            except (TypeError, ValueError):
                raise ReplicaFileError(f"replicas {label}, column timestamp", f"{v[0]!r} is not a unix time") from None
            if not math.isfinite(t):
                raise ReplicaFileError(f"replicas {label}, column timestamp", f"{v[0]!r} is not a unix time")
            raw = str(v[1])
            records.append((label, t, ep, raw[:-2] if raw.endswith(".0") else raw))
    if not records:
        raise ReplicaFileError("replicas result", "has no points")
    return assemble(records, set(endpoints), trace_end_s=trace_end_s, max_gap_s=max_gap_s)


def assemble(records, known, *, trace_end_s, max_gap_s):
    """``{endpoint: [[t, count], ...]}`` from (label, t, endpoint, raw count) records, checked."""
    out: dict[str, list] = {}
    labels: dict[str, list] = {}
    for label, t, ep, raw in records:
        where = f"replicas {label}"
        if ep not in known:
            raise ReplicaFileError(f"{where}, column endpoint", f"{ep!r} is not an endpoint of the scenario's fleet",
                                   f"use one of {sorted(known)}")
        count = whole_number(raw, f"{where}, column replicas", "a whole number of replicas")
        out.setdefault(ep, []).append([t, count])
        labels.setdefault(ep, []).append(label)
    for ep, pts in out.items():
        order = sorted(range(len(pts)), key=lambda i: pts[i][0])
        pts[:] = [pts[i] for i in order]
        labels[ep] = [labels[ep][i] for i in order]
        for i in range(1, len(pts)):
            gap = pts[i][0] - pts[i - 1][0]
            if gap == 0:
                raise ReplicaFileError(f"replicas {labels[ep][i]}, column timestamp",
                                       f"repeats the time of {labels[ep][i - 1]} for {ep}")
            if gap > max_gap_s:
                raise ReplicaFileError(f"replicas {labels[ep][i]}, column timestamp",
                                       f"leaves a gap of {gap:g} s after {labels[ep][i - 1]} for {ep} "
                                       f"(at most {max_gap_s:g} s)", "fill the gap or raise max_gap_s")
    first = min(p[0][0] for p in out.values())
    last = max(p[-1][0] for p in out.values())
    if last < 0 or first > trace_end_s:
        label = records[0][0]
        raise ReplicaFileError(f"replicas {label}, column timestamp",
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
