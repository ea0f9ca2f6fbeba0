"""The policy registry's name index (registry.WHERE) and the lazy import of policy families."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import simulations.engine.policies as policies_package
from simulations.engine.policies import registry
from simulations.engine.policies.registry import PACKAGE, WHERE, PolicyKind, load_all

ROOT = Path(__file__).resolve().parents[2]


def test_where_names_exactly_the_module_that_registers_each_policy():
    for info in pkgutil.walk_packages(policies_package.__path__, PACKAGE + "."):  # every module, listed or not
        importlib.import_module(info.name)
    load_all()
    for kind in PolicyKind:
        table = registry._TABLES[kind]._classes
        listed = {name for name in WHERE[kind]}
        registered = {name for name, cls in table.items() if cls.__module__.startswith(PACKAGE + ".")
                      and not cls.__module__.split(".")[-1].startswith("test")}
        assert registered - listed == set(), f"{kind.value}: registered but not in registry.WHERE"
        assert listed - registered == set(), f"{kind.value}: in registry.WHERE but registered by no family"
        for name in listed:
            module = f"{PACKAGE}.{WHERE[kind][name]}"
            owner = table[name].__module__
            assert owner == module or owner.startswith(module + "."), f"{kind.value} {name!r} lives in {owner}"


def test_an_unknown_name_is_refused_with_every_known_name():
    from simulations.engine.policies import get_policy
    from simulations.engine.scenario.config import ScenarioError

    try:
        get_policy(PolicyKind.AUTOSCALER, "no-such-scaler")
    except ScenarioError as exc:
        assert exc.field == "strategy.autoscaler" and "'chiron'" in exc.message and "'static'" in exc.message
    else:
        raise AssertionError("an unknown autoscaler was accepted")


def test_a_run_imports_only_the_policy_families_it_uses():
    code = (
        "import json, sys\n"
        "from simulations.engine import parse_scenario, simulate\n"
        "data = json.load(open('fixtures/scenarios/code_anchor.json'))\n"
        "simulate(parse_scenario(data).with_strategy('reactive-unified'))\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('simulations.engine.policies.'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    loaded = {m.split(".")[3] for m in json.loads(out.stdout.splitlines()[-1])}
    assert {"autoscalers", "routers", "schedulers"} <= loaded
    assert not loaded & {"chiron", "aibrix", "preserve", "hpa", "knative_kpa", "dynamo_planner", "longterm"}, loaded
