"""Validation badges on the simulation, comparison and plan pages: which deployments, how well checked."""

from __future__ import annotations

import pytest

from planner.benchmarks.badges import badges_for, deployment_refs
from planner.benchmarks.models import BenchmarkRun, Validation
from planner.hardware.models import Deployment
from planner.plans.models import CapacityPlan
from simulations.models import SimulationRun

pytestmark = pytest.mark.django_db
NAME = "llama2-70b/h100-80gb/tp4"


def _checked(team, dep):
    run = BenchmarkRun.objects.create(team=team, name="a run", source_format="csv", model_name="m", gpu_name="g",
                                      tp=4, deployment=dep, data={})
    v = Validation.objects.create(team=team, deployment=dep, rows=[], seeds=1,
                                  pooled={"e2e_mean": {"median": 2.5}, "ttft_mean": {"median": 8.25}})
    v.runs.add(run)
    return v


def test_references_of_a_scenario_and_a_plan():
    scenario = {"deployments": {NAME: {"name": NAME}},
                "fleet": {"endpoints": [{"deployment": NAME}, {"deployment": {"name": "inline/x/tp1"}}]}}
    assert [r["label"] for r in deployment_refs(scenario)] == [NAME, "inline/x/tp1"]
    plan = {"deployments": [{"model": "llama2-70b", "gpu": "h100-80gb", "tp": 4}]}
    assert deployment_refs(plan)[0]["label"] == "llama2-70b/h100-80gb/tp4"
    assert deployment_refs(None) == [] and deployment_refs({"fleet": "x"}) == []


def test_badges_say_checked_or_not(cast):
    team = cast.owner.team
    dep = Deployment.objects.get(builtin=True, name=NAME)
    scenario = {"fleet": {"endpoints": [{"deployment": NAME}, {"deployment": {"name": "inline/x/tp1"}}]}}
    before = badges_for(team, scenario)
    assert [b["checked"] for b in before] == [False, False]
    assert before[0]["text"] == "not checked against real runs" and "not in the catalogue" in before[1]["text"]
    _checked(team, dep)
    after = badges_for(team, scenario)
    assert after[0]["checked"] and after[0]["text"] == "checked against 1 real run: median E2E error 2.5 %, TTFT 8.2 %"
    assert after[0]["url"] == f"/benchmarks/deployments/{dep.pk}/"
    assert not badges_for(cast.outsider.team, scenario)[0]["checked"]  # another team's validation is not theirs
    plan = badges_for(team, {"deployments": [{"model": "llama2-70b", "gpu": "h100-80gb", "tp": 4}]})
    assert plan[0]["checked"]


def test_simulation_and_plan_pages_show_the_badges(cast, client):
    team = cast.owner.team
    dep = Deployment.objects.get(builtin=True, name=NAME)
    _checked(team, dep)
    sim = SimulationRun.objects.create(team=team, name="s", scenario={"fleet": {"endpoints": [{"deployment": NAME}]}})
    plan = CapacityPlan.objects.create(team=team, name="p", scenario={
        "deployments": [{"model": "llama2-70b", "gpu": "h100-80gb", "tp": 4}]})
    client.force_login(cast.owner.user)
    for url in (f"/simulations/{sim.pk}/", f"/plans/{plan.pk}/"):
        page = client.get(url).content.decode()
        assert 'id="validation-badges"' in page and "median E2E error 2.5 %" in page, url
