"""Capacity plans through the API, the job, the pages and the CLI."""

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from planner.accounts.services import create_user
from planner.jobs.models import Job
from planner.jobs.services import create_job
from planner.plans.models import CapacityPlan

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "plans"

# Hand-checked: instances 3, 3, 1; reserving 3 GPUs (3 x 3 h x $6 = $54) beats every other mix.
SIMPLE = {
    "name": "simple",
    "hours": 3,
    "regions": ["A"],
    "gpus": {"h100": {"on_demand": 10.0, "reserved": 6.0}},
    "deployments": [{"model": "m", "gpu": "h100", "theta_tps": 100, "startup_s": 0}],
    "demand": [{"model": "m", "region": "A", "tps": [250, 250, 50]}],
    "solver": {"gap_rel": 0.0},
}
INFEASIBLE = {**SIMPLE, "name": "too small", "quotas": [{"region": "A", "gpu": "h100", "max_gpus": 2}]}


@pytest.fixture
def cast(db):
    owner, owner_key = create_user("olga", "pw-olga-123", "team-a")
    mate, mate_key = create_user("tom", "pw-tom-123", "team-a")
    outsider, out_key = create_user("eve", "pw-eve-123", "team-b")

    def api(key):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        return client

    return {
        "owner": api(owner_key),
        "teammate": api(mate_key),
        "outsider": api(out_key),
        "users": (owner, mate, outsider),
    }


@pytest.mark.django_db(transaction=True)
def test_creating_a_plan_through_the_api_solves_it_in_a_job_and_stores_the_result(cast):
    response = cast["owner"].post("/api/plans/", {"scenario": SIMPLE}, format="json")
    assert response.status_code == 201, response.content
    plan = CapacityPlan.objects.get(pk=response.json()["id"])
    assert plan.job.kind == "plan.solve" and plan.job.status == Job.Status.SUCCEEDED
    assert plan.solver_status == "optimal" and plan.feasible is True
    assert plan.total_cost == pytest.approx(54.0)
    assert plan.static_peak_cost == pytest.approx(90.0)
    assert plan.result["reserved_gpus"] == [{"region": "A", "gpu": "h100", "gpus": 3}]
    body = cast["owner"].get(f"/api/plans/{plan.pk}/").json()
    assert body["total_cost"] == pytest.approx(54.0) and body["job"]["status"] == "succeeded"
    assert body["savings_vs_static"] == pytest.approx(0.4)


@pytest.mark.django_db(transaction=True)
def test_a_teammate_sees_the_plan_and_an_outsider_does_not(cast):
    pk = cast["owner"].post("/api/plans/", {"scenario": SIMPLE}, format="json").json()["id"]
    assert cast["teammate"].get(f"/api/plans/{pk}/").status_code == 200
    assert [p["id"] for p in cast["teammate"].get("/api/plans/").json()["results"]] == [pk]
    assert cast["outsider"].get(f"/api/plans/{pk}/").status_code == 404
    assert cast["outsider"].get(f"/api/plans/{pk}/csv/").status_code == 404
    assert cast["outsider"].get("/api/plans/").json()["results"] == []


