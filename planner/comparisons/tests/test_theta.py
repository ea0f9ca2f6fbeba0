"""theta measured in the engine: the found rate meets the TTFT target and a clearly higher one does not."""

from __future__ import annotations

import numpy as np
import pytest

from planner.comparisons.core.theta import _p_ttft, calibrate_theta
from simulations.tests.engine_helpers import SPEC


def test_the_measured_theta_is_the_knee_where_p95_ttft_crosses_the_target():
    spec = dict(SPEC, theta_tps=2000.0)
    inputs, outputs = np.full(200, 500), np.full(200, 50)
    r = calibrate_theta(spec, inputs, outputs, ttft_s=1.0, duration_s=600.0, iterations=8)
    assert r["theta_tps"] == pytest.approx(r["rate_rps"] * 500, rel=1e-3) and not r["target_relaxed"]
    assert _p_ttft(spec, r["rate_rps"], inputs, outputs, 600.0, 95.0, 0) <= 1.0
    assert _p_ttft(spec, r["rate_rps"] * 1.5, inputs, outputs, 600.0, 95.0, 0) > 1.0


def test_an_unreachable_target_is_relaxed_to_1_5_times_the_idle_p95_and_flagged():
    spec = dict(SPEC, theta_tps=200.0)
    inputs, outputs = np.full(200, 2000), np.full(200, 10)  # prefill alone: 0.1 + 0.001 x 2000 = 2.1 s
    r = calibrate_theta(spec, inputs, outputs, ttft_s=1.0, duration_s=600.0, iterations=6)
    assert r["target_relaxed"] and r["idle_ttft_s"] >= 2.1 and r["ttft_s"] == round(1.5 * r["idle_ttft_s"], 3)
    assert r["theta_tps"] > 0
