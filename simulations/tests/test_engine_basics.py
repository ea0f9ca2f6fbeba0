"""Hand-computed cases for the instance engine (toy latency model, numbers worked out by hand).

Toy deployment: prefill(T) = 0.1 + 0.001*T; decode(B, C) = 0.01 + 0.001*B + 0.0001*C.
"""

from __future__ import annotations

import pytest

from simulations.engine import simulate
from simulations.tests.engine_helpers import scenario, workload

MODES = ["fast", "reference"]


@pytest.mark.parametrize("mode", MODES)
def test_one_request_on_an_idle_instance_takes_one_prefill_then_one_decode_per_extra_token(mode):
    # prompt 100, 5 output tokens: TTFT = 0.1 + 0.1 = 0.2 s;
    # 4 decode iterations at context 100,101,102,103: 0.0210 + 0.0211 + 0.0212 + 0.0213 = 0.0846 s
    r = simulate(scenario(mode=mode), workload([0.0], [100], [5]))
    assert r.summary["completed"] == 1
    assert r.requests["ttft_s"][0] == pytest.approx(0.2, abs=1e-12)
    assert r.requests["e2e_s"][0] == pytest.approx(0.2846, abs=1e-12)
    assert r.requests["tbt_mean_s"][0] == pytest.approx(0.0846 / 4, abs=1e-12)
    assert r.requests["tbt_max_s"][0] == pytest.approx(0.0213, abs=1e-12)  # the last (longest) iteration


