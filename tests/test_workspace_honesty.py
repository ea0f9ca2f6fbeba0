"""The workspace tells the truth: one test per honest-status case, and every chart on a page reads alike.

Infeasible plan, zero-demand plan, partial comparison (page, list, API, PDF page 1), a forecast with poor fits
and one with no results; then every Plotly figure embedded in the trace, plan, simulation and comparison pages:
each legend entry has one colour in every panel and every axis has a title.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from planner.comparisons.kinds import fleet as fleet_kind
from planner.comparisons.models import Comparison
from planner.comparisons.tests.test_comparisons import FAKE, TINY, fake_summary
from planner.plans.models import CapacityPlan
from planner.plotstyle import trace_colour

ROOT = Path(__file__).resolve().parents[1]
INFEASIBLE = ROOT / "fixtures" / "plans" / "infeasible_westus_quota.json"
FIGURE = re.compile(r'<script type="application/json" data-plotly-for="([^"]+)">(.*?)</script>', re.S)


@pytest.fixture
def owner(cast):
    client = Client()
    client.force_login(cast.owner.user)
    return cast.owner, client


def figures_on(html: str) -> dict[str, dict]:
    return {div: json.loads(body) for div, body in FIGURE.findall(html)}


def figure_problems(fig: dict) -> list[str]:
    """A legend entry drawn in two colours, a trace with no colour, an axis without a title."""
    import plotly.graph_objects as go

    from planner.plotstyle import axes_without_title

    f = go.Figure(fig)
    problems, seen = [], {}
    for tr in f.data:
        colour = trace_colour(tr)
        group = tr.legendgroup or tr.name
        if colour is None:
            problems.append(f"{tr.name}: no colour")
        elif seen.setdefault(group, colour) != colour:
            problems.append(f"{group}: {colour} here, {seen[group]} in its legend entry")
    names = [tr.legendgroup for tr in f.data if tr.showlegend is not False]
    if len(names) != len(set(names)):
        problems.append(f"a legend entry repeats: {names}")
    problems += [f"{axis} has no title" for axis in axes_without_title(f)]
    return problems


# ---------------------------------------------------------------- plans


def test_an_infeasible_plan_says_so_on_top_and_claims_no_saving(owner):
    member, client = owner
    call_command("plan", str(INFEASIBLE), "--hours", "8", "--team", member.team.name, stdout=io.StringIO())
    plan = CapacityPlan.objects.get()
    assert plan.result["status"] == "optimal" and plan.feasible is False  # what used to read as a success
    page = client.get(f"/plans/{plan.pk}/").content.decode()
    assert 'data-plan-status>infeasible<' in page
    head = page.index("data-plan-headline")
    assert head < page.index("Total cost") and "does not cover the demand" in page
    assert "cheaper" not in page.replace("no saving is claimed", "")
    assert "westus" in page[head:page.index("Total cost")]  # the diagnosis sits in the headline box
    listing = client.get("/plans/").content.decode()
    assert "infeasible" in listing and "cheaper" not in listing
    assert client.get("/plans/?status=infeasible").content.decode().count(f"/plans/{plan.pk}/") >= 1
    assert client.get("/plans/?status=succeeded").content.decode().count(f"/plans/{plan.pk}/") == 0


def test_a_plan_with_no_demand_is_not_100_percent_cheaper(owner, tmp_path):
    member, client = owner
    data = json.loads(INFEASIBLE.read_text())
    for d in data["demand"]:
        d["tps"] = 0
        d.pop("quantiles", None)
    path = tmp_path / "zero.json"
    path.write_text(json.dumps(data))
    call_command("plan", str(path), "--hours", "4", "--team", member.team.name, stdout=io.StringIO())
    plan = CapacityPlan.objects.get()
    assert plan.outcome["status"] == "no demand" and plan.outcome["savings"] is None
    page = client.get(f"/plans/{plan.pk}/").content.decode()
    assert "There is no demand" in page and "% cheaper" not in page


# ---------------------------------------------------------------- comparisons


@pytest.fixture
def fake_engine(monkeypatch):
    def run(scenario, variant, *, progress, base_dir):
        if variant["knobs"].get("explode"):
            raise RuntimeError("engine exploded")
        return fake_summary(variant["key"], variant["strategy"], inst_h=FAKE[variant["strategy"]])

    monkeypatch.setattr(fleet_kind, "_run", run)


@pytest.mark.django_db(transaction=True)
def test_a_partial_comparison_says_which_part_failed_on_page_list_api_and_pdf(owner, fake_engine):
    member, client = owner
    resp = member.api.post("/api/comparisons/", {
        "scenario": TINY, "strategies": ["reactive-unified", "lt-i"],
        "variants": [{"strategy": "lt-ua", "knobs": {"explode": True}, "key": "lt-ua-broken"}]}, format="json")
    comp = Comparison.objects.get(pk=resp.json()["id"])
    assert comp.job.status == "partial"  # harden-jobs' terminal state for the parent ...
    assert comp.status == "partial"  # ... and the comparison's own status agrees
    assert member.api.get(f"/api/comparisons/{comp.pk}/").json()["status"] == "partial"
    page = client.get(f"/comparisons/{comp.pk}/").content.decode()
    assert 'data-comparison-status>partial<' in page
    box = page[page.index("data-failures"):page.index("data-decision-card")]
    assert "lt-ua-broken" in box and "engine exploded" in box and "1 of 3 strategy runs did not finish" in box
    # the decision card comes before the detail and names the answer
    assert page.index("data-decision-card") < page.index("Strategy runs")
    assert 'data-kpi="lt-i"' in page and "/ week" in page
    listing = client.get("/comparisons/").content.decode()
    assert "partial" in listing and "lt-ua-broken ✗" in listing
    assert client.get("/comparisons/?status=partial").content.decode().count(f"/comparisons/{comp.pk}/") >= 1
    from pypdf import PdfReader

    pdf = client.get(f"/comparisons/{comp.pk}/report.pdf").content
    page1 = PdfReader(io.BytesIO(pdf)).pages[0].extract_text()
    assert "Not in this report" in page1 and "lt-ua-broken" in page1 and "engine exploded" in page1
    assert "Answer: lt-i" in page1


@pytest.mark.django_db(transaction=True)
def test_a_bad_scenario_keeps_the_pasted_json_in_the_form(owner):
    _, client = owner
    pasted = '{"fleet": {"regions": []}, "workload": {"synthetic": {}}}'
    resp = client.post("/comparisons/new/", {"scenario_json": pasted, "strategies": ["static"], "baseline": "static"})
    assert resp.status_code == 400
    body = resp.content.decode()
    assert "data-form-error" in body and "&quot;regions&quot;: []" in body


# ---------------------------------------------------------------- forecasts


def _forecast_run(member, **series):
    from forecasts.models import ForecastRun, ForecastSeries
    from planner.jobs.models import Job
    from planner.traces.models import Trace

    trace = Trace.objects.create(team=member.team, name="t", format="native", storage_key="k1")
    job = Job.objects.create(team=member.team, kind="forecasts.run", status="succeeded", progress=100)
    run = ForecastRun.objects.create(team=member.team, trace=trace, job=job,
                                     params={"method": "auto", "rank_metric": "wmape"})
    if series:
        child = Job.objects.create(team=member.team, kind="forecasts.series", status="succeeded", parent=job)
        ForecastSeries.objects.create(run=run, job=child, label="eastus|llama2-70b|IW-F", metric="input_tps",
                                      **series)
    return run


def test_a_forecast_with_a_poor_fit_and_a_zero_peak_is_flagged(owner):
    member, client = owner
    run = _forecast_run(member, chosen_method="arima", peak=0.0, peak_upper=0.0,
                        leaderboard=[{"method": "arima", "wmape": 131.0}], result=None)
    page = client.get(f"/forecasts/{run.pk}/").content.decode()
    assert "data-forecast-flags" in page and "1 of 1 series need a second look" in page
    assert "poor fit: wmape 131 % &gt; 50 %" in page and "next-hour peak is 0" in page


def test_a_forecast_with_no_results_shows_an_empty_state_not_blank_cards(owner):
    member, client = owner
    run = _forecast_run(member)
    page = client.get(f"/forecasts/{run.pk}/").content.decode()
    assert "No series in this run." in page and "nothing to chart" in page
    assert "data-plotly-for" not in page


# ---------------------------------------------------------------- figures read alike


@pytest.mark.django_db(transaction=True)
def test_every_figure_on_the_workspace_pages_has_one_colour_per_legend_entry_and_titled_axes(owner, fake_engine,
                                                                                             tmp_path):
    member, client = owner
    pages = []
    resp = member.api.post("/api/comparisons/", {"scenario": TINY, "strategies": ["reactive-unified", "lt-i",
                                                                                "lt-u", "lt-ua"]}, format="json")
    pages.append(f"/comparisons/{resp.json()['id']}/")
    call_command("simulate", str(ROOT / "fixtures/scenarios/small_reactive.json"), "--team", member.team.name,
                 stdout=io.StringIO())
    from simulations.models import SimulationRun

    pages.append(f"/simulations/{SimulationRun.objects.get().pk}/")
    call_command("plan", str(ROOT / "fixtures/plans/small_two_regions.json"), "--hours", "6", "--team",
                 member.team.name, stdout=io.StringIO())
    pages.append(f"/plans/{CapacityPlan.objects.get().pk}/")
    from planner.traces.services import import_trace_file

    trace = import_trace_file(ROOT / "fixtures/traces/azure_code_2023.csv", team=member.team, user=member.user,
                              name="code", region="eastus", model="llama2-70b", tier="IW-F:0.6,IW-N:0.4")
    pages.append(f"/traces/{trace.pk}/?by=tier")
    seen = 0
    for url in pages:
        html = client.get(url).content.decode()
        figs = figures_on(html)
        assert figs, f"{url}: no figure"
        for div, fig in figs.items():
            assert not figure_problems(fig), (url, div, figure_problems(fig))
            seen += 1
    assert seen >= 13
    # the simulation timeline: 12 endpoints in four panels, each endpoint one colour, 12 distinct colours
    sim = figures_on(client.get(pages[1]).content.decode())["timeline"]
    colours = {}
    for tr in sim["data"]:
        colours.setdefault(tr["legendgroup"], set()).add(tr["line"]["color"])
    assert len(colours) == 12 and all(len(c) == 1 for c in colours.values())
    assert len({next(iter(c)) for c in colours.values()}) == 12


# ---------------------------------------------------------------- the scenario builder


# the builder's tests: tests/test_schema_builders.py


# ---------------------------------------------------------------- chaining the steps


def _textarea(html: str, name: str) -> str:
    import html as html_lib

    m = re.search(rf'<textarea name="{name}"[^>]*>(.*?)</textarea>', html, re.S)
    assert m, f"no textarea {name}"
    return html_lib.unescape(m.group(1))


def test_plan_from_this_forecast_covers_its_upper_bound_and_solves(owner):
    from forecasts.models import ForecastSeries
    from planner.optimizer.multiperiod import solve_plan
    from planner.optimizer.scenario import parse_scenario

    member, client = owner
    run = _forecast_run(member, chosen_method="arima", peak=2000.0, peak_upper=2600.0,
                        group={"region": "eastus", "model": "llama2-70b", "tier": "IW-F"}, result=None)
    run.params = {**run.params, "level": 0.9, "horizon_s": 3600}
    run.save()
    ForecastSeries.objects.create(run=run, label="eastus|llama2-70b|NIW", metric="input_tps", peak=500.0,
                                  peak_upper=700.0, group={"region": "eastus", "model": "llama2-70b", "tier": "NIW"})
    assert 'data-plan-from-forecast' in client.get(f"/forecasts/{run.pk}/").content.decode()
    page = client.get(f"/plans/?forecast={run.pk}").content.decode()
    scenario = json.loads(_textarea(page, "scenario"))
    assert scenario["demand"] == [{"model": "llama2-70b", "region": "eastus", "tps": [2500.0],
                                   "quantiles": {"0.5": [2500.0], "0.9": [3300.0]}}]  # tiers summed
    sc = parse_scenario(scenario)
    result = solve_plan(sc)
    assert result.ok and result.feasible
    theta = sc.deployments[("llama2-70b", "h100-80gb")].theta_tps
    assert sum(r["instances"] for r in result.instances) * theta >= 3300.0  # the upper bound is covered


def test_simulate_this_plan_prefills_a_scenario_the_engine_accepts(owner):
    from simulations.engine import parse_scenario

    member, client = owner
    call_command("plan", str(ROOT / "fixtures/plans/small_two_regions.json"), "--hours", "3", "--team",
                 member.team.name, stdout=io.StringIO())
    plan = CapacityPlan.objects.get()
    page = client.get(f"/simulations/?plan={plan.pk}").content.decode()
    scenario = json.loads(_textarea(page, "scenario"))
    peaks = {}
    for row in plan.result["instances"]:
        key = (row["region"], row["model"])
        peaks[key] = max(peaks.get(key, 0), row["instances"])
    got = {(e["region"], e["model"]): e["initial"] for e in scenario["fleet"]["endpoints"]}
    assert got and all(got[k] == max(1, peaks[k]) for k in got)
    parse_scenario(scenario)


def test_a_parent_waiting_for_its_children_reads_running_with_their_progress(owner):
    from planner.jobs.models import Job
    from planner.jobs.views import display_state

    member, client = owner
    parent = Job.objects.create(team=member.team, kind="comparisons.aggregate", status="queued", progress=0)
    Job.objects.create(team=member.team, kind="comparisons.variant", parent=parent, status="running", progress=50)
    Job.objects.create(team=member.team, kind="comparisons.variant", parent=parent, status="succeeded", progress=100)
    assert display_state(parent) == ("running", 71.2)  # 0.95 x (50 + 100) / 2, rounded
    row = re.search(rf'href="/jobs/{parent.pk}/".*?</tr>', client.get("/jobs/").content.decode(), re.S).group(0)
    assert "running" in row and "71 %" in row and "queued" not in row


def test_a_comparison_on_another_teams_trace_is_refused_at_creation(cast):
    from planner.jobs.models import Job
    from planner.traces.models import Trace

    theirs = Trace.objects.create(team=cast.outsider.team, name="theirs", format="native", storage_key="k9")
    scenario = {**TINY, "workload": {"trace_id": theirs.pk}}
    resp = cast.owner.api.post("/api/comparisons/", {"scenario": scenario, "strategies": ["static"],
                                                     "baseline": "static"}, format="json")
    assert resp.status_code == 400 and "no trace" in json.dumps(resp.json())
    assert not Comparison.objects.exists() and not Job.objects.exists()


def test_the_docs_are_readable_in_the_browser_by_name_only(owner):
    _, client = owner
    index = client.get("/docs/").content.decode()
    assert "/docs/comparisons/" in index and "/docs/simulator/" in index
    page = client.get("/docs/comparisons/").content.decode()
    assert "<h2>" in page and "trace_id" in page
    assert client.get("/docs/..%2Fsettings/").status_code == 404
    assert client.get("/docs/nope/").status_code == 404
