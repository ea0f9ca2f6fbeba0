"""Every page and API endpoint answers without a server error while one object of every kind exists.

One trace, forecast run, capacity plan, simulation, operator-level plan and a comparison of every kind (fleet
strategies, serverless systems, operator-level) are made through the product's own services (in-process jobs);
then every URL pattern of the project is requested with each object's id. A URL pattern the test does not know
how to fill fails the test, so a new page cannot slip past it.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

ROOT = Path(__file__).resolve().parents[1]
TINY = json.loads((ROOT / "planner/comparisons/tests/tiny_scenario.json").read_text())
SERVERLESS = {"kind": "serverless", "name": "serverless cmp", "model": "llama2-7b",
              "workload": {"models": 32, "duration_s": 30}, "nodes": {"cpu": 2, "gpu": 2}}
PARAM = re.compile(r"<(?:\w+:)?(\w+)>|\(\?P<(\w+)>[^)]*\)")


def _patterns(resolvers, prefix=""):
    for p in resolvers:
        if isinstance(p, URLResolver):
            yield from _patterns(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern)


def _path_of(pattern: str) -> str:
    """'api/^jobs/(?P<pk>[^/.]+)/$' -> 'api/jobs/{pk}/'; '<int:pk>' -> '{pk}'."""
    path = pattern.replace("^", "").replace("$", "").replace("\\.", ".")
    return PARAM.sub(lambda m: "{" + (m.group(1) or m.group(2)) + "}", path)


@pytest.fixture
def everything(cast, tmp_path):
    """One object of every kind, in the owner's team; {noun: [ids]}."""
    from forecasts.models import ForecastRun, ForecastSeries
    from forecasts.services import create_run
    from planner.benchmarks.models import Validation
    from planner.comparisons.models import Comparison
    from planner.hardware.models import Deployment, GpuType, ModelProfile
    from planner.jobs.models import Job
    from planner.opscaling.models import OperatorPlan
    from planner.plans.models import CapacityPlan
    from planner.traces.services import import_trace_file
    from simulations.models import SimulationRun

    member = cast.owner
    team = member.team.name
    trace = import_trace_file(ROOT / "fixtures/traces/azure_code_2023.csv", team=member.team, user=member.user,
                              name="code", region="eastus", model="llama2-70b", tier="IW-F:0.6,IW-N:0.4")
    create_run(trace=trace, team=member.team, user=member.user,
               params={"method": "seasonal_naive", "backtest_s": 0}, inline=True)
    call_command("plan", str(ROOT / "fixtures/plans/small_two_regions.json"), "--hours", "4", "--team", team,
                 stdout=io.StringIO())
    call_command("simulate", str(ROOT / "fixtures/scenarios/small_reactive.json"), "--team", team,
                 stdout=io.StringIO())
    fleet = member.api.post("/api/comparisons/", {"scenario": TINY, "strategies": ["reactive-unified", "lt-i"]},
                            format="json")
    assert fleet.status_code == 201, fleet.content
    serverless = member.api.post("/api/comparisons/", {"scenario": SERVERLESS, "systems": ["sllm", "slinfer"]},
                                 format="json")
    assert serverless.status_code == 201, serverless.content
    operator = member.api.post("/api/comparisons/", {"scenario": {
        "kind": "operator-level", "model": "llama3.1-8b", "gpu": "a100-80gb",
        "workload": {"trace_id": trace.pk, "window_s": 600}, "sweeps": False}}, format="json")
    assert operator.status_code == 201, operator.content
    op = member.api.post("/api/operator-plans/", {"spec": {
        "model": "llama-3-8b", "gpu": "a100", "workload": {"trace_id": trace.pk, "window_s": 600}}}, format="json")
    assert op.status_code == 201, op.content
    page = Client()
    page.force_login(member.user)
    single = page.post("/simulations/serverless/", {  # a serverless run (the serverless page's own job)
        "action": "run", "sl-model": "llama2-7b", "sl-workload__models": "32", "sl-workload__duration_s": "30",
        "sl-nodes__cpu": "2", "sl-nodes__gpu": "2", "sl-systems": ["slinfer"], "sl-baseline": "slinfer"})
    assert single.status_code == 302, single.content[:1000]
    run = _benchmark_run_and_validation(member)
    search = _capacity_search(member)
    backtest = _backtest(member)
    ids = {
        "trace": [trace.pk], "forecast": list(ForecastRun.objects.values_list("pk", flat=True)),
        "series": list(ForecastSeries.objects.values_list("pk", flat=True)[:1]),
        "plan": list(CapacityPlan.objects.values_list("pk", flat=True)),
        "simulation": list(SimulationRun.objects.values_list("pk", flat=True)),
        "comparison": list(Comparison.objects.values_list("pk", flat=True)),
        "operator-plan": list(OperatorPlan.objects.values_list("pk", flat=True)),
        "job": list(Job.objects.values_list("pk", flat=True)),
        "deployment": list(Deployment.objects.values_list("pk", flat=True)[:1]),
        "gpu": list(GpuType.objects.values_list("pk", flat=True)[:1]),
        "model": list(ModelProfile.objects.values_list("pk", flat=True)[:1]),
        "benchmark-run": [run], "validation": list(Validation.objects.values_list("pk", flat=True)),
        "capacity-search": [search], "backtest": [backtest],
    }
    for noun, values in ids.items():
        assert values, f"no {noun} was made"
    return ids


