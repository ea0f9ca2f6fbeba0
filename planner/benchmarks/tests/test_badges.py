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


def _checked(team, dep, e2e=2.5, ttft=8.25):
    run = BenchmarkRun.objects.create(team=team, name="a run", source_format="csv", model_name="m", gpu_name="g",
                                      tp=4, deployment=dep, data={})
    v = Validation.objects.create(team=team, deployment=dep, rows=[], seeds=1,
                                  pooled={"e2e_mean": {"median": e2e}, "ttft_mean": {"median": ttft}})
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


def test_serverless_and_operator_level_pages_name_their_own_tables(cast):
    """Their latencies come from the paper's tables, never a catalogue deployment: not checked, with the catalogue
    deployment of the same model and GPU type named beside it with its own badge."""
    team = cast.owner.team
    a100 = Deployment.objects.get(builtin=True, name="llama2-7b/a100-80gb/tp1")
    serverless = {"kind": "serverless", "model": "llama-2-7b", "nodes": {"cpu": 4, "gpu": 4}}
    operator = {"kind": "operator-level", "model": "llama-2-70b", "gpu": "h100", "options": {"model_tp": 4}}
    before = badges_for(team, serverless)
    assert [b["label"] for b in before] == ["llama2-7b on SLINFER's GPU nodes"] and not before[0]["checked"]
    assert before[0]["text"].startswith("latencies from SLINFER's measured CPU/GPU tables")
    assert before[0]["text"].endswith("the catalogue's llama2-7b/a100-80gb/tp1 is not checked against real runs")
    assert before[0]["url"] == f"/benchmarks/deployments/{a100.pk}/"
    _checked(team, a100)
    after = badges_for(team, serverless)
    assert not after[0]["checked"]  # the catalogue deployment's check does not check SLINFER's tables
    assert after[0]["text"].endswith("llama2-7b/a100-80gb/tp1 is checked against 1 real run: median E2E error 2.5 %, "
                                     "TTFT 8.2 %")
    op = badges_for(team, operator)
    assert op[0]["label"] == "llama2-70b on h100-80gb, operator by operator" and not op[0]["checked"]
    assert "Vidur's per-operator profiles" in op[0]["text"] and "llama2-70b/h100-80gb/tp4" in op[0]["text"]


def test_serverless_and_operator_level_pages_show_the_badges(cast, client):
    from planner.comparisons.models import Comparison
    from planner.jobs.models import Job
    from planner.opscaling.models import OperatorPlan

    team = cast.owner.team

    def failed():  # a terminal job: the pages render without polling
        return Job.objects.create(team=team, kind="comparison.run", status="failed",
                                  last_error={"message": "stopped", "where": "", "hint": ""})

    _checked(team, Deployment.objects.get(builtin=True, name="llama2-7b/a100-80gb/tp1"))
    _checked(team, Deployment.objects.get(builtin=True, name=NAME))
    sl = Comparison.objects.create(team=team, name="sl", scenario={
        "kind": "serverless", "model": "llama2-7b", "workload": {"models": 32, "duration_s": 60},
        "nodes": {"cpu": 4, "gpu": 4}}, job=failed())
    op = Comparison.objects.create(team=team, name="op", scenario={
        "kind": "operator-level", "model": "llama2-70b", "gpu": "h100-80gb", "workload": {"trace_id": 1}},
        job=failed())
    plan = OperatorPlan.objects.create(team=team, name="p", spec={
        "model": "llama-2-70b", "gpu": "h100", "workload": {"trace_id": 1}, "options": {"model_tp": 4}})
    client.force_login(cast.owner.user)
    for url, needle in ((f"/comparisons/{sl.pk}/", "SLINFER&#x27;s measured CPU/GPU tables"),
                        ("/simulations/serverless/", "SLINFER&#x27;s measured CPU/GPU tables"),
                        (f"/comparisons/{op.pk}/", "Vidur&#x27;s per-operator profiles"),
                        (f"/operator-plans/{plan.pk}/", "Vidur&#x27;s per-operator profiles")):
        page = client.get(url).content.decode()
        assert 'id="validation-badges"' in page and needle in page, url
        assert "median E2E error 2.5 %" in page, url  # the catalogue deployment's own figure, named beside


def test_a_deployment_page_names_the_validated_version_beside_the_built_in_one(cast, client):
    """The built-in deployment overloads on the real runs; a calibrated version is saved beside it (never over it):
    both pages list the versions with their errors and mark the better-checked one as the one to plan with."""
    from planner.benchmarks.selectors import versions

    team = cast.owner.team
    builtin = Deployment.objects.get(builtin=True, name=NAME)
    before = {f: getattr(builtin, f) for f in ("prefill_c0", "decode_c0", "decode_c_batch")}
    calibrated = Deployment.objects.get(pk=builtin.pk)
    calibrated.pk, calibrated.builtin, calibrated.team = None, False, team
    calibrated.name, calibrated.source = f"{NAME}/physics-v1", "calibrated on 9 benchmark run(s); engine vllm 0.15.1"
    calibrated.decode_c0 = 0.01
    calibrated.save()
    assert [v["dep"].pk for v in versions(team, builtin)] == [builtin.pk, calibrated.pk]  # nothing checked yet
    assert not any(v["best"] for v in versions(team, builtin))
    _checked(team, builtin, e2e=4400.0, ttft=900.0)
    _checked(team, calibrated, e2e=2.5, ttft=8.25)
    got = versions(team, builtin)
    assert [v["dep"].pk for v in got] == [calibrated.pk, builtin.pk] and [v["best"] for v in got] == [True, False]
    assert not versions(cast.outsider.team, builtin)[0]["best"]  # another team sees neither the version nor checks
    client.force_login(cast.owner.user)
    for url in (f"/hardware/deployments/{builtin.pk}/", f"/benchmarks/deployments/{builtin.pk}/"):
        page = client.get(url).content.decode()
        table = page[page.index('id="versions"'):]
        assert table.index(f"{NAME}/physics-v1") < table.index("validated: the best-checked version") \
            < table.index("(built-in)"), url
        assert "median E2E error 4400.0 %" in table and "engine vllm 0.15.1" in table, url
    builtin.refresh_from_db()
    assert {f: getattr(builtin, f) for f in before} == before  # the built-in one is untouched


def test_a_scenario_of_no_known_kind_gets_the_badges_of_the_deployments_it_names(cast):
    """Which scenarios have their own tables is each comparison kind's to say; a plan naming another kind is not
    refused here, its deployments get their badges."""
    badges = badges_for(cast.owner.team, {"kind": "elsewhere", "deployments": [
        {"model": "llama2-70b", "gpu": "h100-80gb", "tp": 4}]})
    assert [b["label"] for b in badges] == ["llama2-70b/h100-80gb/tp4"]
