"""Django-free fleet simulator for LLM serving (SageServe-style multi-region fleets).

    from simulations.engine import parse_scenario, build_workload, simulate
    scenario = parse_scenario(json.load(open("fixtures/scenarios/code_anchor.json")))
    result = simulate(scenario)          # SimulationResult; result.to_dict() is JSON-able

Importing the package loads only the compiled-build switch; the names below load their modules on first use, so
``python -m simulations.engine.run`` can set its process up (one BLAS thread) before numpy loads.
"""

from __future__ import annotations

import time
from importlib import import_module
from typing import TYPE_CHECKING

from simulations.engine import accel as _accel

BUILD = _accel.activate()  # before any subpackage import: each puts a fresh compiled build first on its path

_LAZY = {
    "SimulationResult": "simulations.engine.results.metrics",
    "DeploymentSpec": "simulations.engine.scenario.config",
    "ScenarioError": "simulations.engine.scenario.config",
    "Scenario": "simulations.engine.simulator.scenario",
    "build_workload": "simulations.engine.simulator.scenario",
    "parse_scenario": "simulations.engine.simulator.scenario",
    "Workload": "simulations.engine.workload.workload",
}

if TYPE_CHECKING:
    from simulations.engine.results.metrics import SimulationResult
    from simulations.engine.scenario.config import DeploymentSpec, ScenarioError  # noqa: F401
    from simulations.engine.simulator.scenario import Scenario, build_workload, parse_scenario  # noqa: F401
    from simulations.engine.workload.workload import Workload


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


def simulate(scenario: Scenario, workload: Workload | None = None, *, progress=None) -> SimulationResult:
    """Run one scenario. ``progress(fraction, message)`` is called by simulated time (may raise to cancel)."""
    from simulations.engine.results.energy import add_energy
    from simulations.engine.results.metrics import build_result
    from simulations.engine.results.validity import add_validity
    from simulations.engine.simulator.loop import Simulator
    from simulations.engine.simulator.scenario import build_workload

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
