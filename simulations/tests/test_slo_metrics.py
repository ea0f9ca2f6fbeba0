"""Richer SLOs and metrics (simulations/engine/results/slo.py), hand-checked in both modes; predictors.

Toy deployment (engine_helpers.SPEC): prefill(T) = 0.1 + 0.001*T; decode(B, C) = 0.01 + 0.001*B + 0.0001*C.
"""

from __future__ import annotations

import numpy as np
import pytest

from simulations.engine import ScenarioError, simulate
from simulations.engine.workload.predictors import predict_output_lengths
from simulations.tests.engine_helpers import scenario, workload

MODES = ["fast", "reference"]


@pytest.mark.parametrize("mode", MODES)
def test_normalised_latency_and_mean_itl_match_a_two_request_hand_computation(mode):
    # A (3 tokens) and B (5 tokens), prompt 100 each, arrive together: one prefill over 200 tokens (0.3 s), then
    # batch-of-2 decodes at context 200, 202 (0.0320 + 0.0322): A done at 0.3642; B alone at 102, 103
    # (0.0212 + 0.0213): done at 0.4067.
    #   normalised latency: A 0.3642 / 3 = 0.1214, B 0.4067 / 5 = 0.08134 s/token
    #   mean ITL: A (0.3642 - 0.3) / 2 = 0.0321, B (0.4067 - 0.3) / 4 = 0.026675 s
    #   alone: A 0.2 + 0.0210 + 0.0211 = 0.2421, B 0.2 + 0.0210 + 0.0211 + 0.0212 + 0.0213 = 0.2846;
    #   x 1.5: A 0.36315 < 0.3642 (miss), B 0.4269 >= 0.4067 (met); ITL 0.03: A misses, B meets
    sc = scenario(mode=mode, slo={"ttft_s": {"IW-F": 1.0}, "itl_s": {"IW-F": 0.03},
                                  "normalised_latency_x": {"IW-F": 1.5}})
    r = simulate(sc, workload([0.0, 0.0], [100, 100], [3, 5]))
    req = r.requests
    assert list(req["normalised_latency"]) == pytest.approx([0.1214, 0.08134], abs=1e-12)
    assert list(req["tbt_mean_s"]) == pytest.approx([0.0321, 0.026675], abs=1e-12)
    assert list(req["isolated_e2e_s"]) == pytest.approx([0.2421, 0.2846], abs=1e-12)
    slo = r.slo["tiers"]["IW-F"]
    assert slo["itl_attainment"] == 0.5 and slo["normalised_attainment"] == 0.5 and slo["ttft_attainment"] == 1.0
    assert list(req["slo_met"]) == [False, True] and slo["attainment"] == 0.5  # A misses both, B meets both


def test_ttft_as_a_function_of_prompt_length_and_lateness():
    # SLINFER's min(max(0.5, L/512), 8): prompts 100 and 1024 -> targets 0.5 and 2.0 s.
    # The first alone: TTFT 0.2 (lateness -0.3). Both arrive together: one prefill over 1124 tokens = 1.224 s.
    sc = scenario(slo={"ttft_prompt": {"IW-F": {"min_s": 0.5, "per_token_s": 1 / 512, "max_s": 8}}})
    r = simulate(sc, workload([0.0, 0.0], [100, 1024], [2, 2]))
    assert list(r.requests["ttft_target_s"]) == pytest.approx([0.5, 2.0])
    assert list(r.requests["ttft_lateness_s"]) == pytest.approx([1.224 - 0.5, 1.224 - 2.0], abs=1e-12)
    assert r.slo["overall"]["ttft_attainment"] == 0.5 and r.slo["overall"]["late_requests"] == 1


def test_default_scenarios_have_no_slo_block_and_bad_slo_fields_name_their_field():
    r = simulate(scenario(), workload([0.0], [100], [5]))
    assert r.slo is None and "slo" not in r.to_dict()
    with pytest.raises(ScenarioError) as exc:
        scenario(slo={"itl_s": {"IW-X": 0.1}})
    assert exc.value.field == "slo.itl_s.IW-X"
    with pytest.raises(ScenarioError) as exc:
        scenario(slo={"itl_stat": "p99"})
    assert exc.value.field == "slo.itl_stat"


def test_the_noisy_oracle_predictor_has_the_requested_mean_absolute_error():
    rng = np.random.default_rng(1)
    out = rng.integers(50, 2000, size=100_000)
    w = workload(np.arange(out.size, dtype=float), np.full(out.size, 100), out)
    pred = predict_output_lengths(w, "noisy-oracle", {"mae_tokens": 78}, seed=3)
    mae = np.abs(pred - out).mean()
    assert mae == pytest.approx(78, rel=0.02)  # rounding and the floor at 1 move it slightly
    assert (predict_output_lengths(w, "oracle", {}, seed=3) == out).all()


def test_a_predictor_fills_predicted_lengths_that_policies_read():
    seen = {}
    from simulations.engine.policies import PolicyKind, register
    from simulations.engine.policies.autoscalers import Autoscaler

    @register(PolicyKind.AUTOSCALER, "test-read-predicted")
    class Read(Autoscaler):
        tick_s = 0.25

        def on_tick(self, sim, now):
            if "r" not in seen:
                seen["r"] = (sim.remaining_decode_tokens(sim.instances[0], now, predicted=True),
                             sim.remaining_decode_tokens(sim.instances[0], now))

    sc = scenario(strategy={"autoscaler": "test-read-predicted", "predictor": "bucket-median",
                            "predictor_params": {"train_fraction": 1.0}})
    simulate(sc, workload([0.0, 10.0], [100, 100], [10, 30]))
    # bucket median of (10, 30) = 20 for both; at 0.25 request 0 has produced 3 tokens: 20 - 3 vs 10 - 3
    assert seen["r"] == (17, 7)


def test_the_new_scenario_fields_are_validated_at_the_boundary():
    with pytest.raises(ScenarioError) as exc:
        scenario(engine={"mode": "fast", "swap_bandwidth_gb_s": 0})
    assert exc.value.field == "engine.swap_bandwidth_gb_s"
    with pytest.raises(ScenarioError) as exc:
        scenario(strategy={"autoscaler": "static", "predictor": "crystal-ball"})
    assert exc.value.field == "strategy.predictor"
    with pytest.raises(ScenarioError) as exc:
        scenario(slo={"normalised_latency_x": {"IW-F": -1}})
    assert exc.value.field == "slo.normalised_latency_x.IW-F"
    sc = scenario(spec={"kv_bytes_per_token": 524288}, slo={"ttft_prompt": {"IW-F": {"min_s": 0.5}}})
    assert sc.fleet.endpoints[0].deployment.kv_bytes_per_token == 524288
    assert sc.slo.ttft_prompt["IW-F"]["min_s"] == 0.5 and sc.slo.rich
