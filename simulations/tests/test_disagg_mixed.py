"""Splitwise's mixed pool (simulations/engine/fleet/disagg.py, ``mixed_pool``): hand-computed bursts that overload the
prefill pool (a decode instance takes the prompt) or the decode pool (a prefill instance keeps the decode), the
pool's members returning when idle, fast == reference, and the refusals naming the field."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simulations.engine import parse_scenario, simulate
from simulations.engine.scenario.config import ScenarioError
from simulations.tests.engine_helpers import workload
from simulations.tests.test_disagg import KVB, _decode_s, _prefill_s, _scenario, code_trace_fast_and_reference

ROOT = Path(__file__).resolve().parents[2]
P = 1000  # prompt tokens; the prefill deployment prefills one prompt per iteration (max_batch_tokens = P)
XFER = 0.5 + P * KVB / 10e9  # the toy link: 0.5 s + 1 GB at 10 GB/s


def _mixed(threshold=None, mode="fast", **kw):
    d = _scenario(prefill={"max_batch_tokens": P}, mode=mode, **kw)
    if threshold is not None:
        d["fleet"]["endpoints"][0]["mixed_pool"] = {"prefill_queue_tokens": threshold}
    return parse_scenario(d)


@pytest.mark.parametrize("mode", ["fast", "reference"])
def test_a_burst_that_overloads_the_prefill_pool_sends_a_prompt_to_a_decode_instance(mode):
    """Three prompts at 0, 0.1, 0.2 s on one prefill instance (1.1 s a prompt). The third finds one prompt queued
    there: 1,000 queued + 1,000 > 1,500 tokens, so the decode instance joins the mixed pool and serves it from
    its arrival (TTFT 1.1 s, one decode iteration, no transfer). Without the option it waits for the two before
    it: TTFT 3.3 - 0.2 = 3.1 s."""
    wl = workload([0.0, 0.1, 0.2], [P] * 3, [10, 10, 2])
    off = simulate(_mixed(None, mode), wl)
    on = simulate(_mixed(1500, mode), wl)
    t1 = _prefill_s(P)
    assert off.requests["ttft_s"] == pytest.approx([t1, 2 * t1 - 0.1, 3 * t1 - 0.2], rel=1e-12)
    assert on.requests["ttft_s"] == pytest.approx([t1, 2 * t1 - 0.1, t1], rel=1e-12)
    assert on.requests["e2e_s"][2] == pytest.approx(t1 + _decode_s(P, 1), rel=1e-12)
    # the first two are prefilled, moved and decoded as without the option
    np.testing.assert_allclose(on.requests["e2e_s"][:2], off.requests["e2e_s"][:2], rtol=1e-12)
    assert off.requests["e2e_s"][0] == pytest.approx(t1 + XFER + _decode_s(P, 9), rel=1e-12)
    pools = {i["iid"]: i["endpoint"].rsplit("/", 1)[1] for i in on.instances}
    assert [pools[int(i)] for i in on.requests["instance"]] == ["decode"] * 3  # r2 never left the decode instance
    m = on.summary["disaggregation"]["mixed_pool"]
    assert (m["prompts_on_decode_instances"], m["decodes_on_prefill_instances"], m["instance_moves"]) == (1, 0, 1)
    assert on.summary["disaggregation"]["transfers"] == 2 and off.summary["disaggregation"]["transfers"] == 3
    assert "mixed_pool" not in off.summary["disaggregation"]


def test_a_queue_under_the_threshold_keeps_the_prompts_in_the_prefill_pool():
    wl = workload([0.0, 0.1, 0.2], [P] * 3, [10, 10, 2])
    on = simulate(_mixed(2000, "fast"), wl)  # 1,000 queued + 1,000 = 2,000: not above the threshold
    assert on.summary["disaggregation"]["mixed_pool"]["prompts_on_decode_instances"] == 0
    assert on.summary["disaggregation"]["transfers"] == 3


@pytest.mark.parametrize("mode", ["fast", "reference"])
def test_a_full_decode_pool_leaves_the_decode_on_its_prefill_instance(mode):
    """The decode instance holds 2,500 tokens. The first request (1,000 + 500 tokens) moves there; the second,
    prefilled at 2.0-3.1 s, finds 2,500 - (1,000 + tokens decoded) < 1,500 free: its prefill instance joins
    the mixed pool and decodes it alone (E2E = its prefill + 499 iterations, no transfer). Without the option it
    moves there, and the two share (and outgrow) its KV."""
    wl = workload([0.0, 2.0], [P, P], [500, 500])
    kw = {"decode": {"kv_capacity_tokens": 2500}}
    off = simulate(_mixed(None, mode, **kw), wl)
    on = simulate(_mixed(10**6, mode, **kw), wl)
    t1 = _prefill_s(P)
    assert on.requests["e2e_s"][1] == pytest.approx(t1 + _decode_s(P, 499), rel=1e-12)
    assert off.requests["e2e_s"][1] > on.requests["e2e_s"][1] + XFER
    # the first decodes alone on the decode instance; without the option the second shares its batch
    assert on.requests["e2e_s"][0] == pytest.approx(t1 + XFER + _decode_s(P, 499), rel=1e-12)
    assert off.requests["e2e_s"][0] > on.requests["e2e_s"][0]
    m = on.summary["disaggregation"]["mixed_pool"]
    assert (m["prompts_on_decode_instances"], m["decodes_on_prefill_instances"], m["instance_moves"]) == (0, 1, 1)
    assert on.summary["disaggregation"]["transfers"] == 1 and off.summary["disaggregation"]["transfers"] == 2
    pools = {i["iid"]: i["endpoint"].rsplit("/", 1)[1] for i in on.instances}
    assert pools[int(on.requests["instance"][1])] == "prefill"


def test_an_idle_member_returns_to_its_pool_and_joins_again_at_the_next_overload():
    """Two bursts an hour apart, each overloading the prefill pool: the decode instance serves a prompt in each,
    and is moved twice (it left the mixed pool, idle, in between)."""
    wl = workload([0.0, 0.1, 0.2, 3600.0, 3600.1, 3600.2], [P] * 6, [10, 10, 2] * 2)
    on = simulate(_mixed(1500, "fast"), wl)
    m = on.summary["disaggregation"]["mixed_pool"]
    assert (m["prompts_on_decode_instances"], m["instance_moves"]) == (2, 2)
    assert on.requests["ttft_s"][5] == pytest.approx(_prefill_s(P), rel=1e-12)


def test_fast_equals_reference_with_the_mixed_pool_on_the_code_trace():
    f, ref = code_trace_fast_and_reference(mixed_pool={"prefill_queue_tokens": 4096})
    assert f.summary["disaggregation"]["mixed_pool"] == ref.summary["disaggregation"]["mixed_pool"]
    assert f.summary["disaggregation"]["mixed_pool"]["prompts_on_decode_instances"] > 0
    assert f.summary["completed"] == 2500


def test_refusals_name_the_field():
    d = _scenario()
    d["fleet"]["endpoints"][0]["mixed_pool"] = {"prefill_queue_tokens": 0}
    with pytest.raises(ScenarioError) as exc:
        parse_scenario(d)
    assert exc.value.field == "fleet.endpoints[0].mixed_pool.prefill_queue_tokens"
    d["fleet"]["endpoints"][0]["mixed_pool"] = {"prefill_queue_tokens": 4096, "threshold": 1}
    with pytest.raises(ScenarioError) as exc:
        parse_scenario(d)
    assert exc.value.field.startswith("fleet.endpoints[0].mixed_pool")
    agg = {**_scenario(), "fleet": {"regions": [{"name": "r1"}], "endpoints": [
        {"region": "r1", "model": "toy", "deployment": _scenario()["fleet"]["endpoints"][0]["prefill_pool"][
            "deployment"], "mixed_pool": {"prefill_queue_tokens": 4096}}]}}
    with pytest.raises(ScenarioError) as exc:
        parse_scenario(agg)
    assert exc.value.field == "fleet.endpoints[0].mixed_pool"
