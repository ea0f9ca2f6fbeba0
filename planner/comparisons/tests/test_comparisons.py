"""Comparisons: variants, the savings arithmetic, fan-out/fan-in of child jobs, access, exports, CLI."""

from __future__ import annotations

import copy
import io
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.management import call_command

from planner.comparisons import services as comparison_services
from planner.comparisons.core.aggregate import aggregate
from planner.comparisons.core.variants import VariantError, build_variants, pick_baseline
from planner.comparisons.kinds import fleet as fleet_kind
from planner.comparisons.models import Comparison, VariantResult
from planner.jobs.models import Job
from planner.jobs.services import cancel_job

HERE = Path(__file__).resolve().parent
TINY = json.loads((HERE / "tiny_scenario.json").read_text())


def fake_summary(key, strategy, *, inst_h, price=100.0, gpus=8, hours=24.0, att_f=0.99, att_n=1.0, waste=0.0):
    return {
        "key": key, "strategy": strategy, "scheduler": "fcfs", "duration_s": hours * 3600, "requests": 1000,
        "price_per_instance_hour": price,
        "totals": {"instance_hours": inst_h, "gpu_hours": inst_h * gpus, "cost_usd": inst_h * price,
                   "provisioning_gpu_hours": waste, "scale_out_events": 3, "scale_in_events": 2},
        "endpoints": [{"region": "r1", "model": "m", "gpu": "h100", "instance_hours": inst_h / 2,
                       "gpu_hours": inst_h * gpus / 2, "cost_usd": inst_h * price / 2},
                      {"region": "r2", "model": "m", "gpu": "h100", "instance_hours": inst_h / 2,
                       "gpu_hours": inst_h * gpus / 2, "cost_usd": inst_h * price / 2}],
        "tiers": {"IW-F": {"n": 600, "attainment": att_f, "ttft_p95": 0.8, "e2e_p95": 9.0},
                  "IW-N": {"n": 300, "attainment": att_n, "ttft_p95": 2.0, "e2e_p95": 12.0},
                  "NIW": {"n": 100, "attainment": 1.0, "ttft_p95": 50.0, "e2e_p95": 300.0}},
        "waste_by_source": {"spot-same": waste},
        "timeline": {"t_s": [0, 3600], "instances": {"r1/m": [2, 3], "r2/m": [2, 2]},
                     "utilisation": {"r1/m": [0.2, 0.5], "r2/m": [0.1, 0.3]}, "instances_total": [4, 5]},
    }


FAKE = {"reactive-unified": 362.25, "lt-i": 274.5, "lt-u": 291.0, "lt-ua": 277.5, "static": 480.0}


@pytest.fixture
def fake_engine(monkeypatch):
    calls = []

    def run(scenario, variant, *, progress, base_dir):
        calls.append(variant["key"])
        progress(0.5, "half way")
        if variant["knobs"].get("explode"):
            raise RuntimeError("engine exploded")
        return fake_summary(variant["key"], variant["strategy"], inst_h=FAKE[variant["strategy"]],
                            waste=10.0 if variant["strategy"] == "reactive-unified" else 3.0)

    monkeypatch.setattr(fleet_kind, "_run", run)
    # the engine would refuse the fake engine's own knob ("explode") when the comparison starts
    monkeypatch.setattr(comparison_services, "validate_variants", lambda scenario, variants: None)
    return calls


# ---------------------------------------------------------------- variants


def test_strategies_cross_schedulers_into_keyed_variants():
    vs = build_variants(["reactive-unified", "lt-ua"], ["fcfs", "pf"])
    assert [v["key"] for v in vs] == ["reactive-unified@fcfs", "reactive-unified@pf", "lt-ua@fcfs", "lt-ua@pf"]
    assert pick_baseline(vs, "reactive-unified") == "reactive-unified@fcfs"


def test_an_unknown_strategy_or_duplicate_key_is_refused_with_the_field_named():
    with pytest.raises(VariantError) as exc:
        build_variants(["lt-x"])
    assert exc.value.field == "strategies[0]"
    with pytest.raises(VariantError) as exc:
        build_variants(["lt-ua"], variants=[{"strategy": "lt-ua", "key": "lt-ua"}])
    assert "duplicate" in exc.value.message


# ---------------------------------------------------------------- savings arithmetic


