"""The caps of settings' "Limits" block, handed to the Django-free cores (README "Limits" lists them)."""

from __future__ import annotations

from django.conf import settings


def scenario_limits():
    """Per simulation run: PLANNER_MAX_SIM_REQUESTS simulated requests, PLANNER_MAX_SIM_TIME_S simulated seconds."""
    from simulations.engine.scenario.schema import Limits

    return Limits(max_requests=int(settings.PLANNER_MAX_SIM_REQUESTS),
                  max_sim_time_s=float(settings.PLANNER_MAX_SIM_TIME_S))


def stream_limits():
    """Per streamed run (result mode "streaming"): PLANNER_MAX_STREAM_REQUESTS requests and PLANNER_MAX_STREAM_TIME_S
    simulated seconds. Larger than the table mode's caps: a streamed run holds one chunk's requests at a time."""
    from simulations.engine.scenario.schema import Limits

    return Limits(max_requests=int(settings.PLANNER_MAX_STREAM_REQUESTS),
                  max_sim_time_s=float(settings.PLANNER_MAX_STREAM_TIME_S))


def run_limits(streaming: bool):
    return stream_limits() if streaming else scenario_limits()


def ingest_limits():
    """Per trace import: rows, span, rate multiplier, decompressed size and compression ratio."""
    from planner.ingest.limits import IngestLimits

    return IngestLimits(max_rows=int(settings.TRACE_MAX_ROWS), max_span_s=float(settings.TRACE_MAX_SPAN_S),
                        max_rate=float(settings.TRACE_MAX_RATE_MULTIPLIER),
                        max_decompressed_bytes=int(settings.TRACE_MAX_DECOMPRESSED_BYTES),
                        max_compression_ratio=float(settings.TRACE_MAX_COMPRESSION_RATIO))
