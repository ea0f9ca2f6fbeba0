"""Operator-level plans through the API, the job, the pages and the CLI (in-process jobs, SQLite)."""

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from planner.accounts.services import create_user
from planner.jobs.models import Job
from planner.opscaling.models import OperatorPlan
from planner.traces import services as trace_services

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "traces"
AZURE = FIXTURES / "azure_code_2023.csv"


@pytest.fixture
def cast(db):
    owner, owner_key = create_user("olga", "pw-olga-123", "team-a")
    _mate, mate_key = create_user("tom", "pw-tom-123", "team-a")
    _out, out_key = create_user("eve", "pw-eve-123", "team-b")

    def api(key):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        return client

    trace = trace_services.import_trace_file(AZURE, team=owner.membership.team, user=owner, name="azure code")
    return {"owner": api(owner_key), "teammate": api(mate_key), "outsider": api(out_key), "user": owner, "trace": trace}


def spec(trace_id, **extra):
    return {"model": "llama-3-8b", "gpu": "a100", "workload": {"trace_id": trace_id, "window_s": 300}, **extra}


@pytest.mark.django_db(transaction=True)
def test_a_plan_posted_to_the_api_is_computed_by_a_job_and_stored_with_its_savings(cast):
    resp = cast["owner"].post("/api/operator-plans/", {"spec": spec(cast["trace"].pk)}, format="json")
    assert resp.status_code == 201, resp.content
    plan = OperatorPlan.objects.get(pk=resp.json()["id"])
    assert plan.job.kind == "opscale.plan" and plan.job.status == Job.Status.SUCCEEDED, plan.job.last_error
    res = plan.result
    assert res["windows"] == 12 and res["model"] == "llama-3-8b" and res["derived_profile"] is True
    ml = res["totals"]["prefill"]["model_level"]["gpu_s"]
    op = res["totals"]["prefill"]["operator_level"]["gpu_s"]
    assert plan.prefill_gpu_savings == pytest.approx(1 - op / ml)
    # the QPS sweep carries the ILP beside the greedy, never better than the optimum
    assert all(r["ilp"]["status"] == "optimal" and r["greedy_cost"] >= r["ilp"]["cost"] for r in res["sweeps"]["qps"])
    body = cast["teammate"].get(f"/api/operator-plans/{plan.pk}/").json()
    assert body["job"]["status"] == "succeeded" and body["result"]["windows"] == 12
    assert cast["outsider"].get(f"/api/operator-plans/{plan.pk}/").status_code == 404
    assert cast["outsider"].get("/api/operator-plans/").json()["results"] == []


@pytest.mark.django_db(transaction=True)
def test_bad_specs_get_the_documented_error_shape_and_store_nothing(cast):
    other_team_trace = trace_services.import_trace_file(
        FIXTURES / "mooncake_synthetic.jsonl", team=create_user("x", "pw-x-12345", "team-c")[0].membership.team
    )
    cases = [
        (spec(cast["trace"].pk, gpu="tpu"), "spec.gpu"),
        (spec(cast["trace"].pk, slo={"ttft_s": -1}), "spec.slo.ttft_s"),
        (spec(cast["trace"].pk, colour="red"), "spec.colour"),
        (spec(other_team_trace.pk), "spec.workload.trace_id"),
        ({"model": "llama-3-8b", "gpu": "a100", "workload": {"path": "/etc/passwd"}}, "spec.workload.path"),
    ]
    for body, where in cases:
        resp = cast["owner"].post("/api/operator-plans/", {"spec": body}, format="json")
        assert resp.status_code == 400, (body, resp.content)
        err = resp.json()["error"]
        assert err["where"] == where and err["message"] and err["hint"], err
    assert cast["owner"].post("/api/operator-plans/", {"spec": [1]}, format="json").status_code == 400
    assert not OperatorPlan.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_pages_create_a_plan_and_show_its_figures_and_tables(cast, client):
    client.force_login(cast["user"])
    page = client.get("/operator-plans/")
    assert page.status_code == 200 and b"azure code" in page.content
    # the hardware catalogue's names, as on every other page; the profiles' own names are accepted too
    assert b'value="llama3.1-8b"' in page.content and b'value="a100-80gb"' in page.content
    assert b'value="llama-3-8b"' not in page.content
    resp = client.post(
        "/operator-plans/new/",
        {
            "trace_id": cast["trace"].pk,
            "model": "llama-3-8b",
            "gpu": "a100",
            "ttft_s": "",
            "tbt_s": "",
            "slo_scale": "5",
            "window_s": "300",
        },
    )
    assert resp.status_code == 302
    plan = OperatorPlan.objects.get()
    assert plan.job.status == Job.Status.SUCCEEDED, plan.job.last_error
    detail = client.get(resp["Location"])
    html = detail.content.decode()
    assert detail.status_code == 200 and "opscale-totals" in html
    assert "llama3.1-8b on a100-80gb" in html and "llama-3-8b on a100" not in html  # the catalogue's names
    figures = json.loads(detail.context["figures"]["qps"])
    assert figures["layout"]["title"]["text"].startswith("Savings vs QPS")
    assert {"phase", "timeline", "qps", "length", "sojourn"} <= set(detail.context["figures"])
    gap = detail.context["ilp_gap"]
    assert gap["points"] == 17 and gap["all_optimal"] and 0.0 <= gap["mean"] <= gap["worst"]
    assert "opscale-ilp" in html
    bad = client.post(
        "/operator-plans/new/", {"trace_id": cast["trace"].pk, "model": "llama-3-8b", "gpu": "a100", "ttft_s": "soon"}
    )
    assert bad.status_code == 400 and b"slo.ttft_s" in bad.content