def test_the_savings_table_reproduces_the_papers_fig11_percentages_and_cost_arithmetic():
    sums = {k: fake_summary(k, k, inst_h=v, price=98.32) for k, v in FAKE.items() if k != "static"}
    agg = aggregate(sums, "reactive-unified", projection={"models": 3, "regions": 4})
    rows = {r["key"]: r for r in agg["rows"]}
    # SageServe 7.2.1: 24.21 %, 19.65 %, 23.38 % fewer instance-hours than Reactive
    assert rows["lt-i"]["saved_instance_hours_pct"] == pytest.approx(24.22, abs=0.01)
    assert rows["lt-u"]["saved_instance_hours_pct"] == pytest.approx(19.67, abs=0.01)
    assert rows["lt-ua"]["saved_instance_hours_pct"] == pytest.approx(23.39, abs=0.01)
    # a 24 h span: saved $ per week = 84.75 h x $98.32 x 7
    assert rows["lt-ua"]["saved_usd_per_week"] == pytest.approx(84.75 * 98.32 * 7)
    # paper-style: per endpoint per day (2 endpoints) x price x 3 models x 4 regions x 7 days
    assert rows["lt-ua"]["paper_style_usd_per_week"] == pytest.approx(98.32 * 84.75 / 2 * 3 * 4 * 7)
    assert agg["projection"]["paper_own_example"]["value_usd"] == pytest.approx(702005, abs=1)
    assert rows["reactive-unified"]["saved_usd"] == 0 and rows["reactive-unified"]["is_baseline"]
    assert agg["best"] == "lt-i"


def test_attainment_sits_beside_every_saving_with_its_change_against_the_baseline():
    sums = {"reactive-unified": fake_summary("reactive-unified", "reactive-unified", inst_h=10, att_f=0.95),
            "lt-i": fake_summary("lt-i", "lt-i", inst_h=8, att_f=0.90)}
    row = aggregate(sums, "reactive-unified")["rows"][1]
    assert row["tiers"]["IW-F"]["attainment"] == 0.90
    assert row["tiers"]["IW-F"]["attainment_delta"] == pytest.approx(-0.05)
    assert row["saved_gpu_hours"] == pytest.approx(16.0)


def test_a_half_day_span_is_projected_to_a_week_by_24_over_the_span():
    sums = {"a": fake_summary("a", "reactive-unified", inst_h=10, hours=12), "b": fake_summary("b", "lt-i", inst_h=6, hours=12)}
    row = aggregate(sums, "a")["rows"][1]
    assert row["saved_usd_per_day"] == pytest.approx(4 * 100.0 * 2)
    assert row["saved_usd_per_month"] == pytest.approx(4 * 100.0 * 2 * 365.25 / 12)


# ---------------------------------------------------------------- fan-out / fan-in through jobs


def _create(cast, **body):
    body.setdefault("scenario", TINY)
    body.setdefault("strategies", ["reactive-unified", "lt-i", "lt-u", "lt-ua"])
    return cast.owner.api.post("/api/comparisons/", body, format="json")


@pytest.mark.django_db(transaction=True)
def test_a_comparison_fans_out_one_child_job_per_strategy_and_aggregates_once(cast, fake_engine):
    resp = _create(cast)
    assert resp.status_code == 201, resp.content
    comp = Comparison.objects.get(pk=resp.json()["id"])
    # the four strategies, then the chosen one (lt-i) replayed at 1.2x the load for the card (load_check.py)
    assert sorted(fake_engine) == ["lt-i", "lt-i@load1.2", "lt-u", "lt-ua", "reactive-unified"]
    children = Job.objects.filter(parent=comp.job)
    assert children.count() == 5 and set(children.values_list("status", flat=True)) == {"succeeded"}
    assert comp.results.count() == 4 and VariantResult.all_runs.filter(comparison=comp).count() == 5
    comp.refresh_from_db()
    assert comp.job.status == "succeeded" and comp.aggregation_started
    assert comp.job.result["best"] == "lt-i"
    rows = {r["key"]: r for r in comp.summary["rows"]}
    assert rows["lt-ua"]["saved_instance_hours_pct"] == pytest.approx(23.39, abs=0.01)
    assert rows["lt-ua"]["waste_reduction_pct"] == pytest.approx(70.0)


