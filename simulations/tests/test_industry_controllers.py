"""The industry autoscalers' algorithms on hand-computed cases (pure controllers, no simulator)."""

from __future__ import annotations

import math

import pytest

from simulations.engine.policies.aibrix.controller import (
    AIBrixKPAController,
    AIBrixSpec,
    Stabiliser,
    apa_replicas,
)
from simulations.engine.policies.dynamo_planner.controller import Observation, PlannerSpec, Profile, SLAPlanner
from simulations.engine.policies.dynamo_planner.predictors import ARIMAPredictor, KalmanPredictor
from simulations.engine.policies.hpa.controller import HPAController, HPASpec, ScalingPolicy, ScalingRules
from simulations.engine.policies.knative_kpa.controller import KPAController, KPASpec, WindowAverage
from simulations.engine.policies.llmd_wva.controller import WVASpec, analyse, target_replicas

# ------------------------------------------------------------------ Kubernetes HPA


def test_hpa_keeps_the_count_inside_the_ten_percent_tolerance():
    hpa = HPAController(HPASpec(target=10, max_replicas=20))
    assert hpa.step(0, 4, 43.0) == 4  # 43 / 40 = 1.075: within 10 %
    hpa = HPAController(HPASpec(target=10, max_replicas=20))
    assert hpa.step(0, 4, 45.0) == 5  # 1.125: ceil(45 / 10)


def test_hpa_scale_up_is_limited_to_max_of_four_pods_and_double_per_fifteen_seconds():
    hpa = HPAController(HPASpec(target=10, max_replicas=50))
    assert hpa.step(0, 2, 200.0) == 6  # want 20; max(2 + 4, ceil(2 x 2)) = 6
    assert hpa.step(10, 6, 200.0) == 6  # the +4 at t=0 is inside the 15 s period: period start 2 -> limit 6
    assert hpa.step(15, 6, 200.0) == 12  # t=0 has left the period: max(6 + 4, 12) = 12


def test_hpa_rate_limit_counts_from_the_replicas_at_the_start_of_the_period():
    # periodStartReplicas = current - added + removed in the period: a scale-down just before lets the scale-up
    # return to where the period started, then the policies apply on top of that count.
    fast_down = ScalingRules(0.0, (ScalingPolicy("Percent", 100, 15.0),))
    hpa = HPAController(HPASpec(target=10, max_replicas=50, scale_down=fast_down))
    assert hpa.step(0, 10, 20.0) == 2  # want ceil(20 / 10) = 2; no stabilisation window, 100 % per 15 s
    assert hpa.step(5, 2, 200.0) == 20  # want 20; period start 2 + 8 removed = 10: max(10 + 4, ceil(10 x 2)) = 20


def test_hpa_scale_down_waits_for_the_five_minute_stabilisation_window():
    hpa = HPAController(HPASpec(target=10, max_replicas=20))
    counts = {}
    current = 10
    for t in range(0, 316, 15):
        value = 100.0 if t == 0 else 50.0
        current = hpa.step(float(t), current, value)
        counts[t] = current
    assert counts[285] == 10  # the recommendation of 10 at t=0 is still inside the 300 s window
    assert counts[300] == 5  # t=0 is no longer after the cutoff (now - 300): the highest recent is 5


def test_hpa_pods_metric_scales_the_ready_pods_by_the_usage_ratio():
    hpa = HPAController(HPASpec(target=10, max_replicas=20, metric_source="pods"))
    assert hpa.step(0, 3, 20.0, ready=3) == 6  # ceil(2.0 x 3)


def test_hpa_brings_a_count_outside_min_max_back_first():
    hpa = HPAController(HPASpec(target=10, min_replicas=2, max_replicas=10))
    assert hpa.step(0, 12, 0.0) == 10
    assert hpa.step(0, 1, 1000.0) == 2


def test_hpa_spec_refuses_a_zero_target():
    with pytest.raises(ValueError):
        HPASpec(target=0)


