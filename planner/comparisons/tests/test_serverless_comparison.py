"""Serverless comparisons: SLINFER, the ServerlessLLM baselines and ablations as a comparison's child
jobs (in-process runner here; tests/.../test_serverless_comparison_worker.py runs them on a real worker)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.test import Client

from planner.comparisons.core.serverless import aggregate, build_variants
from planner.comparisons.models import Comparison
from simulations.engine.serverless.spec import parse, run

ROOT = Path(__file__).resolve().parents[3]
SPEC = {"name": "serverless cmp", "model": "llama-2-7b", "workload": {"models": 32, "duration_s": 60},
        "nodes": {"cpu": 4, "gpu": 4}}


def _scenario(**extra):
    return {"kind": "serverless", **SPEC, **extra}


def test_variants_and_baseline_are_checked():
    vs, base = build_variants(None, None)
    assert [v["key"] for v in vs] == ["sllm", "sllm+c", "sllm+c+s", "slinfer"] and base == "sllm"
    vs, base = build_variants(["slinfer", "slinfer-no-cpu"], None)
    assert base == "slinfer" and vs[1] == {"key": "slinfer-no-cpu", "strategy": "slinfer", "scheduler": "",
                                           "knobs": {"use_cpu": False}}
    from planner.comparisons.core.serverless import ServerlessVariantError

    with pytest.raises(ServerlessVariantError) as e:
        build_variants(["slinfer", "vllm"], None)
    assert e.value.field == "systems"
    with pytest.raises(ServerlessVariantError) as e:
        build_variants(["slinfer"], "sllm")
    assert e.value.field == "baseline"


def test_aggregate_by_hand():
    m = {"sllm": {"system": "sllm", "requests": 100, "slo_met": 40, "energy_kwh": 0.5, "avg_gpu_nodes": 4.0},
         "slinfer": {"system": "slinfer", "requests": 100, "slo_met": 90, "energy_kwh": 0.6, "avg_gpu_nodes": 2.0}}
    agg = aggregate(m, "sllm", ["sllm", "slinfer", "sllm+c"])
    rows = {r["key"]: r for r in agg["rows"]}
    assert list(rows) == ["sllm", "slinfer"] and agg["best"] == "slinfer"
    assert rows["slinfer"]["slo_met_vs_baseline"] == pytest.approx(2.25)
    assert rows["slinfer"]["energy_vs_baseline"] == pytest.approx(1.2)
    assert rows["slinfer"]["wh_per_slo_met"] == pytest.approx(600 / 90)
    no_base = aggregate({"slinfer": m["slinfer"]}, "sllm", ["sllm", "slinfer"])
    assert not no_base["baseline_finished"] and no_base["rows"][0]["slo_met_vs_baseline"] is None


@pytest.mark.django_db(transaction=True)
def test_api_comparison_of_systems_matches_the_standalone_runs(cast):
    """Each system's row equals a standalone run of the same spec (the engine, not the comparison, makes the
    numbers); the ablation's override reaches the engine; page, CSV, JSON and PDF work."""
    systems = ["sllm", "sllm+c+s", "slinfer", "slinfer-no-cpu"]
    resp = cast.owner.api.post("/api/comparisons/", {"scenario": _scenario(), "systems": systems}, format="json")
    assert resp.status_code == 201, resp.content
    body = cast.owner.api.get(f"/api/comparisons/{resp.json()['id']}/").json()
    assert body["status"] == "succeeded", body
    assert [r["key"] for r in body["results"]] == systems and body["baseline"] == "sllm"
    assert all(r["totals"]["no_oom"] for r in body["results"])
    rows = {r["key"]: r for r in body["summary"]["rows"]}
    alone = run(parse({**SPEC, "systems": ["sllm", "sllm+c+s", "slinfer"]}))["results"]
    for key in ("sllm", "sllm+c+s", "slinfer"):
        assert rows[key]["slo_met"] == alone[key]["slo_met"]
        assert rows[key]["avg_gpu_nodes"] == pytest.approx(alone[key]["avg_gpu_nodes"])
        assert rows[key]["energy_kwh"] == pytest.approx(alone[key]["energy_kwh"])
    assert rows["slinfer"]["slo_met_vs_baseline"] == pytest.approx(alone["slinfer"]["slo_met"] /
                                                                   alone["sllm"]["slo_met"])
    assert rows["slinfer-no-cpu"]["avg_cpu_nodes"] == 0 and rows["slinfer"]["avg_cpu_nodes"] > 0

    comp = Comparison.objects.get(pk=body["id"])
    page = Client()
    page.force_login(cast.owner.user)
    html = page.get(f"/comparisons/{comp.pk}/").content.decode()
    top = html[:html.index("data-strategy-table")]  # the decision card and the compact table lead the page
    assert "data-decision-card" in top and html.index("data-decision-card") < html.index('id="fig-')
    assert 'data-row="slinfer-no-cpu"' in html and html.count("data-row=") == len(rows)
    assert html.count('class="plot"') == 4 and "serverless-systems" in html and 'id="fig-nodes_over_time"' in html
    assert 'id="fig-resizing"' not in html  # one bar is a table cell, not a chart
    pdf = page.get(f"/comparisons/{comp.pk}/report.pdf")
    assert pdf.status_code == 200 and pdf.content[:4] == b"%PDF"
    api_pdf = cast.owner.api.get(f"/api/comparisons/{comp.pk}/pdf/")
    assert api_pdf.status_code == 200 and api_pdf.content[:4] == b"%PDF"
    csv = page.get(f"/comparisons/{comp.pk}/export.csv").content.decode()
    assert f"systems,slinfer,,,,slo_met,{rows['slinfer']['slo_met']}" in csv
    exported = json.loads(page.get(f"/comparisons/{comp.pk}/export.json").content)
    assert exported["results"]["slinfer"]["slo_met"] == rows["slinfer"]["slo_met"]
    assert cast.outsider.api.get(f"/api/comparisons/{comp.pk}/").status_code == 404
    listing = page.get("/comparisons/?status=succeeded").content.decode()
    assert "serverless cmp" in listing
    job_page = page.get(f"/jobs/{comp.job_id}/").content.decode()
    assert f"comparison #{comp.pk}" in job_page


