"""Simulation runs through the API, the job handler, the pages and the CLI."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from planner.jobs.models import Job
from simulations.models import SimulationRun
from simulations.tests.engine_helpers import SPEC

ROOT = Path(__file__).resolve().parents[2]


def small_scenario(**extra) -> dict:
    d = {
        "name": "api test",
        "seed": 1,
        "workload": {"synthetic": {"duration_s": 600, "total_requests": 300}},
        "fleet": {"regions": [{"name": "r1", "spot_pool": {"toy": 1}}, {"name": "r2"}],
                  "endpoints": [{"region": "r1", "model": "toy", "deployment": SPEC, "initial": 2, "min": 1, "max": 3},
                                {"region": "r2", "model": "toy", "deployment": SPEC, "initial": 1}]},
        "strategy": {"autoscaler": "reactive-unified"},
    }
    d.update(extra)
    return d


@pytest.mark.django_db(transaction=True)
def test_creating_a_run_through_the_api_runs_the_job_and_stores_the_results(cast):
    resp = cast.owner.api.post("/api/simulations/", {"scenario": small_scenario(), "name": "first"}, format="json")
    assert resp.status_code == 201, resp.content
    run = SimulationRun.objects.get(pk=resp.json()["id"])
    assert run.job.kind == "simulation.run"
    assert run.job.status == Job.Status.SUCCEEDED, run.job.last_error
    assert run.requests_simulated == 300
    assert run.result["summary"]["completed"] == 300
    assert run.result["summary"]["engine_build"] in ("compiled", "python")
    assert run.job.result["run_id"] == run.pk
    status = cast.owner.api.get(f"/api/simulations/{run.pk}/").json()
    assert status["status"] == "succeeded" and status["progress"] == 100.0
    results = cast.owner.api.get(f"/api/simulations/{run.pk}/results/").json()
    assert set(results["tiers"]) <= {"IW-F", "IW-N", "NIW"}
    assert results["timeline"]["endpoints"] == ["r1/toy", "r2/toy"]
    assert cast.teammate.api.get(f"/api/simulations/{run.pk}/").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_a_run_can_be_created_from_a_fixture_name_with_another_strategy(cast):
    resp = cast.owner.api.post("/api/simulations/", {"fixture": "code_anchor", "strategy": "peak"}, format="json")
    assert resp.status_code == 201, resp.content
    run = SimulationRun.objects.get(pk=resp.json()["id"])
    assert run.job.status == Job.Status.SUCCEEDED, run.job.last_error
    assert run.result["summary"]["strategy"] == "peak"
    assert run.requests_simulated == 8819


@pytest.mark.django_db(transaction=True)
def test_an_outsider_cannot_see_a_run_or_its_results(cast):
    resp = cast.owner.api.post("/api/simulations/", {"scenario": small_scenario()}, format="json")
    pk = resp.json()["id"]
    assert cast.outsider.api.get(f"/api/simulations/{pk}/").status_code == 404
    assert cast.outsider.api.get(f"/api/simulations/{pk}/results/").status_code == 404
    assert cast.outsider.api.get("/api/simulations/").json()["results"] == [] or \
        cast.outsider.api.get("/api/simulations/").json() == []
    cast.outsider.api.force_authenticate(cast.outsider.user)
    from django.test import Client

    page = Client()
    page.force_login(cast.outsider.user)
    assert page.get(f"/simulations/{pk}/").status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("mutate,field", [
    (lambda d: d["strategy"].update(autoscaler="bogus"), "scenario.strategy.autoscaler"),
    (lambda d: d["fleet"]["endpoints"][0]["deployment"].pop("decode"), "scenario.fleet.endpoints[0].deployment.decode"),
    (lambda d: d["fleet"]["endpoints"][0].update(initial=-1), "scenario.fleet.endpoints[0].initial"),
    (lambda d: d.update(workload={"trace_path": "/etc/passwd"}), "scenario.workload.trace_path"),
    (lambda d: d.update(workload={"trace_id": 999999}), "scenario.workload.trace_id"),
    # bad knob *values* are refused here too, not by a failed job in the worker
    (lambda d: d.update(strategy={"autoscaler": "llumnix-batch", "params": {"migration": "sideways"}}),
     "scenario.strategy.params.migration"),
    (lambda d: d.update(strategy={"autoscaler": "static", "instance_router": "gpu-memory-usage",
                                  "params": {"mu_util_weight": 2}}), "scenario.strategy.params.mu_util_weight"),
    (lambda d: d.update(strategy={"autoscaler": "llumnix-batch", "params": {"max_batch": -3}}),
     "scenario.strategy.params.max_batch"),
])
def test_a_bad_scenario_is_a_400_naming_the_field_and_creates_nothing(cast, mutate, field):
    d = json.loads(json.dumps(small_scenario()))
    mutate(d)
    resp = cast.owner.api.post("/api/simulations/", {"scenario": d}, format="json")
    assert resp.status_code == 400, resp.content
    assert field in resp.json()["error"]["fields"], resp.json()
    assert SimulationRun.objects.count() == 0 and Job.objects.count() == 0


@pytest.mark.django_db
def test_an_unknown_strategy_override_is_a_400(cast):
    resp = cast.owner.api.post("/api/simulations/", {"scenario": small_scenario(), "strategy": "lt-x"}, format="json")
    assert resp.status_code == 400
    assert "strategy" in resp.json()["error"]["fields"]


@pytest.mark.django_db(transaction=True)
def test_the_job_handler_fails_cleanly_when_a_stored_scenario_no_longer_parses(cast):
    from planner.jobs.services import create_job

    run = SimulationRun.objects.create(team=cast.owner.team, created_by=cast.owner.user, name="broken",
                                       scenario={"fleet": {}})
    job = create_job(team=cast.owner.team, user=cast.owner.user, kind="simulation.run", params={"run_id": run.pk})
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert job.last_error["where"].startswith("scenario.fleet")


@pytest.mark.django_db(transaction=True)
def test_the_pages_list_runs_create_one_from_a_fixture_and_show_its_charts(cast):
    from django.test import Client

    page = Client()
    page.force_login(cast.owner.user)
    assert page.get("/simulations/").status_code == 200
    resp = page.post("/simulations/", {"fixture": "code_anchor", "strategy": "", "mode": "fast", "name": "from page"})
    assert resp.status_code == 302
    run = SimulationRun.objects.get(name="from page")
    detail = page.get(resp["Location"])
    assert detail.status_code == 200
    html = detail.content.decode()
    assert 'data-plotly-for="timeline"' in html and 'data-plotly-for="latency"' in html
    from simulations.engine import BUILD

    assert f"{BUILD['kind']} engine" in html  # which build of the loop ran is on the page
    bad = page.post("/simulations/", {"scenario": "{not json", "fixture": ""})
    assert bad.status_code == 400 and "not valid JSON" in bad.content.decode()
    assert run.job.status == Job.Status.SUCCEEDED


@pytest.mark.django_db
def test_the_simulate_command_prints_one_json_object_with_metrics_requests_and_wall_time():
    out = StringIO()
    call_command("simulate", str(ROOT / "fixtures/scenarios/code_anchor.json"), "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert data["requests_simulated"] == 8819
    assert data["wall_s"] > 0
    assert data["summary"]["completed"] == 8819
    assert {"tiers", "usage", "scaling_events"} <= set(data)


@pytest.mark.django_db
def test_the_simulate_command_replays_a_trace_file_as_the_same_fixture_does(tmp_path):
    # --trace reads the operator's file with the engine's trace reader: the code trace given as a file (as a
    # normalised Parquet written from its own columns) runs exactly as the scenario's bundled fixture of it
    import pyarrow as pa
    import pyarrow.parquet as pq

    from simulations.engine.workload.traceio import read_trace_arrays

    cols = read_trace_arrays(ROOT / "fixtures/traces/azure_code_2023.csv")
    path = tmp_path / "code.parquet"
    pq.write_table(pa.table({k: cols[k] for k in ("arrival_s", "input_tokens", "output_tokens")}), path)
    runs = []
    for extra in ((), ("--trace", str(path))):
        out = StringIO()
        call_command("simulate", str(ROOT / "fixtures/scenarios/code_anchor.json"), "--json", "--no-save", *extra,
                     stdout=out)
        runs.append(json.loads(out.getvalue()))
    assert runs[0]["requests_simulated"] == runs[1]["requests_simulated"] == 8819
    assert runs[0]["summary"]["gpu_hours"] == runs[1]["summary"]["gpu_hours"]
    assert runs[0]["tiers"] == runs[1]["tiers"]


def test_the_routing_sweep_command_prints_each_router_and_its_knee():
    out = StringIO()
    call_command("routing_sweep", "--rates", "4", "--minutes", "1", "--routers", "least-requests,llumnix", "--json",
                 stdout=out)
    data = json.loads(out.getvalue())
    assert [p["router"] for p in data["points"]] == ["least-requests", "llumnix"]
    assert data["knees_rps"] == {"least-requests": None, "llumnix": None}  # 4 req/s is below the knee
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="unknown instance router"):
        call_command("routing_sweep", "--routers", "fastest", stdout=StringIO())
    with pytest.raises(CommandError, match="--rates"):
        call_command("routing_sweep", "--rates", "fast", stdout=StringIO())