@pytest.mark.django_db(transaction=True)
def test_a_failed_strategy_is_reported_and_the_others_are_still_compared(cast, fake_engine):
    resp = _create(cast, strategies=["reactive-unified", "lt-i"],
                   variants=[{"strategy": "lt-ua", "knobs": {"explode": True}, "key": "lt-ua-broken"}])
    comp = Comparison.objects.get(pk=resp.json()["id"])
    broken = comp.results.get(key="lt-ua-broken")
    assert broken.status == "failed" and "exploded" in broken.error["message"]
    assert broken.job.status == "failed"
    comp.refresh_from_db()
    # a comparison some of whose strategies failed is not "succeeded": it ends "partial", saying which
    assert comp.job.status == "partial"
    assert comp.job.last_error["type"] == "PartialFailure" and "lt-ua-broken (failed)" in comp.job.last_error["message"]
    assert comp.job.result["missing"] == {"lt-ua-broken": "failed"}
    assert [r["key"] for r in comp.summary["rows"]] == ["reactive-unified", "lt-i"]
    assert comp.summary["missing"] == {"lt-ua-broken": "failed"}


@pytest.mark.django_db(transaction=True)
def test_when_the_baseline_fails_the_comparison_fails_with_a_structured_error(cast, fake_engine):
    resp = _create(cast, strategies=["lt-i"], baseline="boom",
                   variants=[{"strategy": "reactive-unified", "knobs": {"explode": True}, "key": "boom"}])
    comp = Comparison.objects.get(pk=resp.json()["id"])
    assert comp.job.status == "failed"
    assert "baseline" in comp.job.last_error["message"] and comp.job.last_error["hint"]


def test_cancelling_the_parent_cancels_every_strategy_run(cast, fake_engine, django_capture_on_commit_callbacks):
    from planner.comparisons.services import start_comparison

    with django_capture_on_commit_callbacks(execute=False):
        comp = start_comparison(team=cast.owner.team, user=cast.owner.user, scenario=TINY,
                                strategies=["reactive-unified", "lt-ua"])
    assert comp.job.status == "queued"
    assert cancel_job(comp.job)
    assert set(Job.objects.filter(parent=comp.job).values_list("status", flat=True)) == {"cancelled"}
    assert fake_engine == []


def test_a_strategy_cancelled_mid_run_is_recorded_and_the_parent_is_not_run(cast, monkeypatch):
    from planner.comparisons.services import start_comparison
    from planner.jobs.tasks import execute

    comp = start_comparison(team=cast.owner.team, user=cast.owner.user, scenario=TINY, strategies=["lt-ua"])
    child = comp.results.get().job

    def run(scenario, variant, *, progress, base_dir):
        cancel_job(comp.job)  # the user clicks cancel on the comparison while this strategy runs
        time.sleep(0.6)  # progress writes (and checks) at most every 0.5 s
        progress(0.5, "still going")
        raise AssertionError("progress must raise once cancelled")

    monkeypatch.setattr(fleet_kind, "_run", run)
    assert execute(child.pk) == "cancelled"
    assert comp.results.get().status == VariantResult.Status.CANCELLED
    comp.refresh_from_db()
    assert comp.job.status == "cancelled" and comp.summary == {}


# ---------------------------------------------------------------- API access and exports


@pytest.mark.django_db(transaction=True)
def test_owner_and_teammate_see_a_comparison_and_its_exports_but_an_outsider_does_not(cast, fake_engine):
    pk = _create(cast).json()["id"]
    for member in (cast.owner, cast.teammate):
        assert member.api.get(f"/api/comparisons/{pk}/").status_code == 200
        csv_resp = member.api.get(f"/api/comparisons/{pk}/csv/")
        assert csv_resp.status_code == 200 and csv_resp["Content-Type"].startswith("text/csv")
    for suffix in ("", "csv/", "export/", "pdf/"):
        assert cast.outsider.api.get(f"/api/comparisons/{pk}/{suffix}").status_code == 404
    assert cast.outsider.api.get("/api/comparisons/").json()["count"] == 0
    body = cast.owner.api.get(f"/api/comparisons/{pk}/export/").json()
    assert body["aggregate"]["baseline"] == "reactive-unified" and set(body["results"]) == set(FAKE) - {"static"}
    csv_text = cast.owner.api.get(f"/api/comparisons/{pk}/csv/").content.decode()
    assert "savings,lt-ua,,,,saved_instance_hours,84.75" in csv_text
    assert "timeline_instances,lt-i,r1,m,,t=3600,3" in csv_text
    pdf = cast.owner.api.get(f"/api/comparisons/{pk}/pdf/")
    assert pdf.status_code == 200 and pdf.content[:5] == b"%PDF-"


