"""vLLM V1 scheduling and prefix caching (chunked.py, kvcache.py): hand-computed cases, the KV held once, LRU
eviction, the V1 token budget at admission, fast == reference, and the defaults untouched."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from simulations.engine import simulate
from simulations.engine.scenario.config import ScenarioError
from simulations.engine.workload.workload import prefix_csr
from simulations.tests.engine_helpers import scenario, workload

# prefill c0 + c1 x tokens (no attention term): a hit's saving reads off the TTFT exactly
FLAT = {"prefill": {"c0": 0.01, "c1": 0.001, "c2": 0.0}, "decode": {"c0": 0.01, "c_batch": 0.0, "c_ctx": 0.0},
        "max_batch_tokens": 4096, "kv_capacity_tokens": 100_000}
V1 = {"vllm_v1": True}
PC = {"vllm_v1": True, "prefix_caching": True}


def _wl(arrivals, inputs, outputs, prefixes):
    off, ids = prefix_csr(prefixes)
    return replace(workload(arrivals, inputs, outputs), prefix_off=off, prefix_ids=ids)


def _run(spec, wl, mode="fast", **extra):
    return simulate(scenario(spec={**FLAT, **spec}, mode=mode, **extra), wl)


def test_hit_skips_the_cached_prefix_hand_computed():
    # two 1,040-token prompts sharing two 512-token prefix ids, far apart: the second prefills 1,040 - 1,024 tokens
    wl = _wl([0.0, 100.0], [1040, 1040], [1, 1], [[7, 8, 99], [7, 8, 98]])
    r = _run(PC, wl)
    ttft = r.requests["ttft_s"]
    assert ttft[0] == pytest.approx(0.01 + 0.001 * 1040)
    assert ttft[1] == pytest.approx(0.01 + 0.001 * 16)
    pc = r.summary["prefix_cache"]
    assert pc["hit_tokens"] == 1024 and pc["queried_tokens"] == 2080 and pc["requests_with_hits"] == 1
    assert pc["hit_rate"] == pytest.approx(1024 / 2080)
    assert list(r.requests["cached_tokens"]) == [0, 1024]
    off = _run(V1, wl)  # the same deployment without prefix caching prefills both prompts whole
    assert off.requests["ttft_s"][1] == pytest.approx(0.01 + 0.001 * 1040)
    assert "prefix_cache" not in off.summary


def test_full_hit_recomputes_the_last_token():
    # a prompt of exactly 1,024 tokens: at most 1,008 (63 blocks) are hits, as vLLM leaves the last token to compute
    wl = _wl([0.0, 100.0], [1024, 1024], [1, 1], [[1, 2], [1, 2]])
    r = _run(PC, wl)
    assert r.requests["cached_tokens"][1] == 1008
    assert r.requests["ttft_s"][1] == pytest.approx(0.01 + 0.001 * 16)


def test_shared_prefix_kv_is_held_once():
    # KV for 1.5 requests: without caching the second waits for the first to finish; with it both run together
    spec = {"kv_capacity_tokens": 1600}
    wl = _wl([0.0, 0.0], [1040, 1040], [20, 20], [[5, 6, 91], [5, 6, 92]])
    shared = _run({**PC, **spec}, wl)
    alone = _run({**V1, **spec}, wl)
    assert shared.requests["queueing_s"][1] == 0.0
    assert alone.requests["queueing_s"][1] > shared.requests["e2e_s"][0] * 0.9
    assert shared.summary["completed"] == alone.summary["completed"] == 2


def test_free_cached_prefixes_are_evicted_least_recently_freed_first():
    # room for about two prompts' KV: prefixes A, B, C one after the other, then A again (evicted by C) and C (kept)
    spec = {"kv_capacity_tokens": 2200}
    a, b, c = [1, 2], [3, 4], [5, 6]
    wl = _wl([0.0, 10.0, 20.0, 30.0, 40.0], [1040] * 5, [1] * 5, [a + [90], b + [91], c + [92], a + [93], c + [94]])
    r = _run({**PC, **spec}, wl)
    assert list(r.requests["cached_tokens"]) == [0, 0, 0, 0, 1024]


def test_v1_admits_waiting_requests_only_while_the_token_budget_lasts():
    # budget 100 tokens a step: V1 schedules the first prompt (80) and 20 tokens of the second; the third waits for
    # the next step. The chunked-prefill model without V1 admits all three at once (their KV reserved).
    wl = workload([0.0, 0.0, 0.0], [80, 80, 80], [5, 5, 5])
    v1 = _run({**V1, "max_batch_tokens": 100}, wl)
    old = _run({"max_batch_tokens": 100}, wl, engine={"mode": "fast", "chunked_prefill": True})
    assert list(v1.requests["queueing_s"][:2]) == [0.0, 0.0] and v1.requests["queueing_s"][2] > 0
    assert list(old.requests["queueing_s"]) == [0.0, 0.0, 0.0]


def test_prefix_caching_needs_v1_scheduling():
    with pytest.raises(ScenarioError, match="vllm_v1"):
        scenario(spec={**FLAT, "prefix_caching": True})


@pytest.mark.parametrize("spec", [V1, PC])
def test_fast_equals_reference(spec):
    rng = np.random.default_rng(4)
    n = 600
    arr = np.cumsum(rng.exponential(0.02, n))
    inp = rng.integers(600, 3000, n)
    out = rng.integers(1, 200, n)
    groups = rng.integers(0, 6, n)
    prefixes = [[int(g) * 10 + k for k in range(3)] + [1000 + i] for i, g in enumerate(groups)]
    wl = _wl(arr, inp, out, prefixes)
    spec = {**spec, "kv_capacity_tokens": 40_000, "max_batch_tokens": 2048,
            "decode": {"c0": 0.01, "c_batch": 0.0002, "c_ctx": 1e-7}}
    fast = _run(spec, wl, mode="fast")
    ref = _run(spec, wl, mode="reference")
    for key in ("ttft_s", "e2e_s"):  # fast mode sums a decode run in closed form: equal up to float rounding
        np.testing.assert_allclose(fast.requests[key], ref.requests[key], rtol=1e-9, atol=1e-9)
    assert fast.summary.get("prefix_cache") == ref.summary.get("prefix_cache")
    assert fast.summary["preemptions"] == ref.summary["preemptions"]
    if spec.get("prefix_caching"):
        assert fast.summary["preemptions"] > 0  # the case exercises preemption with shared prefixes
