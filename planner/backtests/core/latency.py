"""Measured latency beside the as-run replay (a calibration check): CSV ``minute,ttft_p50_s,ttft_p95_s`` with
optional ``e2e_p50_s``, ``e2e_p95_s`` (minute = whole minutes from the trace's start; the percentiles of the
requests that arrived in that minute, as a per-minute Prometheus histogram_quantile gives them). Parsed once, here;
errors name the row and column. The gap is simulated minus measured, per minute and over the window."""

from __future__ import annotations

import csv
import io
import math

import numpy as np

from planner.backtests.core.replicas import ReplicaFileError, whole_number

METRICS = ("ttft_p50_s", "ttft_p95_s", "e2e_p50_s", "e2e_p95_s")
MAX_ROWS = 100_000


def parse_latency(text: str) -> dict[str, list]:
    """``{metric: [[minute, seconds], ...]}`` (JSON-able) for the metrics the file has (at least one), or
    ReplicaFileError."""
    if "\x00" in text:
        raise ReplicaFileError("latency", "contains a NUL byte: not a text CSV file")
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip().lower() for h in next(reader, [])]
        if "minute" not in header:
            raise ReplicaFileError("latency row 1, column minute", "is missing from the header",
                                   "the header is minute,ttft_p50_s,ttft_p95_s[,e2e_p50_s,e2e_p95_s]")
        cols = [m for m in METRICS if m in header]
        if not cols:
            raise ReplicaFileError("latency row 1", f"has none of the columns {', '.join(METRICS)}")
        out: dict[str, dict[int, float]] = {m: {} for m in cols}
        for n, rec in enumerate(reader, start=2):
            if not rec or all(not x.strip() for x in rec):
                continue
            if n > MAX_ROWS:
                raise ReplicaFileError(f"latency row {n}", f"more than {MAX_ROWS:,} rows")
            raw = rec[header.index("minute")].strip() if len(rec) > header.index("minute") else ""
            minute = whole_number(raw, f"latency row {n}, column minute", "a whole minute")
            for m in cols:
                i = header.index(m)
                cell = rec[i].strip() if len(rec) > i else ""
                if not cell:
                    continue  # a minute without that measurement
                try:
                    v = float(cell)
                except ValueError:
                    raise ReplicaFileError(f"latency row {n}, column {m}", f"{cell!r} is not a number") from None
                if not math.isfinite(v) or v < 0:
                    raise ReplicaFileError(f"latency row {n}, column {m}", f"{cell!r} is not a latency >= 0")
                if minute in out[m]:
                    raise ReplicaFileError(f"latency row {n}, column minute", f"minute {minute} appears twice")
                out[m][minute] = v
    except csv.Error as exc:
        raise ReplicaFileError(f"latency row {reader.line_num}", f"is not valid CSV ({exc})") from None
    if not any(out.values()):
        raise ReplicaFileError("latency row 2", "the file has a header but no measurements")
    return {m: sorted([k, v] for k, v in per.items()) for m, per in out.items()}


def simulated_minutes(requests: dict, metrics) -> dict[str, dict[int, float]]:
    """Per-minute percentiles of the simulated requests by arrival minute (completed requests only)."""
    arrival = np.asarray(requests["arrival_s"], dtype=float)
    done = np.asarray(requests["completed"], dtype=bool)
    minute = (arrival // 60).astype(np.int64)
    out = {}
    for m in metrics:
        kind, q = m.split("_")[0], float(m.split("_")[1][1:])
        values = np.asarray(requests["ttft_s" if kind == "ttft" else "e2e_s"], dtype=float)
        per = {}
        ok = done & np.isfinite(values)
        for mi in np.unique(minute[ok]):
            per[int(mi)] = float(np.percentile(values[ok & (minute == mi)], q))
        out[m] = per
    return out


def latency_gap(measured: dict, simulated: dict) -> dict:
    """Per metric: minutes compared, mean and median (simulated - measured), mean relative gap, and the rows."""
    out = {}
    for m, pairs in measured.items():
        meas = {int(k): float(v) for k, v in pairs}
        sim = simulated.get(m, {})
        minutes = sorted(set(meas) & set(sim))
        diffs = [sim[k] - meas[k] for k in minutes]
        rel = [(sim[k] - meas[k]) / meas[k] for k in minutes if meas[k] > 0]
        out[m] = {"minutes": len(minutes),
                  "mean_gap_s": float(np.mean(diffs)) if diffs else None,
                  "median_gap_s": float(np.median(diffs)) if diffs else None,
                  "mean_relative_gap": float(np.mean(rel)) if rel else None,
                  "rows": [[k, meas[k], sim[k]] for k in minutes]}
    return out
