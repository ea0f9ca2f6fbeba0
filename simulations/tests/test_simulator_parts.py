"""The Simulator owns its run state, instance engine, request path, fleet life cycle and policy API as parts
(attributes), not base classes; the parts share the one run state; the policy view's verbs are bound methods of
those parts."""

from __future__ import annotations

from simulations.engine.core.control import PolicyAPI
from simulations.engine.core.state import RunState
from simulations.engine.core.view import VERBS
from simulations.engine.fleet.arrivals import RequestPath
from simulations.engine.fleet.fleet import FleetLifecycle
from simulations.engine.instance.batching import InstanceEngine
from simulations.engine.instance.kvcache import KVManager
from simulations.engine.simulator.loop import Simulator
from simulations.tests.engine_helpers import scenario, workload


def test_the_simulator_holds_its_parts_and_inherits_none_of_them():
    assert Simulator.__mro__ == (Simulator, object)
    assert RunState not in InstanceEngine.__mro__ and InstanceEngine.__mro__[-2] is KVManager
    sim = Simulator(scenario(), workload([0.0, 0.5], [100, 100], [20, 20]))
    parts = {"routing": RequestPath, "lifecycle": FleetLifecycle, "control": PolicyAPI}
    for name, cls in parts.items():
        assert type(getattr(sim, name)) is cls and getattr(sim, name).sim is sim, name
    owners = {id(getattr(sim, name)) for name in parts}
    for verb in VERBS:
        assert id(getattr(sim.policy_view, verb).__self__) in owners, verb
    assert type(sim.state) is RunState and type(sim.instance_engine) is InstanceEngine
    for part in (sim.instance_engine, sim.routing):  # one run state, held by every part that reads it
        assert part.st is sim.state
    assert sim.instance_engine.control is sim.control and sim.instance_engine.lifecycle is sim.lifecycle
    assert all(ep.clock is sim.state for ep in sim.endpoints)
    sim.run()
    assert int(sim.state.n_done) == 2 and sim.now == sim.state.now > 0
