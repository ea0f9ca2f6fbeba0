"""What the scaling signal counts (deployment ``signal_reserve_output`` / ``signal_queued``).

Hand-checked values on one instance, the batching engine's counters checked against a recount from the instance's
own lists at every tick of a preempting, chunked and unchunked run in both modes, and admission left on the true KV.
The defaults' identity with the earlier engine is checked by tests/benchmarks/check_default_digest.py (digest of
the default scenarios) and check_fast_vs_reference.py."""

from __future__ import annotations

import numpy as np
import pytest

from simulations.engine import simulate
from simulations.engine.core.view import PolicyView
from simulations.engine.policies.autoscalers import Autoscaler
from simulations.engine.policies.registry import PolicyKind, register
from simulations.engine.simulator import loop
from simulations.tests.engine_helpers import scenario, workload

MISMATCHES: list = []


@register(PolicyKind.AUTOSCALER, "test-signal-audit")
class SignalAudit(Autoscaler):
    """Recounts every serving or draining instance's signal counters from its lists at every tick. An audit of the
    engine's own state, not a policy: the test hands it the simulator instead of the policy view."""

    tick_s = 0.05

    def on_tick(self, sim, now):
        inp, out, gen = sim.state.req_inp, sim.state.req_out, sim.state.gen
        for inst in sim.instances:
            res = sum(int(inp[r] + out[r]) for r in inst.running)
            res += sum(int(inp[e[0]] + out[e[0]]) for e in inst.prefilling)
            q = sum(int(inp[e[2]] + gen[e[2]]) for e in inst.waiting)
            if (inst.res_tok, inst.q_tok) != (res, q):
                MISMATCHES.append((now, inst.iid, inst.res_tok, res, inst.q_tok, q))


def _series(spec, wl, **kw):
    r = simulate(scenario(spec=spec, timeline_step_s=1.0, **kw), wl)
    return np.asarray(r.timeline["series"]["utilisation"][0]), r


def test_reserving_the_output_counts_prompt_plus_whole_output_from_admission():
    # one request, prompt 2,000, output 1,000, KV 100,000: while it decodes the KV in use grows from 2,000 to
    # 3,000 tokens (2 % -> 3 %); reserving its output, the signal reads 3 % from admission to completion
    wl = workload([0.0], [2000], [1000])
    plain, r = _series({}, wl)
    reserved, r2 = _series({"signal_reserve_output": True}, wl)
    assert r.summary["completed"] == r2.summary["completed"] == 1
    busy = plain > 0
    assert busy.sum() >= 5
    assert np.allclose(reserved[busy], 0.03) and plain[busy].min() >= 0.02 and plain[busy].mean() < 0.026
    # the run itself (admission, latency) is the same: only the signal changed
    assert r.summary["ttft"] == r2.summary["ttft"]


def test_queued_prompts_count_in_the_signal_but_not_in_admission():
    # batch size 1: of two 1,000-token prompts arriving at 0, the second waits until the first is done (~10 s);
    # counting queued prompts adds its 1,000 tokens (1 % of 100,000) to the signal while it waits
    wl = workload([0.0, 0.0], [1000, 1000], [1000, 1000])
    spec = {"max_batch_size": 1}
    plain, r = _series(spec, wl)
    queued, r2 = _series(dict(spec, signal_queued=True), wl)
    diff = queued - plain
    # at t=0 both prompts are still queued (2 %), from t=1 only the second (1 %), then none
    assert np.isclose(diff[0], 0.02) and np.isclose(diff[1:].max(), 0.01) and np.isclose(diff.min(), 0.0)
    assert (diff[1:] > 0).sum() >= 3  # seconds during which the second request waited
    assert r.summary["ttft"] == r2.summary["ttft"]


def test_both_counts_add_up_and_combine_with_the_signal_kv_size():
    wl = workload([0.0, 0.0], [1000, 1000], [1000, 1000])
    spec = {"max_batch_size": 1, "signal_reserve_output": True, "signal_queued": True}
    both, _ = _series(spec, wl)
    mha, _ = _series(dict(spec, signal_kv_tokens=25_000), wl)  # 4x
    # at t=1: the first request reserved 2,000, the second's 1,000-token prompt waits: 3 %
    assert np.isclose(both[1], 0.03)
    assert np.allclose(mha, 4 * both, atol=3e-4)


