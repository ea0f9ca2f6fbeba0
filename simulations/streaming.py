"""Streamed runs in the product: a run whose result mode is ``streaming`` is replayed by
``simulations.engine.streaming.stream.simulate_stream`` chunk by chunk, reports progress per chunk, stays within its caps
(PLANNER_MAX_STREAM_REQUESTS / _TIME_S) and the job time limit, and stores ``StreamResult.to_dict()`` on the row.

Workload sources: a stored trace (Parquet) is read in row batches, so memory is one chunk's; a diurnal synthetic
workload of more than a day is drawn one day at a time (``engine/streaming/dailysynth.py``) when ``chunk_s`` divides a day;
anything else (a bundled trace, another synthetic kind) is materialised once as compact arrays (about 33 bytes per
request) within the table mode's request cap, and cut into chunks.
"""

from __future__ import annotations

import gc
import math
import time

from django.conf import settings

from simulations.engine import ScenarioError

WALL_MARGIN_S = 60.0  # stop this long before the job time limit, with a reason, instead of being killed


class StreamStopped(Exception):
    """A streamed run stopped before its end for a reason the planner can act on (time limit)."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def wall_budget_s() -> float:
    """Wall seconds a streamed run may take: the Celery soft time limit minus a margin (the job time limit)."""
    return max(60.0, float(settings.CELERY_TASK_SOFT_TIME_LIMIT) - WALL_MARGIN_S)


def json_safe(value):
    """The result with NaN / infinity as null (PostgreSQL's JSON has neither) and numpy scalars as Python's."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    if hasattr(value, "item"):  # numpy scalar
        return json_safe(value.item())
    return value


def _capped(chunks, *, cap: int, limit: int | None):
    """Chunks of a trace read in row batches, stopped at ``workload.limit`` and refused above the request cap."""
    from simulations.engine.streaming.stream import _slice

    seen = 0
    for t0, w in chunks:
        n = len(w)
        if limit is not None and seen + n >= limit:
            keep = limit - seen
            if keep > 0:
                import numpy as np

                yield t0, _slice(w, np.arange(keep), 0.0)
            return
        seen += n
        if seen > cap:
            raise ScenarioError("workload", f"has more than {cap:,} requests; the limit is {cap:,} per streamed run",
                                hint="set workload.limit, or ask the operator to raise PLANNER_MAX_STREAM_REQUESTS")
        yield t0, w


def _divides_a_day(chunk_s: float) -> bool:
    n = 86400.0 / chunk_s
    return abs(n - round(n)) < 1e-9


def materialise_cap() -> int:
    """Requests a streamed run may hold as one in-memory workload (a bundled trace, a non-diurnal synthetic kind, or a
    diurnal one with a chunk that does not divide a day): the table mode's cap, PLANNER_MAX_SIM_REQUESTS."""
    return int(settings.PLANNER_MAX_SIM_REQUESTS)


def check_synthetic_at_once(scenario, chunk_s: float) -> None:
    """ScenarioError when a streamed run would generate its synthetic workload at once above ``materialise_cap()``
    (checked when the run is created, and again by the job)."""
    from simulations.engine.scenario.schema import expected_requests
    from simulations.engine.streaming.dailysynth import is_daily

    syn = scenario.workload_spec.get("synthetic")
    if syn is None or (is_daily(syn) and _divides_a_day(chunk_s)):
        return
    cap = materialise_cap()
    asked = expected_requests(scenario.workload.synthetic)
    if asked > cap:
        raise ScenarioError("workload.synthetic", f"asks for about {asked:,.0f} requests generated at once; a "
                                                  f"streamed run holds at most {cap:,} in memory this way",
                            hint="a diurnal workload (no kind) with a chunk_s dividing a day is drawn one day at a "
                                 "time instead; or lower the requests (PLANNER_MAX_SIM_REQUESTS)")


def stream_source(scenario, trace_path=None, span_s: float | None = None, chunk_s: float = 3600.0):
    """Where a streamed run's chunks come from: ``("parquet", path, horizon)`` for a stored Parquet trace (read in
    row batches), ``("daily", None, horizon)`` for a multi-day diurnal synthetic workload (drawn one day at a time,
    ``engine/streaming/dailysynth.py``), else ``(workload, None, horizon)``: the workload materialised at once, within
    ``materialise_cap()``."""
    from simulations.engine.simulator.scenario import build_workload
    from simulations.engine.streaming.dailysynth import is_daily

    wl = scenario.workload_spec
    if trace_path is not None and str(trace_path).lower().endswith(".parquet"):
        rate = float(wl.get("rate_scale", 1.0))
        horizon = (span_s or 0.0) / rate
        if horizon > scenario.limits.max_sim_time_s:
            raise ScenarioError("workload", f"spans {horizon:,.0f} simulated seconds; the limit is "
                                            f"{scenario.limits.max_sim_time_s:,.0f} per streamed run",
                                hint="raise workload.rate_scale, or ask the operator to raise PLANNER_MAX_STREAM_TIME_S")
        return "parquet", trace_path, horizon
    syn = wl.get("synthetic")
    if trace_path is None and is_daily(syn) and _divides_a_day(chunk_s):
        return "daily", None, float(syn["duration_s"])
    cap = materialise_cap()
    if trace_path is None:
        check_synthetic_at_once(scenario, chunk_s)
    workload = build_workload(scenario, trace=trace_path)
    if len(workload) > cap:
        raise ScenarioError("workload", f"has {len(workload):,} requests; a streamed run holds at most {cap:,} in "
                                        "memory at once (PLANNER_MAX_SIM_REQUESTS)",
                            hint="use a stored Parquet trace (read in row batches) or set workload.limit")
    return workload, None, workload.duration_s


def execute_stream(scenario, *, chunk_s: float, trace_path=None, span_s: float | None = None,
                   progress=None) -> dict:
    """Replay ``scenario`` streamed and return the stored result dict (json-safe); raises ScenarioError for a bad
    workload, StreamStopped at the time limit, JobCancelled through ``progress``."""
    from simulations.engine.streaming.stream import _parquet_chunks, chunks_of, simulate_stream

    start = time.perf_counter()
    budget = wall_budget_s()
    source, path, horizon = stream_source(scenario, trace_path, span_s, chunk_s)
    if isinstance(source, str) and source == "daily":
        from simulations.engine.streaming.dailysynth import daily_chunks

        chunks = daily_chunks(scenario, chunk_s)
    elif isinstance(source, str):
        limit = scenario.workload_spec.get("limit")
        chunks = _capped(_parquet_chunks(scenario, path, chunk_s), cap=scenario.limits.max_requests,
                         limit=int(limit) if limit else None)
    else:
        chunks = chunks_of(source, chunk_s)
    state = {"requests": 0}
    horizon = max(float(horizon or 0.0), 1.0)

    def on_chunk(i, t0, result):
        state["requests"] += int(result.summary["requests"])
        done_s = min(t0 + chunk_s, horizon)
        if progress:
            progress(min(1.0, done_s / horizon), f"chunk {i + 1}: {done_s / 3600:,.1f} of {horizon / 3600:,.1f} "
                                                 f"simulated hours, {state['requests']:,} requests")
        elapsed = time.perf_counter() - start
        if elapsed > budget:
            raise StreamStopped(f"stopped at the job time limit after {done_s / 3600:,.1f} of {horizon / 3600:,.1f} "
                                f"simulated hours ({elapsed:,.0f} s wall, {state['requests']:,} requests)",
                                hint="shorten the horizon or the rate, or ask the operator to raise "
                                     "CELERY_TASK_TIME_LIMIT / CELERY_TASK_SOFT_TIME_LIMIT")

    if progress:
        progress(0.0, "streaming")
    # a Django process holds ~175k long-lived objects (apps, pydantic, plotly) that every full collection of the
    # run's garbage would traverse (~50 ms each; measured when the chunked replay collected after every chunk, 36 s
    # of 720 hourly chunks): freeze them first.
    gc.collect()
    gc.freeze()
    try:
        out = simulate_stream(scenario, chunk_s=chunk_s, workload_chunks=chunks, on_chunk=on_chunk).to_dict()
    finally:
        gc.unfreeze()
    wall = time.perf_counter() - start
    summary = out.setdefault("summary", {})
    summary.setdefault("wall_s", wall)
    summary.setdefault("requests_per_wall_s", summary.get("requests", 0) / max(wall, 1e-9))
    summary.setdefault("strategy", scenario.policy.autoscaler)
    summary.setdefault("mode", scenario.engine.mode)
    out.setdefault("chunk_s", chunk_s)
    return json_safe(out)
