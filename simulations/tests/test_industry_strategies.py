"""The industry autoscalers as simulator strategies: scraped metrics, sync periods, start-up, knob checks."""

from __future__ import annotations

import numpy as np
import pytest

from simulations.engine import ScenarioError, simulate
from simulations.engine.policies.scraped import EndpointSample, MetricFeed, PodSample
from simulations.tests.engine_helpers import scenario, workload

SMALL_KV = {"kv_capacity_tokens": 20000}


def _step_load(seed=1):
    """1 req/s for 10 min, 6 req/s for 20 min, 1 req/s for 20 min (Poisson)."""
    rng = np.random.default_rng(seed)
    t = []
    for a, b, rate in ((0, 600, 1.0), (600, 1800, 6.0), (1800, 3000, 1.0)):
        cur = float(a)
        while True:
            cur += rng.exponential(1 / rate)
            if cur >= b:
                break
            t.append(cur)
    n = len(t)
    return workload(t, rng.integers(100, 400, n), rng.integers(50, 200, n))


LOAD = _step_load()


def _run(name, **params):
    sc = scenario(spec=SMALL_KV, initial=1, lo=1, hi=10, spot={"toy": 10},
                  strategy={"autoscaler": name, "params": params})
    return simulate(sc, LOAD).to_dict()


def _outs(d):
    return [e for e in d["scaling_events"] if e["action"] == "scale_out"]


CASES = [("hpa", {}), ("hpa", {"metric": "kv", "target": 0.5}), ("knative-kpa", {"target": 8}),
         ("aibrix-apa", {}), ("aibrix-kpa", {}), ("dynamo-planner", {"load_predictor": "constant"}),
         ("dynamo-planner", {"load_predictor": "kalman"}), ("llmd-wva", {})]


@pytest.mark.parametrize(("name", "params"), CASES)
def test_each_industry_autoscaler_scales_out_for_the_step_and_stays_within_max(name, params):
    d = _run(name, **params)
    outs = _outs(d)
    assert outs, f"{name} never scaled out"
    series = d["timeline"]["series"]
    active = np.add(series["serving"][0], series["provisioning"][0])
    assert active.max() <= 10
    assert active[:10].mean() < active[12:30].mean()  # more instances in the burst (minutes 10-30) than before


def test_hpa_acts_only_on_its_sync_period_and_knative_on_its_two_second_tick():
    for e in _run("hpa")["scaling_events"]:
        assert e["t"] % 15 == 0
    for e in _run("knative-kpa", target=8)["scaling_events"]:
        assert e["t"] % 2 == 0
    for e in _run("hpa", sync_s=30, scrape_interval_s=30)["scaling_events"]:
        assert e["t"] % 30 == 0


def test_a_metric_lag_delays_the_first_scale_out():
    first = _outs(_run("hpa"))[0]["t"]
    lagged = _outs(_run("hpa", metric_lag_s=60))[0]["t"]
    assert lagged >= first + 45  # the same signal reaches the controller a minute later (15 s syncs)


def test_scaled_out_instances_pay_the_deployments_start_up_delay():
    for e in _outs(_run("knative-kpa", target=8)):
        assert e["delay_s"] == pytest.approx(65.0)  # spot reclaim of the same model (the pool has 10)


def test_the_dynamo_planner_decides_every_adjustment_interval():
    times = {e["t"] for e in _run("dynamo-planner", load_predictor="constant")["scaling_events"]}
    assert times and all(t % 180 == 0 for t in times)


@pytest.mark.parametrize(("params", "field"), [({"targt": 3}, "strategy.params.targt"),
                                               ({"target": -1}, "strategy.params.target"),
                                               ({"metric": "cpu"}, "strategy.params.metric")])
def test_a_bad_knob_is_refused_naming_it(params, field):
    with pytest.raises(ScenarioError) as exc:
        scenario(strategy={"autoscaler": "hpa", "params": params})
    assert exc.value.field == field


def test_metric_feed_hands_samples_over_after_the_lag():
    feed = MetricFeed(lag_s=30)
    for t in (0.0, 15.0, 30.0):
        feed.record(EndpointSample(t=t, pods=(PodSample(1, 2, 3, 0.5),), starting=0), "ep")
    assert [s.t for s in feed.visible("ep", 29.0)] == []
    assert [s.t for s in feed.visible("ep", 45.0)] == [0.0, 15.0]
    assert [s.t for s in feed.visible("ep", 60.0)] == [30.0]


def test_endpoint_sample_totals_and_means():
    s = EndpointSample(t=0, pods=(PodSample(1, 4, 2, 0.5), PodSample(2, 6, 0, 0.3)), starting=1)
    assert s.total("running") == 10 and s.total("waiting") == 2 and s.total("concurrency") == 12
    assert s.total("kv") == pytest.approx(0.8) and s.per_pod("kv") == pytest.approx(0.4)
    assert s.per_pod("running") == 5


def test_an_endpoint_with_min_zero_keeps_one_instance_and_serves_every_request():
    sc = scenario(spec=SMALL_KV, initial=1, lo=0, hi=10, spot={"toy": 10},
                  strategy={"autoscaler": "knative-kpa", "params": {"target": 8}})
    d = simulate(sc, LOAD).to_dict()
    assert min(d["timeline"]["series"]["serving"][0]) >= 1
    assert d["summary"]["completed"] == d["summary"]["requests"]