def test_the_signal_drives_scaling_with_admission_on_the_true_kv():
    # reactive scale-out at > 70 %, checked at each arrival: 40 requests of 1,000 + 2,000 tokens, one every 0.5 s,
    # on a 100,000-token instance hold < 50 % of the true KV by the last arrival, but reserve up to 120 %: only
    # the reserving signal scales out
    n = 40
    wl = workload([0.5 * i for i in range(n)], [1000] * n, [2000] * n)
    strat = {"autoscaler": "reactive-unified", "params": {"scale_in_below": 0.0}}
    plain = simulate(scenario(initial=1, hi=2, spot={"toy": 1}, strategy=strat), wl)
    res = simulate(scenario(spec={"signal_reserve_output": True}, initial=1, hi=2, spot={"toy": 1},
                            strategy=strat), wl)
    outs = [e for e in res.scaling_events if e["action"] == "scale_out"]
    assert not [e for e in plain.scaling_events if e["action"] == "scale_out"] and outs
    assert plain.summary["completed"] == res.summary["completed"] == n


class _SeesAll(PolicyView):
    """The policy view, plus everything else of the simulator (the audit's recount reads its internals)."""

    __slots__ = ()

    def __getattr__(self, name):
        return getattr(self._sim, name)


@pytest.mark.parametrize("mode", ["fast", "reference"])
@pytest.mark.parametrize("chunked", [False, True])
def test_the_counters_match_a_recount_at_every_tick(mode, chunked, monkeypatch):
    monkeypatch.setattr(loop, "PolicyView", _SeesAll)  # the audit reads what no policy may see
    # a small KV (6,000 tokens) with long outputs: preemptions (recompute), a waiting queue and chunked prefill
    rng = np.random.default_rng(7)
    n = 120
    arr = np.sort(rng.uniform(0, 20, n))
    wl = workload(arr.tolist(), rng.integers(50, 900, n).tolist(), rng.integers(20, 700, n).tolist())
    MISMATCHES.clear()
    r = simulate(scenario(spec={"kv_capacity_tokens": 6000, "max_batch_size": 16, "max_batch_tokens": 2048,
                                "signal_reserve_output": True, "signal_queued": True},
                          mode=mode, strategy={"autoscaler": "test-signal-audit"},
                          engine={"mode": mode, "timeline_step_s": 1.0, "chunked_prefill": chunked}), wl)
    assert r.summary["completed"] == n
    assert r.summary["preemptions"] > 0  # the recompute path was exercised
    assert MISMATCHES == []


def test_the_signal_options_give_the_same_run_in_fast_and_reference_mode():
    rng = np.random.default_rng(11)
    n = 300
    arr = np.sort(rng.uniform(0, 120, n))
    wl = workload(arr.tolist(), rng.integers(100, 2000, n).tolist(), rng.integers(50, 1500, n).tolist())
    spec = {"kv_capacity_tokens": 40_000, "signal_reserve_output": True, "signal_queued": True}
    strat = {"autoscaler": "reactive-unified", "params": {}}
    runs = [simulate(scenario(spec=spec, initial=1, hi=4, spot={"toy": 4}, strategy=strat, mode=m), wl)
            for m in ("fast", "reference")]
    f, r = runs
    assert [(e["t"], e["action"]) for e in f.scaling_events] == [(e["t"], e["action"]) for e in r.scaling_events]
    assert len(f.scaling_events) >= 2
    assert f.summary["gpu_hours"] == pytest.approx(r.summary["gpu_hours"], rel=1e-9)
    assert np.allclose(f.requests["ttft_s"], r.requests["ttft_s"], rtol=1e-9, atol=1e-9, equal_nan=True)


def test_a_non_boolean_signal_option_is_refused():
    from simulations.engine.scenario.config import ScenarioError

    with pytest.raises((ScenarioError, ValueError)):
        scenario(spec={"signal_queued": "yes"})
