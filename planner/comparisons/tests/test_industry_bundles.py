"""The industry autoscalers through the comparison builder (bundles), the API and the simulations API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.comparisons.core.bundles import bundle_names, get_bundle
from planner.comparisons.models import Comparison
from planner.jobs.models import Job
from simulations.engine.policies import AUTOSCALERS
from simulations.models import SimulationRun

SCENARIO = json.loads((Path(__file__).resolve().parents[3] / "fixtures/scenarios/industry_burst.json").read_text())


def _short(seconds=900, requests=3000):
    sc = json.loads(json.dumps(SCENARIO))
    sc["workload"]["synthetic"].update(duration_s=seconds, total_requests=requests,
                                       burst={"at_s": 300, "duration_s": 300, "factor": 3.0})
    return sc


def test_every_industry_bundle_runs_a_registered_autoscaler_and_cites_its_defaults():
    names = [n for n in bundle_names() if n.startswith("industry.")]
    assert len(names) == 10
    for n in names:
        b = get_bundle(n)
        assert b.strategy in AUTOSCALERS
        assert b.sources, n


def test_a_comparison_of_industry_bundles_runs_and_differs_from_static(cast, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        resp = cast.owner.api.post("/api/comparisons/", {
        "scenario": _short(), "strategies": ["static"], "baseline": "static", "name": "industry",
            "bundles": ["industry.hpa-running", "industry.knative-kpa", "industry.dynamo-constant",
                        "industry.llmd-wva"]}, format="json")
    assert resp.status_code in (201, 202), resp.json()
    comp = Comparison.objects.get(name="industry")
    comp.job.refresh_from_db()
    assert comp.job.status == "succeeded", comp.job.last_error
    rows = {r["key"]: r for r in comp.summary["rows"]}
    assert set(rows) == {"static", "industry.hpa-running", "industry.knative-kpa", "industry.dynamo-constant",
                         "industry.llmd-wva"}
    scaled = [k for k, r in rows.items() if k != "static" and r["instance_hours"] != rows["static"]["instance_hours"]]
    assert scaled  # at least one autoscaler moved the fleet away from the scenario's 2 instances


def test_a_simulation_with_a_misspelt_industry_knob_is_a_400_naming_it_and_stores_nothing(cast):
    sc = _short(60, 50)
    sc["strategy"] = {"autoscaler": "knative-kpa", "params": {"panic_treshold": 3}}
    resp = cast.owner.api.post("/api/simulations/", {"scenario": sc}, format="json")
    assert resp.status_code == 400
    err = resp.json()["error"]
    assert "strategy.params.panic_treshold" in err["where"] and err["hint"]
    assert Job.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_single_run_with_an_industry_autoscaler_from_the_simulations_api(cast):
    resp = cast.owner.api.post("/api/simulations/", {"fixture": "industry_burst", "strategy": "knative-kpa"},
                               format="json")
    assert resp.status_code == 201, resp.content
    run = SimulationRun.objects.get(pk=resp.json()["id"])
    assert run.job.status == Job.Status.SUCCEEDED, run.job.last_error
    assert run.result["summary"]["strategy"] == "knative-kpa"
    assert run.result["summary"]["scale_outs"] > 0
