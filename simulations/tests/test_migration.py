"""Live migration of a running request (control.PolicyAPI.migrate_running) and the ``llumnix-migrate`` policy.

Toy deployment (engine_helpers.SPEC): prefill(T) = 0.1 + 0.001*T; decode(B, C) = 0.01 + 0.001*B + 0.0001*C.
A request with prompt 100 alone: first token at 0.2; decode iterations end at 0.2210, 0.2421, 0.2633, ...
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from simulations.engine import build_workload, parse_scenario, simulate
from simulations.engine.policies import PolicyKind, register
from simulations.engine.policies.autoscalers import Autoscaler
from simulations.tests.engine_helpers import scenario, workload

MODES = ["fast", "reference"]
_names = itertools.count()
ROOT = Path(__file__).resolve().parents[2]


def _policy(tick_s, on_tick):
    name = f"test-mig-{next(_names)}"

    class P(Autoscaler):
        def __init__(self, params, rng):
            super().__init__(params, rng)
            self.state = {}

        def on_tick(self, sim, now):
            on_tick(sim, now, self.state)

    P.tick_s = tick_s
    register(PolicyKind.AUTOSCALER, name)(P)
    return name


def _migrate_once(downtime, errors=None):
    def on_tick(sim, now, state):
        if state.get("done"):
            return
        state["done"] = True
        src = next(i for i in sim.instances if 0 in i.running)
        dst = next(i for i in sim.instances if i is not src)
        if errors is not None:
            for bad in (lambda: sim.migrate_running(0, src, now), lambda: sim.migrate_running(1, dst, now)):
                try:
                    bad()
                except ValueError as exc:
                    errors.append(str(exc))
        sim.migrate_running(0, dst, now, downtime)
        state["src"], state["dst"] = src.iid, dst.iid
        assert sim.migrating(0)
    return on_tick


@pytest.mark.parametrize("mode", MODES)
def test_a_migrated_request_keeps_its_tokens_and_resumes_on_the_destination_after_the_downtime(mode):
    # A (prompt 100, 10 tokens) alone on one of 2 instances; migrate at t=0.25 (inside its third decode iteration,
    # 0.2421-0.2633) with a 5 ms downtime: switch-over at the boundary 0.2633 with 4 tokens generated (KV 103),
    # 0.005 s on the destination, then 6 decode iterations at context 103..108 (0.0213 + ... + 0.0218 = 0.1293).
    errors: list = []
    name = _policy(0.25, _migrate_once(0.005, errors))
    sc = scenario(mode=mode, initial=2, lo=2, hi=2, spec={"kv_bytes_per_token": 1e6}, strategy={"autoscaler": name})
    r = simulate(sc, workload([0.0, 5.0], [100, 10], [10, 2]))
    assert r.requests["ttft_s"][0] == pytest.approx(0.2, abs=1e-12)
    assert r.requests["e2e_s"][0] == pytest.approx(0.2633 + 0.005 + 0.1293, abs=1e-12)
    assert r.requests["tbt_max_s"][0] == pytest.approx(0.005 + 0.0213, abs=1e-12)  # the gap across the switch
    assert r.summary["preemptions"] == 0 and r.summary["migrations"] == 1
    assert int(r.requests["instance"][0]) != -1
    assert len(errors) == 2 and "not another instance" in errors[0] and "not running" in errors[1]
    # without the migration the request ends at 0.2 + 9 iterations (0.1926): the test can fail
    r0 = simulate(scenario(mode=mode, initial=2, lo=2, hi=2), workload([0.0, 5.0], [100, 10], [10, 2]))
    assert r0.requests["e2e_s"][0] == pytest.approx(0.3926, abs=1e-12)


def _rq3(mode: str, rate: float = 14.0, seconds: float = 600.0, sim_out=None, **strategy):
    d = json.loads((ROOT / "fixtures/scenarios/preserve_routing.json").read_text())
    d["workload"]["synthetic"].update(rate_rps=rate, duration_s=seconds)
    d["engine"]["mode"] = mode
    d["strategy"] = {**d["strategy"], "instance_router": "llumnix", "autoscaler": "llumnix-migrate",
                     "params": {"scaling": False}, **strategy}
    sc = parse_scenario(d)
    if sim_out is None:
        return simulate(sc, build_workload(sc))
    from simulations.engine.results.metrics import build_result
    from simulations.engine.simulator.loop import Simulator

    sim = Simulator(sc, build_workload(sc))
    sim.run()
    sim_out.append(sim)
    return build_result(sim, 1.0)


def test_llumnix_migrate_conserves_requests_and_tokens_and_fast_equals_reference():
    sims: list = []
    fast, ref = _rq3("fast", sim_out=sims), _rq3("reference")
    assert fast.summary["migrations"] > 10  # overloaded: migrations happen (else the test proves nothing)
    assert fast.summary["migrations"] == ref.summary["migrations"]
    for key in ("instance", "preemptions"):
        assert np.array_equal(np.asarray(fast.requests[key]), np.asarray(ref.requests[key])), key
    for key in ("e2e_s", "ttft_s", "tbt_max_s"):  # float sums of the two modes differ in the last bits (~1e-11)
        assert np.allclose(np.asarray(fast.requests[key]), np.asarray(ref.requests[key]), rtol=1e-9, atol=0,
                           equal_nan=True), key
    # every request completes exactly once with all its tokens; every instance ends with an empty KV cache
    assert all(fast.requests["completed"]) and fast.summary["dropped"] == 0
    assert fast.summary["requests"] == len(fast.requests["e2e_s"])
    sim = sims[0]
    assert sim.control.migrations() == fast.summary["migrations"]
    for inst in sim.instances:
        assert sim.control.kv_used(inst) == 0 and not inst.running and not inst.swapped and not inst.waiting
    # a migrated request's stint on the destination starts from the tokens it had: its E2E is never shorter than
    # prefill + decode of all its tokens alone (no token skipped) - checked against the isolated run
    assert np.all(np.asarray(fast.requests["e2e_s"]) >= 0.999 * np.asarray(fast.requests["isolated_e2e_s"]))


def test_llumnix_migrate_bad_params_are_a_scenario_error():
    from simulations.engine.scenario.config import ScenarioError

    with pytest.raises(ScenarioError):
        _rq3("fast", seconds=10, params={"scaling": False, "bandwidth_gb_s": 0})
    with pytest.raises(ScenarioError):
        _rq3("fast", seconds=10, params={"migrate_threshold": 3})  # misspelt knob



def test_blocking_copy_stalls_each_migrated_request_for_its_whole_copy(monkeypatch):
    """``blocking_copy``: no pre-copy; each migration switches the request over at once with a downtime of its whole
    KV's copy time, and the request's worst inter-token gap is at least that stall."""
    from simulations.engine.policies.llumnix_migration import LlumnixMigrate

    calls = []
    real = LlumnixMigrate._blocking

    def spy(self, sim, rid, src, dst, ctx, now):
        before = self.stats["migrated"]
        real(self, sim, rid, src, dst, ctx, now)
        if self.stats["migrated"] > before:
            calls.append((rid, sim.migration_copy_s(src, ctx, self.bandwidth) + self.overhead))

    monkeypatch.setattr(LlumnixMigrate, "_blocking", spy)
    r = _rq3("fast", params={"scaling": False, "bandwidth_gb_s": 0.2, "blocking_copy": True})
    # overloaded: migrations happen, every one a blocking copy (one may still wait for its switch-over at the end)
    assert len(calls) > 10 and len(calls) - 1 <= r.summary["migrations"] <= len(calls)
    assert all(r.requests["completed"]) and r.summary["dropped"] == 0
    tbt_max = np.asarray(r.requests["tbt_max_s"])
    stalls = np.array([down for _rid, down in calls])
    assert stalls.max() > 0.5  # long contexts (512 KiB a token) at 0.2 GB/s: stalls far above the switch-over
    assert sum(tbt_max[rid] >= 0.999 * down for rid, down in calls) >= r.summary["migrations"]
    assert np.all(np.asarray(r.requests["e2e_s"]) >= 0.999 * np.asarray(r.requests["isolated_e2e_s"]))
