"""engine options on hand-checkable cases: the scaling signal's KV size, separate cooldowns and the
lock after a scale-out, instant provisioning, the NIW feed rules and escalation switch, the LT gate variants and
the labelled hindsight forecast. Every default reproduces the earlier behaviour (other tests and
docs/results/sageserve.json cover that); each test here shows the option changes what it says it changes."""

from __future__ import annotations

import numpy as np
import pytest

from simulations.engine import simulate
from simulations.engine.policies.niw_queue import NIWQueueManager
from simulations.tests.engine_helpers import scenario, workload
from simulations.tests.test_longterm_policies import THETA, _fake_sim, events, light_load, lt


def reactive(**params):
    return {"autoscaler": "reactive-unified", "params": params}


# ---------------------------------------------------------------- scaling signal


def test_the_signal_kv_size_scales_utilisation_but_not_admission():
    # KV 100,000 true tokens; the signal counts 12,500 (8x: multi-head sizing of a GQA model). One 2,000-token
    # prompt at t=0; at t=1 the endpoint holds ~2,000-2,100 tokens: 2 % true, ~16-17 % by the signal.
    wl = workload([0.0, 1.0], [2000, 100], [1000, 5])
    plain = simulate(scenario(initial=1, hi=2, spot={"toy": 1}, strategy=reactive(scale_out_above=0.10,
                                                                                  scale_in_below=0.0)), wl)
    mha = simulate(scenario(spec={"signal_kv_tokens": 12_500}, initial=1, hi=2, spot={"toy": 1},
                            strategy=reactive(scale_out_above=0.10, scale_in_below=0.0)), wl)
    assert events(plain, "scale_out") == []
    assert [e["t"] for e in events(mha, "scale_out")] == [1.0]
    # admission keeps the true capacity: a 50,000-token prompt (4x the signal's capacity) is served
    big = simulate(scenario(spec={"signal_kv_tokens": 12_500}), workload([0.0], [50_000], [5]))
    assert big.summary["completed"] == 1


def test_a_signal_above_100_percent_still_routes_every_request():
    # the signal counts 4x the true KV: a busy instance reads > 200 %; routers must still pick an endpoint
    n = 400
    wl = workload([i * 0.5 for i in range(n)], [300] * n, [400] * n)
    r = simulate(scenario(spec={"kv_capacity_tokens": 4000, "signal_kv_tokens": 1000}, initial=1, hi=4,
                          spot={"toy": 4}, strategy=reactive()), wl)
    assert r.summary["completed"] == n and max(r.timeline["series"]["utilisation"][0]) > 2.0


def test_timeline_utilisation_is_the_signal():
    wl = workload([0.0], [2000], [2000])
    a = simulate(scenario(timeline_step_s=10.0), wl).timeline["series"]["utilisation"][0]
    b = simulate(scenario(spec={"signal_kv_tokens": 25_000}, timeline_step_s=10.0), wl).timeline["series"]["utilisation"][0]
    assert max(a) > 0 and np.allclose(np.asarray(b), 4 * np.asarray(a), atol=3e-4)  # timeline rounds to 4 digits


# ---------------------------------------------------------------- cooldowns, lock, provisioning


def _hot(params, **kw):
    # a tiny KV kept > 70 % full: the reactive autoscaler wants to scale out at every arrival (every 0.5 s)
    sc = scenario(spec={"kv_capacity_tokens": 1000}, initial=1, lo=1, hi=4, spot={"toy": 4},
                  strategy=reactive(scale_in_below=0.0, **params), **kw)
    n = 600
    return simulate(sc, workload([i * 0.5 for i in range(n)], [300] * n, [400] * n))


def test_a_scale_out_locks_the_endpoint_until_the_new_instance_is_ready_when_asked():
    free = [e["t"] for e in events(_hot({}), "scale_out")]
    locked = [e["t"] for e in events(_hot({"lock_after_scale_out": True}), "scale_out")]
    assert 15.0 <= free[1] - free[0] < 15.5  # the 15 s cooldown, then the next arrival
    assert 65.0 <= locked[1] - locked[0] < 65.5  # the spot reclaim's 65 s


