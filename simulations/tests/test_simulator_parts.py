"""The Simulator owns its request path, fleet life cycle and policy API as parts (attributes), not base classes,
and the policy view's verbs are bound methods of those parts."""

from __future__ import annotations

from simulations.engine.core.control import PolicyAPI
from simulations.engine.core.loop import Simulator
from simulations.engine.core.view import VERBS
from simulations.engine.fleet.arrivals import RequestPath
from simulations.engine.fleet.fleet import FleetLifecycle
from simulations.tests.engine_helpers import scenario, workload


def test_the_simulator_holds_its_parts_and_inherits_none_of_them():
    assert not {RequestPath, FleetLifecycle, PolicyAPI} & set(Simulator.__mro__)
    sim = Simulator(scenario(), workload([0.0, 0.5], [100, 100], [20, 20]))
    parts = {"routing": RequestPath, "lifecycle": FleetLifecycle, "control": PolicyAPI}
    for name, cls in parts.items():
        assert type(getattr(sim, name)) is cls and getattr(sim, name).sim is sim, name
    owners = {id(getattr(sim, name)) for name in parts}
    for verb in VERBS:
        assert id(getattr(sim.policy_view, verb).__self__) in owners, verb
    sim.run()
    assert int(sim.n_done) == 2
