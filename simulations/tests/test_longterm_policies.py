"""SageServe LT-I / LT-U / LT-UA and the NIW queue manager on hand-checkable cases.

Toy deployment (engine_helpers.SPEC) with theta = 100 input TPS per instance: a forecast of 250 TPS needs
ceil(250 / 100) = 3 instances, 50 TPS needs 1 (the ILP's cheapest covering fleet; beta = 0 without NIW).
"""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from simulations.engine import simulate
from simulations.engine.policies.niw_queue import NIWQueueManager
from simulations.tests.engine_helpers import FakeView, scenario, workload

THETA = {"theta_tps": 100.0}


def lt(name, **params):
    base = {"forecast_method": "naive", "niw_queue": False, "decision_period_s": 3600.0}
    base.update(params)
    return {"autoscaler": name, "params": base}


def light_load(n=30, span=1800.0):
    return workload(np.linspace(1.0, span, n), [100] * n, [5] * n)


def events(result, action):
    return [e for e in result.scaling_events if e["action"] == action]


def test_lt_i_applies_the_ilp_target_at_the_hour_reclaiming_spot_of_the_same_model():
    sc = scenario(spec=THETA, initial=2, lo=1, hi=10, spot={"toy": 10},
                  strategy=lt("lt-i", history_tps={"r1|toy": [250.0] * 12}))
    res = simulate(sc, light_load())
    plan = events(res, "plan")[0]
    assert (plan["t"], plan["current"], plan["target"]) == (0.0, 2, 3)
    outs = events(res, "scale_out")
    assert [(e["t"], e["source"], e["delay_s"]) for e in outs] == [(0.0, "spot-same", 65.0)]


def test_lt_i_scales_in_at_the_hour_and_donates_to_the_spot_pool():
    sc = scenario(spec=THETA, initial=2, lo=1, hi=10, spot={"toy": 0},
                  strategy=lt("lt-i", history_tps={"r1|toy": [50.0] * 12}))
    res = simulate(sc, light_load())
    assert events(res, "plan")[0]["target"] == 1
    ins = events(res, "scale_in")
    assert [(e["t"], e["source"]) for e in ins] == [(0.0, "spot")]
    assert res.summary["spot_instance_hours"]["r1"] > 0  # the donated instance sits in the spot pool


def test_lt_u_does_not_move_towards_the_target_while_utilisation_stays_between_the_thresholds():
    # target 3 (forecast 250 TPS) but the light load keeps utilisation far below 70 %: no scale-out
    sc = scenario(spec=THETA, initial=2, lo=1, hi=10, spot={"toy": 10},
                  strategy=lt("lt-u", history_tps={"r1|toy": [250.0] * 12}, scale_in_below=0.0))
    res = simulate(sc, light_load())
    assert events(res, "plan")[0]["target"] == 3
    assert events(res, "scale_out") == [] and events(res, "scale_in") == []


def test_lt_u_scales_in_only_down_to_the_target_when_utilisation_is_low():
    # target 1 from a 50 TPS forecast; utilisation < 30 % on every request: exactly one scale-in (2 -> 1)
    sc = scenario(spec=THETA, initial=2, lo=1, hi=10, strategy=lt("lt-u", history_tps={"r1|toy": [50.0] * 12}))
    res = simulate(sc, light_load())
    assert events(res, "plan")[0]["target"] == 1
    assert len(events(res, "scale_in")) == 1 and res.timeline["series"]["serving"][0][-1] == 1


def test_lt_ua_goes_past_the_target_in_the_last_20_minutes_when_traffic_is_5x_the_forecast():
    # forecast 50 TPS -> target 1. Minutes 45-50 bring 25 req/s x 2000 tokens (~50,000 TPS >> 5 x 50) with
    # long outputs, so utilisation passes 70 %: LT-UA adds instances beyond the target, LT-U does not.
    hist = {"r1|toy": [50.0] * 12}
    base = np.linspace(1.0, 2600.0, 20)
    burst = np.linspace(2700.0, 3000.0, 7500)
    arr = np.concatenate([base, burst])
    inp = [100] * 20 + [2000] * 7500
    out = [5] * 20 + [200] * 7500
    res = {}
    for name in ("lt-u", "lt-ua"):
        sc = scenario(spec=THETA, initial=1, lo=1, hi=6, spot={"toy": 10},
                      strategy=lt(name, history_tps=hist, scale_in_below=0.0))
        res[name] = simulate(sc, workload(arr, inp, out))
    assert events(res["lt-u"], "scale_out") == []
    outs = events(res["lt-ua"], "scale_out")
    assert outs and all(2400.0 <= e["t"] < 3600.0 for e in outs)


