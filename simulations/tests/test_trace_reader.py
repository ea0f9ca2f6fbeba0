"""Stored traces reach the engine through its one reader (traceio.read_trace_arrays), never a pandas frame: the
workload is the one the pandas reader (planner.ingest.normalised.read_trace + Workload.frame_columns) gave."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from planner.ingest.normalised import read_trace
from planner.ingest.pipeline import ingest
from simulations.engine.workload.traceio import read_trace_arrays
from simulations.engine.workload.workload import Workload

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("options", [
    {"region": "eastus", "model": "llama2-70b", "tier": "IW-F"},
    {"region": "eastus:0.5,westus:0.5", "model": "llama2-70b:0.7,bloom-176b:0.3", "tier": "IW-F:0.45,IW-N:0.27,NIW:0.28",
     "rate": 2.0, "seed": 3},
])
def test_a_stored_trace_gives_the_same_workload_through_the_engine_reader(tmp_path, options):
    dst = tmp_path / "trace.parquet"
    ingest(ROOT / "fixtures" / "traces" / "azure_code_2023.csv", dst, options=options)
    via_frame = Workload.from_arrays(Workload.frame_columns(read_trace(dst)))
    via_engine = Workload.from_arrays(read_trace_arrays(dst))
    assert len(via_engine) == len(via_frame) > 1000
    for name in ("arrival_s", "input_tokens", "output_tokens", "tier", "model", "region"):
        assert np.array_equal(getattr(via_engine, name), getattr(via_frame, name)), name
    assert via_engine.model_names == via_frame.model_names and via_engine.region_names == via_frame.region_names
