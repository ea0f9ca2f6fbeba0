"""Django-free fleet simulator for LLM serving (SageServe-style multi-region fleets).

    from simulations.engine import parse_scenario, build_workload, simulate
    scenario = parse_scenario(json.load(open("fixtures/scenarios/code_anchor.json")))
    result = simulate(scenario)          # SimulationResult; result.to_dict() is JSON-able
"""

from __future__ import annotations

import time

from simulations.engine import accel as _accel

BUILD = _accel.activate()  # before any subpackage import: each puts a fresh compiled build first on its path

from simulations.engine.results.energy import add_energy  # noqa: E402
from simulations.engine.results.metrics import SimulationResult, build_result  # noqa: E402
from simulations.engine.results.validity import add_validity  # noqa: E402
from simulations.engine.scenario.config import DeploymentSpec, ScenarioError  # noqa: E402, F401
from simulations.engine.scenario.scenario import Scenario, build_workload, parse_scenario  # noqa: E402, F401
from simulations.engine.workload.workload import Workload  # noqa: E402, F401


def simulate(scenario: Scenario, workload: Workload | None = None, *, progress=None) -> SimulationResult:
    """Run one scenario. ``progress(fraction, message)`` is called by simulated time (may raise to cancel)."""
    from simulations.engine.core.loop import Simulator

    start = time.perf_counter()
    if workload is None:
        workload = build_workload(scenario)
    sim = Simulator(scenario, workload, progress=progress)
    sim.run()
    wall = time.perf_counter() - start
    result = build_result(sim, wall)
    add_energy(result, scenario)  # kWh and energy cost from the usage rows (simulations/engine/results/energy.py)
    add_validity(result, sim.fleet, workload)  # share beyond context limits / fitted ranges (validity.py)
    return result
