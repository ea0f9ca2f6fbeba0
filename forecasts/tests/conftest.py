"""Helpers for the forecasts tests: a trace row backed by a synthetic normalised Parquet file."""

from __future__ import annotations

import uuid

import pytest

from forecasts.core import synthetic as syn


@pytest.fixture(autouse=True)
def media(request, settings, tmp_path):
    if request.node.get_closest_marker("integration"):
        return settings.MEDIA_ROOT  # the worker process reads the same data directory
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def make_trace():
    def make(team, frame=None, name="synthetic"):
        from planner.ingest.normalised import write_frame
        from planner.traces.models import Trace

        if frame is None:
            frame = syn.synthetic_trace(days=3, peak_rps=0.05, seed=1)
        key = uuid.uuid4().hex
        trace = Trace.objects.create(
            team=team,
            name=name,
            format="native",
            storage_key=key,
            content_sha256=key,
            fingerprint=key,
            requests=len(frame),
            span_s=float(frame["arrival_s"].max()),
        )
        trace.directory.mkdir(parents=True, exist_ok=True)
        write_frame(frame, trace.normalised_file)
        trace.frame = frame
        return trace

    return make