@pytest.mark.parametrize("mode", MODES)
def test_two_requests_arriving_together_share_one_prefill_and_decode_as_a_batch(mode):
    # prefill over 200 tokens: 0.3 s for both. Batch of 2 at context 200, 202: 0.0320 + 0.0322 -> A (3 tokens)
    # done at 0.3642. Then B alone at context 102, 103: 0.0212 + 0.0213 -> done at 0.4067.
    r = simulate(scenario(mode=mode), workload([0.0, 0.0], [100, 100], [3, 5]))
    assert list(r.requests["ttft_s"]) == pytest.approx([0.3, 0.3], abs=1e-12)
    assert r.requests["e2e_s"][0] == pytest.approx(0.3642, abs=1e-12)
    assert r.requests["e2e_s"][1] == pytest.approx(0.4067, abs=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_a_request_arriving_mid_decode_joins_at_the_end_of_the_iteration_in_progress(mode):
    # A: prompt 100, 10 tokens; first token at 0.2; iterations end at 0.2210, 0.2421, 0.2633.
    # B (prompt 50) arrives at 0.25 -> prefilled from 0.2633 for 0.15 s -> first token at 0.4133, TTFT 0.1633.
    r = simulate(scenario(mode=mode), workload([0.0, 0.25], [100, 50], [10, 2]))
    assert r.requests["ttft_s"][1] == pytest.approx(0.2633 + 0.15 - 0.25, abs=1e-12)
    # B's single decode runs in a batch of two: contexts A 103, B 50 -> 0.01 + 0.002 + 0.0153 = 0.0273
    assert r.requests["e2e_s"][1] == pytest.approx(0.2633 + 0.15 + 0.0273 - 0.25, abs=1e-12)
    # A's longest token gap spans B's prefill: 0.15 + 0.0273 (its own iterations are all shorter)
    assert r.requests["tbt_max_s"][0] == pytest.approx(0.15 + 0.0273, abs=1e-12)
    assert r.requests["tbt_max_s"][1] == pytest.approx(0.0273, abs=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_kv_exhaustion_preempts_the_newest_request_and_recomputes_it_after(mode):
    # KV 230 tokens. A (t=0) and B (t=0.001) both prompt 100. A alone: prefill 0.2 s. B arrives during A's
    # prefill and is prefilled at 0.2 (0.2 s) with A's context 100 -> both run from 0.4 at context 200.
    # KV 200 + 2 per iteration: 15 iterations fit (230 - 200 = 30), then B (newest) is evicted with
    # 1 + 15 = 16 tokens generated. B needs 116 tokens back but only 230 - 115 = 115 are free -> it waits
    # until A (20 tokens: 19 decode iterations) finishes, then is re-prefilled over 116 tokens and generates its last 4 tokens.
    r = simulate(scenario(mode=mode, spec={"kv_capacity_tokens": 230}),
                 workload([0.0, 0.001], [100, 100], [20, 21]))
    req = r.requests
    assert list(req["preemptions"]) == [0, 1]
    assert req["ttft_s"][0] == pytest.approx(0.2, abs=1e-12)
    assert req["ttft_s"][1] == pytest.approx(0.4 - 0.001, abs=1e-12)
    # A: 15 iterations with B=2 (context 200 + 2k), then 4 alone (context 115..118):
    # 15 x 0.012 + 0.0001 x (3000 + 210) = 0.501; 4 x 0.011 + 0.0001 x 466 = 0.0906 -> done at 0.9916
    batch = sum(0.01 + 0.002 + 0.0001 * (200 + 2 * k) for k in range(15))
    alone = sum(0.01 + 0.001 + 0.0001 * (115 + k) for k in range(4))
    assert 0.4 + batch + alone == pytest.approx(0.9916, abs=1e-12)
    a_done = 0.4 + batch + alone
    assert req["done_s"][0] == pytest.approx(a_done, abs=1e-9)
    # B: recompute prefill over 116 tokens -> its 17th token; then 4 decode iterations at context 116..119
    b_done = a_done + 0.1 + 0.116 + sum(0.01 + 0.001 + 0.0001 * (116 + k) for k in range(4))
    assert req["done_s"][1] == pytest.approx(b_done, abs=1e-9)
    # B's longest gap: from its 16th token (end of the 15th batched iteration) to the recompute prefill's token
    b_16th = 0.4 + batch
    assert req["tbt_max_s"][1] == pytest.approx(a_done + 0.1 + 0.116 - b_16th, abs=1e-9)
    assert r.summary["preemptions"] == 1


def test_a_scale_out_serves_only_after_its_spot_reclaim_delay():
    # One instance with a tiny KV; the reactive autoscaler sees > 70% and reclaims the one spot instance of the
    # same model (65 s). Nothing is routed to the new instance before it is ready.
    sc = scenario(spec={"kv_capacity_tokens": 1000}, initial=1, lo=1, hi=2, spot={"toy": 1},
                  strategy={"autoscaler": "reactive-unified", "params": {"scale_in_below": 0.0}})
    n = 400
    arrivals = [i * 0.5 for i in range(n)]
    r = simulate(sc, workload(arrivals, [300] * n, [400] * n))
    outs = [e for e in r.scaling_events if e["action"] == "scale_out"]
    assert len(outs) == 1
    assert outs[0]["source"] == "spot-same" and outs[0]["delay_s"] == 65.0
    new = [i for i in r.instances if i["source"] == "spot-same"][0]
    assert new["t_ready"] == pytest.approx(outs[0]["t"] + 65.0)
    served_by_new = r.requests["instance"] == new["iid"]
    assert served_by_new.any()
    first = r.requests["first_token_s"][served_by_new]
    assert first.min() > new["t_ready"]
    # the 65 s of reclaim are paid provisioning time: 65/3600 instance-hours x 8 GPUs
    assert r.summary["provisioning_gpu_hours"] == pytest.approx(65 / 3600 * 8)


def test_a_scale_out_from_a_new_vm_waits_for_acquisition_plus_model_load():
    sc = scenario(spec={"kv_capacity_tokens": 1000}, initial=1, lo=1, hi=2, vm=1,
                  strategy={"autoscaler": "reactive-unified", "params": {"scale_in_below": 0.0}})
    n = 100
    r = simulate(sc, workload([i * 0.5 for i in range(n)], [300] * n, [400] * n))
    out = [e for e in r.scaling_events if e["action"] == "scale_out"][0]
    assert out["source"] == "new-vm" and out["delay_s"] == 155.0 + 600.0
    new = [i for i in r.instances if i["source"] == "new-vm"][0]
    assert new["t_ready"] - new["t_requested"] == pytest.approx(755.0)


@pytest.mark.parametrize("local, load_s", [(True, 600.0), (False, 7200.0)])
def test_bringing_a_model_to_a_region_without_its_weights_pays_a_cross_region_load_once(local, load_s):
    # an endpoint with no instance yet: the first request finds utilisation 1.0 and scales out on a new VM;
    # without the weights in the region the load comes from another region (SageServe 2.3: ~2 h, not ~10 min);
    # once loaded the weights are cached in the region, so the next new VM loads locally
    sc = scenario(spec={"kv_capacity_tokens": 1000}, initial=0, lo=0, hi=2, vm=2,
                  endpoint_extra={"weights_in_region": local},
                  strategy={"autoscaler": "reactive-unified", "params": {"scale_in_below": 0.0, "cooldown_s": 0}})
    t2 = 155.0 + load_s + 100.0  # after the first instance serves: three prompts fill 80 % of its KV
    r = simulate(sc, workload([0.0, t2, t2 + 0.5, t2 + 1.0], [100, 400, 400, 400], [5, 50, 50, 50]))
    outs = [e for e in r.scaling_events if e["action"] == "scale_out"]
    assert outs[0]["source"] == "new-vm" and outs[0]["delay_s"] == 155.0 + load_s
    assert (outs[0].get("load") == "cross-region") == (not local)
    assert r.requests["ttft_s"][0] >= 155.0 + load_s  # served by the first instance, once loaded
    later = [e for e in outs if e["t"] >= t2]
    assert len(later) == 1 and later[0]["delay_s"] == 155.0 + 600.0 and "load" not in later[0]


def test_scale_in_donates_an_idle_instance_to_the_spot_pool_and_stops_paying_for_it():
    sc = scenario(initial=3, lo=1, hi=3, strategy={"autoscaler": "reactive-unified", "params": {"cooldown_s": 15}})
    r = simulate(sc, workload([0.0, 20.0, 40.0], [100] * 3, [5] * 3))
    ins = [e for e in r.scaling_events if e["action"] == "scale_in"]
    assert [e["t"] for e in ins] == [0.0, 20.0]  # cooldown: not two within 15 s; never below min 1
    released = [i for i in r.instances if i["t_released"] is not None]
    assert len(released) == 2
    assert r.summary["spot_instance_hours"]["r1"] > 0


def test_the_same_seed_gives_identical_results_and_another_seed_differs():
    import json

    from simulations.engine import build_workload, parse_scenario

    d = json.load(open("fixtures/scenarios/small_reactive.json"))
    d["workload"]["synthetic"]["total_requests"] = 3000
    a = simulate(parse_scenario(d)).to_dict()
    b = simulate(parse_scenario(d)).to_dict()
    for x in (a, b):
        x["summary"].pop("wall_s")
        x["summary"].pop("requests_per_wall_s")
    assert a == b
    d["seed"] = 99
    sc = parse_scenario(d)
    c = simulate(sc, build_workload(sc)).to_dict()
    assert c["summary"]["e2e"] != a["summary"]["e2e"]


def test_progress_is_reported_by_simulated_time_and_an_exception_from_it_cancels_the_run():
    import json

    from simulations.engine import build_workload, parse_scenario

    d = json.load(open("fixtures/scenarios/small_reactive.json"))
    sc = parse_scenario(d)
    w = build_workload(sc)
    seen = []

    class Stop(Exception):
        pass

    def progress(fraction, message):
        seen.append(fraction)
        if fraction > 0.3:
            raise Stop()

    with pytest.raises(Stop):
        simulate(sc, w, progress=progress)
    assert seen == sorted(seen) and 0.3 < seen[-1] < 1.0


@pytest.mark.parametrize("mode", MODES)
def test_chunked_prefill_splits_a_long_prompt_into_budget_sized_iterations(mode):
    # budget 128 tokens: chunks 128, 128, 44 -> 0.228 + 0.228 + 0.144 = 0.6 s to the first token
    sc = scenario(mode=mode, spec={"max_batch_tokens": 128}, engine={"mode": mode, "chunked_prefill": True})
    r = simulate(sc, workload([0.0], [300], [2]))
    assert r.requests["ttft_s"][0] == pytest.approx(0.6, abs=1e-12)
    assert r.requests["e2e_s"][0] == pytest.approx(0.6 + 0.01 + 0.001 + 0.0001 * 300, abs=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_chunked_prefill_mixes_prompt_chunks_with_the_running_decodes(mode):
    # A and B (prompt 100 each) at t=0, budget 128: iteration 1 prefills A (100) + 28 of B: 0.228 -> A's first
    # token. Iteration 2: B's last 72 tokens + A's decode at context 100: 0.172 + 0.021 - 0.01 = 0.183 -> 0.411
    # (A's 2nd token, B's first). Iteration 3: decode both, context 201: 0.0321 -> 0.4431 (A done, 3 tokens).
    # Iteration 4: B alone at context 101: 0.0211 -> 0.4642.
    sc = scenario(mode=mode, spec={"max_batch_tokens": 128}, engine={"mode": mode, "chunked_prefill": True})
    r = simulate(sc, workload([0.0, 0.0], [100, 100], [3, 3]))
    assert list(r.requests["ttft_s"]) == pytest.approx([0.228, 0.411], abs=1e-12)
    assert list(r.requests["e2e_s"]) == pytest.approx([0.4431, 0.4642], abs=1e-12)
    assert r.requests["tbt_max_s"][0] == pytest.approx(0.183, abs=1e-12)


def test_a_policy_can_hold_arrivals_and_send_them_later_through_the_arrival_hook():
    from simulations.engine.policies import PolicyKind, register
    from simulations.engine.policies.autoscalers import Autoscaler

    @register(PolicyKind.AUTOSCALER, "test-hold-until-10s")
    class HoldUntil10s(Autoscaler):
        wants_arrival_hook = True
        tick_s = 10.0

        def __init__(self, params, rng):
            super().__init__(params, rng)
            self.held = []

        def on_arrival(self, sim, rid, now):
            self.held.append(rid)
            return True

        def on_tick(self, sim, now):
            for rid in self.held:
                sim.send(rid, sim.endpoints[0], now)
            self.held = []

    sc = scenario(strategy={"autoscaler": "test-hold-until-10s"})
    r = simulate(sc, workload([0.0, 1.0], [100, 100], [5, 5]))
    # both released at t=10 together: one prefill over 200 tokens (0.3 s) -> TTFT = 10.3 - arrival
    assert list(r.requests["ttft_s"]) == pytest.approx([10.3, 9.3], abs=1e-12)


def test_a_request_served_outside_its_origin_region_pays_the_network_delay():
    from simulations.engine import parse_scenario
    from simulations.engine.fleet.arrivals import NetworkDelays
    from simulations.tests.engine_helpers import SPEC

    d = {"seed": 4, "workload": {"synthetic": {"total_requests": 1}},
         "fleet": {"regions": ["r1", "r2"],
                   "endpoints": [{"region": "r1", "model": "toy", "deployment": SPEC, "initial": 1}],
                   "network": {"bins": [[1.0, 0.2, 0.4]]}}}
    sc = parse_scenario(d)
    r = simulate(sc, workload([0.0, 0.0], [100, 100], [2, 2], regions=[0, 1], region_names=("r1", "r2")))
    local, remote = r.requests["ttft_s"]
    assert local == pytest.approx(0.2, abs=1e-12)  # alone: its prefill started at once
    delays = NetworkDelays(((1.0, 0.2, 0.4),), 0)
    assert all(0.2 <= delays[i] <= 0.4 for i in range(1000))
    # the remote one arrives 0.2-0.4 s later, after the local prefill ended or during it
    assert 0.2 + 0.2 <= remote <= 0.4 + 0.4 + 0.2