def test_the_scale_out_cooldown_is_separate_from_the_scale_in_cooldown():
    free = np.diff([e["t"] for e in events(_hot({}), "scale_out")])
    slow = np.diff([e["t"] for e in events(_hot({"cooldown_out_s": 30.0}), "scale_out")])
    assert free.min() < 30.0 and len(slow) >= 2 and slow.min() >= 30.0  # (1.5, 16.5, 35.5 vs 1.5, 35.5, 65.5)
    # scale-ins: 3 idle instances, arrivals at 0, 5, 10, 20 s; 15 s cooldown -> at 0 and 20; 4 s -> at 0 and 5
    wl = workload([0.0, 5.0, 10.0, 20.0], [100] * 4, [5] * 4)
    default = simulate(scenario(initial=3, lo=1, hi=3, strategy=reactive()), wl)
    quick = simulate(scenario(initial=3, lo=1, hi=3, strategy=reactive(cooldown_in_s=4.0)), wl)
    assert [e["t"] for e in events(default, "scale_in")] == [0.0, 20.0]
    assert [e["t"] for e in events(quick, "scale_in")] == [0.0, 5.0]


def test_instant_provisioning_serves_at_once_and_still_reports_the_nominal_waste():
    r = _hot({}, engine={"mode": "fast", "instant_provisioning": True})
    outs = events(r, "scale_out")
    assert outs and all(e["delay_s"] == 65.0 for e in outs)
    new = [i for i in r.instances if i["source"] == "spot-same"]
    assert all(i["t_ready"] == pytest.approx(i["t_requested"]) for i in new)
    # waste added afterwards: 65 s x 8 GPUs per scale-out
    assert r.summary["provisioning_gpu_hours"] == pytest.approx(len(outs) * 65 / 3600 * 8)


def test_the_summary_reports_gpu_hours_above_the_floors():
    r = simulate(scenario(initial=3, lo=2, hi=3), light_load())
    end = r.summary["duration_s"]
    assert r.summary["floor_gpu_hours"] == pytest.approx(2 * 8 * end / 3600)
    assert r.summary["gpu_hours_above_floor"] == pytest.approx(r.summary["gpu_hours"] - 2 * 8 * end / 3600)


# ---------------------------------------------------------------- NIW queue manager


def test_the_code_feed_sends_one_at_or_under_50_percent_and_two_between_50_and_60():
    sim, delivered = _fake_sim([0.65, 0.55, 0.45], [0.0] * 10)
    q = NIWQueueManager({"niw_feed": "code"})
    for rid in range(10):
        q.hold(sim, rid, 0.0)
    q.on_tick(sim, 5.0)
    per_ep: dict = {}
    for _rid, eid, _t in delivered:
        per_ep[eid] = per_ep.get(eid, 0) + 1
    assert per_ep == {1: 2, 2: 1}


def test_without_escalation_old_niw_requests_keep_waiting_at_low_priority():
    sim, delivered = _fake_sim([0.95], [0.0, 30000.0])
    q = NIWQueueManager({"niw_escalate": False})
    q.hold(sim, 0, 0.0)
    q.hold(sim, 1, 30000.0)
    q.on_tick(sim, 40000.0)
    assert delivered == [] and q.waiting == 2
    sim.endpoints[0].utilisation = 0.10  # once there is room it goes out at priority 1, not 0
    q.on_tick(sim, 40010.0)
    assert [d[0] for d in delivered] == [0, 1] and sim.prio[0] == 1


def test_an_unknown_feed_rule_is_refused():
    from simulations.engine import ScenarioError

    with pytest.raises(ScenarioError):
        NIWQueueManager({"niw_feed": "sometimes"})


# ---------------------------------------------------------------- LT variants


def test_lt_u_applies_a_lower_target_at_once_when_scale_in_is_not_gated():
    # target 1 (50 TPS forecast); scale_in_below 0 so the utilisation gate never allows a scale-in
    hist = {"r1|toy": [50.0] * 12}
    gated = simulate(scenario(spec=THETA, initial=2, lo=1, hi=10,
                              strategy=lt("lt-u", history_tps=hist, scale_in_below=0.0)), light_load())
    ungated = simulate(scenario(spec=THETA, initial=2, lo=1, hi=10,
                                strategy=lt("lt-u", history_tps=hist, scale_in_below=0.0, gate_scale_in=False)),
                       light_load())
    assert events(gated, "scale_in") == []
    assert [e["t"] for e in events(ungated, "scale_in")] == [0.0]