def _benchmark_run_and_validation(member) -> int:
    """A real inference-perf run uploaded through the API, and one validation of its deployment."""
    from planner.benchmarks.tests.test_app import R70, upload
    from planner.hardware.models import Deployment

    resp = upload(member.api, R70)
    assert resp.status_code == 201, resp.content
    dep = Deployment.objects.get(builtin=True, name="llama2-70b/h100-80gb/tp4")
    job = member.api.post("/api/benchmarks/runs/validate/", {"run_ids": [resp.json()["id"]], "deployment": dep.pk,
                                                             "seeds": 1}, format="json")
    assert job.status_code == 202, job.content
    return resp.json()["id"]


def _capacity_search(member) -> int:
    from planner.capacity.models import CapacitySearch
    from planner.capacity.tests.scenarios import two_region_queue
    from planner.capacity.tests.test_pages_cli import FORM

    page = Client()
    page.force_login(member.user)
    resp = page.post("/capacity/new/", dict(FORM, scenario_json=json.dumps(two_region_queue())))
    assert resp.status_code == 302, resp.content[:500]
    return CapacitySearch.objects.get().pk


def _backtest(member) -> int:
    from planner.backtests.tests.test_backtests import GOOD, _short

    resp = member.api.post("/api/backtests/", {"scenario": _short(), "replicas_csv": GOOD, "strategies": ["static"],
                                              "bundles": ["industry.hpa-running"]}, format="json")
    assert resp.status_code == 201, resp.content
    return resp.json()["id"]


def _noun(path: str) -> str | None:
    """Which object a URL's {pk} names, from the path's words."""
    for word, noun in (("deployments", "deployment"), ("gpus", "gpu"), ("models", "model"),
                       ("operator-plans", "operator-plan"), ("comparisons", "comparison"), ("traces", "trace"),
                       ("forecasts", "forecast"), ("plans", "plan"), ("simulations", "simulation"),
                       ("jobs", "job"), ("routing-sweep", "job"), ("docs", "doc"),
                       ("benchmarks/runs", "benchmark-run"), ("benchmarks/validations", "validation"),
                       ("capacity", "capacity-search"), ("capacity-searches", "capacity-search"),
                       ("backtests", "backtest")):
        if re.search(rf"(^|/){word}/", path):
            return noun
    return None


def _urls(ids: dict) -> list[str]:
    urls = []
    for pattern in _patterns(get_resolver().url_patterns):
        if pattern.startswith("admin/"):
            continue
        path = _path_of(pattern)
        names = re.findall(r"\{(\w+)\}", path)
        if not names:
            urls.append("/" + path)
            continue
        noun = _noun(path)
        if names == ["name"] and noun == "doc":
            urls.append("/" + path.format(name="comparisons"))
            continue
        assert noun in ids, f"the test does not know which object {pattern!r} names; add it to _noun"
        for pk in ids[noun]:
            urls.append("/" + path.format(pk=pk, series_id=ids["series"][0]))
    return urls


@pytest.mark.django_db(transaction=True)
def test_every_page_and_api_answers_without_a_server_error_with_every_kind_of_object(cast, everything):
    from planner.comparisons.models import Comparison

    kinds = {c.scenario.get("kind", "fleet") for c in Comparison.objects.all()}
    assert kinds == {"fleet", "serverless", "operator-level"}, kinds
    assert set(Comparison.objects.values_list("job__status", flat=True)) == {"succeeded"}
    page = Client(raise_request_exception=False)
    page.force_login(cast.owner.user)
    api = cast.owner.api
    api.raise_request_exception = False
    failures = []
    urls = _urls(everything)
    urls += ["/comparisons/build/?kind=serverless", "/comparisons/build/?kind=operator-level"]
    for url in urls:
        client = api if url.startswith("/api/") else page
        resp = client.get(url)
        if resp.status_code >= 500:
            failures.append(f"{url}: {resp.status_code}")
    assert not failures, failures
    assert len(urls) > 100
    dashboard = page.get("/").content.decode()
    assert 'data-dashboard="comparison"' in dashboard and "data-dashboard-headline" in dashboard
    for comp in Comparison.objects.all():  # every kind's page leads with its decision, then one compact table
        html = page.get(f"/comparisons/{comp.pk}/").content.decode()
        assert "data-decision-card" in html and "data-strategy-table" in html, comp.scenario.get("kind", "fleet")
        assert html.index("data-decision-card") < html.index("data-strategy-table")
    assert "slinfer" in page.get("/simulations/serverless/").content.decode()
    jobs = page.get("/jobs/").content.decode()  # every job's "For" cell names its object, operator plans too
    for pk in everything["operator-plan"]:
        assert f'href="/operator-plans/{pk}/"' in jobs


@pytest.mark.django_db
def test_page_and_document_titles_speak_of_the_product_not_its_tracker(cast):
    page = Client()
    page.force_login(cast.owner.user)
    html = page.get("/docs/").content.decode()
    assert not re.search(r"issue \d+|paper \d{3}", html), re.findall(r".{40}(?:issue \d+|paper \d{3}).{10}", html)
