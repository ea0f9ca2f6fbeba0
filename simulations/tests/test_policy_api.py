"""The public instance-control API (simulations/engine/core/control.py), hand-checked in both modes.

Toy deployment (engine_helpers.SPEC): prefill(T) = 0.1 + 0.001*T; decode(B, C) = 0.01 + 0.001*B + 0.0001*C.
A request with prompt 100 alone: first token at 0.2; decode iterations at context 100, 101, 102, ... last
0.0210, 0.0211, 0.0212, ... so they end at 0.2210, 0.2421, 0.2633, 0.2846, ...
"""

from __future__ import annotations

import itertools

import pytest

from simulations.engine import simulate
from simulations.engine.policies import PolicyKind, register
from simulations.engine.policies.autoscalers import Autoscaler
from simulations.tests.engine_helpers import scenario, workload

MODES = ["fast", "reference"]
_names = itertools.count()


def _policy(tick_s, on_tick, **attrs):
    """Register a one-off autoscaler whose on_tick(sim, now, state) does the test's action."""
    name = f"test-api-{next(_names)}"

    class P(Autoscaler):
        def __init__(self, params, rng):
            super().__init__(params, rng)
            self.state = {"calls": []}

        def on_tick(self, sim, now):
            on_tick(sim, now, self.state)

    P.tick_s = tick_s
    for k, v in attrs.items():
        setattr(P, k, v)
    register(PolicyKind.AUTOSCALER, name)(P)
    return name


def _once(action):
    def on_tick(sim, now, state):
        if not state.get("done"):
            state["done"] = True
            action(sim, now)
    return on_tick


