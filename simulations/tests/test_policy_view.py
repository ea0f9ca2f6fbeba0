"""Policies see the run only through its ``PolicyView`` (simulations/engine/core/view.py).

The check reads every policy module's syntax tree: whatever a policy calls its view (a hook's ``sim`` / ``view``
parameter, ``self.view``, ``self.sim``, a local name bound to one of them) may be used only for the view's members;
no policy module names the endpoints' back reference to the simulator (``clock``), a private attribute of the view,
or a dunder that would unwrap a bound verb; and policy modules import from the engine only the modules a policy
needs (configuration constants, instance states, the view, the registry).
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from simulations.engine.core.view import MEMBERS, PolicyView
from simulations.tests.engine_helpers import scenario, workload

POLICIES = Path(__file__).resolve().parents[1] / "engine" / "policies"
VIEW_NAMES = {"sim", "view"}
FORBIDDEN_ATTRS = {"clock", "_sim", "__self__", "__dict__", "__func__", "__closure__", "__globals__"}
# engine modules a policy module may import (besides simulations.engine.policies.*)
ALLOWED_ENGINE_IMPORTS = {
    "simulations.engine.scenario.config": "tier names, fleet configuration, ScenarioError",
    "simulations.engine.scenario.errors": "ScenarioError",
    "simulations.engine.core.entities": "instance states and the decode-clock arithmetic of an instance",
    "simulations.engine.core.view": "the policy view itself",
    "simulations.engine.workload.generator.lengths": "PreServe's synthetic week fits length quantiles (offline)",
    "simulations.engine": "PreServe's offline profiler runs whole simulations before a run, never inside one",
}


def _is_view(node: ast.AST, aliases: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in VIEW_NAMES or node.id in aliases
    return (isinstance(node, ast.Attribute) and node.attr in VIEW_NAMES and isinstance(node.value, ast.Name)
            and node.value.id == "self")


def violations(source: str, filename: str = "<policy>") -> list[str]:
    """What a policy module's source does outside the view, as ``file:line: message`` strings."""
    tree = ast.parse(source, filename)
    aliases: set[str] = set()
    for node in ast.walk(tree):  # local names bound to the view: ``s = self.view``
        if isinstance(node, ast.Assign) and _is_view(node.value, set()):
            aliases.update(t.id for t in node.targets if isinstance(t, ast.Name))
    out = []
    for node in ast.walk(tree):
        where = f"{filename}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Attribute):
            if node.attr in FORBIDDEN_ATTRS:
                out.append(f"{where}: .{node.attr} reaches past the policy view")
            elif _is_view(node.value, aliases) and node.attr not in MEMBERS:
                out.append(f"{where}: the policy view has no member {node.attr!r}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                "getattr", "setattr", "vars") and node.args and _is_view(node.args[0], aliases):
            out.append(f"{where}: {node.func.id}() on the policy view")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                if (name.startswith("simulations.engine") and not name.startswith("simulations.engine.policies")
                        and name not in ALLOWED_ENGINE_IMPORTS):
                    out.append(f"{where}: imports {name}, an engine module policies do not use")
    return out


def _policy_modules() -> list[Path]:
    return sorted(POLICIES.rglob("*.py"))


def test_the_check_sees_every_policy_module():
    names = {p.relative_to(POLICIES).as_posix() for p in _policy_modules()}
    assert {"autoscalers.py", "routers.py", "schedulers.py", "example.py", "chiron/policy.py",
            "preserve/scaler.py", "longterm.py", "niw_queue.py"} <= names


@pytest.mark.parametrize("path", _policy_modules(), ids=lambda p: p.relative_to(POLICIES).as_posix())
def test_every_policy_module_uses_only_the_policy_view(path):
    assert violations(path.read_text(), path.relative_to(POLICIES).as_posix()) == []


@pytest.mark.parametrize("source, expected", [
    ("def on_tick(self, sim, now):\n    w = sim.workload\n", "no member 'workload'"),
    ("def on_tick(self, sim, now):\n    sim.scaling_events.append({})\n", "no member 'scaling_events'"),
    ("def choose(self, ep):\n    return self.view.req_arr[0]\n", "no member 'req_arr'"),
    ("def on_tick(self, sim, now):\n    s = self.sim\n    s.scenario\n", "no member 'scenario'"),
    ("def on_tick(self, sim, now):\n    sim.endpoints[0].clock.workload\n", ".clock reaches past"),
    ("def on_tick(self, sim, now):\n    sim.dispatch.__self__\n", ".__self__ reaches past"),
    ("def on_tick(self, sim, now):\n    getattr(sim, 'req_tier')\n", "getattr() on the policy view"),
    ("from simulations.engine.core.loop import Simulator\n", "imports simulations.engine.core.loop"),
])
def test_the_check_refuses_a_policy_that_reaches_past_the_view(source, expected):
    found = violations(source)
    assert len(found) == 1 and expected in found[0]


def test_the_check_accepts_the_documented_members():
    source = "def on_tick(self, sim, now):\n" + "".join(f"    sim.{m}\n" for m in sorted(MEMBERS))
    assert violations(source) == []


def test_a_run_hands_policies_a_view_with_every_documented_member_and_nothing_of_the_simulator():
    from simulations.engine.simulator.loop import Simulator

    sim = Simulator(scenario(), workload([0.0, 1.0], [100, 50], [5, 5]))
    view = sim.policy_view
    assert isinstance(view, PolicyView) and sim.instance_router.view is view
    for name in MEMBERS:
        assert hasattr(view, name), name
    for name in ("workload", "scenario", "req_arr", "req_tier", "scaling_events", "heap", "push", "autoscaler"):
        assert not hasattr(view, name), name
    with pytest.raises(AttributeError):
        view.workload = None  # no new attributes either (slots)


def test_the_view_reports_request_information_known_at_arrival_and_output_only_once_finished():
    from simulations.engine.simulator.loop import Simulator

    sim = Simulator(scenario(), workload([0.0, 1.0], [100, 50], [5, 7], tiers=[0, 2]))
    view = sim.policy_view
    assert (view.tier_of(1), view.arrival_s(1), view.prompt_tokens(1), view.model_of(1), view.region_of(1)) == (
        2, 1.0, 50, 0, 0)
    with pytest.raises(ValueError, match="has not finished"):
        view.output_tokens(1)
    sim.run()
    assert view.output_tokens(1) == 7 and view.now == sim.now and view.n_arrived == 2


def test_the_view_reads_a_request_by_any_integer_id_numpy_ones_too():
    from simulations.engine.simulator.loop import Simulator

    sim = Simulator(scenario(), workload([0.0, 1.0], [100, 50], [5, 7], tiers=[0, 2]))
    view = sim.policy_view
    for rid in (1, np.int64(1), np.int32(1)):
        assert (view.tier_of(rid), view.arrival_s(rid), view.prompt_tokens(rid), view.model_of(rid),
                view.region_of(rid)) == (2, 1.0, 50, 0, 0)
        assert view.request_slo(rid) == view.request_slo(1)