# ------------------------------------------------------------------ Knative KPA


def test_window_average_uses_one_second_buckets_over_the_window():
    w60, w6 = WindowAverage(60), WindowAverage(6)
    for t in range(60):
        w60.record(t, 10.0)
        w6.record(t, 10.0)
    for t in range(60, 66):
        w60.record(t, 100.0)
        w6.record(t, 100.0)
    assert w60.average(65) == pytest.approx((54 * 10 + 6 * 100) / 60)
    assert w6.average(65) == pytest.approx(100.0)


def test_kpa_panics_holds_the_panic_count_and_unpanics_after_a_stable_window():
    kpa = KPAController(KPASpec(target=10))
    assert kpa.decide(0, 2, 35.0, 35.0) == 4  # dppc 4 / 2 ready >= 200 %: panic
    assert kpa.panic_time == 0
    assert kpa.decide(30, 4, 10.0, 10.0) == 4  # still panicking: no scale-down
    # 0 + 60 s < 61: un-panic; stable wants 1 but max scale-down rate 2 keeps floor(4 / 2) = 2
    assert kpa.decide(61, 4, 10.0, 10.0) == 2
    assert kpa.panic_time is None


def test_kpa_stable_mode_follows_the_stable_window_and_min_scale():
    kpa = KPAController(KPASpec(target=10, min_scale=3))
    assert kpa.decide(0, 5, 41.0, 45.0) == 5  # ceil(4.1) = 5; 5 / 5 < 2: no panic
    assert kpa.decide(2, 5, 0.0, 0.0) == 3  # wants 0, floor(5 / 2) = 2, min_scale 3


# ------------------------------------------------------------------ AIBrix


def test_apa_scales_by_the_usage_ratio_outside_its_tolerances_and_rate_limits():
    spec = AIBrixSpec(target=10, max_replicas=20)
    assert apa_replicas(spec, 4, 12.0) == 5  # r = 1.2 > 1.1: ceil(4.8)
    assert apa_replicas(spec, 4, 30.0) == 8  # ceil(12) capped at ceil(2 x 4)
    assert apa_replicas(spec, 4, 10.5) == 4  # within tolerance
    assert apa_replicas(spec, 4, 8.5) == 4  # r = 0.85 < 0.9: ceil(3.4) = 4
    assert apa_replicas(spec, 4, 2.0) == 2  # ceil(0.8) = 1, at least floor(4 / 2)


def test_aibrix_stabiliser_takes_the_lowest_recommendation_when_scaling_down():
    st = Stabiliser(up_s=0.0, down_s=300.0)
    assert st.apply(0, 6, 8) == 6
    assert st.apply(10, 7, 8) == 6  # min(6, 7): AIBrix keeps the lowest of its scale-down window
    assert st.apply(20, 9, 8) == 9  # scaling up with no up window: the recommendation itself


def test_aibrix_kpa_panics_on_the_panic_to_stable_ratio():
    kpa = AIBrixKPAController(AIBrixSpec(target=10, max_replicas=20))
    assert kpa.decide(2, 30.0, 40.0) == 3  # 40 / 30 < 2: stable, ceil(3), within [1, 4]
    assert kpa.decide(2, 30.0, 70.0) == 4  # 70 / 30 > 2: panic, ceil(7) capped at ceil(2 x 2)
    assert kpa.decide(4, 30.0, 70.0) == 7


# ------------------------------------------------------------------ Dynamo SLA planner

PROFILE = Profile(p_c0=0.01, p_c1=1e-4, p_c2=0.0, d_c0=0.01, d_cb=1e-4, d_cc=1e-6, kv_tokens=1_000_000,
                  max_batch=256)