def test_a_bad_scenario_is_refused_with_the_field_and_nothing_is_stored(cast):
    bad = copy.deepcopy(TINY)
    bad["fleet"]["endpoints"][0]["deployment"] = "no-such-gpu"
    resp = _create(cast, scenario=bad)
    assert resp.status_code == 400
    assert "fleet.endpoints[0].deployment" in json.dumps(resp.json())
    assert Comparison.objects.count() == 0 and Job.objects.count() == 0
    resp = _create(cast, strategies=["lt-x"])
    assert resp.status_code == 400 and Comparison.objects.count() == 0


def test_anonymous_callers_are_refused(client, db):
    assert client.get("/api/comparisons/").status_code in (401, 403)


@pytest.mark.django_db(transaction=True)
def test_the_page_shows_the_savings_table_figures_and_export_buttons(cast, fake_engine, client):
    pk = _create(cast).json()["id"]
    client.force_login(cast.teammate.user)
    html = client.get(f"/comparisons/{pk}/").content.decode()
    for text in ("savings against reactive-unified", "fig-fig11", "fig-fig13b", "fig-fig15", "Export CSV",
                 "PDF cost report", "678.0"):  # saved GPU-h = 84.75 inst-h x 8
        assert text in html, text
    assert client.get(f"/comparisons/{pk}/report.pdf").content[:5] == b"%PDF-"
    client.force_login(cast.outsider.user)
    assert client.get(f"/comparisons/{pk}/").status_code == 404


# ---------------------------------------------------------------- the real engine, end to end


@pytest.mark.django_db(transaction=True)
def test_a_real_engine_comparison_runs_from_the_page_form(cast, client, settings, tmp_path):
    client.force_login(cast.owner.user)
    resp = client.post("/comparisons/new/", {"scenario_json": json.dumps(TINY), "strategies": ["static", "reactive-unified"],
                                             "baseline": "reactive-unified", "name": "tiny"})
    assert resp.status_code == 302
    comp = Comparison.objects.get(name="tiny")
    assert comp.job.status == "succeeded", comp.job.last_error
    rows = {r["key"]: r for r in comp.summary["rows"]}
    # static keeps the 8 initial instances for the whole run: instance-hours = 8 x span
    static = comp.results.get(key="static").metrics
    assert rows["static"]["instance_hours"] == pytest.approx(8 * static["duration_s"] / 3600, rel=1e-6)
    assert static["tiers"]["IW-F"]["n"] + static["tiers"]["IW-N"]["n"] + static["tiers"]["NIW"]["n"] == 1500


@pytest.mark.django_db(transaction=True)
def test_the_compare_command_prints_one_json_object_and_writes_the_pdf(db, tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY))
    out = io.StringIO()
    pdf = tmp_path / "report.pdf"
    call_command("compare", str(path), "--strategies", "static,reactive-unified", "--json", "--pdf", str(pdf),
                 stdout=out)
    body = json.loads(out.getvalue())
    assert body["status"] == "succeeded" and body["aggregate"]["baseline"] == "reactive-unified"
    assert body["answer"]["status"] in ("answer", "no_fleet") and body["answer"]["headline"]
    assert pdf.read_bytes()[:5] == b"%PDF-"


def test_the_comparison_core_imports_without_django():
    code = ("import sys; import planner.comparisons.core.aggregate, planner.comparisons.core.runner, "
            "planner.comparisons.core.summary, planner.comparisons.core.variants, planner.comparisons.core.export, "
            "planner.comparisons.core.figures, planner.comparisons.core.report, planner.comparisons.core.decision, "
            "planner.comparisons.core.kind_answer, planner.comparisons.core.serverless_report; "
            "assert 'django' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=HERE.parents[2])


@pytest.mark.django_db(transaction=True)
def test_a_variant_knob_the_engine_does_not_know_is_refused_when_the_comparison_starts(cast):
    resp = _create(cast, strategies=["reactive-unified"],
                   variants=[{"strategy": "lt-ua", "knobs": {"explode": True}, "key": "lt-ua-broken"}])
    assert resp.status_code == 400, resp.content
    assert "explode" in resp.json()["error"]["where"] + resp.json()["error"]["message"]
    assert not Comparison.objects.exists() and not Job.objects.exists()
