"""Prefill/decode disaggregation (simulations/engine/fleet/disagg.py): hand-computed latencies, memory held on both sides
during a KV transfer, fast == reference, routing to the prefill pool only, the Dynamo planner's split, and the
scenario's refusals naming the field."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from simulations.engine import build_workload, parse_scenario, simulate
from simulations.engine.scenario.config import ScenarioError
from simulations.tests.engine_helpers import SPEC, workload

ROOT = Path(__file__).resolve().parents[2]
KVB = 1_000_000.0  # KV bytes per token of the toy deployment (round numbers for hand computation)


def _scenario(*, prefill=None, decode=None, link=None, n_p=1, n_d=1, mode="fast", strategy=None, drop=()):
    pre = {**SPEC, "kv_bytes_per_token": KVB, **(prefill or {})}
    dec = {**SPEC, "kv_bytes_per_token": KVB, **(decode or {})}
    ep = {"region": "r1", "model": "toy",
          "prefill_pool": {"deployment": pre, "initial": n_p, "min": n_p, "max": n_p},
          "decode_pool": {"deployment": dec, "initial": n_d, "min": n_d, "max": n_d},
          "kv_link": link if link is not None else {"link_class": "ethernet", "bandwidth_gb_s": 10.0,
                                                    "latency_s": 0.5}}
    for key in drop:
        ep.pop(key)
    d = {"name": "pd", "seed": 3, "workload": {"synthetic": {"total_requests": 1}},
         "fleet": {"regions": [{"name": "r1", "vm_capacity": 20}], "endpoints": [ep]},
         "strategy": strategy or {"autoscaler": "static"}, "engine": {"mode": mode, "timeline_step_s": 60.0}}
    return d


def _prefill_s(p):
    c = SPEC["prefill"]
    return c["c0"] + c["c1"] * p + c["c2"] * p * p


def _decode_s(ctx, n, batch=1):
    """n decode iterations of a batch of ``batch`` requests starting at total context ``ctx``."""
    c = SPEC["decode"]
    return sum(c["c0"] + c["c_batch"] * batch + c["c_ctx"] * (ctx + batch * k) for k in range(n))


@pytest.mark.parametrize("mode", ["fast", "reference"])
def test_one_request_ttft_is_its_prefill_and_e2e_adds_the_transfer_then_the_decode(mode):
    p, o = 2000, 50
    sc = parse_scenario(_scenario(mode=mode))
    r = simulate(sc, workload([1.0], [p], [o]))
    xfer = 0.5 + p * KVB / 10e9  # latency + bytes / bandwidth
    assert r.requests["ttft_s"][0] == pytest.approx(_prefill_s(p), rel=1e-12)
    assert r.requests["e2e_s"][0] == pytest.approx(_prefill_s(p) + xfer + _decode_s(p, o - 1), rel=1e-12)
    d = r.summary["disaggregation"]
    assert d["transfers"] == 1 and d["kv_tokens_moved"] == p
    assert d["transfer_s"]["p50"] == pytest.approx(xfer)
    assert d["decode_wait_s"]["p50"] == pytest.approx(0.0, abs=1e-12)  # an idle decode instance takes it at once
    # the same request aggregated: the same prefill and decode, no transfer
    agg = parse_scenario({**_scenario(mode=mode), "fleet": {"regions": [{"name": "r1"}], "endpoints": [
        {"region": "r1", "model": "toy", "deployment": dict(SPEC), "initial": 1, "min": 1, "max": 1}]}})
    a = simulate(agg, workload([1.0], [p], [o]))
    assert r.requests["e2e_s"][0] - a.requests["e2e_s"][0] == pytest.approx(xfer, rel=1e-9)


def test_both_sides_hold_the_kv_during_the_transfer():
    from simulations.engine.simulator.loop import Simulator

    p = 3000
    sc = parse_scenario(_scenario(link={"link_class": "ethernet", "bandwidth_gb_s": 1.0, "latency_s": 2.0}))
    sim = Simulator(sc, workload([0.0], [p], [20]))
    t_prefill = _prefill_s(p)
    sim.run(until=t_prefill + 1.0)  # inside the transfer (2 s + 3 s)
    src = next(i for i in sim.instances if i.endpoint.pool == "prefill")
    dst = next(i for i in sim.instances if i.endpoint.pool == "decode")
    assert (src.kv, dst.kv, src.B, dst.B) == (p, p, 0, 0)
    sim.run(until=t_prefill + 2.0 + p * KVB / 1e9 + 0.001)  # landed: the prefill side is free
    assert src.kv == 0 and dst.B == 1


def test_a_held_transfer_delays_the_next_prefill_admission():
    """The prefill instance holds 1.5 prompts of KV: the second request waits for the first one's KV to leave."""
    p = 1000
    sc = parse_scenario(_scenario(prefill={"kv_capacity_tokens": 1500}))
    r = simulate(sc, workload([0.0, 0.0], [p, p], [10, 10]))
    xfer = 0.5 + p * KVB / 10e9
    t1 = _prefill_s(p)
    assert r.requests["ttft_s"][0] == pytest.approx(t1)
    assert r.requests["ttft_s"][1] == pytest.approx(t1 + xfer + _prefill_s(p))
    assert r.summary["queueing"]["p50"] > 0