@pytest.mark.django_db(transaction=True)
def test_an_infeasible_scenario_gets_a_diagnosis_in_words(cast, client):
    pk = cast["owner"].post("/api/plans/", {"scenario": INFEASIBLE}, format="json").json()["id"]
    plan = CapacityPlan.objects.get(pk=pk)
    assert plan.job.status == Job.Status.SUCCEEDED and plan.feasible is False
    sentence = plan.result["diagnosis"][0]
    assert sentence.startswith("m in A: up to 50.0 TPS") and "quota in A (2 GPUs) is used up" in sentence
    client.login(username="olga", password="pw-olga-123")
    page = client.get(f"/plans/{pk}/")
    assert page.status_code == 200
    assert "Some demand cannot be covered" in page.content.decode()
    assert "m in A: up to 50.0 TPS" in page.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "scenario, field",
    [
        ({**SIMPLE, "demand": [{"model": "m", "region": "A", "tps": [1, 2]}]}, "scenario.demand[0].tps"),
        ({**SIMPLE, "gpus": {"h100": {"on_demand": -1}}}, "scenario.gpus.h100.on_demand"),
        ({k: v for k, v in SIMPLE.items() if k != "regions"}, "scenario.regions"),
        ("not an object", "scenario"),
    ],
)
def test_a_malformed_scenario_is_a_400_naming_the_field_and_stores_nothing(cast, scenario, field):
    response = cast["owner"].post("/api/plans/", {"scenario": scenario}, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]
    assert CapacityPlan.objects.count() == 0 and Job.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_the_csv_export_lists_instances_per_hour(cast, client):
    pk = cast["owner"].post("/api/plans/", {"scenario": SIMPLE}, format="json").json()["id"]
    text = cast["owner"].get(f"/api/plans/{pk}/csv/").content.decode()
    lines = text.strip().splitlines()
    assert lines[0].startswith("hour,model,region,gpu,instances,starts")
    assert [line.split(",")[4] for line in lines[1:]] == ["3", "3", "1"]
    client.login(username="tom", password="pw-tom-123")
    assert client.get(f"/plans/{pk}/plan.csv").content.decode() == text


@pytest.mark.django_db(transaction=True)
def test_the_pages_list_create_and_show_a_plan(cast, client):
    client.login(username="olga", password="pw-olga-123")
    assert client.get("/plans/").status_code == 200
    response = client.post("/plans/new/", {"scenario": json.dumps(SIMPLE), "name": "from the page"})
    assert response.status_code == 302
    plan = CapacityPlan.objects.get(name="from the page")
    page = client.get(response["Location"]).content.decode()
    assert "$54.00" in page and "fig-pools" in page and "Export CSV" in page
    bad = client.post("/plans/new/", {"scenario": "{not json"})
    assert bad.status_code == 400 and "not valid JSON" in bad.content.decode()
    bad = client.post("/plans/new/", {"scenario": json.dumps({**SIMPLE, "hours": 1000})})
    assert bad.status_code == 400 and "hours: must be &lt;= 168" in bad.content.decode()
    client.logout()
    client.login(username="eve", password="pw-eve-123")
    assert client.get(f"/plans/{plan.pk}/").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_a_job_for_a_deleted_plan_fails_with_a_reason(cast):
    owner = cast["users"][0]
    job = create_job(team=owner.membership.team, kind="plan.solve", user=owner, params={"plan_id": 999})
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert job.last_error["where"] == "params.plan_id"


@pytest.mark.django_db
def test_the_plan_command_prints_one_json_object():
    out = io.StringIO()
    call_command("plan", str(FIXTURES / "infeasible_westus_quota.json"), "--hours", "8", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert data["status"] == "optimal" and data["hours"] == 8
    assert data["diagnosis"] and "westus" in data["diagnosis"][0]


@pytest.mark.django_db
def test_the_plan_command_prints_plan_cost_time_and_status(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SIMPLE))
    out = io.StringIO()
    call_command("plan", str(path), stdout=out)
    text = out.getvalue()
    assert "status optimal" in text and "total cost $54.00" in text and "reserve 3 x h100 GPUs in A" in text


@pytest.mark.django_db
def test_the_plan_command_names_a_bad_field(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**SIMPLE, "risk_quantile": 2}))
    with pytest.raises(CommandError, match="risk_quantile"):
        call_command("plan", str(path))


def _trace_for(user, tmp_path):
    import pandas as pd

    from planner.traces.models import Trace

    trace = Trace.objects.create(
        team=user.membership.team,
        created_by=user,
        name="t",
        format="native",
        storage_key=Trace.new_storage_key(),
        content_sha256="0" * 64,
        fingerprint="f" * 64,
    )
    trace.directory.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(
        {
            "arrival_s": [0.0, 100.0, 3700.0, 7300.0],
            "input_tokens": [60000, 30000, 30000, 3000],
            "output_tokens": [1, 1, 1, 1],
            "region": ["A"] * 4,
            "model": ["m"] * 4,
            "tier": ["IW-F"] * 4,
        }
    ).to_parquet(trace.normalised_file)
    return trace


