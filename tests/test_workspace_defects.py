"""What a new planner ran into on the demo, one test each: the pasted plan's every problem named at the top, the
forecast form's defaults following the chosen trace, a deployment's basis said once, a forecast that needs review
read so in the jobs list, extrapolated monthly figures labelled, operator-level reports in the catalogue's names,
the top bar's secondary pages under one menu."""

from __future__ import annotations

import json
import re

import pytest
from django.template.loader import render_to_string
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture
def client_of(cast):
    client = Client()
    client.force_login(cast.owner.user)
    return client


def _summary(html: str) -> str:
    m = re.search(r"data-form-errors>(.*?)</div>", html, re.S)
    assert m, "no error summary at the top of the form"
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", m.group(1))).replace(" :", ":")


def test_an_empty_pasted_plan_names_every_missing_section_at_the_top(client_of):
    resp = client_of.post("/plans/new/", {"scenario": "{}"})
    assert resp.status_code == 400
    summary = _summary(resp.content.decode())
    assert "regions: is required" in summary and "deployments: is required" in summary, summary
    short = _summary(client_of.post("/plans/new/", {"scenario": '{"regions": []}'}).content.decode())
    assert "regions: needs at least 1 item" in short and "after validation" not in short, short


def test_a_plan_past_the_schema_still_names_its_one_problem(client_of):
    scenario = {"hours": 2, "regions": ["eastus"], "gpus": {"h100": {"on_demand": 10.0}},
                "deployments": [{"model": "m", "gpu": "a100", "gpus_per_instance": 1, "theta_tps": 100.0}],
                "demand": [{"model": "m", "region": "eastus", "tps": [10.0, 10.0]}]}
    resp = client_of.post("/plans/new/", {"scenario": json.dumps(scenario)})
    assert resp.status_code == 400
    assert "deployments[0].gpu" in _summary(resp.content.decode())


def test_the_forecast_form_carries_each_traces_own_defaults(client_of, cast):
    from planner.traces.models import Trace

    day = Trace.objects.create(team=cast.owner.team, name="a day", format="native", storage_key="day", span_s=86400,
                               fingerprint="day")
    hour = Trace.objects.create(team=cast.owner.team, name="an hour", format="native", storage_key="hr", span_s=3600,
                                fingerprint="hour")
    page = client_of.get("/forecasts/").content.decode()
    found = re.search(r'<script id="forecast-defaults" type="application/json">(.*?)</script>', page, re.S)
    assert found, "no per-trace defaults for the form's script"
    defaults = json.loads(found.group(1))
    assert defaults[str(hour.pk)] == {"horizon": "15min", "backtest": "30min", "resolution": "1min"}
    assert defaults[str(day.pk)]["backtest"] == "12h"


def test_an_estimated_deployment_says_estimated_once_in_its_basis_line(client_of):
    from planner.hardware.models import Deployment

    for name, expected in (("llama2-70b/mi300x-192gb/tp8", "Estimated by a datasheet rule: no measurement on this GPU."),
                           ("llama2-70b/a100-80gb/tp2", "Fitted from measurements: fixtures/hardware/sageserve/")):
        dep = Deployment.objects.get(builtin=True, name=name)
        page = client_of.get(f"/hardware/deployments/{dep.pk}/").content.decode()
        line = re.search(r"<p class=\"muted\" data-basis>(.*?)</p>", page, re.S).group(1)
        assert line.startswith(expected), line
        assert line.lower().count(dep.basis) == 1, line


def test_a_forecast_run_that_needs_review_reads_so_in_the_jobs_list_dashboard_and_job_page(client_of, cast):
    from forecasts.models import ForecastRun, ForecastSeries
    from planner.jobs.models import Job
    from planner.traces.models import Trace

    team = cast.owner.team
    trace = Trace.objects.create(team=team, name="t", format="native", storage_key="k1")
    job = Job.objects.create(team=team, kind="forecasts.run", status="succeeded", progress=100)
    run = ForecastRun.objects.create(team=team, trace=trace, job=job, params={"method": "auto", "rank_metric": "wmape"})
    job.params = {"run_id": run.pk}
    job.save(update_fields=["params"])
    child = Job.objects.create(team=team, kind="forecasts.series", status="succeeded", parent=job)
    ForecastSeries.objects.create(run=run, job=child, label="eastus|llama2-70b|IW-F", metric="input_tps",
                                  chosen_method="arima", peak=5.0, peak_upper=6.0,
                                  leaderboard=[{"method": "arima", "wmape": 131.0}])
    for url in ("/jobs/", "/"):
        page = client_of.get(url).content.decode()
        row = page[page.index(f'href="/jobs/{job.pk}/"'):]
        row = row[:row.index("</tr>")]
        assert 'class="status status-needs-review">needs review<' in row, (url, row)
    page = client_of.get(f"/jobs/{job.pk}/").content.decode()
    assert 'data-job-status class="status status-needs-review">needs review<' in page