@pytest.mark.django_db
def test_the_cli_plans_a_trace_file_in_process(tmp_path):
    out = io.StringIO()
    call_command("opscale_plan", "--trace", str(AZURE), "--window", "600", "--no-sweeps", "--json", stdout=out)
    res = json.loads(out.getvalue())
    assert res["windows"] == 6 and "sweeps" not in res
    assert res["totals"]["decode"]["model_level"]["gpu_s"] > 0
    text = io.StringIO()
    call_command("opscale_plan", "--trace", str(AZURE), "--window", "600", "--no-sweeps", stdout=text)
    assert "operator_level" in text.getvalue() and "GPU-h" in text.getvalue()
    with pytest.raises(CommandError, match="gpu"):
        call_command("opscale_plan", "--trace", str(AZURE), "--gpu", "tpu")
    with pytest.raises(CommandError, match="no such file"):
        call_command("opscale_plan", "--trace", str(tmp_path / "missing.csv"))


@pytest.mark.django_db(transaction=True)
def test_the_cli_queues_a_stored_plan_for_a_team(cast):
    out = io.StringIO()
    call_command(
        "opscale_plan", "--trace-id", str(cast["trace"].pk), "--team", "team-a", "--no-sweeps", "--json", stdout=out
    )
    res = json.loads(out.getvalue())
    plan = OperatorPlan.objects.get(pk=res["operator_plan_id"])
    plan.refresh_from_db()
    assert plan.job.status == Job.Status.SUCCEEDED and plan.result["windows"] > 0


@pytest.mark.django_db(transaction=True)
def test_a_job_for_a_deleted_plan_fails_with_a_reason(cast):
    from planner.jobs.services import create_job

    job = create_job(team=cast["user"].membership.team, kind="opscale.plan", params={"operator_plan_id": 999})
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "does not exist" in job.last_error["message"]


@pytest.mark.django_db(transaction=True)
def test_the_plan_has_a_pdf_report_and_a_comparison_of_its_trace_carries_it(cast, client, monkeypatch):
    from reportlab.platypus import Paragraph, Table

    from planner.comparisons import selectors as comparison_selectors
    from planner.comparisons.kinds import export_pdf
    from planner.opscaling.selectors import operator_level_story

    team = cast["user"].membership.team
    trace_id = cast["trace"].pk
    assert operator_level_story(team, trace_id) == []  # no plan yet: the comparison report is unchanged
    pk = cast["owner"].post("/api/operator-plans/", {"spec": spec(cast["trace"].pk)}, format="json").json()["id"]
    pdf = cast["owner"].get(f"/api/operator-plans/{pk}/pdf/")
    assert pdf.status_code == 200 and pdf.content[:5] == b"%PDF-"
    assert cast["outsider"].get(f"/api/operator-plans/{pk}/pdf/").status_code == 404
    client.force_login(cast["user"])
    assert client.get(f"/operator-plans/{pk}/report.pdf").content[:5] == b"%PDF-"
    story = operator_level_story(team, trace_id)
    # a comparison of another trace, or of a synthetic workload, does not carry this trace's plan
    assert operator_level_story(team, trace_id + 1) == [] and operator_level_story(team, None) == []
    texts = " ".join(f.text for f in story if isinstance(f, Paragraph))
    assert "Operator-level scaling next to model-level scaling" in texts and f"Plan #{pk}" in texts
    tables = [f for f in story if isinstance(f, Table)]
    assert len(tables) == 2 and tables[0]._cellvalues[1][0].startswith("model-level")
    # the hook: export_pdf hands the section to the comparison report
    seen = {}

    def fake_build(**kwargs):
        seen.update(kwargs)
        return b"%PDF-fake"

    monkeypatch.setattr("planner.comparisons.core.report.build_pdf", fake_build)
    monkeypatch.setattr(comparison_selectors, "summaries_of", lambda comp: {})
    monkeypatch.setattr("planner.comparisons.core.runner.describe_assumptions", lambda scenario, summaries: {})
    monkeypatch.setattr("planner.comparisons.outcome.failures_of", lambda comp: [])  # a stand-in has no results

    class Comp:
        team = cast["user"].membership.team
        summary = {"rows": []}
        scenario = {"workload": {"trace_id": trace_id}}
        variants = []

    assert export_pdf(Comp()) == b"%PDF-fake"
    assert len(seen["aggregate"]["extra_story"]) == len(story)