@pytest.mark.django_db(transaction=True)
def test_demand_can_come_from_one_of_the_teams_traces(cast, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    owner, _mate, outsider = cast["users"]
    trace = _trace_for(owner, tmp_path)
    scenario = {k: v for k, v in SIMPLE.items() if k != "demand"}
    scenario["demand_from_trace"] = {"trace_id": trace.pk}
    response = cast["owner"].post("/api/plans/", {"scenario": scenario}, format="json")
    assert response.status_code == 201, response.content
    plan = CapacityPlan.objects.get(pk=response.json()["id"])
    # peak 5-minute TPS per hour: 90000/300 = 300, 30000/300 = 100, 3000/300 = 10 -> 3, 1, 1 instances
    assert plan.scenario["demand"] == [{"model": "m", "region": "A", "tps": [300.0, 100.0, 10.0]}]
    assert [r["instances"] for r in plan.result["instances"]] == [3, 1, 1]
    response = cast["outsider"].post("/api/plans/", {"scenario": scenario}, format="json")
    assert response.status_code == 400
    assert "scenario.demand_from_trace.trace_id" in response.json()["error"]["fields"]


# The two-pool form (planner/optimizer/tests/test_multiperiod_two_pool.py solves it by hand): 2 H100 prefill +
# 4 A100 decode, $36/h over 2 h.
TWO_POOL = {
    "name": "two pools", "hours": 2, "regions": ["A"],
    "gpus": {"h100": {"on_demand": 10.0}, "a100": {"on_demand": 4.0}},
    "deployments": [{"model": "m", "pool": p, "gpu": g, "theta_tps": t, "startup_s": 0}
                    for p, g, t in (("prefill", "h100", 1000), ("prefill", "a100", 300), ("decode", "h100", 200),
                                    ("decode", "a100", 150))],
    "demand": [{"model": "m", "region": "A", "pool": "prefill", "tps": 2000},
               {"model": "m", "region": "A", "pool": "decode", "tps": 600}],
    "solver": {"gap_rel": 0.0},
}


@pytest.mark.django_db(transaction=True)
def test_a_two_pool_plan_through_the_api_names_each_pool_in_the_result_and_the_csv(cast, client):
    response = cast["owner"].post("/api/plans/", {"scenario": TWO_POOL}, format="json")
    assert response.status_code == 201, response.content
    plan = CapacityPlan.objects.get(pk=response.json()["id"])
    assert plan.job.status == Job.Status.SUCCEEDED and plan.total_cost == pytest.approx(72.0)
    assert {(r["pool"], r["gpu"], r["instances"]) for r in plan.result["instances"]} == {
        ("prefill", "h100", 2), ("decode", "a100", 4)}
    text = cast["owner"].get(f"/api/plans/{plan.pk}/csv/").content.decode()
    assert "0,m (prefill pool),A,h100,2," in text and "0,m (decode pool),A,a100,4," in text
    page = client
    page.force_login(cast["users"][0])
    assert page.get(f"/plans/{plan.pk}/").status_code == 200


@pytest.mark.django_db
def test_a_prefill_pool_without_a_decode_pool_is_a_400_naming_the_field(cast):
    scenario = {**TWO_POOL, "deployments": TWO_POOL["deployments"][:2], "demand": TWO_POOL["demand"][:1]}
    response = cast["owner"].post("/api/plans/", {"scenario": scenario}, format="json")
    assert response.status_code == 400
    assert "scenario.deployments[0].pool" in response.json()["error"]["fields"]
    assert CapacityPlan.objects.count() == 0 and Job.objects.count() == 0