def test_a_missed_target_names_its_monthly_figures_extrapolated():
    answer = {"status": "no_fleet", "headline": "no strategy meets every SLO target", "span_h": 1.0,
              "extrapolated": True, "hours_per_month": 730.0,
              "best": {"key": "lt-ua", "monthly_cost_usd": {"median": 143000.0, "p5": 143000.0, "p95": 143000.0, "n": 1},
                       "why": "misses the SLO"}}
    html = render_to_string("decisions/_card.html", {"answer": answer})
    closest = re.sub(r"\s+", " ", re.search(r"<p data-closest>(.*?)</p>", html, re.S).group(1))
    assert "a month (extrapolated from 1.0 simulated hours)" in closest, closest


def test_the_operator_level_report_names_the_model_and_gpu_as_the_catalogue_does(monkeypatch):
    from planner.opscale import report

    monkeypatch.setattr(report, "_chart", lambda result: None)  # the sentence is under test, not the chart
    row = {"gpu_s": 3600.0, "energy_j": 3.6e6, "memory_gb_s": 3600.0}
    phase = {key: row for key in ("model_level", "operator_level", "default_stream", "static_p95")}
    result = {"model": "llama-3-8b", "gpu": "a100", "windows": 2, "window_s": 300.0,
              "typical": {"qps": 1.0, "length": 2048, "out_tokens": 28},
              "totals": {"prefill": phase, "decode": phase}}
    text = " ".join(getattr(f, "text", "") for f in report.section(result, "Plan #1"))
    assert "llama3.1-8b on a100-80gb" in text and "llama-3-8b" not in text, text


def test_the_top_bar_keeps_the_workflow_in_line_and_the_rest_under_more(client_of):
    page = client_of.get("/").content.decode()
    nav = page[page.index("<nav data-main-nav>"):page.index("</nav>")]
    more = nav[nav.index("data-nav-more"):]
    top = re.findall(r">([^<>]+)</a>", nav[:nav.index("data-nav-more")])
    assert top == ["Traces", "Hardware", "Forecasts", "Plans", "Simulations", "Comparisons", "Capacity search", "Jobs"]
    assert {"Benchmarks", "Serverless", "Operator plans", "Back-tests", "Leaderboard", "Docs", "API"} <= set(
        re.findall(r">([^<>]+)</a>", more))


def test_operator_level_labels_speak_plain_words_and_keep_the_equation_as_a_note():
    from planner.comparisons.core.kind_answer import operator_answer
    from planner.opscaling.charts import savings_by_phase

    rows = [{"key": key, "is_baseline": key == "model-level", "gpu_hours": 2.0, "energy_kwh": kwh,
             "prefill_gpu_hours": 1.0, "decode_gpu_hours": 1.0, "memory_gb_hours": 16.0} for key, kwh in (("model-level", 0.2),
                                                                                  ("operator-level", 0.17))]
    answer = operator_answer({"rows": rows, "windows": 12, "window_s": 300.0, "infeasible_windows": 0}, {})
    energy = next(k for k in answer["choice"]["usage"] if k["key"] == "energy")
    assert "Eq." not in energy["label"] and "Eq. 9" in energy["note"]
    saving = {"gpu_s": 0.0, "energy_j": 0.4, "memory_gb_s": 0.04}
    phase = {"operator_level": {"savings_vs_model_level": saving}}
    fig = savings_by_phase({"totals": {"prefill": phase, "decode": phase}})
    assert all("Eq." not in tr.name for tr in fig.data), [tr.name for tr in fig.data]
