"""The capacity-plan schema: unknown keys with a suggestion, strict types, finite ranges (Django-free)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from planner.optimizer.scenario import ScenarioError, parse_scenario

ROOT = Path(__file__).resolve().parents[3]
PLAN = json.loads((ROOT / "fixtures" / "plans" / "small_two_regions.json").read_text())


def refused(mutate) -> ScenarioError:
    d = copy.deepcopy(PLAN)
    mutate(d)
    with pytest.raises(ScenarioError) as info:
        parse_scenario(d)
    return info.value


@pytest.mark.parametrize("path", sorted((ROOT / "fixtures" / "plans").glob("*.json")), ids=lambda p: p.stem)
def test_every_bundled_plan_passes_the_schema(path):
    parse_scenario(json.loads(path.read_text()))


def test_quota_for_quotas_is_refused_with_a_suggestion():
    err = refused(lambda d: d.update(quota=d.pop("quotas")))
    assert err.field == "quota" and "unknown key" in err.message and err.hint == "did you mean 'quotas'?"


@pytest.mark.parametrize("mutate, where", [
    (lambda d: d["demand"][0].update(tps="1"), "demand[0].tps"),
    (lambda d: d["demand"][0].update(tps=[1.0, float("nan")]), "demand[0].tps[1]"),
    (lambda d: d["gpus"]["h100"].update(on_demand=float("inf")), "gpus.h100.on_demand"),
    (lambda d: d["quotas"][0].update(max_gpus=2**70), "quotas[0].max_gpus"),
    (lambda d: d["quotas"][0].update(max_gpus=True), "quotas[0].max_gpus"),
    (lambda d: d["deployments"][0].update(theta_tps=-1), "deployments[0].theta_tps"),
    (lambda d: d.update(hours=1000), "hours"),
    (lambda d: d["solver"].update(name="gurobi"), "solver.name"),
    (lambda d: d["rerouting"].update(enabeld=True), "rerouting.enabeld"),
    (lambda d: d["deployments"][0].update(gpu_per_instance=8), "deployments[0].gpu_per_instance"),
])
def test_bad_values_name_their_field(mutate, where):
    assert refused(mutate).field == where


def test_a_misspelt_solver_gets_the_options():
    err = refused(lambda d: d["solver"].update(name="higs"))
    assert "'highs'" in err.message and err.hint == "did you mean 'highs'?"


@pytest.mark.parametrize("mutate, where, message", [
    (lambda d: d.update(regions=[d["regions"][0], d["regions"][0]]), "regions", "has duplicates"),
    (lambda d: d["gpus"].update(h100={"spot": 4.9}), "gpus.h100", "needs an on_demand or a reserved price"),
    (lambda d: d.update(limits=[{"model": "llama3-8b", "region": "eastus", "min_instances": 3, "max_instances": 2}]),
     "limits[0]", "min_instances exceeds max_instances"),
    (lambda d: d["demand"][0].update(quantiles={"high": [1.0]}), "demand[0].quantiles", "is not a number"),
    (lambda d: d["demand"][0].update(quantiles={"1.5": [1.0]}), "demand[0].quantiles", "must be in [0, 1]"),
    (lambda d: d["deployments"][0].update(model="  "), "deployments[0].model", "non-empty"),
])
def test_rules_about_one_object_live_in_the_schema(mutate, where, message):
    from planner.optimizer.schema import PlanSchemaError, validate_plan

    d = copy.deepcopy(PLAN)
    mutate(d)
    with pytest.raises(PlanSchemaError) as info:  # the schema alone refuses it, before any resolution
        validate_plan(d)
    assert info.value.where == where and message in info.value.message
    assert refused(mutate).field == where


def test_the_plan_json_is_validated_once(monkeypatch):
    from planner.optimizer import scenario, schema

    calls = []
    real = schema.PlanInput.model_validate
    monkeypatch.setattr(schema.PlanInput, "model_validate", lambda data: calls.append(1) or real(data))
    sc = parse_scenario(copy.deepcopy(PLAN))
    assert calls == [1] and sc.regions == PLAN["regions"]
    assert not hasattr(scenario, "_num") and not hasattr(scenario, "_req")  # no second, hand-written validator