@pytest.mark.django_db(transaction=True)
def test_a_failed_system_makes_the_comparison_partial(cast, monkeypatch):
    from planner.comparisons import serverless

    real = serverless.simulate_variant

    def flaky(scenario, variant):
        if variant["key"] == "sllm+c":
            raise RuntimeError("boom in sllm+c")
        return real(scenario, variant)

    monkeypatch.setattr(serverless, "simulate_variant", flaky)
    resp = cast.owner.api.post("/api/comparisons/", {"scenario": _scenario(), "systems": ["sllm", "sllm+c", "slinfer"]},
                               format="json")
    comp = Comparison.objects.get(pk=resp.json()["id"])
    assert comp.status == "partial" and comp.job.status == "partial"
    assert [r["key"] for r in comp.summary["rows"]] == ["sllm", "slinfer"] and comp.summary["missing"] == {
        "sllm+c": "failed"}
    page = Client()
    page.force_login(cast.owner.user)
    html = page.get(f"/comparisons/{comp.pk}/").content.decode()
    assert "Partial result: 1 of 3 system runs did not finish" in html and "boom in sllm+c" in html
    from planner.comparisons.kinds import export_pdf

    assert export_pdf(comp)[:4] == b"%PDF"


@pytest.mark.django_db(transaction=True)
def test_every_system_failing_fails_the_comparison(cast, monkeypatch):
    from planner.comparisons import serverless

    monkeypatch.setattr(serverless, "simulate_variant", lambda s, v: (_ for _ in ()).throw(RuntimeError("down")))
    resp = cast.owner.api.post("/api/comparisons/", {"scenario": _scenario(), "systems": ["sllm", "slinfer"]},
                               format="json")
    comp = Comparison.objects.get(pk=resp.json()["id"])
    assert comp.status == "failed" and comp.job.status == "failed"


@pytest.mark.django_db(transaction=True)
def test_bad_serverless_input_is_a_400_naming_the_field(cast):
    bad = cast.owner.api.post("/api/comparisons/", {"scenario": _scenario(workload={"models": 33})}, format="json")
    assert bad.status_code == 400 and bad.json()["error"]["where"] == "scenario.workload.models"
    bad = cast.owner.api.post("/api/comparisons/", {"scenario": _scenario(), "systems": ["vllm"]}, format="json")
    assert bad.status_code == 400 and "systems" in bad.content.decode()
    bad = cast.owner.api.post("/api/comparisons/", {"scenario": _scenario(), "systems": ["slinfer"],
                                                    "baseline": "sllm"}, format="json")
    assert bad.status_code == 400 and bad.json()["error"]["where"] == "baseline"
    assert Comparison.objects.count() == 0


def test_a_serverless_spec_without_the_kind_marker_is_recognised_by_its_shape():
    """fixtures/serverless/*.json carry no "kind": pasted as they are into a comparison they are still serverless
    (nodes and no fleet); a fleet scenario is never taken for one (it always has a fleet)."""
    from planner.comparisons.core.serverless import is_serverless

    fixture = json.loads((ROOT / "fixtures/serverless/slinfer_32x7b.json").read_text())
    assert "kind" not in fixture and is_serverless(fixture)
    assert is_serverless(_scenario())
    fleet = json.loads((ROOT / "fixtures/scenarios/small_reactive.json").read_text())
    assert not is_serverless(fleet) and not is_serverless({**fleet, "nodes": {"cpu": 1}})
    assert not is_serverless(None) and not is_serverless([])

def _page_form(**over) -> dict:
    data = {"sl-name": SPEC["name"], "sl-model": "llama2-7b", "sl-workload__models": "32",
            "sl-workload__duration_s": "60", "sl-nodes__cpu": "4", "sl-nodes__gpu": "4",
            "sl-systems": ["sllm", "slinfer"], "sl-baseline": "sllm"}
    data.update(over)
    return data


