"""Chiron: the local autoscaler's arithmetic, the request groups, the waiting-time estimator, the
take/resume of swapped requests, and the policy end to end on small scenarios."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from simulations.engine import simulate
from simulations.engine.policies.chiron import scenarios as S
from simulations.engine.policies.chiron.local import LocalAutoscaler, state_of
from simulations.engine.policies.chiron.queue import GlobalQueue, OutputStats, estimate_wait, kmeans_1d
from simulations.engine.simulator.loop import Simulator
from simulations.engine.simulator.scenario import build_workload, parse_scenario
from simulations.tests.engine_helpers import FakeView, scenario, workload
from simulations.tests.test_policy_api import MODES, _policy


def _inst(max_batch=256):
    return SimpleNamespace(it=0, B=0, iid=0, kind="mixed", policy_state={}, max_b=max_batch,
                           spec=SimpleNamespace(max_batch_size=max_batch), endpoint=SimpleNamespace(eid=0))


def _engine_instance(max_batch=256):
    """A mixed instance of the engine, serving nothing (the hooks type their instance argument when compiled)."""
    from simulations.engine.core.entities import SERVING, Instance
    sim = Simulator(scenario(spec={"max_batch_size": max_batch}), workload([0.0], [100], [5]))
    inst = Instance(0, sim.endpoints[0], 0.0, 0.0, "on_demand")
    inst.state = SERVING
    return inst


def _window(la, inst, t, iters, b, itl_slo, sat=True):
    """Advance the fake instance by ``iters`` decode iterations at batch ``b`` ending at ``t``; one observation."""
    inst.it += iters
    out = la.observe(inst, t, itl_slo, sat)
    inst.B = b
    return out


def test_algorithm_1_grows_by_alpha_over_bp_plus_one_minus_alpha_and_halves_at_bp_one():
    la = LocalAutoscaler({"window_s": 1.0})
    inst = _inst(256)
    la.start(inst, 0.0)
    inst.B = 100
    state_of(inst).last_b = 100  # batch in force since t=0
    # 20 iterations in 1 s: ITL 0.05 s against 0.2 -> LBP 0.25; first window: no TBP -> B * (0.5/0.25 + 0.5)
    assert _window(la, inst, 1.0, 20, 100, 0.2) == round(256 * 2.5)
    # next window: 20 iterations, 100 running -> throughput 2,000 tok/s both times -> TBP 1 after an increase: halve
    assert _window(la, inst, 2.0, 20, 100, 0.2) == 320
    # after a decrease TBP is not used: ITL 0.1 (10 iterations) -> LBP 0.5 -> x1.5
    assert _window(la, inst, 3.0, 10, 100, 0.2) == 480
    # ITL above the SLO halves whatever the throughput
    assert _window(la, inst, 4.0, 4, 100, 0.2) == 240
    # not saturated: LBP < 1 does not raise the limit (it is not binding) ...
    assert _window(la, inst, 5.0, 20, 100, 0.2, sat=False) is None
    assert state_of(inst).limit == 240
    # ... but LBP >= 1 still halves it
    assert _window(la, inst, 6.0, 2, 100, 0.2, sat=False) == 120


def test_the_local_autoscaler_waits_for_a_full_window_and_uses_the_tightest_slo_seen():
    la = LocalAutoscaler({"window_s": 1.0})
    inst = _inst(100)
    la.start(inst, 0.0)
    inst.B = 10
    state_of(inst).last_b = 10
    assert _window(la, inst, 0.5, 5, 10, 2.0) is None  # half a window: nothing yet
    # 10 iterations in 1 s = ITL 0.1: against 2 s it would grow x5.5, against 0.2 (seen at 0.5 s... no: at 1.0) x1.5
    assert _window(la, inst, 1.0, 5, 10, 0.2) == 150


def test_a_static_local_autoscaler_never_moves():
    la = LocalAutoscaler({"local": False, "static_batch": 64})
    inst = _inst(256)
    assert la.start(inst, 0.0) == 64
    inst.B = 64
    assert _window(la, inst, 2.0, 100, 64, 0.2) is None


def test_kmeans_groups_tightest_slo_first_fcfs_within_and_evicted_requests_at_the_head():
    assert kmeans_1d([10, 11, 12, 3600, 3700], 2) == pytest.approx([11.0, 3650.0])
    assert kmeans_1d([3600.0] * 5, 3) == [3600.0]
    q = GlobalQueue(k_groups=2)
    q.push(1, 0.0, 3600.0)
    q.push(2, 1.0, 3600.0)
    q.push(3, 2.0, 600.0)
    q.push(4, 3.0, 650.0)
    q.push(0, -1.0, 3600.0, front=True)  # an evicted request returns to the head of its group
    assert len(q) == 5
    assert [q.pop()[0] for _ in range(5)] == [3, 4, 0, 1, 2]
    assert q.pop() is None


def test_the_estimator_is_the_clt_normal_of_the_sum_of_output_lengths_ahead():
    stats = OutputStats()
    rng = np.random.default_rng(0)
    outs = rng.lognormal(4.5, 1.0, 20_000)
    for x in outs:
        stats.add(float(x))
    assert stats.mean == pytest.approx(outs.mean()) and stats.std == pytest.approx(outs.std(ddof=1))
    theta = 5_000.0
    mean, std = estimate_wait(1999, stats.mean, stats.std, theta)
    assert mean == pytest.approx(1999 * outs.mean() / theta) and std == pytest.approx(math.sqrt(1999) * outs.std(ddof=1) / theta)
    # against sampled sums of 1,999 lengths: the Normal's mean and spread match (independent check of eq. 1 + CLT)
    sums = np.array([rng.choice(outs, 1999).sum() / theta for _ in range(2000)])
    assert sums.mean() == pytest.approx(mean, rel=0.01)
    assert sums.std() == pytest.approx(std, rel=0.1)
    assert estimate_wait(0, 100, 10, theta) == (0.0, 0.0)
    assert estimate_wait(5, 100, 10, 0.0) == (math.inf, math.inf)


@pytest.mark.parametrize("mode", MODES)
def test_a_swapped_request_taken_by_the_policy_does_not_resume_until_given_back(mode):
    # A and B (prompt 100, 20 and 40 tokens) share one prefill (0.3 s). At 0.25 the max batch drops to 1 and A is swapped
    # out at the 0.3 boundary; at 0.5 the policy takes A (a global queue holds it) and lifts the max batch to 2: A
    # must not come back by itself; at 0.75 it is given back and resumes without a prefill.
    seen = {}

    def on_tick(sim, now, state):
        inst = sim.instances[0]
        if now == 0.25:
            sim.set_max_batch(inst, 1, now)
            sim.evict(inst, 0, "swap", now)
        elif now == 0.5:
            sim.take_swapped(inst, 0)
            sim.set_max_batch(inst, 2, now)
        elif now == 0.75:
            seen["B_before"] = inst.B
            seen["swapped_before"] = list(inst.swapped)
            sim.resume_swapped(inst, 0, now)

    name = _policy(0.25, on_tick)
    sc = scenario(mode=mode, spec={"kv_bytes_per_token": 1e6}, strategy={"autoscaler": name})
    r = simulate(sc, workload([0.0, 0.0], [100, 100], [20, 40]))
    assert seen == {"B_before": 1, "swapped_before": []}
    assert r.summary["completed"] == 2 and r.summary["preemptions"] == 1
    assert r.requests["ttft_s"][0] == pytest.approx(0.3)
    assert r.requests["tbt_max_s"][0] > 0.75 - 0.3  # it waited in the policy's hands

    # the same, but dispatched (recomputed) instead of resumed: prefill of prompt + generated tokens again
    def on_tick2(sim, now, state):
        inst = sim.instances[0]
        if now == 0.25:
            sim.set_max_batch(inst, 1, now)
            sim.evict(inst, 0, "swap", now)
        elif now == 0.5:
            sim.take_swapped(inst, 0)
            sim.set_max_batch(inst, 2, now)
        elif now == 0.75:
            sim.dispatch(0, inst, now)

    r2 = simulate(scenario(mode=mode, spec={"kv_bytes_per_token": 1e6}, strategy={"autoscaler": _policy(0.25, on_tick2)}),
                  workload([0.0, 0.0], [100, 100], [20, 40]))
    assert r2.summary["completed"] == 2
    assert r2.requests["e2e_s"][0] > r.requests["e2e_s"][0] + 0.05  # the re-prefill (>= 0.1 s) costs more than swap-in


def test_resume_swapped_refuses_a_request_it_does_not_hold():
    def on_tick(sim, now, state):
        if state.get("checked"):
            return
        with pytest.raises(ValueError, match="not taken off"):
            sim.resume_swapped(sim.instances[0], 0, now)
        with pytest.raises(ValueError, match="not swapped out"):
            sim.take_swapped(sim.instances[0], 0)
        state["checked"] = True

    name = _policy(0.25, on_tick)
    simulate(scenario(strategy={"autoscaler": name}), workload([0.0], [100], [20]))

    def on_tick_done(sim, now, state):
        if now == 1.0:
            with pytest.raises(ValueError, match="has finished"):
                sim.resume_swapped(sim.instances[0], 0, now)
            state["checked"] = True

    name = _policy(1.0, on_tick_done)
    simulate(scenario(strategy={"autoscaler": name}), workload([0.0], [100], [5]))


def _small(name, *, rate=2.0, batch=4000, cap=6, initial=3, minutes=20, batch_ttft_s=3600.0, **params):
    dep = S.deployment("8b")
    parts = [S.interactive_part(dep["model"], rate, (minutes - 5) * 60.0, cv=4.0), S.batch_part(dep["model"], batch, 60.0)]
    d = S.scenario(parts=parts, dep=dep, initial=initial, cap=cap, max_time_s=minutes * 60.0,
                   strategy=S.strategy(name, **params))
    d["slo"]["ttft_s"]["NIW"] = batch_ttft_s
    sc = parse_scenario(d)
    sim = Simulator(sc, build_workload(sc))
    sim.run()
    return sim


def test_chiron_end_to_end_interactive_never_queued_batch_added_at_once_and_retired_when_idle():
    # 60,000 batch requests due within 10 min of their arrival: the mixed instances alone cannot make it
    sim = _small("chiron", batch=60000, batch_ttft_s=600.0, cap=16, minutes=30, batch_tick_s=5.0)
    pol = sim.autoscaler
    tier = sim.workload.tier
    done = np.asarray(sim.state.t_done)
    # every batch request finished within the 1 h TTFT and nothing was dropped
    assert np.isfinite(done).all()
    # the batch autoscaler added instances and retired them when idle
    adds = [e for e in pol.events if e[1] == "add" and e[2] == "batch"]
    assert adds
    assert any(e[1] == "remove" and e[2] == "batch" for e in pol.events)
    assert not [i for i in sim.endpoints[0].serving if i.kind == "batch"]
    # interactive requests never sat in the global queue; batch ones never ran on interactive instances
    assert pol.queued() == 0
    for inst in sim.instances:
        if inst.kind == "interactive":
            assert state_of(inst).nb == 0
    # batch requests were preempted on mixed instances for interactive ones and finished anyway
    assert int(np.asarray(sim.state.preempted)[tier == 2].sum()) > 0
    assert not pol.evicting and not pol.home


def test_without_the_global_queue_batch_requests_are_dispatched_at_once():
    sim = _small("chiron-utilisation", batch=2000, minutes=10)
    assert sim.autoscaler.queued() == 0 and not [e for e in sim.autoscaler.events if e[2] == "batch"]
    assert {i.kind for i in sim.instances} <= {"interactive", "mixed"}


def test_llumnix_batch_fixes_every_instance_batch_size():
    sim = _small("llumnix", batch=2000, minutes=10, max_batch=64)
    assert {i.max_b for i in sim.instances if i.state != 0} == {64}


def _fake_fleet(free_slots):
    from simulations.engine.core.entities import SERVING
    spec = SimpleNamespace(decode=SimpleNamespace(c0=0.01, c_batch=0.0002, c_ctx=1e-7), max_batch_size=256,
                           startup=SimpleNamespace(spot_reclaim_s=30.0))
    mixed = SimpleNamespace(kind="mixed", state=SERVING, cap=400_000, spec=spec, iid=0, B=100, it=0, policy_state={})
    st = state_of(mixed)
    st.nb, st.started, st.prev_thr, st.limit = 100, True, 1000.0, 256  # measured at 1,000 tok/s
    ep = SimpleNamespace(serving=[mixed], provisioning=[], max_instances=1 + free_slots, n_active=1, spec=spec,
                         name="r1/toy", eid=0)
    added = []

    def scale_out(ep_, now):
        if ep_.n_active >= ep_.max_instances:
            return None
        inst = SimpleNamespace(kind="", policy_state={}, iid=len(added) + 1)
        added.append(inst)
        ep_.n_active += 1
        return inst

    sim = FakeView(prompts=np.full(10, 100), scale_out=scale_out)
    return sim, ep, added


@pytest.mark.parametrize("free_slots, expected", [(40, 5), (3, 3)])
def test_algorithm_2_adds_the_smallest_number_of_batch_instances_that_clears_bbp_at_once(free_slots, expected):
    # one mixed instance measured at 1,000 tok/s; 200,000 batch requests queued at t=0 with a 1 h TTFT SLO; mean
    # output 100 tokens. The tail waits for 199,999 x 100 tokens: (19,999,900 - 30 s x 1,000) / (1,000 (1 + n))
    # + 30 <= 3,600 needs 1 + n >= 5.59 -> n = 5 new instances (each 1,000 tok/s after their 30 s load), at once
    from simulations.engine.policies.chiron.policy import Chiron
    pol = Chiron({"z": 0.0, "measure_first_s": 0}, np.random.default_rng(0))
    sim, ep, added = _fake_fleet(free_slots)
    eb = pol.batch_of(ep)
    for _ in range(30):
        eb.out_stats.add(100.0)
    eb.r_new = 1000.0
    for rid in range(200_000):
        eb.queue.push(rid, 0.0, 3600.0)
    pol._batch_tick(sim, ep, 0.0)
    assert len(added) == expected and {i.kind for i in added} == {"batch"}
    assert [e[3] for e in pol.events if e[1] == "add"] == [expected]  # one step
    # with 4 the tail would be late, with 5 not (the hand computation above)
    assert pol._wait(19_999_900, 1000.0, 4, 1000.0, 30.0) > 3600 >= pol._wait(19_999_900, 1000.0, 5, 1000.0, 30.0)


def test_the_approximate_llumnix_dispatch_matches_the_exact_one_when_prompts_are_equal():
    # with every prompt the same length the estimate (queued x mean prompt) is exact: same decisions, same run
    dep = S.deployment("8b")
    runs = []
    for router in ("llumnix", "llumnix-approx"):
        d = S.scenario(parts=[{"kind": "poisson", "rate_rps": 20.0, "duration_s": 120.0, "tier": "IW-F",
                               "model": dep["model"], "region": "r1",
                               "lengths": {"input": {"fixed": 300}, "output": {"quantiles": {"p5": 5, "p50": 87,
                                                                                          "p95": 632}}}}],
                       dep=dep, initial=3, cap=3, max_time_s=400.0,
                       strategy={**S.strategy("llumnix", approx_queue=False), "instance_router": router})
        r = simulate(parse_scenario(d))
        runs.append(r.requests["done_s"])
    assert np.array_equal(runs[0], runs[1])


def test_llumnix_like_migrates_queued_requests_to_new_instances():
    # 3,000 requests dumped on 1 instance; the scaler adds instances one at a time: without migration they only
    # see later arrivals, with it the queue is spread and the dump finishes sooner
    dep = S.deployment("8b")
    ends = {}
    for migrate in (False, True):
        d = S.scenario(parts=[S.batch_part(dep["model"], 3000, 0.0)], dep=dep, initial=1, cap=4, max_time_s=3600.0,
                       strategy=S.strategy("llumnix", migrate=migrate))
        sc = parse_scenario(d)
        sim = Simulator(sc, build_workload(sc))
        sim.run()
        ends[migrate] = float(np.nanmax(np.asarray(sim.state.t_done)))
        served = {int(i) for i in np.asarray(sim.state.served_inst)}
        assert (len(served) > 1) == migrate
    assert ends[True] < 0.8 * ends[False]


def test_chiron_takes_the_same_decisions_in_fast_and_reference_mode():
    # the hooks fire at the same events in both modes and every signal Chiron reads is exact in both, so the runs
    # agree (completion times to float rounding, 6e-13 s measured) and every scaling decision is the same
    dep = S.deployment("8b")
    out = {}
    for mode in ("fast", "reference"):
        d = S.scenario(parts=[S.interactive_part(dep["model"], 2.0, 300.0, cv=4.0), S.batch_part(dep["model"], 3000, 60.0)],
                       dep=dep, initial=3, cap=6, max_time_s=900.0, strategy=S.strategy("chiron"))
        d["engine"]["mode"] = mode
        sc = parse_scenario(d)
        sim = Simulator(sc, build_workload(sc))
        sim.run()
        out[mode] = (np.asarray(sim.state.t_done).copy(), list(sim.autoscaler.events))
    assert out["fast"][1] == out["reference"][1] and out["fast"][1]
    np.testing.assert_allclose(out["fast"][0], out["reference"][0], rtol=0, atol=1e-9)


def test_algorithm_2_adds_one_batch_instance_for_a_short_queue_on_an_endpoint_with_no_batch_capacity():
    # the endpoint's only instance is interactive (Theta 0): 10 requests queued, due in 1 h. One new batch instance
    # serves the head after its 30 s load and the tail 9 x 100 tokens later (BBP(1) = 0): one is added, not every
    # free slot (the head's wait was read as infinite whatever was added)
    from simulations.engine.policies.chiron.policy import Chiron
    pol = Chiron({"z": 0.0, "measure_first_s": 0}, np.random.default_rng(0))
    sim, ep, added = _fake_fleet(5)
    ep.serving[0].kind = "interactive"
    eb = pol.batch_of(ep)
    for _ in range(30):
        eb.out_stats.add(100.0)
    for rid in range(10):
        eb.queue.push(rid, 0.0, 3600.0)
    pol._batch_tick(sim, ep, 0.0)
    assert len(added) == 1 and added[0].kind == "batch"
    assert pol._wait(0.0, 0.0, 1, 1000.0, 30.0) == 30.0 and pol._wait(0.0, 0.0, 0, 1000.0, 30.0) == math.inf


@pytest.mark.parametrize("ttft, expected", [(3600.0, 0), (600.0, 3)])
def test_algorithm_2_waits_for_a_measured_theta_unless_a_deadline_is_near(ttft, expected):
    # Theta not measured yet (no batch dispatched): with every deadline more than measure_first_s (900 s) away
    # nothing is added; a group due in 600 s is acted on with the prior (all 3 free slots: 200,000 x 100 tokens
    # cannot be done in 600 s by 4 instances at 1,000 tok/s)
    from simulations.engine.policies.chiron.policy import Chiron
    pol = Chiron({"z": 0.0}, np.random.default_rng(0))
    sim, ep, added = _fake_fleet(3)
    eb = pol.batch_of(ep)
    for _ in range(30):
        eb.out_stats.add(100.0)
    eb.r_new = 1000.0
    for rid in range(200_000):
        eb.queue.push(rid, 0.0, ttft)
    pol._batch_tick(sim, ep, 0.0)
    assert len(added) == expected


def test_theta_is_the_batch_share_of_the_tokens_generated_in_the_last_window():
    # a mixed instance running 30 batch + 10 interactive requests closes a 1 s local window with 40 x 20 = 800
    # tokens: 800 x 30/40 = 600 batch tokens; two 60 s windows after the first batch dispatch Theta = 600 / 60
    from simulations.engine.policies.chiron.policy import Chiron
    pol = Chiron({"theta_from": "generated"}, np.random.default_rng(0))
    inst = _engine_instance(256)
    st = state_of(inst)
    st.ni, st.nb, st.itl = 10, 30, {0.2: 10, 2.0: 30}
    pol.local.start(inst, 0.0)
    inst.B = 40
    st.last_b = 40
    sim = SimpleNamespace(set_max_batch=lambda *a: None)
    eb = pol.batch_of(inst.endpoint)
    eb.first_batch_t = 0.0
    inst.it = 20
    pol.on_batch_change(sim, inst, 119.5)
    assert eb.gen_tok and eb.gen_tok[-1] == (119.5, 600.0)
    assert pol.observed_theta(eb, 119.9) is None  # not two windows yet
    assert pol.observed_theta(eb, 120.0) == pytest.approx(10.0)
    assert pol.observed_theta(eb, 180.0) == 0.0  # the window slid past it


def test_the_interactive_scale_in_retires_batch_only_mixed_instances_never_one_running_interactive_requests():
    # 6 interactive/mixed instances, one running interactive requests: IBP 1/6 < 1/3 - 0.1 -> ceil(1 / (1/3)) = 3
    # kept; the 3 removed: the idle interactive one first, then the mixed ones with the fewest (batch) requests
    from simulations.engine.core.entities import SERVING
    from simulations.engine.policies.chiron.policy import Chiron
    pol = Chiron({}, np.random.default_rng(0))

    def inst(iid, kind, ni, nb):
        i = SimpleNamespace(iid=iid, kind=kind, state=SERVING, swapped=[], policy_state={})
        state_of(i).ni, state_of(i).nb = ni, nb
        return i
    fleet = [inst(0, "interactive", 5, 0), inst(1, "interactive", 0, 0), inst(2, "mixed", 0, 900),
             inst(3, "mixed", 0, 100), inst(4, "mixed", 0, 500), inst(5, "mixed", 0, 300)]
    ep = SimpleNamespace(serving=list(fleet), provisioning=[], min_instances=1, name="r1/toy")
    drained = []
    sim = FakeView(drain=lambda i, now, donate: (drained.append(i.iid), ep.serving.remove(i)),
                   request_count=lambda i: state_of(i).ni + state_of(i).nb)
    pol._interactive_tick(sim, ep, 0.0)
    assert drained == [1, 3, 5]
    assert pol.events[-1][1:4] == ("remove", "interactive/mixed", 3)


def test_theta_by_default_is_the_output_tokens_of_batch_requests_completed_in_the_last_window():
    # two batch requests of 100 and 500 output tokens complete at 100 s and 150 s: at 150 s Theta = 600 / 60 = 10;
    # at 170 s the first left the 60 s window: 500 / 60; interactive completions do not count
    from simulations.engine.policies.chiron.policy import Chiron
    pol = Chiron({}, np.random.default_rng(0))
    inst = _inst(256)
    st = state_of(inst)
    st.ni, st.nb, st.itl = 1, 2, {0.2: 1, 2.0: 2}
    sim = FakeView(tiers=[2, 2, 0], outputs=[100, 500, 999])
    eb = pol.batch_of(inst.endpoint)
    eb.first_batch_t = 0.0
    pol.on_complete(sim, inst, 0, 100.0)
    pol.on_complete(sim, inst, 2, 120.0)
    pol.on_complete(sim, inst, 1, 150.0)
    assert pol.observed_theta(eb, 150.0) == pytest.approx(10.0)
    assert pol.observed_theta(eb, 170.0) == pytest.approx(500 / 60)
    assert st.nb == 0 and st.ni == 0
