"""vLLM's async scheduling in the engine (deployment ``async_scheduling``, with ``vllm_v1``): the step that starts
at a boundary was scheduled when the previous step started, so a request that arrives while a step runs joins one
step later; a request reaching an idle instance is scheduled at once. Hand-computed cases, fast == reference,
and the option needs V1 scheduling."""

from __future__ import annotations

import numpy as np
import pytest

from simulations.engine import simulate
from simulations.engine.scenario.config import ScenarioError
from simulations.tests.engine_helpers import scenario, workload

# prefill c0 + c1 x tokens, decode c0 only: a prefill of 10 tokens takes 0.02 s, a decode step 0.01 s, and a mixed
# step (decodes + a prefill) 0.02 s (its fixed cost counted once)
FLAT = {"prefill": {"c0": 0.01, "c1": 0.001, "c2": 0.0}, "decode": {"c0": 0.01, "c_batch": 0.0, "c_ctx": 0.0},
        "max_batch_tokens": 4096, "kv_capacity_tokens": 100_000, "vllm_v1": True}
ASYNC = {**FLAT, "async_scheduling": True}


def _run(spec, wl, mode="fast"):
    return simulate(scenario(spec=spec, mode=mode), wl)


@pytest.mark.parametrize("mode", ["fast", "reference"])
def test_a_request_arriving_during_a_step_joins_one_step_later_hand_computed(mode):
    # A alone at 0: its prefill step [0, 0.02] (async or not: nothing was in flight). B arrives at 0.005, during
    # that step. Synchronous: B joins the next step, a mixed step [0.02, 0.04] (A's decode + B's prefill): TTFT
    # 0.035. Async: the step after A's prefill was scheduled at 0, before B arrived: it is A's decode alone
    # [0.02, 0.03]; B joins the mixed step [0.03, 0.05]: TTFT 0.045, one (decode) step later.
    wl = workload([0.0, 0.005], [10, 10], [5, 5])
    sync = _run(FLAT, wl, mode).requests["ttft_s"]
    ahead = _run(ASYNC, wl, mode).requests["ttft_s"]
    assert sync[0] == pytest.approx(0.02) and ahead[0] == pytest.approx(0.02)
    assert sync[1] == pytest.approx(0.035)
    assert ahead[1] == pytest.approx(0.045)


def test_a_lone_request_is_scheduled_at_once():
    # one request on an idle instance: TTFT = its prefill step, E2E = that + 4 decode steps, with or without async
    wl = workload([0.0], [10], [5])
    for spec in (FLAT, ASYNC):
        r = _run(spec, wl).requests
        assert r["ttft_s"][0] == pytest.approx(0.02)
        assert r["e2e_s"][0] == pytest.approx(0.02 + 4 * 0.01)


def test_async_scheduling_needs_v1_scheduling():
    with pytest.raises(ScenarioError, match="vllm_v1"):
        scenario(spec={**FLAT, "vllm_v1": False, "async_scheduling": True})


def test_fast_equals_reference_under_load():
    rng = np.random.default_rng(7)
    n = 800
    wl = workload(np.cumsum(rng.exponential(0.01, n)), rng.integers(50, 1500, n), rng.integers(1, 150, n))
    spec = {**ASYNC, "kv_capacity_tokens": 30_000, "max_batch_tokens": 1024, "max_batch_size": 48,
            "decode": {"c0": 0.01, "c_batch": 0.0002, "c_ctx": 1e-7}}
    fast, ref = _run(spec, wl, "fast"), _run(spec, wl, "reference")
    for key in ("ttft_s", "e2e_s"):  # fast mode sums a decode run in closed form: equal up to float rounding
        np.testing.assert_allclose(fast.requests[key], ref.requests[key], rtol=1e-9, atol=1e-9)
    sync = _run({**spec, "async_scheduling": False}, wl)
    later = fast.requests["ttft_s"].mean() - sync.requests["ttft_s"].mean()
    assert 0.005 < later < 0.05  # about one step (10-20 ms here) later on average