def test_the_standalone_report_renders_without_django():
    from planner.opscale.report import section

    assert section(None) == []


@pytest.mark.django_db(transaction=True)
def test_an_impossible_slo_is_reported_as_infeasible_without_a_savings_claim(cast, client):
    body = spec(cast["trace"].pk, slo={"ttft_s": 0.001, "tbt_s": 0.0001}, sweeps=False)
    pk = cast["owner"].post("/api/operator-plans/", {"spec": body}, format="json").json()["id"]
    plan = OperatorPlan.objects.get(pk=pk)
    assert plan.job.status == Job.Status.SUCCEEDED and plan.feasible is False
    assert plan.prefill_gpu_savings is None and plan.decode_gpu_savings is None
    assert plan.result["infeasible_windows"] == 24 and "below the fastest possible" in plan.result["infeasible_reason"]
    assert plan.result["totals"]["prefill"]["operator_level"]["gpu_s"] == 0.0
    client.force_login(cast["user"])
    page = client.get(f"/operator-plans/{pk}/").content.decode()
    assert "cannot meet their SLO" in page and "below the fastest possible" in page


@pytest.mark.django_db(transaction=True)
def test_a_window_whose_operator_level_placement_needs_more_gpus_falls_back_and_the_page_says_so(cast, client):
    user = cast["user"]
    moon = trace_services.import_trace_file(
        FIXTURES / "mooncake_synthetic.jsonl", team=user.membership.team, user=user, name="mooncake"
    )
    body = {
        "model": "llama-3-8b",
        "gpu": "a100",
        "workload": {"trace_id": moon.pk, "window_s": 300},
        "sweeps": False,
        "ilp": False,
    }
    ids = {}
    for fallback in (True, False):
        spec_ = {**body, "options": {"fallback_model_level": fallback}}
        resp = cast["owner"].post("/api/operator-plans/", {"spec": spec_}, format="json")
        assert resp.status_code == 201, resp.content
        ids[fallback] = resp.json()["id"]
    on, off = (OperatorPlan.objects.get(pk=ids[k]) for k in (True, False))
    assert on.job.status == Job.Status.SUCCEEDED and off.job.status == Job.Status.SUCCEEDED
    pre_on, pre_off = on.result["totals"]["prefill"], off.result["totals"]["prefill"]
    assert pre_on["fallback_windows"] >= 1 and pre_off["fallback_windows"] == 0
    # the fallback replaces only windows where operator-level needed more GPUs: never worse than model-level
    assert pre_on["operator_level"]["gpu_s"] <= pre_on["model_level"]["gpu_s"]
    assert pre_on["operator_level"]["gpu_s"] < pre_off["operator_level"]["gpu_s"]
    client.force_login(user)
    html = client.get(f"/operator-plans/{on.pk}/").content.decode()
    assert "opscale-fallback" in html and "opscale-peak-fallback" in html
    assert f"{pre_on['fallback_windows']} of {pre_on['windows']} windows fell back to the model-level placement" in html
    assert "off (the paper&#x27;s algorithm as printed)" in client.get(f"/operator-plans/{off.pk}/").content.decode()
    out = io.StringIO()
    call_command(
        "opscale_plan",
        "--trace",
        str(FIXTURES / "mooncake_synthetic.jsonl"),
        "--window",
        "300",
        "--no-sweeps",
        stdout=out,
    )
    assert "fell back to the model-level placement" in out.getvalue()
