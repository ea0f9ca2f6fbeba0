"""The scenario and plan builders: forms generated from the one schema (planner/schemaforms.py), per-endpoint fleet
rows, a trace or the synthesiser as the workload, bundles by name, errors on the field that produced them,
clone-and-edit; the plan form builder."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Literal

import pytest
from django.test import Client
from pydantic import Field

from planner.comparisons.core.variants import STRATEGIES
from planner.comparisons.models import Comparison
from planner.inputs import Strict, integer, num
from planner.schemaforms import collect, field_for_path, initial_from, schema_fields

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def owner(cast):
    client = Client()
    client.force_login(cast.owner.user)
    return cast.owner, client


# ---------------------------------------------------------------- the generator


class Inner(Strict):
    mean: float = num(default=None, gt=0.0, le=10.0)
    cap: int = integer(default=3, ge=1, le=9)


class Knobs(Strict):
    rate: float = num(default=2.5, ge=0.0, le=100.0, description="requests per second")
    mode: Literal["a", "b"] = "a"
    on: bool = False
    names: list[str] = Field(default_factory=list)
    per_tier: dict[Literal["IW-F", "NIW"], float] | None = None
    inner: Inner | None = None
    free: dict[str, float] = Field(default_factory=dict)  # a free dict: left to the JSON view


def test_every_scalar_of_a_schema_becomes_a_field_with_its_bounds_default_and_description():
    pairs = dict((s.name, (s, f)) for s, f in schema_fields(Knobs))
    assert set(pairs) == {"rate", "mode", "on", "names", "per_tier__IW_F", "per_tier__NIW", "inner__mean",
                          "inner__cap"}
    rate = pairs["rate"][1]
    assert (rate.min_value, rate.max_value, rate.initial) == (0.0, 100.0, 2.5)
    assert rate.help_text.startswith("requests per second") and "≤ 100" in rate.help_text
    assert [c[0] for c in pairs["mode"][1].choices] == ["", "a", "b"]
    cap = pairs["inner__cap"][1]
    assert (cap.min_value, cap.max_value, cap.initial) == (1, 9, 3)
    mean = pairs["inner__mean"][1]
    assert mean.clean(5.0) == 5.0
    with pytest.raises(Exception, match="above 0"):
        mean.clean(0.0)  # exclusive minimum from the schema


def test_a_field_added_to_a_schema_model_appears_in_the_form_with_no_other_edit():
    class Grown(Knobs):
        burst_factor: float = num(default=8.0, gt=0.0, le=1000.0, description="how much faster in a burst")

    names = {s.name for s, _ in schema_fields(Grown)}
    assert names - {s.name for s, _ in schema_fields(Knobs)} == {"burst_factor"}


def test_collect_builds_the_nested_json_and_leaves_defaults_and_blanks_out():
    specs = [s for s, _ in schema_fields(Knobs)]
    out = collect({"rate": 2.5, "mode": "b", "on": None, "names": "x, y", "per_tier__NIW": 4.0,
                   "inner__mean": None, "inner__cap": 3}, specs)
    assert out == {"mode": "b", "names": ["x", "y"], "per_tier": {"NIW": 4.0}}
    Knobs.model_validate(out)  # the schema accepts what the fields produced
    on = dict((s.name, f) for s, f in schema_fields(Knobs))["on"]
    assert [c[0] for c in on.choices] == ["", "true", "false"] and on.clean("") is None  # blank keeps the default
    assert collect({"on": on.clean("true")}, specs) == {"on": True}
    back = initial_from(out, specs)
    assert back == {"mode": "b", "names": "x, y", "per_tier__NIW": 4.0}
    assert field_for_path("per_tier.NIW", specs) == "per_tier__NIW"
    assert field_for_path("inner", specs) == "inner__mean"  # an object-level error: its first field
    assert field_for_path("root.inner.cap", specs, ("root",)) == "inner__cap"
    assert field_for_path("free.k", specs) is None


# ---------------------------------------------------------------- the comparison builder


def _row(i, region, deployment, **values):
    out = {f"ep-{i}-region": region, f"ep-{i}-deployment": deployment}
    out.update({f"ep-{i}-{k}": v for k, v in values.items()})
    return out


def _post(rows, **fields):
    data = {"ep-TOTAL_FORMS": str(len(rows)), "ep-INITIAL_FORMS": "0", "ep-MIN_NUM_FORMS": "1",
            "ep-MAX_NUM_FORMS": "1000", "action": "run", "slo__ttft_s__IW_F": 1.0, "slo__ttft_s__IW_N": 60,
            "slo__e2e_s__NIW": 86400, "slo__percentile": 95, "slo__itl_stat": "mean", "slo__window_s": 60,
            "slo__cold_start_grace_s": 0, "syn__duration_s": 86400, "syn__diurnal_amplitude": 0.6,
            "syn__peak_hour": 14, "syn__burst__factor": 8}
    for tier in ("IW_F", "IW_N", "NIW"):
        data.update({f"slo__ttft_prompt__{tier}__min_s": 0, f"slo__ttft_prompt__{tier}__per_token_s": 0,
                     f"slo__ttft_prompt__{tier}__max_s": 1e9})
    for i, r in enumerate(rows):
        data.update(_row(i, *r[:2], **r[2]))
    data.update(fields)
    return data


def test_the_builder_offers_the_schema_fields_the_catalogue_and_every_bundle(owner):
    from planner.comparisons.core.bundles import bundle_names
    from simulations.engine.scenario import schema

    _, client = owner
    page = client.get("/comparisons/build/?source=synthetic").content.decode()
    for name in ("syn__total_requests", "syn__burst__at_s", "syn__tier_mix__NIW", "slo__ttft_s__IW_F",
                 "slo__itl_s__IW_F", "ep-0-initial", "ep-0-min", "ep-0-max", "ep-0-spot_pool",
                 "ep-0-weights_in_region"):
        assert f'name="{name}"' in page, name
    assert "llama2-70b/h100-80gb/tp8" in page  # the catalogue, grouped by model
    for name in bundle_names():
        assert f'value="{name}"' in page
    top = next(m.le for m in schema.Endpoint.model_fields["initial"].metadata if hasattr(m, "le"))
    assert re.search(rf'name="ep-0-initial"[^>]*max="{top}"', page)  # the bound is the schema's


def test_a_synthesised_workload_on_per_endpoint_rows_builds_runs_and_validates(owner, django_capture_on_commit_callbacks):
    member, client = owner
    rows = [("eastus", "llama2-70b/h100-80gb/tp8", {"initial": 3, "min": 2, "max": 8, "spot_pool": 1}),
            ("westus", "llama2-70b/h100-80gb/tp8", {"initial": 1, "min": 1, "max": 4, "spot_pool": 0}),
            ("westus", "llama3.1-8b/h100-80gb/tp2", {"initial": 2, "min": 0, "max": 2, "spot_pool": 2}),
            ("", "", {})]  # a blank extra row is left out
    data = _post(rows, source="synthetic", syn__duration_s=600, syn__total_requests=300, syn__seed=4,
                 syn__tier_mix__NIW=1, syn__tier_mix__IW_F=3, strategies=["static", "reactive-unified"],
                 bundles=["sageserve-text.lt-i"], baseline="static", name="synth rows")
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post("/comparisons/build/", data)
    assert resp.status_code == 302, resp.content.decode()[:3000]
    comp = Comparison.objects.get(name="synth rows")
    sc = comp.scenario
    assert sc["workload"] == {"synthetic": {"duration_s": 600.0, "total_requests": 300, "seed": 4,
                                            "tier_mix": {"IW-F": 3.0, "NIW": 1.0}}}
    assert sc["fleet"]["endpoints"] == [
        {"region": "eastus", "model": "llama2-70b", "deployment": "llama2-70b/h100-80gb/tp8", "initial": 3,
         "min": 2, "max": 8},
        {"region": "westus", "model": "llama2-70b", "deployment": "llama2-70b/h100-80gb/tp8", "initial": 1,
         "max": 4},
        {"region": "westus", "model": "llama3.1-8b", "deployment": "llama3.1-8b/h100-80gb/tp2", "min": 0,
         "max": 2}]  # initial 2 and min 1 are the schema's defaults: left out, same meaning
    assert sc["fleet"]["regions"] == [{"name": "eastus", "spot_pool": {"llama2-70b": 1}},
                                      {"name": "westus", "spot_pool": {"llama3.1-8b": 2}}]
    assert sc["slo"] == {"ttft_s": {"IW-F": 1.0, "IW-N": 60.0}, "e2e_s": {"NIW": 86400.0}}
    assert {v["key"] for v in comp.variants} >= {"static", "reactive-unified", "sageserve-text.lt-i"}
    assert comp.status == "succeeded", [(r.key, r.status, r.error) for r in comp.results.all()]
    assert all(r.metrics.get("requests") == 300 for r in comp.results.all())


def test_a_trace_workload_gets_one_row_per_region_and_model_and_every_strategy_runs(owner,
                                                                                    django_capture_on_commit_callbacks):
    from planner.comparisons.builder import ScenarioBuilderForm
    from planner.comparisons.core.runner import run_variant
    from planner.comparisons.services import validate_scenario
    from planner.traces.models import Trace
    from planner.traces.services import import_trace_file

    member, client = owner
    with django_capture_on_commit_callbacks(execute=True):  # the characterisation job runs inline
        trace = import_trace_file(ROOT / "fixtures/traces/azure_code_2023.csv", team=member.team, user=member.user,
                                  name="code", region="eastus", model="llama2-70b", tier="IW-F:0.6,IW-N:0.3,NIW:0.1")
    trace = Trace.objects.get(pk=trace.pk)
    page = client.get(f"/comparisons/build/?trace={trace.pk}").content.decode()
    assert re.search(r'name="ep-0-region"[^>]*value="eastus"', page)
    assert re.search(r'<option value="llama2-70b/h100-80gb/tp8" selected>', page)
    bad = client.post("/comparisons/build/", _post([("eastus", "llama2-70b/h100-80gb/tp8",
                                                     {"initial": 2, "min": 5, "max": 3})],
                                                   source="trace", trace=trace.pk, strategies=["static"]))
    row = re.search(r'<tr data-row="0">.*?</tr>', bad.content.decode(), re.S).group(0)
    assert bad.status_code == 400 and "min (5) is above max (3)" in row  # the parser's rule, on the row
    assert not Comparison.objects.exists()
    form = ScenarioBuilderForm(_post([("eastus", "llama2-70b/h100-80gb/tp4", {"initial": 4, "min": 1, "max": 4})],
                                     source="trace", trace=trace.pk, strategies=["static"], slo__ttft_s__IW_F=0.5),
                               team=member.team, traces=[trace])
    assert form.is_valid(), (form.errors, form.rows.errors)
    sc = form.scenario()
    assert sc["workload"] == {"trace_id": trace.pk}
    assert sc["fleet"]["endpoints"] == [{"region": "eastus", "model": "llama2-70b",
                                         "deployment": "llama2-70b/h100-80gb/tp4", "initial": 4, "max": 4}]
    validate_scenario(sc)
    for strategy in STRATEGIES:  # every strategy the form offers runs on an uploaded trace
        out = run_variant(sc, {"key": strategy, "strategy": strategy, "scheduler": "", "knobs": {}},
                          trace=trace.normalised_file)
        assert out["requests"] == trace.requests


def test_a_trace_with_its_own_model_names_keeps_them_on_its_rows_and_runs(owner, django_capture_on_commit_callbacks):
    """A trace may name its models itself (the demo's SageServe-like day says model-a ... model-d): each row carries
    the trace's name and the deployment only picks the hardware, so the scenario's endpoints match the trace (before,
    the row took the deployment's model and the run failed: "trace model 'model-a' has no endpoint")."""
    from planner.comparisons.builder import ScenarioBuilderForm
    from planner.comparisons.core.runner import run_variant
    from planner.comparisons.services import validate_scenario
    from planner.traces.models import Trace
    from planner.traces.services import import_trace_file

    member, client = owner
    with django_capture_on_commit_callbacks(execute=True):
        trace = import_trace_file(ROOT / "fixtures/traces/azure_code_2023.csv", team=member.team, user=member.user,
                                  name="code", region="eastus", model="model-a", tier="IW-F")
    trace = Trace.objects.get(pk=trace.pk)
    page = client.get(f"/comparisons/build/?trace={trace.pk}").content.decode()
    assert re.search(r'name="ep-0-model"[^>]*value="model-a"', page)
    form = ScenarioBuilderForm(_post([("eastus", "llama2-70b/h100-80gb/tp8", {"model": "model-a", "initial": 2,
                                                                               "min": 1, "max": 2})],
                                     source="trace", trace=trace.pk, strategies=["static"]),
                               team=member.team, traces=[trace])
    assert form.is_valid(), (form.errors, form.rows.errors)
    sc = form.scenario()
    assert [e["model"] for e in sc["fleet"]["endpoints"]] == ["model-a"]
    validate_scenario(sc)
    out = run_variant(sc, {"key": "static", "strategy": "static", "scheduler": "", "knobs": {}},
                      trace=trace.normalised_file)
    assert out["requests"] == trace.requests
    blank = ScenarioBuilderForm(_post([("eastus", "llama2-70b/h100-80gb/tp8", {"initial": 2, "min": 1, "max": 2})],
                                      source="trace", trace=trace.pk, strategies=["static"]),
                                team=member.team, traces=[trace])
    assert blank.is_valid() and blank.scenario()["fleet"]["endpoints"][0]["model"] == "llama2-70b"  # blank: the deployment's

def test_a_schema_error_lands_on_the_field_that_produced_it_and_the_answers_stay(owner):
    _, client = owner
    # a burst needs its start: the schema (not the form) says so, on workload.synthetic.burst.at_s
    data = _post([("eastus", "llama2-70b/h100-80gb/tp8", {"initial": 1, "min": 1, "max": 2})], source="synthetic",
                 syn__total_requests=100, syn__burst__duration_s=60, strategies=["static"], baseline="static")
    resp = client.post("/comparisons/build/", data)
    html = resp.content.decode()
    assert resp.status_code == 400 and not Comparison.objects.exists()
    box = re.search(r'data-schema-field="syn__burst__at_s".*?</div>\s*</div>', html, re.S).group(0)
    assert "data-field-error" in box
    assert re.search(r'name="syn__burst__duration_s"[^>]*value="60', html)  # the answers are kept
    assert "data-advanced" in html and "&quot;burst&quot;" in html  # and the JSON view
    # a baseline that is none of the variants: on the baseline field
    data = _post([("eastus", "llama2-70b/h100-80gb/tp8", {"initial": 1, "min": 1, "max": 2})], source="synthetic",
                 syn__total_requests=100, strategies=["static"], baseline="lt-q")
    html = client.post("/comparisons/build/", data).content.decode()
    assert re.search(r'name="baseline".*?data-field-error', html, re.S)
    # an endpoint field out of the schema's range: on that row's field
    data = _post([("eastus", "llama2-70b/h100-80gb/tp8", {"initial": 1}),
                  ("westus", "llama2-70b/h100-80gb/tp8", {"initial": 10**9})], source="synthetic",
                 syn__total_requests=100, strategies=["static"])
    html = client.post("/comparisons/build/", data).content.decode()
    row = re.search(r'<tr data-row="1">.*?</tr>', html, re.S).group(0)
    assert "data-field-error" in row and "100000" in row


def test_a_past_comparison_clones_into_the_forms(owner, django_capture_on_commit_callbacks):
    member, client = owner
    data = _post([("eastus", "llama2-70b/h100-80gb/tp8", {"initial": 3, "min": 2, "max": 8, "spot_pool": 1})],
                 source="synthetic", syn__total_requests=200, syn__duration_s=600, strategies=["static"],
                 bundles=["sageserve-code.lt-i"], baseline="static", name="orig")
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post("/comparisons/build/", data).status_code == 302
    comp = Comparison.objects.get(name="orig")
    html = client.get(f"/comparisons/build/?clone={comp.pk}").content.decode()
    assert re.search(r'name="syn__total_requests"[^>]*value="200"', html)
    assert re.search(r'name="ep-0-max"[^>]*value="8"', html) and re.search(r'name="ep-0-spot_pool"[^>]*value="1"', html)
    assert re.search(r'value="sageserve-code.lt-i"[^>]*checked', html)
    assert re.search(r'name="name"[^>]*value="orig \(copy\)"', html)
    # a fixture-workload comparison is only editable as JSON: the builder sends it to the JSON form
    other = Comparison.objects.create(team=member.team, name="fx", scenario={"workload": {"fixture": "x"}},
                                      variants=[], baseline="static")
    resp = client.get(f"/comparisons/build/?clone={other.pk}")
    assert resp.status_code == 302 and f"clone={other.pk}" in resp["Location"]


def test_the_builder_json_is_valid_json_the_json_form_accepts(owner):
    _, client = owner
    data = _post([("eastus", "llama2-70b/h100-80gb/tp8", {"initial": 1})], source="synthetic",
                 syn__total_requests=100, syn__burst__duration_s=60, strategies=["static"])
    html = client.post("/comparisons/build/", data).content.decode()
    import html as html_lib

    text = html_lib.unescape(re.search(r'<textarea name="scenario_json"[^>]*>(.*?)</textarea>', html, re.S).group(1))
    assert json.loads(text)["workload"]["synthetic"]["burst"] == {"duration_s": 60.0}


# ---------------------------------------------------------------- the plan builder


def _plan_post(deployments=(), demand=(), quotas=(), gpus=(), limits=(), initial=(), **fields):
    data = {"action": "run", "demand_source": "typed", "hours": 24, "spot__risk_discount": 0,
            "rerouting__min_local_share": 0, "start_fee": 0, "solver__name": "highs", "solver__time_limit_s": 60,
            "solver__gap_rel": 0.01, "dft__statistic": "peak", "dft__window_s": 300, "dft__start_hour": 0}
    for prefix, rows in (("dep", deployments), ("demand", demand), ("quota", quotas), ("gpu", gpus),
                         ("limit", limits), ("init", initial)):
        data.update({f"{prefix}-TOTAL_FORMS": str(len(rows) + 1), f"{prefix}-INITIAL_FORMS": "0",
                     f"{prefix}-MIN_NUM_FORMS": "0", f"{prefix}-MAX_NUM_FORMS": "1000"})
        for i, row in enumerate(rows):
            data.update({f"{prefix}-{i}-{k}": v for k, v in row.items()})
    data.update(fields)
    return data


def test_the_plan_builder_offers_the_plan_schema_fields_and_the_catalogue(owner):
    _, client = owner
    page = client.get("/plans/build/").content.decode()
    for name in ("hours", "risk_quantile", "regions", "spot__risk_discount", "rerouting__enabled", "solver__gap_rel",
                 "start_fee", "dep-0-name", "dep-0-theta_tps", "dep-0-gpus_per_instance", "demand-0-tps",
                 "demand-0-cv", "quota-0-max_gpus", "gpu-0-on_demand", "dft__statistic", "dft__window_s"):
        assert f'name="{name}"' in page, name
    assert re.search(rf'name="hours"[^>]*max="{168}"', page)  # planner.optimizer.schema.MAX_HOURS
    assert "llama2-70b/h100-80gb/tp8" in page
    assert 'href="/plans/build/"' in client.get("/plans/").content.decode()


def test_a_plan_from_the_forms_solves_and_covers_the_typed_demand(owner, django_capture_on_commit_callbacks):
    from planner.catalogue import engine_spec
    from planner.plans.models import CapacityPlan

    _, client = owner
    data = _plan_post(deployments=[{"name": "llama2-70b/h100-80gb/tp8"}],
                      demand=[{"region": "eastus", "model": "llama2-70b", "tps": "1000, 3000"},
                              {"region": "westus", "model": "llama2-70b", "tps": "500", "cv": 0.1}],
                      quotas=[{"region": "westus", "gpu": "h100-80gb", "max_gpus": 64}],
                      limits=[{"region": "westus", "model": "llama2-70b", "min_instances": 3}],
                      hours=2, risk_quantile=0.9, name="forms plan")
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post("/plans/build/", data)
    assert resp.status_code == 302, resp.content.decode()[-3000:]
    plan = CapacityPlan.objects.get(name="forms plan")
    assert plan.scenario == {
        "name": "forms plan", "hours": 2, "risk_quantile": 0.9, "regions": ["eastus", "westus"],
        "deployments": [{"name": "llama2-70b/h100-80gb/tp8"}],
        "demand": [{"region": "eastus", "model": "llama2-70b", "tps": [1000.0, 3000.0]},
                   {"region": "westus", "model": "llama2-70b", "cv": 0.1, "tps": 500.0}],
        "quotas": [{"region": "westus", "gpu": "h100-80gb", "max_gpus": 64}],
        "limits": [{"model": "llama2-70b", "region": "westus", "min_instances": 3}]}
    plan.refresh_from_db()
    assert plan.job.status == "succeeded" and plan.feasible, (plan.job.status, plan.job.error)
    theta = engine_spec("llama2-70b/h100-80gb/tp8")["theta_tps"]
    per_hour: dict = {}
    for row in plan.result["instances"]:
        if row["region"] == "eastus":
            per_hour[row["hour"]] = per_hour.get(row["hour"], 0) + row["instances"]
    assert per_hour[1] * theta >= 3000.0 and per_hour[0] * theta >= 1000.0  # the typed demand is covered
    west = [sum(r["instances"] for r in plan.result["instances"] if r["region"] == "westus" and r["hour"] == h)
            for h in range(2)]
    assert min(west) >= 3  # the floor row holds although 500 TPS needs fewer


def test_plan_builder_errors_land_on_the_row_and_the_answers_stay(owner):
    from planner.plans.models import CapacityPlan

    _, client = owner
    data = _plan_post(deployments=[{"name": "llama2-70b/h100-80gb/tp8"}],
                      demand=[{"region": "eastus", "model": "llama2-70b", "tps": "1000"},
                              {"region": "centralus", "model": "llama2-70b", "tps": "20"}],
                      regions="eastus, westus", hours=2)
    resp = client.post("/plans/build/", data)
    html = resp.content.decode()
    assert resp.status_code == 400 and not CapacityPlan.objects.exists()
    row = re.search(r'<tr data-row="1">.*?</tr>', html[html.index('data-rows="demand"'):], re.S).group(0)
    assert "data-field-error" in row and "centralus" in row  # on the demand row that named the unknown region
    assert re.search(r'name="regions"[^>]*value="eastus, westus"', html)
    assert "data-advanced" in html
    bad = client.post("/plans/build/", _plan_post(demand=[{"region": "eastus", "model": "m", "tps": "1, x"}],
                                                  hours=500, demand_source="forecast"))
    html = bad.content.decode()
    assert bad.status_code == 400
    assert re.search(r'data-schema-field="hours".*?data-field-error', html, re.S)  # the schema's bound (168)
    assert re.search(r'name="forecast".*?data-field-error', html, re.S)
    assert "comma-separated list of numbers" in html


def test_a_plan_from_a_forecast_run_in_the_forms_covers_its_upper_bound(owner, django_capture_on_commit_callbacks):
    from forecasts.models import ForecastRun, ForecastSeries
    from planner.catalogue import engine_spec
    from planner.jobs.models import Job
    from planner.plans.models import CapacityPlan
    from planner.traces.models import Trace

    member, client = owner
    trace = Trace.objects.create(team=member.team, name="t", format="native", storage_key="k1")
    job = Job.objects.create(team=member.team, kind="forecasts.run", status="succeeded", progress=100)
    run = ForecastRun.objects.create(team=member.team, trace=trace, job=job,
                                     params={"method": "auto", "level": 0.9, "horizon_s": 3600})
    ForecastSeries.objects.create(run=run, label="eastus|llama2-70b|IW-F", metric="input_tps", peak=2000.0,
                                  peak_upper=2600.0, group={"region": "eastus", "model": "llama2-70b", "tier": "IW-F"})
    page = client.get(f"/plans/build/?forecast={run.pk}").content.decode()
    assert re.search(rf'<option value="{run.pk}" selected>', page)
    assert f"/plans/build/?forecast={run.pk}" in client.get(f"/forecasts/{run.pk}/").content.decode()
    data = _plan_post(deployments=[], demand_source="forecast", forecast=run.pk, hours=3, name="from forecast")
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post("/plans/build/", data).status_code == 302
    plan = CapacityPlan.objects.get(name="from forecast")
    assert plan.scenario["demand"] == [{"model": "llama2-70b", "region": "eastus", "tps": 2000.0,
                                        "quantiles": {"0.5": 2000.0, "0.9": 2600.0}}]
    assert plan.scenario["risk_quantile"] == 0.9 and plan.hours == 3
    plan.refresh_from_db()
    theta = engine_spec(plan.scenario["deployments"][0]["name"])["theta_tps"]
    for hour in range(3):
        n = sum(r["instances"] for r in plan.result["instances"] if r["hour"] == hour)
        assert n * theta >= 2600.0  # every hour covers the forecast's upper bound


def test_a_past_plan_clones_into_the_forms_and_a_json_only_plan_goes_to_the_json_form(owner):
    from planner.plans.models import CapacityPlan

    member, client = owner
    scenario = {"name": "p", "hours": 2, "regions": ["eastus"], "deployments": [{"name": "llama2-70b/h100-80gb/tp8",
                                                                                 "theta_tps": 700.0}],
                "demand": [{"model": "llama2-70b", "region": "eastus", "tps": [100.0, 200.0]}],
                "gpus": {"h100-80gb": {"on_demand": 10.0}}, "solver": {"gap_rel": 0.02}}
    plan = CapacityPlan.objects.create(team=member.team, name="p", scenario=scenario, hours=2)
    html = client.get(f"/plans/build/?clone={plan.pk}").content.decode()
    assert re.search(r'name="demand-0-tps"[^>]*value="100.0, 200.0"', html)
    assert re.search(r'name="dep-0-theta_tps"[^>]*value="700.0"', html)
    assert re.search(r'name="gpu-0-gpu"[^>]*value="h100-80gb"', html)
    assert re.search(r'name="solver__gap_rel"[^>]*value="0.02"', html)
    assert re.search(r'name="name"[^>]*value="p \(copy\)"', html)
    limited = CapacityPlan.objects.create(team=member.team, name="l", hours=2, scenario={
        **scenario, "limits": [{"model": "llama2-70b", "region": "eastus", "min_instances": 2}],
        "demand": [{"model": "llama2-70b", "region": "eastus", "tps": 100.0, "quantiles": {"0.5": 100.0, "0.9": 130.0}}]})
    html = client.get(f"/plans/build/?clone={limited.pk}").content.decode()
    assert re.search(r'name="limit-0-min_instances"[^>]*value="2"', html)
    assert re.search(r'name="demand-0-quantiles"[^>]*value="0.5: 100.0, 0.9: 130.0"', html)
    other = CapacityPlan.objects.create(team=member.team, name="q", hours=2, scenario={
        **scenario, "spot": {"available": [{"region": "eastus", "gpu": "h100-80gb", "max_gpus": 8}]}})
    resp = client.get(f"/plans/build/?clone={other.pk}")
    assert resp.status_code == 302 and f"clone={other.pk}" in resp["Location"]


def test_the_generators_renewal_streams_are_in_the_builder_too(owner, django_capture_on_commit_callbacks):
    _, client = owner
    page = client.get("/comparisons/build/?source=synthetic").content.decode()
    for name in ("synth_kind", "poisson__rate_rps", "gamma__cv", "gamma__lengths__input__lognormal__median",
                 "gamma__tiers__NIW"):
        assert f'name="{name}"' in page, name
    rows = [("eastus", "llama2-70b/h100-80gb/tp8", {"initial": 2, "max": 4})]
    missing = _post(rows, source="synthetic", synth_kind="gamma", gamma__duration_s=600, gamma__cv=0.5,
                    strategies=["static"])
    html = client.post("/comparisons/build/", missing).content.decode()
    assert re.search(r'data-schema-field="gamma__rate_rps".*?data-field-error', html, re.S)  # the spec's own error
    data = _post(rows, source="synthetic", synth_kind="gamma", gamma__rate_rps=0.5, gamma__duration_s=600,
                 gamma__cv=0.5, gamma__seed=2, gamma__tiers__IW_F=1, gamma__tiers__NIW=1,
                 gamma__lengths__input__fixed=800, strategies=["static", "reactive-unified"], name="gamma")
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post("/comparisons/build/", data).status_code == 302
    comp = Comparison.objects.get(name="gamma")
    assert comp.scenario["workload"] == {"synthetic": {
        "kind": "gamma", "rate_rps": 0.5, "duration_s": 600.0, "cv": 0.5, "seed": 2,
        "tiers": {"IW-F": 1.0, "NIW": 1.0}, "lengths": {"input": {"fixed": 800}}}}
    counts = {r.metrics.get("requests") for r in comp.results.all()}
    assert comp.status == "succeeded" and len(counts) == 1
    assert 200 <= counts.pop() <= 400  # 0.5 req/s over 600 s: 300 expected, a Gamma(cv 0.5) renewal is tighter
    html = client.get(f"/comparisons/build/?clone={comp.pk}").content.decode()
    assert re.search(r'<option value="gamma" selected>', html) and re.search(r'name="gamma__cv"[^>]*value="0.5"', html)


def test_a_newly_registered_bundle_family_appears_in_the_builder(owner, monkeypatch):
    from planner.comparisons.core import bundles

    _, client = owner
    monkeypatch.setitem(bundles.BUNDLES, "newfam.default", bundles.Bundle(
        name="newfam.default", strategy="reactive-unified", family="newfam", description="a family added later"))
    page = client.get("/comparisons/build/").content.decode()
    assert 'value="newfam.default"' in page and "a family added later" in page


def test_typed_quantiles_parse_or_say_how_to_write_them():
    from django import forms

    from planner.plans.builder import parse_quantiles

    assert parse_quantiles("0.5: 2000, 0.9:2600") == {"0.5": 2000.0, "0.9": 2600.0}
    assert parse_quantiles("") == {}
    for bad in ("0.5 2000", "p50: 3", "0.5: x"):
        with pytest.raises(forms.ValidationError, match="e.g. 0.5: 2000"):
            parse_quantiles(bad)
