"""The Llumnix-like baseline of the Chiron comparison (``llumnix-batch``, policies/chiron/baselines.py) with its three
``migration`` modes: live migration of running requests (Llumnix's default, the primary baseline), our earlier
queued-request rebalancing, none."""

from __future__ import annotations

import numpy as np
import pytest

from simulations.engine.policies.chiron import scenarios as S
from simulations.engine.policies.chiron.baselines import MeanPrompt
from simulations.engine.results.metrics import build_result
from simulations.engine.scenario.config import ScenarioError
from simulations.engine.simulator.loop import Simulator
from simulations.engine.simulator.scenario import build_workload, parse_scenario
from simulations.tests.engine_helpers import FakeView


def _dump(migration: str, mode: str = "fast", requests: int = 3000, max_time_s: float = 3600.0):
    # ``requests`` batch requests (prompt 300, ShareGPT-like outputs) dumped at t = 0 on the only initial instance;
    # the scaler may add 2 more (cap 3); no later arrivals, so a new instance gets work only by migration
    dep = S.deployment("8b")
    part = S.batch_part(dep["model"], requests, 0.0)
    part["lengths"]["input"] = {"fixed": 300}
    d = S.scenario(parts=[part], dep=dep, initial=1, cap=3, max_time_s=max_time_s,
                   strategy=S.strategy("llumnix", migration=migration, max_batch=256))
    d["engine"]["mode"] = mode
    sc = parse_scenario(d)
    sim = Simulator(sc, build_workload(sc))
    sim.run()
    return sim, build_result(sim, 0.0)


def test_the_default_is_live_migration_and_the_older_knob_still_reads():
    from simulations.engine.policies.chiron.baselines import LlumnixBatch
    rng = np.random.default_rng(0)
    assert LlumnixBatch({}, rng).migration == "live"
    assert LlumnixBatch({}, rng).tick_s == 0.05  # AlibabaPAI/llumnix default POLLING_INTERVAL
    assert LlumnixBatch({"migrate": True}, rng).migration == "queued"
    assert LlumnixBatch({"migrate": False}, rng).migration == "none"
    assert LlumnixBatch({"migration": "none"}, rng).tick_s == 10.0
    with pytest.raises(ScenarioError):
        LlumnixBatch({"migration": "running"}, rng)


def test_live_migration_moves_running_requests_only_and_loses_none():
    sim, res = _dump("live")
    pol = sim.autoscaler
    served = np.asarray(sim.state.served_inst)
    moved = int((served != 0).sum())  # every request was dispatched to instance 0 (the only one at t = 0)
    assert sim.control.migrations() > 0 and moved > 0
    # a request ends elsewhere only through a live migration (queued rebalancing would move ~2,700 at the first
    # scale-out with none counted); every switch-over done is one the loop ordered (an ordered one whose
    # destination stopped serving resumes on its source)
    assert moved <= sim.control.migrations() <= pol.live.stats["migrated"]
    assert pol.migrated == 0
    assert res.summary["completed"] == res.summary["requests"] == 3000 and res.summary["dropped"] == 0
    assert int(np.asarray(res.requests["preemptions"]).sum()) == 0  # a migration is not a preemption


def test_queued_rebalancing_moves_waiting_requests_without_live_migration_and_none_moves_nothing():
    sim, _ = _dump("queued")
    assert sim.control.migrations() == 0 and sim.autoscaler.migrated > 0
    assert (np.asarray(sim.state.served_inst) != 0).sum() > 1000
    sim, _ = _dump("none")
    assert sim.control.migrations() == 0 and sim.autoscaler.migrated == 0
    assert set(np.asarray(sim.state.served_inst).tolist()) == {0}


def test_live_migration_takes_the_same_decisions_in_fast_and_reference_mode():
    out = {}
    for mode in ("fast", "reference"):
        sim, res = _dump("live", mode, max_time_s=200.0)
        out[mode] = (np.asarray(sim.state.t_done).copy(), np.asarray(sim.state.served_inst).copy(), sim.control.migrations(),
                     list(sim.autoscaler.decisions))
    assert out["fast"][2] == out["reference"][2] > 0
    assert out["fast"][3] == out["reference"][3]
    assert np.array_equal(out["fast"][1], out["reference"][1])
    np.testing.assert_allclose(out["fast"][0], out["reference"][0], rtol=1e-9, atol=0)


def test_the_mean_prompt_is_kept_incrementally():
    m, sim = MeanPrompt(), FakeView(prompts=np.array([10, 20, 60, 1000]), n_arrived=0)
    assert m(sim) == 0.0
    sim.n_arrived = 2
    assert m(sim) == 15.0
    sim.n_arrived = 3
    assert m(sim) == 30.0
