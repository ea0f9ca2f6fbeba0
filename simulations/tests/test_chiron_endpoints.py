"""Chiron in a two-model fleet: each endpoint's batch requests wait in that endpoint's queue, are served by its
instances only, and are neither held behind nor served on the other model's capacity; Alg. 2 scales the endpoint
whose queue needs it."""

from __future__ import annotations

import numpy as np

from simulations.engine.policies.chiron import scenarios as S
from simulations.engine.simulator.loop import Simulator
from simulations.engine.simulator.scenario import build_workload, parse_scenario


def _two_models():
    """One region, an 8B endpoint given a 30,000-request batch dump due in 10 min (its mixed instances alone
    cannot make it: Alg. 2 must add batch instances) and a 70B endpoint with 200 batch requests that arrive a
    minute after the dump (its own instances have room for them at once)."""
    a, b = S.deployment("8b"), S.deployment("70b", tp=4)
    d = S.scenario(parts=[S.interactive_part(a["model"], 1.0, 1200.0, cv=4.0), S.batch_part(a["model"], 30000, 60.0),
                          S.interactive_part(b["model"], 0.3, 1200.0), S.batch_part(b["model"], 200, 120.0)],
                   dep=a, initial=2, cap=10, max_time_s=1800.0, strategy=S.strategy("chiron", batch_tick_s=5.0))
    d["deployments"][b["name"]] = b
    d["fleet"]["regions"][0]["spot_pool"][b["model"]] = 4
    d["fleet"]["endpoints"].append({"region": "r1", "model": b["model"], "deployment": b["name"], "initial": 2,
                                    "min": 1, "max": 4})
    d["slo"]["ttft_s"]["NIW"] = 600.0
    sc = parse_scenario(d)
    sim = Simulator(sc, build_workload(sc))
    sim.run()
    return sim


def test_batch_requests_wait_and_run_on_their_own_endpoint_only():
    sim = _two_models()
    w = sim.workload
    model = np.asarray(w.model_names)[np.asarray(w.model)]
    served = np.asarray(sim.state.served_inst)
    by_iid = {i.iid: i for i in sim.instances}
    niw = np.asarray(w.tier) == 2
    assert (served[niw] >= 0).all()
    # every batch request ran on an instance of its own model (and every request at all)
    inst_model = np.array([by_iid[int(i)].endpoint.model for i in served])
    assert (inst_model == model).all(), f"{int((inst_model != model).sum())} requests on another model's instance"
    done = np.asarray(sim.state.t_done)
    assert np.isfinite(done).all()
    # the 70B batch requests are not held behind the 8B dump: its own instances take them within seconds
    big = niw & (model == sim.endpoints[1].model)
    wait = np.asarray(sim.state.t_first)[big] - np.asarray(w.arrival_s)[big]
    assert wait.max() < 60.0, f"70B batch requests waited up to {wait.max():.0f} s"
    # Alg. 2 scaled the 8B endpoint, whose queue needed it, and never the 70B one (its queue drained on its own)
    kinds = {ep.model: {i.kind for i in sim.instances if i.endpoint is ep} for ep in sim.endpoints}
    assert "batch" in kinds[sim.endpoints[0].model]
    assert "batch" not in kinds[sim.endpoints[1].model]
    assert sim.autoscaler.queued() == 0