@pytest.mark.django_db(transaction=True)
def test_the_serverless_page_is_a_form_that_runs_and_compares(cast):
    from planner.jobs.models import Job

    page = Client()
    page.force_login(cast.owner.user)
    html = page.get("/simulations/serverless/").content.decode()
    assert "<textarea" not in html and 'name="sl-nodes__cpu"' in html and 'value="llama2-7b"' in html
    resp = page.post("/simulations/serverless/", {"action": "compare", **_page_form()})
    assert resp.status_code == 302, resp.content.decode()[:2000]
    comp = Comparison.objects.get(name=SPEC["name"])
    assert resp["Location"] == f"/comparisons/{comp.pk}/" and comp.status == "succeeded"
    assert [r.key for r in comp.results.all()] == ["sllm", "slinfer"] and comp.scenario["model"] == "llama2-7b"
    resp = page.post("/simulations/serverless/", {"action": "compare", **_page_form(
        **{"sl-systems": ["sllm", "slinfer", "slinfer-no-cpu"], "sl-name": "with an ablation"})})
    assert resp.status_code == 302, resp.content.decode()[:2000]  # an ablation is one of the comparison's systems
    comp = Comparison.objects.get(name="with an ablation")
    assert [r.key for r in comp.results.all()] == ["sllm", "slinfer", "slinfer-no-cpu"]
    bad = page.post("/simulations/serverless/", {"action": "run", **_page_form(**{"sl-systems": ["slinfer-no-cpu"],
                                                                                  "sl-baseline": "slinfer-no-cpu"})})
    assert bad.status_code == 400 and "runs only in a comparison" in bad.content.decode()
    bad = page.post("/simulations/serverless/", {"action": "compare", **_page_form(**{"sl-systems": ["slinfer"]})})
    assert bad.status_code == 400 and "not among the ticked systems" in bad.content.decode()
    bad = page.post("/simulations/serverless/", {"action": "run", **_page_form(**{"sl-workload__duration_s": "0"})})
    text = bad.content.decode()
    assert bad.status_code == 400 and "data-form-errors" in text  # at the top of the form
    assert "data-field-error" in text[text.index('data-schema-field="workload__duration_s"'):][:1500]  # on the field
    assert Comparison.objects.count() == 2 and not Job.objects.filter(kind="serverless.run").exists()
    resp = page.post("/simulations/serverless/", {"action": "run", **_page_form()})
    assert resp.status_code == 302
    job = Job.objects.get(kind="serverless.run")
    assert job.params["spec"]["systems"] == ["sllm", "slinfer"] and job.params["spec"]["model"] == "llama2-7b"


@pytest.mark.django_db(transaction=True)
def test_manage_serverless_compare(cast, tmp_path):
    from django.core.management import CommandError, call_command

    spec = tmp_path / "s.json"
    spec.write_text(json.dumps(SPEC))
    pdf = tmp_path / "r.pdf"
    buf = StringIO()
    call_command("serverless", str(spec), "--compare", "--systems", "sllm,slinfer,slinfer-no-sharing", "--json",
                 "--pdf", str(pdf), "--team", "Fleet A", stdout=buf)
    out = json.loads(buf.getvalue())
    assert out["status"] == "succeeded" and [r["key"] for r in out["aggregate"]["rows"]] == [
        "sllm", "slinfer", "slinfer-no-sharing"]
    assert pdf.read_bytes()[:4] == b"%PDF"
    buf = StringIO()
    call_command("serverless", str(spec), "--compare", "--team", "Fleet A", stdout=buf)
    assert "sllm (base)" in buf.getvalue() and "slinfer" in buf.getvalue()
    with pytest.raises(CommandError, match="systems"):
        call_command("serverless", str(spec), "--compare", "--systems", "nope", "--team", "Fleet A")


@pytest.mark.django_db(transaction=True)
def test_a_serverless_scenario_pasted_on_the_comparisons_page(cast):
    page = Client()
    page.force_login(cast.owner.user)
    scenario = _scenario(systems=["sllm", "slinfer"])
    resp = page.post("/comparisons/new/", {"scenario_json": json.dumps(scenario), "baseline": "reactive-unified"})
    assert resp.status_code == 302, resp.content
    comp = Comparison.objects.get()
    assert comp.baseline == "sllm" and [r.key for r in comp.results.all()] == ["sllm", "slinfer"]
    bad = page.post("/comparisons/new/", {"scenario_json": json.dumps(_scenario(nodes={"cpu": 0, "gpu": 0}))})
    assert bad.status_code == 400 and "scenario.nodes: " in bad.content.decode()


def test_a_node_timeline_of_many_short_steps_reads_as_its_windowed_average():
    from planner.comparisons.core.serverless import smooth_steps

    t = [float(i) for i in range(2000)]
    x, y = smooth_steps(t, [float(i % 2) for i in range(2000)], bins=20)
    assert len(x) == 20 and all(abs(v - 0.5) < 0.06 for v in y)  # a barcode of 0/1 is half a node on average
    x, y = smooth_steps(t, [3.0] * 2000, bins=20)
    assert y == [3.0] * 20 and x[0] > 0 and x[-1] < 1999