def test_no_policy_sees_arrivals_after_the_decision_time():
    # 1 req/s of 100 tokens (100 TPS) until t=600, the first decision at t=600, then a 50x burst.
    # A naive forecast is the last observed 5-min bin: exactly 100 TPS if (and only if) the burst is unseen.
    pre = np.arange(0.0, 600.0, 1.0)
    burst = np.arange(600.0, 700.0, 0.02)
    arr = np.concatenate([pre, burst])
    wl = workload(arr, [100] * len(arr), [2] * len(arr))
    for name in ("lt-i", "lt-u", "lt-ua"):
        sc = scenario(spec=THETA, initial=2, lo=1, hi=10, spot={"toy": 10}, strategy=lt(name, min_history_s=600.0))
        plan = events(simulate(sc, wl), "plan")[0]
        assert plan["t"] == 600.0
        assert plan["forecast_peak_tps"] == pytest.approx(100.0), name


def test_lt_policies_refuse_a_deployment_without_theta():
    from simulations.engine import ScenarioError

    sc = scenario(spec={"theta_tps": 0.0}, initial=2, lo=1, hi=10, strategy=lt("lt-i"))
    with pytest.raises(ScenarioError) as exc:
        simulate(sc, light_load())
    assert "theta_tps" in exc.value.field


# ---------------------------------------------------------------- NIW queue manager


def _fake_sim(utilisations, arrivals):
    delivered = []
    eps = [SimpleNamespace(eid=i, model_idx=0, pool="all", serving=[object()], utilisation=u, region_idx=0)
           for i, u in enumerate(utilisations)]
    sim = FakeView(endpoints=eps, arrivals=list(arrivals), regions=[0] * len(arrivals),
                   models=[0] * len(arrivals), send=lambda rid, ep, now: delivered.append((rid, ep.eid, now)))
    return sim, delivered


def test_the_queue_sends_one_request_under_60_percent_two_under_50_and_none_above():
    sim, delivered = _fake_sim([0.65, 0.55, 0.45], [0.0] * 10)
    q = NIWQueueManager()
    for rid in range(10):
        q.hold(sim, rid, 0.0)
    q.on_tick(sim, 5.0)
    per_ep = {}
    for _rid, eid, _t in delivered:
        per_ep[eid] = per_ep.get(eid, 0) + 1
    assert per_ep == {1: 1, 2: 2}
    assert [rid for rid, _e, _t in delivered] == sorted(rid for rid, _e, _t in delivered)  # oldest first
    assert q.waiting == 7 and all(sim.prio[r] == 1 for r, _e, _t in delivered)


def test_requests_older_than_10_hours_are_released_with_priority_0_even_to_a_busy_endpoint():
    sim, delivered = _fake_sim([0.95], [0.0, 30000.0])
    q = NIWQueueManager()
    q.hold(sim, 0, 0.0)
    q.hold(sim, 1, 30000.0)
    q.on_tick(sim, 36000.0)
    assert delivered == [(0, 0, 36000.0)] and sim.prio[0] == 0 and q.waiting == 1


def test_with_the_queue_niw_requests_wait_for_a_signal_instead_of_going_straight_to_an_instance():
    arr = [0.25, 0.5]
    wl = workload(arr, [100, 100], [2, 2], tiers=[2, 2])
    direct = simulate(scenario(strategy={"autoscaler": "reactive-unified"}), wl)
    queued = simulate(scenario(strategy={"autoscaler": "reactive-unified-niwq"}), wl)
    assert direct.requests["queueing_s"].max() < 0.5
    # the first signal is at t = 1 s (signal period 1 s): both were held until then, and U < 50 % sends two
    assert queued.requests["queueing_s"].tolist() == pytest.approx([0.75, 0.5])


def test_the_lt_policies_import_without_django():
    code = ("import sys; import simulations.engine.policies.longterm, simulations.engine.policies.niw_queue; "
            "assert 'django' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
