"""Disaggregated endpoints through the API, the job handler, the page and the CLI: runs store the KV-transfer
metrics and per-pool usage; bad pools are a 400 naming the field and store nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from planner.jobs.models import Job
from simulations.models import SimulationRun
from simulations.tests.engine_helpers import SPEC

ROOT = Path(__file__).resolve().parents[2]
TOY = {**SPEC, "kv_bytes_per_token": 1e6}


def disagg_scenario() -> dict:
    return {
        "name": "pd api test", "seed": 1,
        "workload": {"synthetic": {"duration_s": 600, "total_requests": 300}},
        "fleet": {"regions": [{"name": "r1"}], "endpoints": [{
            "region": "r1", "model": "toy",
            "prefill_pool": {"deployment": TOY, "initial": 1, "min": 1, "max": 1},
            "decode_pool": {"deployment": TOY, "initial": 2, "min": 2, "max": 2},
            "kv_link": {"link_class": "infiniband"}}]},
        "strategy": "static",
    }


@pytest.mark.django_db(transaction=True)
def test_a_disaggregated_run_through_the_api_stores_the_transfers_and_the_page_shows_them(cast):
    resp = cast.owner.api.post("/api/simulations/", {"scenario": disagg_scenario(), "name": "pd"}, format="json")
    assert resp.status_code == 201, resp.content
    run = SimulationRun.objects.get(pk=resp.json()["id"])
    assert run.job.status == Job.Status.SUCCEEDED, run.job.last_error
    d = run.result["summary"]["disaggregation"]
    assert d["transfers"] == run.result["summary"]["completed"] == 300
    assert {u.get("pool") for u in run.result["usage"]} == {"prefill", "decode"}
    from django.test import Client

    page = Client()
    page.force_login(cast.owner.user)
    html = page.get(f"/simulations/{run.pk}/").content.decode()
    assert 'id="disaggregation"' in html and "KV transfer" in html and "(decode pool)" in html
    assert 'id="mixed-pool"' not in html


@pytest.mark.django_db(transaction=True)
def test_a_run_with_the_mixed_pool_stores_and_shows_where_the_work_ran(cast):
    d = disagg_scenario()
    ep = d["fleet"]["endpoints"][0]
    ep["mixed_pool"] = {"prefill_queue_tokens": 1}  # any queue overloads the one prefill instance
    ep["prefill_pool"]["deployment"] = dict(TOY, max_batch_tokens=4096)
    d["workload"]["synthetic"].update(duration_s=60)  # 300 requests in a minute: queues form
    resp = cast.owner.api.post("/api/simulations/", {"scenario": d, "name": "pd mixed"}, format="json")
    assert resp.status_code == 201, resp.content
    run = SimulationRun.objects.get(pk=resp.json()["id"])
    assert run.job.status == Job.Status.SUCCEEDED, run.job.last_error
    s = run.result["summary"]
    m = s["disaggregation"]["mixed_pool"]
    assert m["prompts_on_decode_instances"] > 0 and m["prefill_queue_tokens"] == {"r1/toy/prefill": 1}
    # a prompt a decode instance took moves nothing: transfers + those prompts (+ one-token requests) = completed
    assert s["disaggregation"]["transfers"] + m["prompts_on_decode_instances"] <= s["completed"] == 300
    from django.test import Client

    page = Client()
    page.force_login(cast.owner.user)
    html = page.get(f"/simulations/{run.pk}/").content.decode()
    assert 'id="mixed-pool"' in html and "prompts taken by decode instances" in html


BAD = [
    (lambda e: e["kv_link"].update(bandwidth_gb_s=0), "scenario.fleet.endpoints[0].kv_link.bandwidth_gb_s"),
    (lambda e: e.pop("decode_pool"), "scenario.fleet.endpoints[0].decode_pool"),
    (lambda e: e["decode_pool"]["deployment"].update(kv_capacity_tokens=100),
     "scenario.fleet.endpoints[0].decode_pool.deployment.kv_capacity_tokens"),
    (lambda e: e.update(mixed_pool={"prefill_queue_tokens": 0}),
     "scenario.fleet.endpoints[0].mixed_pool.prefill_queue_tokens"),
    (lambda e: [e.pop(k) for k in ("prefill_pool", "decode_pool", "kv_link")] and e.update(
        deployment=dict(TOY), mixed_pool={}), "scenario.fleet.endpoints[0].mixed_pool"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("mutate, field", BAD)
def test_bad_pools_are_a_400_naming_the_field_and_store_nothing(cast, mutate, field):
    d = disagg_scenario()
    d["fleet"]["endpoints"][0]["decode_pool"]["deployment"] = dict(TOY)
    mutate(d["fleet"]["endpoints"][0])
    resp = cast.owner.api.post("/api/simulations/", {"scenario": d}, format="json")
    assert resp.status_code == 400, resp.content
    err = resp.json()["error"]
    assert field in err["fields"], err
    assert SimulationRun.objects.count() == 0 and Job.objects.count() == 0


@pytest.mark.django_db
def test_the_page_form_refuses_a_prefill_pool_without_a_decode_pool(cast):
    from django.test import Client

    d = disagg_scenario()
    d["fleet"]["endpoints"][0].pop("decode_pool")
    page = Client()
    page.force_login(cast.owner.user)
    resp = page.post("/simulations/", {"scenario": json.dumps(d), "fixture": "", "mode": "fast"})
    assert resp.status_code == 400 and "decode_pool" in resp.content.decode()
    assert SimulationRun.objects.count() == 0


@pytest.mark.django_db
def test_the_simulate_command_runs_the_disaggregated_fixture():
    out = StringIO()
    call_command("simulate", str(ROOT / "fixtures/scenarios/code_disagg.json"), "--json", "--no-save", stdout=out)
    data = json.loads(out.getvalue())
    assert data["summary"]["completed"] == 8819
    assert data["summary"]["disaggregation"]["transfers"] == 8819


def test_the_engine_cli_names_the_field_of_a_bad_link(tmp_path):
    d = disagg_scenario()
    d["fleet"]["endpoints"][0]["kv_link"]["bandwidth_gb_s"] = 0
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))
    proc = subprocess.run([sys.executable, "-m", "simulations.engine.run", str(path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and "fleet.endpoints[0].kv_link.bandwidth_gb_s" in proc.stderr


@pytest.mark.django_db
def test_the_clis_run_the_mixed_pool_and_name_a_bad_threshold(tmp_path):
    d = disagg_scenario()
    d["fleet"]["endpoints"][0]["mixed_pool"] = {"prefill_queue_tokens": 1}
    d["workload"]["synthetic"].update(duration_s=60)
    out = StringIO()
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(d))
    call_command("simulate", str(path), "--json", "--no-save", stdout=out)
    assert json.loads(out.getvalue())["summary"]["disaggregation"]["mixed_pool"]["prompts_on_decode_instances"] > 0
    d["fleet"]["endpoints"][0]["mixed_pool"]["prefill_queue_tokens"] = -5
    path.write_text(json.dumps(d))
    proc = subprocess.run([sys.executable, "-m", "simulations.engine.run", str(path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and "fleet.endpoints[0].mixed_pool.prefill_queue_tokens" in proc.stderr


def test_the_comparison_summary_carries_the_transfers_only_for_disaggregated_runs():
    from planner.comparisons.core.runner import run_variant

    variant = {"key": "static", "strategy": "static", "scheduler": "", "knobs": {}}
    s = run_variant(disagg_scenario(), variant)
    d = s["disaggregation"]
    assert d["transfers"] == s["completed"] == 300 and d["transfer_p50"] > 0 and d["decode_wait_p90"] >= 0
    agg = disagg_scenario()
    agg["fleet"]["endpoints"] = [{"region": "r1", "model": "toy", "deployment": TOY, "initial": 2}]
    assert "disaggregation" not in run_variant(agg, variant)


@pytest.mark.parametrize("autoscaler", ["lt-ua", "lt-i", "lt-u", "reactive-unified", "hpa"])
def test_an_autoscaler_that_scales_only_the_prefill_pool_is_refused_naming_the_field(autoscaler):
    from simulations.engine import ScenarioError, parse_scenario

    d = disagg_scenario()
    d["strategy"] = {"autoscaler": autoscaler}
    with pytest.raises(ScenarioError) as exc:
        parse_scenario(d)
    assert exc.value.field == "strategy.autoscaler" and "only the prefill pool" in exc.value.message
    assert "dynamo-planner" in exc.value.hint
    d["strategy"] = autoscaler  # the short form names the field it was given in
    with pytest.raises(ScenarioError) as exc:
        parse_scenario(d)
    assert exc.value.field == "strategy"
    for ok in ("static", "dynamo-planner"):  # each pool by its own count / signal
        d["strategy"] = ok
        parse_scenario(d)


@pytest.mark.django_db
def test_the_api_and_a_comparison_refuse_a_prefill_only_autoscaler_with_a_400(cast):
    from planner.comparisons.models import Comparison

    d = disagg_scenario()
    d["strategy"] = "lt-ua"
    resp = cast.owner.api.post("/api/simulations/", {"scenario": d}, format="json")
    assert resp.status_code == 400, resp.content
    assert "scenario.strategy" in resp.json()["error"]["fields"], resp.json()
    d["strategy"] = "static"
    resp = cast.owner.api.post("/api/comparisons/", {"scenario": d, "strategies": ["static", "reactive-unified"]},
                               format="json")
    assert resp.status_code == 400, resp.content
    assert "only the prefill pool" in resp.json()["error"]["message"], resp.json()
    assert SimulationRun.objects.count() == 0 and not Comparison.objects.exists() and Job.objects.count() == 0


def test_the_simulate_command_refuses_a_prefill_only_autoscaler(tmp_path):
    from django.core.management.base import CommandError

    d = disagg_scenario()
    d["strategy"] = "reactive-unified"
    path = tmp_path / "pd.json"
    path.write_text(json.dumps(d))
    with pytest.raises(CommandError) as exc:
        call_command("simulate", str(path), "--json", "--no-save", stdout=StringIO())
    assert "strategy: the 'reactive-unified' autoscaler scales only the prefill pool" in str(exc.value)