def _burst():
    base = np.linspace(1.0, 2600.0, 20)
    burst = np.linspace(2700.0, 3000.0, 7500)
    return workload(np.concatenate([base, burst]), [100] * 20 + [2000] * 7500, [5] * 20 + [200] * 7500)


def test_lt_u_scales_past_the_target_above_the_given_utilisation():
    hist = {"r1|toy": [50.0] * 12}
    res = simulate(scenario(spec=THETA, initial=1, lo=1, hi=6, spot={"toy": 10},
                            strategy=lt("lt-u", history_tps=hist, scale_in_below=0.0, beyond_target_above=0.9)),
                   _burst())
    assert events(res, "plan")[0]["target"] == 1
    assert events(res, "scale_out")  # LT-U alone never goes past the target (test_longterm_policies)


def test_lt_ua_ratio_rule_without_the_utilisation_gate_acts_at_any_minute():
    hist = {"r1|toy": [50.0] * 12}
    common = dict(history_tps=hist, scale_in_below=0.0, scale_out_above=1.01, ua_window_s=3600.0)
    gated = simulate(scenario(spec=THETA, initial=1, lo=1, hi=6, spot={"toy": 10},
                              strategy=lt("lt-ua", **common)), _burst())
    ratio_only = simulate(scenario(spec=THETA, initial=1, lo=1, hi=6, spot={"toy": 10},
                                   strategy=lt("lt-ua", ua_gate_util=False, **common)), _burst())
    assert events(gated, "scale_out") == []  # utilisation can never exceed 101 %
    outs = events(ratio_only, "scale_out")
    assert outs and outs[0]["t"] >= 2700.0  # the first arrival of the burst with > 5x the forecast


def test_the_hindsight_forecast_is_the_coming_hours_actual_peak_and_says_so():
    # 1 req/s of 100 tokens until t=600 (100 TPS), then 50 req/s for 100 s: the 600-900 s bin holds
    # 5,000 x 100 tokens / 300 s = 1,666.67 TPS. "ahead" sees 100 TPS; "hindsight" sees the burst.
    pre = np.arange(0.0, 600.0, 1.0)
    burst = np.arange(600.0, 700.0, 0.02)
    arr = np.concatenate([pre, burst])
    wl = workload(arr, [100] * len(arr), [2] * len(arr))
    plans = {}
    for mode, extra in (("ahead", {}), ("hindsight", {}), ("late", {"hindsight_window_s": [1200.0, 3600.0]})):
        params = dict(min_history_s=600.0, forecast_mode="hindsight" if mode != "ahead" else "ahead", **extra)
        sc = scenario(spec=THETA, initial=2, lo=1, hi=30, spot={"toy": 30}, strategy=lt("lt-i", **params))
        plans[mode] = events(simulate(sc, wl), "plan")[0]
    assert plans["ahead"]["forecast_peak_tps"] == pytest.approx(100.0)
    assert plans["ahead"]["forecast_method"] == "naive"
    assert plans["hindsight"]["forecast_peak_tps"] == pytest.approx(500_000 / 300, rel=1e-3)
    assert plans["hindsight"]["forecast_method"] == "hindsight"
    assert plans["late"]["forecast_peak_tps"] == 0.0  # nothing arrives 20-60 min after the decision


def test_the_authors_code_options_give_the_same_run_in_fast_and_reference_mode():
    params = {"lock_after_scale_out": True, "cooldown_out_s": 0.0, "cooldown_in_s": 0.0, "scale_out_above": 0.5,
              "scale_in_below": 0.25}
    runs = {}
    for mode in ("fast", "reference"):
        sc = scenario(spec={"kv_capacity_tokens": 4000, "signal_kv_tokens": 1000}, initial=1, lo=1, hi=4,
                      spot={"toy": 4}, mode=mode, strategy=reactive(**params),
                      engine={"mode": mode, "instant_provisioning": True})
        n = 400
        runs[mode] = simulate(sc, workload([i * 0.5 for i in range(n)], [300] * n, [400] * n))
    f, r = runs["fast"], runs["reference"]
    assert [(e["t"], e["action"]) for e in f.scaling_events] == [(e["t"], e["action"]) for e in r.scaling_events]
    assert f.summary["gpu_hours"] == pytest.approx(r.summary["gpu_hours"], rel=0.01)
    assert np.allclose(f.requests["ttft_s"], r.requests["ttft_s"], rtol=0.01, atol=1e-6, equal_nan=True)