def test_profile_curves_by_hand():
    assert PROFILE.prefill_thpt(1000) == pytest.approx(1000 / 0.11)
    # ctx 1000: per-request 1e-4 + 1e-3 s; (0.05 - 0.01) / 0.0011 = 36.4 -> 36; ITL 0.0496 s
    assert PROFILE.decode_best_thpt(0.05, 1000) == pytest.approx(36 / 0.0496)


def test_sla_planner_counts_with_the_constant_predictor():
    spec = PlannerSpec(predictor="constant", max_replicas=100)
    planner = SLAPlanner(spec, PROFILE)
    planner.observe(Observation(num_req=18000, isl=1000, osl=100))  # 100 req/s over 180 s
    # prefill 100 x 1000 tok/s / 9090.9 = 11.0; decode 100 x 100 / (34 / 0.0491) = 14.44 (ctx 1050: B = 34)
    assert planner.plan() == 26  # ceil(11.0 + 14.44)
    assert planner.last["p_share"] == pytest.approx(11.0)
    assert planner.last["d_share"] == pytest.approx(10000 * 0.0491 / 34)
    planner_max = SLAPlanner(PlannerSpec(predictor="constant", max_replicas=100, combine="max"), PROFILE)
    planner_max.observe(Observation(num_req=18000, isl=1000, osl=100))
    assert planner_max.plan() == 15


def test_sla_planner_prefill_correction_only_lowers_the_load():
    planner = SLAPlanner(PlannerSpec(predictor="constant", max_replicas=100, combine="max"), PROFILE)
    planner.observe(Observation(num_req=18000, isl=1000, osl=1, ttft_s=0.055))  # half the profiled 0.11 s
    assert planner.p_correction == pytest.approx(0.5)
    assert planner.plan() == math.ceil(11.0 * 0.5)
    planner.observe(Observation(num_req=18000, isl=1000, osl=1, ttft_s=0.22))  # twice: min(1, 2) = 1
    assert planner.plan() == 11


def test_kalman_predictor_by_hand():
    k = KalmanPredictor(q_level=1.0, q_trend=0.1, r=10.0)
    k.add(10.0)
    assert k.predict() == pytest.approx(10.0)
    k.add(20.0)
    # P after predict = [[2001, 1000], [1000, 1000.1]]; S = 2011; K = [2001, 1000] / 2011; y = 10
    level, trend = 10 + 10 * 2001 / 2011, 10 * 1000 / 2011
    assert k.predict() == pytest.approx(level + trend)


def test_arima_predictor_follows_a_ramp_and_falls_back_before_five_points():
    a = ARIMAPredictor()
    for v in (1.0, 2.0, 3.0):
        a.add(v)
    assert a.predict() == 3.0
    for v in range(4, 31):
        a.add(float(v))
    assert a.predict() == pytest.approx(31.0, abs=0.5)


# ------------------------------------------------------------------ llm-d WVA


def test_wva_spare_capacity_ignores_saturated_replicas():
    a = analyse(WVASpec(), [(0.5, 0), (0.85, 0), (0.6, 1)])
    assert a.non_saturated == 2
    assert a.avg_spare_kv == pytest.approx(0.25)
    assert a.avg_spare_queue == pytest.approx(4.5)
    assert not a.scale_up
    assert not a.scale_down_safe  # (0.8 - 0.25) x 2 = 1.1 > 0.8


def test_wva_targets_by_hand():
    spec = WVASpec(max_replicas=10)
    assert target_replicas(spec, 3, 0, [(0.1, 0)] * 3) == 2  # 0.1 x 1.5 = 0.15 <= 0.7: safe to remove one
    assert target_replicas(spec, 2, 0, [(0.2, 3), (0.2, 4)]) == 3  # spare queue 1.5 < 3
    assert target_replicas(spec, 2, 0, [(0.9, 0), (0.95, 0)]) == 3  # all saturated: spare 0
    assert target_replicas(spec, 2, 1, [(0.1, 0), (0.1, 0)]) == 3  # in transition: keep ready + pending, no decision