@pytest.mark.parametrize("mode", MODES)
def test_raising_the_max_batch_inside_a_decode_run_admits_at_the_end_of_the_iteration_in_progress(mode):
    # max batch 1: A (t=0, prompt 100, 10 tokens) runs; B (t=0.05, prompt 50) waits. At t=0.25 (inside A's third
    # decode iteration, 0.2421-0.2633) the policy raises the max batch to 2: B is prefilled from 0.2633 (0.15 s).
    name = _policy(0.25, _once(lambda sim, now: sim.set_max_batch(sim.instances[0], 2, now)))
    sc = scenario(mode=mode, spec={"max_batch_size": 1}, strategy={"autoscaler": name})
    r = simulate(sc, workload([0.0, 0.05], [100, 50], [10, 2]))
    assert r.requests["ttft_s"][1] == pytest.approx(0.2633 + 0.15 - 0.05, abs=1e-12)
    # without the change B waits for A's end (9 iterations: 0.2 + 0.1926) -> the test can fail
    r0 = simulate(scenario(mode=mode, spec={"max_batch_size": 1}), workload([0.0, 0.05], [100, 50], [10, 2]))
    assert r0.requests["ttft_s"][1] == pytest.approx(0.3926 + 0.15 - 0.05, abs=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_a_swapped_request_resumes_without_prefill_and_pays_bytes_over_bandwidth(mode):
    # A alone (prompt 100, 10 tokens). Evicted by swap at t=0.25 -> at the boundary 0.2633, with 4 tokens
    # generated and 103 tokens of KV. Swap-in: 103 x 1 MB / 25 GB/s = 0.00412 s, then 6 more decode iterations at
    # context 103..108 (0.0213 + ... + 0.0218 = 0.1293): done at 0.2633 + 0.00412 + 0.1293. No prefill again.
    name = _policy(0.25, _once(lambda sim, now: sim.evict(sim.instances[0], 0, "swap", now)))
    sc = scenario(mode=mode, spec={"kv_bytes_per_token": 1e6}, strategy={"autoscaler": name},
                  engine={"mode": mode, "swap_bandwidth_gb_s": 25.0})
    r = simulate(sc, workload([0.0], [100], [10]))
    assert r.requests["ttft_s"][0] == pytest.approx(0.2, abs=1e-12)
    assert r.requests["e2e_s"][0] == pytest.approx(0.2633 + 0.00412 + 0.1293, abs=1e-12)
    assert r.requests["tbt_max_s"][0] == pytest.approx(0.00412 + 0.0213, abs=1e-12)  # the gap across the swap
    assert r.summary["preemptions"] == 1


@pytest.mark.parametrize("mode", MODES)
def test_a_recompute_eviction_prefills_prompt_and_generated_tokens_again(mode):
    # as above with mode recompute: re-prefill over 100 + 4 tokens (0.204 s) yields token 5, then 5 decode
    # iterations at context 104..108 (0.108 s)
    name = _policy(0.25, _once(lambda sim, now: sim.evict(sim.instances[0], 0, "recompute", now)))
    r = simulate(scenario(mode=mode, strategy={"autoscaler": name}), workload([0.0], [100], [10]))
    assert r.requests["e2e_s"][0] == pytest.approx(0.2633 + 0.204 + 0.108, abs=1e-12)


def test_swap_needs_the_deployments_kv_bytes_per_token():
    name = _policy(0.25, _once(lambda sim, now: sim.evict(sim.instances[0], 0, "swap", now)))
    with pytest.raises(ValueError, match="kv_bytes_per_token"):
        simulate(scenario(strategy={"autoscaler": name}), workload([0.0], [100], [10]))


@pytest.mark.parametrize("mode", MODES)
def test_a_queue_timeout_drop_counts_as_an_slo_miss(mode):
    # a policy holds every arrival and releases it at the next 1 s tick unless it has waited more than 1.5 s;
    # request 0 (t=0) goes out at t=1; request 1 (t=0.2) is held at t=1 (0.8 s) and at t=2 (1.8 s): dropped
    def on_tick(sim, now, state):
        for rid in list(state["calls"]):
            if rid == 0:
                sim.dispatch(rid, sim.instances[0], now)
            elif now - sim.arrival_s(rid) > 1.5:
                sim.drop(rid, "queue_timeout")
            else:
                continue
            state["calls"].remove(rid)

    name = _policy(1.0, on_tick, wants_arrival_hook=True,
                   on_arrival=lambda self, sim, rid, now: self.state["calls"].append(rid) is None)
    sc = scenario(mode=mode, strategy={"autoscaler": name}, slo={"ttft_s": {"IW-F": 5.0}})
    r = simulate(sc, workload([0.0, 0.2], [100, 100], [5, 5]))
    tier = r.tiers["IW-F"]
    assert tier["completed"] == 1 and tier["drop_reasons"] == {"queue_timeout": 1}
    assert tier["slo_attainment"] == 0.5  # request 0 met 5 s (TTFT 1.2 s); the dropped one is a miss


@pytest.mark.parametrize("mode", MODES)
def test_hooks_report_batch_changes_completions_and_the_counters_are_exact_mid_run(mode):
    seen = {"batch": [], "done": [], "mid": None}

    def on_tick(sim, now, state):
        if seen["mid"] is None:
            inst = sim.instances[0]
            seen["mid"] = (sim.running_by_tier(inst)["IW-F"], sim.queued_prompt_tokens(inst),
                           sim.remaining_decode_tokens(inst, now), sim.tokens_generated(0, now))

    name = _policy(0.25, on_tick, wants_batch_hook=True, wants_completion_hook=True,
                   on_batch_change=lambda self, sim, inst, now: seen["batch"].append((round(now, 6), inst.B)),
                   on_complete=lambda self, sim, inst, rid, now: seen["done"].append((rid, round(now, 6))))
    sc = scenario(mode=mode, spec={"max_batch_size": 1}, strategy={"autoscaler": name})
    r = simulate(sc, workload([0.0, 0.05], [100, 50], [10, 2]))
    # at 0.25: A running with 1 + 2 tokens (prefill + two decode iterations), B (50 tokens) waiting
    assert seen["mid"] == (1, 50, 10 - 3, 3)
    t_a = 0.3926
    t_b = t_a + 0.15 + (0.01 + 0.001 + 0.0001 * 50)
    assert r.requests["e2e_s"][0] == pytest.approx(t_a, abs=1e-12)
    assert [rid for rid, _ in seen["done"]] == [0, 1]
    assert seen["done"][1][1] == pytest.approx(t_b, abs=1e-9)
    # the batch went 0 -> 1 (A admitted at 0), 1 -> 1 at A's end (A out, B in), -> 0 at B's end
    assert [b for _, b in seen["batch"]] == [1, 1, 0]


# ---------------------------------------------------------------- baselines (policies/baselines.py)


def test_llumnix_freeness_is_free_blocks_over_requests():
    # capacity 1600 tokens = 100 blocks; A (prompt 160) is in its prefill at 0.25 (0.1 + 0.16 s): 10 blocks;
    # B (prompt 320, arrived at 0.1, max batch 1) waits: 20 blocks; 2 requests -> (100 - 10 - 20) / 2 = 35
    from simulations.engine.policies.baselines import freeness

    seen = {}
    name = _policy(0.25, _once(lambda sim, now: seen.setdefault("f", freeness(sim, sim.instances[0], now))))
    sc = scenario(spec={"kv_capacity_tokens": 1600, "max_batch_size": 1}, strategy={"autoscaler": name})
    simulate(sc, workload([0.0, 0.1], [160, 320], [100, 5]))
    assert seen["f"] == 35.0


@pytest.mark.parametrize("router, expected", [("least-requests", [0, 1, 0]), ("memory-usage", [0, 1, 1]),
                                              ("llumnix", [0, 1, 1])])
def test_the_baseline_instance_routers_pick_by_their_own_signal(router, expected):
    # three requests at t=0 to two idle instances (nothing admitted yet within the instant): least-requests
    # alternates by count; memory-usage and llumnix avoid the instance holding the 1000-token prompt
    sc = scenario(initial=2, lo=2, hi=2, strategy={"autoscaler": "static", "instance_router": router})
    r = simulate(sc, workload([0.0, 0.0, 0.0], [1000, 100, 100], [2, 2, 2]))
    assert list(r.requests["instance"]) == expected


@pytest.mark.parametrize("weight, expected", [(None, [0, 1, 0]), (0.0, [0, 0, 0])])
def test_the_papers_mu_router_counts_busy_instances_and_ignores_queued_prompts(weight, expected):
    # the same three requests at t=0: nothing is admitted within the instant, so KV in use is 0 everywhere and the
    # paper's MU sees only GPU utilisation: r1 avoids the busy instance 0 (score 0.5 vs the idle one's 0), r2 finds
    # both busy with no KV (0.5 each: the lower id). Unlike memory-usage ([0, 1, 1]) it does not see r0's queued
    # 1000-token prompt. With the utilisation weight at 0 every score is 0: always instance 0.
    params = {} if weight is None else {"mu_util_weight": weight}
    sc = scenario(initial=2, lo=2, hi=2, strategy={"autoscaler": "static", "instance_router": "gpu-memory-usage",
                                                   "params": params})
    r = simulate(sc, workload([0.0, 0.0, 0.0], [1000, 100, 100], [2, 2, 2]))
    assert list(r.requests["instance"]) == expected


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("router, expected", [("gpu-memory-usage", [0, 1, 1, 1]), ("memory-usage", [0, 1, 1, 0]),
                                              ("least-requests", [0, 1, 0, 1])])
def test_the_papers_mu_router_picks_the_least_kv_among_busy_instances(mode, router, expected):
    # by hand (toy deployment, KV 100,000 tokens): r0 (prompt 1000) -> instance 0, r1 (prompt 100) -> the idle
    # instance 1. At t=2 both decode: instance 0 holds 1000 + ~9 tokens (prefill 1.1 s, iterations ~0.111 s),
    # instance 1 100 + ~85 (prefill 0.2 s, iterations ~0.021 s), so MU scores 0.5 + 0.5 x 1009/1e5 = 0.50505 vs
    # 0.5 + 0.5 x 185/1e5 = 0.50093: r2 (prompt 1500) -> 1. r3 arrives in the same instant: r2 waits (no KV yet), so
    # the paper's MU sends it to 1 again, memory-usage counts r2's queued 1500 tokens (1009 vs 1685) and picks 0.
    sc = scenario(mode=mode, initial=2, lo=2, hi=2, strategy={"autoscaler": "static", "instance_router": router})
    r = simulate(sc, workload([0.0, 0.0, 2.0, 2.0], [1000, 100, 1500, 10], [500, 500, 5, 5]))
    assert list(r.requests["instance"]) == expected


def test_the_papers_mu_router_score_by_hand():
    from simulations.engine.policies.baselines import gpu_memory_score

    seen = {}

    def look(sim, now):
        a, b = sim.instances
        seen["s"] = (gpu_memory_score(sim, a, now), gpu_memory_score(sim, b, now), sim.kv_used(a, now))

    # one request (prompt 1000, 500 out) on instance 0 of two: at 0.25 it is in its prefill (admitted: 1000 KV
    # tokens): 0.5 x 1 + 0.5 x 1000 / 100,000 = 0.505; instance 1 is idle: 0
    name = _policy(0.25, _once(look))
    sc = scenario(initial=2, lo=2, hi=2, strategy={"autoscaler": name})
    simulate(sc, workload([0.0], [1000], [500]))
    assert seen["s"][2] == 1000 and seen["s"][:2] == (pytest.approx(0.505, abs=1e-12), 0.0)


def test_the_papers_mu_router_rejects_a_bad_weight():
    from simulations.engine.scenario.config import ScenarioError

    # refused when the scenario is parsed (the boundary), before any run
    with pytest.raises(ScenarioError, match="mu_util_weight"):
        scenario(initial=2, lo=2, hi=2, strategy={"autoscaler": "static", "instance_router": "gpu-memory-usage",
                                                  "params": {"mu_util_weight": 1.5}})


@pytest.mark.parametrize("mode", MODES)
def test_the_llumnix_scaler_adds_at_most_one_instance_per_10_s(mode):
    # one instance under a heavy load, spot reclaim 1 s: the scaler may add one every 10 s check, never more
    n = 3000
    arrivals = [i * 0.02 for i in range(n)]
    sc = scenario(mode=mode, spec={"kv_capacity_tokens": 20_000, "startup": {"spot_reclaim_s": 1.0}},
                  initial=1, lo=1, hi=8, spot={"toy": 8}, strategy={"autoscaler": "llumnix"})
    r = simulate(sc, workload(arrivals, [400] * n, [300] * n))
    outs = [e["t"] for e in r.scaling_events if e["action"] == "scale_out"]
    assert len(outs) >= 2  # it did scale (so the spacing below is tested)
    assert all(b - a >= 10.0 for a, b in zip(outs, outs[1:], strict=False))
    assert all(round(t / 10.0, 9).is_integer() for t in outs)  # only at the 10 s checks


def test_static_n_fixes_the_fleet_at_n_instances():
    sc = scenario(initial=1, lo=1, hi=1, strategy={"autoscaler": "static-n", "params": {"instances": 3}})
    r = simulate(sc, workload([0.0, 0.0, 0.0], [100, 100, 100], [2, 2, 2]))
    assert len(r.instances) == 3 and sorted(set(r.requests["instance"])) == [0, 1, 2]


def test_the_worked_example_policy_caps_batches_and_drops_requests_held_too_long():
    # KV 2,000 tokens, prompts 200: ten requests fill it past 90 %. All 60 arrive in the first 0.6 s; they are
    # dispatched at the 1 s tick (none dropped); the cap of 8 then holds while KV is over 90 % full.
    sc = scenario(spec={"kv_capacity_tokens": 2000}, strategy={"autoscaler": "example-kv-cap",
                                                               "params": {"timeout_s": 30}})
    r = simulate(sc, workload([i * 0.01 for i in range(60)], [200] * 60, [50] * 60))
    assert r.summary["completed"] == 60 and r.tiers["IW-F"]["drop_reasons"] == {}
    assert min(r.requests["ttft_s"]) > 1.0 - 0.6  # nothing served before the first tick
    # with a 0.5 s timeout every request has waited longer than that at the first tick: all dropped
    sc = scenario(strategy={"autoscaler": "example-kv-cap", "params": {"timeout_s": 0.5}})
    r = simulate(sc, workload([0.0, 0.1, 0.8], [100] * 3, [5] * 3))
    assert r.tiers["IW-F"]["drop_reasons"] == {"queue_timeout": 2} and r.summary["completed"] == 1
    assert r.tiers["IW-F"]["slo_attainment"] == pytest.approx(1 / 3)


def test_the_routing_sweep_reports_a_knee_per_router():
    import json
    from pathlib import Path

    from simulations.engine.sweep import routing_sweep

    base = json.loads((Path(__file__).resolve().parents[2] / "fixtures/scenarios/routing_sweep.json").read_text())
    base["workload"]["synthetic"]["duration_s"] = 60.0
    out = routing_sweep(base, [4, 40], ["least-requests", "llumnix"])
    assert [p["rate_rps"] for p in out["points"]] == [4, 4, 40, 40]
    # 4 req/s is far below 4 instances' capacity (all met), 40 req/s far above (knee reached)
    assert all(p["attainment"] == 1.0 for p in out["points"][:2])
    assert out["knees_rps"] == {"least-requests": 40.0, "llumnix": 40.0}


@pytest.mark.parametrize("mode", MODES)
def test_a_swapped_out_request_can_be_dropped_and_never_resumes(mode):
    # A and B (prompt 100, 20 tokens) share one prefill (0.1 + 0.2 = 0.3 s). At 0.25 the policy lowers the max batch
    # to 1 and asks for A's swap-out: at the 0.3 boundary A goes to host memory and cannot come back while B runs;
    # at 0.5 the policy drops it
    def on_tick(sim, now, state):
        inst = sim.instances[0]
        if now == 0.25:
            sim.set_max_batch(inst, 1, now)
            sim.evict(inst, 0, "swap", now)
        elif now == 0.5:
            assert inst.swapped == [0]
            sim.drop(0, "policy")

    name = _policy(0.25, on_tick)
    sc = scenario(mode=mode, spec={"kv_bytes_per_token": 1e6}, strategy={"autoscaler": name})
    r = simulate(sc, workload([0.0, 0.0], [100, 100], [20, 20]))
    assert r.summary["completed"] == 1 and r.tiers["IW-F"]["drop_reasons"] == {"policy": 1}
    assert r.requests["completed"][1] and not r.requests["completed"][0]