def test_a_prompt_the_decode_pool_cannot_hold_is_refused_at_routing():
    """A decode pool with less KV than the prefill pool: a prompt that only the prefill side could hold is dropped
    when it arrives (as any over-long request), never prefilled and then stranded."""
    sc = parse_scenario(_scenario(prefill={"max_batch_tokens": 1000}, decode={"kv_capacity_tokens": 2000}))
    r = simulate(sc, workload([0.0, 1.0], [3000, 500], [5, 5]))
    assert r.summary["completed"] == 1 and r.tiers["IW-F"]["drop_reasons"] == {"prompt_exceeds_kv_capacity": 1}
    assert r.summary["disaggregation"]["transfers"] == 1


def code_trace_fast_and_reference(mixed_pool=None):
    """The first 2,500 requests of the code trace on code_disagg.json in both modes, their per-request latencies
    checked equal; returns (fast, reference)."""
    d = json.loads((ROOT / "fixtures" / "scenarios" / "code_disagg.json").read_text())
    d["workload"]["limit"] = 2500
    if mixed_pool is not None:
        d["fleet"]["endpoints"][0]["mixed_pool"] = mixed_pool
    out = {}
    for mode in ("fast", "reference"):
        d["engine"]["mode"] = mode
        sc = parse_scenario(d)
        out[mode] = simulate(sc, build_workload(sc))
    f, ref = out["fast"], out["reference"]
    for key in ("ttft_s", "e2e_s", "tbt_max_s"):
        np.testing.assert_allclose(f.requests[key], ref.requests[key], rtol=1e-9, equal_nan=True)
    return f, ref


def test_fast_equals_reference_on_the_code_trace_and_arrivals_reach_the_prefill_pool_only():
    f, ref = code_trace_fast_and_reference()
    assert f.summary["completed"] == 2500 and f.summary["disaggregation"]["transfers"] == 2500
    assert f.summary["events"] < ref.summary["events"]
    names = {u["pool"]: u for u in f.usage}
    assert set(names) == {"prefill", "decode"} and all(u["instances_used"] == 2 for u in f.usage)
    # every request was served by a prefill endpoint and finished on a decode instance
    pools = {i["iid"]: i["endpoint"] for i in f.instances}
    assert all(pools[int(i)].endswith("/decode") for i in f.requests["instance"])
    assert set(np.asarray(f.requests["endpoint"]).tolist()) == {0}


@pytest.mark.parametrize("prompt, output, grows", [(4000, 4, "prefill"), (16, 300, "decode")])
def test_dynamo_planner_sizes_the_pools_apart(prompt, output, grows):
    """Prompt-heavy traffic grows the prefill pool only (TTFT share), decode-heavy traffic the decode pool only
    (ITL share): each pool follows its own share, not their sum."""
    quick = {"decode": {"c0": 0.01, "c_batch": 0.001, "c_ctx": 1e-7}, "prefill": {"c0": 0.01, "c1": 1e-4, "c2": 0.0}}
    d = _scenario(prefill=quick, decode=quick, strategy={"autoscaler": "dynamo-planner", "params": {
        "sync_s": 60, "scrape_interval_s": 60, "load_predictor": "constant", "itl_s": 0.02}})
    for pool in ("prefill_pool", "decode_pool"):
        d["fleet"]["endpoints"][0][pool].update(min=1, max=8)
    n = 3000
    arr = np.linspace(0.0, 600.0, n)
    r = simulate(parse_scenario(d), workload(arr, [prompt] * n, [output] * n))
    outs = {"prefill": 0, "decode": 0}
    for e in r.scaling_events:
        if e["action"] == "scale_out":
            outs[e["endpoint"].rsplit("/", 1)[1]] += 1
    other = "decode" if grows == "prefill" else "prefill"
    assert outs[grows] >= 1 and outs[other] == 0, outs
    assert r.summary["completed"] == n


def _error(d) -> ScenarioError:
    with pytest.raises(ScenarioError) as exc:
        parse_scenario(d)
    return exc.value


def test_refusals_name_the_field():
    assert _error(_scenario(link={"link_class": "infiniband", "bandwidth_gb_s": 0})).field == \
        "fleet.endpoints[0].kv_link.bandwidth_gb_s"
    assert _error(_scenario(drop=("decode_pool",))).field == "fleet.endpoints[0].decode_pool"
    assert _error(_scenario(drop=("prefill_pool",))).field == "fleet.endpoints[0].prefill_pool"
    small = _error(_scenario(decode={"kv_capacity_tokens": 4096}, prefill={"max_batch_tokens": 8192}))
    assert small.field == "fleet.endpoints[0].decode_pool.deployment.kv_capacity_tokens"
    assert "less than one request" in small.message
    no_kv = _error(_scenario(decode={"kv_bytes_per_token": 0}))
    assert no_kv.field == "fleet.endpoints[0].decode_pool.deployment.kv_bytes_per_token"
    d = _scenario()
    d["engine"]["chunked_prefill"] = True
    assert _error(d).field == "engine.chunked_prefill"


def test_link_classes_take_cited_figures():
    sc = parse_scenario(_scenario(link={"link_class": "nvlink"},
                                  prefill={"gpu": "h100-80gb"}, decode={"gpu": "a100-80gb"}))
    link = sc.fleet.endpoints[0].kv_link
    assert link.bandwidth_gb_s == pytest.approx(300.0 * 8)  # the slower GPU (A100: 600 GB/s both ways) x 8 GPUs
    ib = parse_scenario(_scenario(link={"link_class": "infiniband"})).fleet.endpoints[0].kv_link
    assert (ib.bandwidth_gb_s, ib.latency_s) == (50.0 * 8, 5e-6)
