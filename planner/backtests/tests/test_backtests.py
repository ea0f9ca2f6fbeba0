"""Back-tests through the API, the page and the CLI: a bad replica file is a 400 naming row and column and stores
nothing; a good one runs as run exactly and shows its deltas."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from planner.backtests.models import Backtest
from planner.jobs.models import Job

ROOT = Path(__file__).resolve().parents[3]
SCENARIO = json.loads((ROOT / "fixtures/scenarios/industry_burst.json").read_text())
EP = "us-west/llama2-70b"
GOOD = f"timestamp,endpoint,replicas\n0,{EP},2\n240,{EP},3\n480,{EP},4\n720,{EP},2\n"


def _short():
    sc = json.loads(json.dumps(SCENARIO))
    sc["workload"]["synthetic"].update(duration_s=900, total_requests=3000,
                                       burst={"at_s": 300, "duration_s": 300, "factor": 3.0})
    return sc


def _post(cast, csv_text, **extra):
    body = {"scenario": _short(), "replicas_csv": csv_text, "bundles": ["industry.hpa-running"], **extra}
    return cast.owner.api.post("/api/backtests/", body, format="json")


@pytest.mark.parametrize(("csv_text", "where"), [
    ("timestamp,endpoint,replicas\n0,us-east/llama2-70b,2\n", "replicas row 2, column endpoint"),
    (f"timestamp,endpoint,replicas\n0,{EP},2\n60,{EP},-3\n", "replicas row 3, column replicas"),
    (f"timestamp,endpoint,replicas\n0,{EP},1.5\n", "replicas row 2, column replicas"),
    (f"timestamp,endpoint,replicas\n0,{EP},2\n2000,{EP},3\n", "replicas row 3, column timestamp"),
    (f"timestamp,endpoint,replicas\n7200,{EP},2\n7260,{EP},3\n", "replicas row 2, column timestamp"),
])
def test_a_bad_replica_file_is_a_400_naming_row_and_column_and_nothing_is_stored(cast, csv_text, where):
    resp = _post(cast, csv_text)
    assert resp.status_code == 400
    err = resp.json()["error"]
    assert err["where"] == where and err["hint"] and err["request_id"]
    assert Backtest.objects.count() == 0 and Job.objects.count() == 0


def test_no_alternative_or_an_unknown_bundle_is_a_400(cast):
    resp = _post(cast, GOOD, bundles=[])
    assert resp.status_code == 400 and resp.json()["error"]["where"] == "strategies"
    resp = _post(cast, GOOD, bundles=["industry.nope"])
    assert resp.status_code == 400 and "bundles[0]" in resp.json()["error"]["where"]
    assert Backtest.objects.count() == 0


def test_more_alternatives_than_a_backtest_replays_is_a_400_not_a_silent_cut(cast):
    many = ["static", "reactive-unified", "lt-i", "lt-u", "lt-ua"]
    bundles = ["industry.hpa-running", "industry.hpa-waiting", "industry.hpa-kv", "industry.knative-kpa",
               "industry.aibrix-apa", "industry.aibrix-kpa", "industry.dynamo-constant", "industry.llmd-wva"]
    resp = _post(cast, GOOD, strategies=many, bundles=bundles)  # 13 alternatives, 12 replayed at most
    assert resp.status_code == 400, resp.json()
    assert resp.json()["error"]["where"] == "strategies" and "at most 12" in resp.json()["error"]["message"]
    assert Backtest.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_the_cli_refuses_more_seeds_than_a_backtest_runs(tmp_path):
    sc, rep = tmp_path / "w.json", tmp_path / "r.csv"
    sc.write_text(json.dumps(_short()))
    rep.write_text(GOOD)
    with pytest.raises(CommandError, match="seeds: 11 seeds"):
        call_command("backtest", str(sc), "--replicas", str(rep), "--strategies", "static",
                     "--seeds", ",".join(str(s) for s in range(1, 12)), stdout=io.StringIO())
    assert Backtest.objects.count() == 0


def test_a_backtest_runs_as_run_exactly_and_the_page_shows_its_deltas(cast, client,
                                                                       django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        resp = _post(cast, GOOD, strategies=["static"], startup_s=60)
    assert resp.status_code == 201, resp.json()
    bt = Backtest.objects.get(pk=resp.json()["id"])
    assert bt.job.status == "succeeded", bt.job.last_error
    assert bt.as_run_exact is True
    keys = [r["key"] for r in bt.result["runs"]]
    assert keys == ["as-run", "static", "industry.hpa-running"]
    got = cast.owner.api.get(f"/api/backtests/{bt.pk}/").json()
    assert got["as_run_exact"] is True and got["result"]["recorded"][EP][0] == 2
    assert cast.outsider.api.get(f"/api/backtests/{bt.pk}/").status_code == 404
    client.force_login(cast.owner.user)
    page = client.get(f"/backtests/{bt.pk}/")
    assert page.status_code == 200
    assert b"reproduces the recorded replicas exactly" in page.content and b"industry.hpa-running" in page.content
    static = next(r for r in bt.result["runs"] if r["key"] == "static")
    assert f"{100 * static['attainment']:.1f}%".encode() in page.content  # the attainment column shows the value


def test_the_page_form_refuses_a_bad_file_with_the_row_named(cast, client):
    client.force_login(cast.owner.user)
    resp = client.post("/backtests/new/", {"scenario_json": json.dumps(_short()), "bundles": ["industry.hpa-running"],
                                           "replicas_csv": f"timestamp,endpoint,replicas\n0,{EP},x\n"})
    assert resp.status_code == 400 and b"replicas row 2, column replicas" in resp.content
    assert Backtest.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_the_backtest_command_prints_each_run(tmp_path):
    sc, rep = tmp_path / "w.json", tmp_path / "r.csv"
    sc.write_text(json.dumps(_short()))
    rep.write_text(GOOD)
    out = io.StringIO()
    call_command("backtest", str(sc), "--replicas", str(rep), "--strategies", "static", "--json", stdout=out)
    body = json.loads(out.getvalue())
    assert body["status"] == "succeeded" and body["as_run_exact"] is True
    assert [r["key"] for r in body["runs"]] == ["as-run", "static"]


def test_a_bad_latency_file_is_a_400_naming_row_and_column(cast):
    resp = _post(cast, GOOD, latency_csv="minute,ttft_p95_s\n0,0.5\n1,slow\n")
    assert resp.status_code == 400
    assert resp.json()["error"]["where"] == "latency row 3, column ttft_p95_s"
    assert Backtest.objects.count() == 0


def test_measured_latency_is_reported_beside_the_as_run(cast, client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        resp = _post(cast, GOOD, latency_csv="minute,ttft_p50_s,ttft_p95_s\n0,0.1,0.5\n1,0.1,0.5\n2,0.1,0.5\n")
    bt = Backtest.objects.get(pk=resp.json()["id"])
    gap = bt.result["latency_gap"]
    assert gap["ttft_p95_s"]["minutes"] == 3 and gap["ttft_p50_s"]["mean_gap_s"] is not None
    client.force_login(cast.owner.user)
    assert b"against measured latency" in client.get(f"/backtests/{bt.pk}/").content


def test_seeds_put_bands_on_the_page(cast, client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        resp = _post(cast, GOOD, seeds=[1, 2])
    assert resp.status_code == 201
    bt = Backtest.objects.get(pk=resp.json()["id"])
    assert bt.result["bands"]["industry.hpa-running"]["seeds"] == 2
    client.force_login(cast.owner.user)
    assert b'class="muted band"' in client.get(f"/backtests/{bt.pk}/").content
    bad = _post(cast, GOOD, seeds=[-1])
    assert bad.status_code == 400 and "seeds" in json.dumps(bad.json()["error"])


def _hpa_events(*sizes_at):
    return json.dumps({"kind": "List", "items": [
        {"kind": "Event", "reason": "SuccessfulRescale", "lastTimestamp": t,
         "involvedObject": {"kind": "HorizontalPodAutoscaler", "name": "us-west-llama2-70b"},
         "message": f"New size: {n}; reason: external metric above target"} for t, n in sizes_at]})


def test_hpa_events_replay_as_run_exactly_and_a_bad_event_is_a_400_storing_nothing(
        cast, django_capture_on_commit_callbacks):
    bad = _hpa_events(("2027-01-15T08:00:00Z", 2), ("2027-01-15T08:04:00Z", "-3"))
    resp = _post(cast, bad, origin="2027-01-15T08:00:00Z")
    assert resp.status_code == 400
    assert resp.json()["error"]["where"] == "replicas items[1], column replicas"
    assert Backtest.objects.count() == 0 and Job.objects.count() == 0
    good = _hpa_events(("2027-01-15T07:55:00Z", 2), ("2027-01-15T08:04:00Z", 3), ("2027-01-15T08:12:00Z", 2))
    with django_capture_on_commit_callbacks(execute=True):
        resp = _post(cast, good, origin="2027-01-15T08:00:00Z", strategies=["static"], startup_s=60)
    assert resp.status_code == 201, resp.json()
    bt = Backtest.objects.get(pk=resp.json()["id"])
    assert bt.job.status == "succeeded", bt.job.last_error
    assert bt.as_run_exact is True
    rec = bt.result["recorded"][EP]  # per timeline sample: 2, then 3 from minute 4, then 2 from minute 12
    assert rec[0] == 2 and 3 in rec and rec[-1] == 2


def test_the_as_run_check_shows_the_deployments_validation_report(cast, client):
    from planner.benchmarks.models import Validation
    from planner.hardware.models import Deployment

    resp = _post(cast, GOOD, strategies=["static"])  # queued: the check needs no finished job
    assert resp.status_code == 201, resp.json()
    got = cast.owner.api.get(f"/api/backtests/{resp.json()['id']}/").json()["validation"]
    assert got == [{"endpoint": EP, "deployment": "llama2-70b/h100-80gb/tp8", "deployment_id": got[0]["deployment_id"],
                    "checked": False, "text": "not checked against real runs"}]
    dep = Deployment.objects.get(pk=got[0]["deployment_id"])
    Validation.objects.create(team=cast.owner.team, deployment=dep,
                              pooled={"e2e_mean": {"median": 7.5}, "ttft_mean": {"median": 12.0}})
    got = cast.owner.api.get(f"/api/backtests/{resp.json()['id']}/").json()["validation"][0]
    assert got["checked"] is True and got["e2e_pct"] == 7.5 and "median E2E error 7.5 %, TTFT 12.0 %" in got["text"]
    client.force_login(cast.owner.user)
    page = client.get(f"/backtests/{resp.json()['id']}/").content.decode()
    assert "median E2E error 7.5 %, TTFT 12.0 %" in page and f"/benchmarks/deployments/{dep.pk}/" in page
