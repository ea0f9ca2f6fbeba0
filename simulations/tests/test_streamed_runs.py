"""Streamed runs in the product: the run option's schema, the job path, the API, the page, the CSV and the
CLI. The streamed result is checked against the table mode of the same scenario (one chunk = the same simulation:
counts and GPU-hours equal, percentiles within the histogram's bound of numpy's)."""

from __future__ import annotations

import csv
import io
import json
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from planner.jobs.models import Job
from simulations.engine import ScenarioError
from simulations.engine.scenario.runoptions import DEFAULT_CHUNK_S, parse_result_options
from simulations.models import SimulationRun
from simulations.streamed_views import extras, hourly_csv, is_streamed, page_context, percentile_rows
from simulations.tests.test_runs_api import small_scenario

ROOT = Path(__file__).resolve().parents[2]
STREAM = {"mode": "streaming", "chunk_s": 120}


# ----------------------------------------------------------------------------------------- the run option's schema
def test_the_result_option_defaults_to_the_table_and_takes_a_chunk_when_streaming():
    assert parse_result_options(None).mode == "table"
    assert parse_result_options({}).stored() == {"mode": "table"}
    opt = parse_result_options({"mode": "streaming"})
    assert opt.streaming and opt.chunk == DEFAULT_CHUNK_S
    assert parse_result_options({"mode": "streaming", "chunk_s": 86400}).stored() == {"mode": "streaming",
                                                                                     "chunk_s": 86400.0}
    assert parse_result_options("streaming").streaming


@pytest.mark.parametrize(("value", "where", "words"), [
    ({"mode": "stream"}, "result.mode", "did you mean 'streaming'"),
    ({"mode": "streaming", "chunk_s": 10}, "result.chunk_s", ">= 60.0, got 10 simulated seconds per chunk, 60 to"),
    ({"mode": "streaming", "chunk_s": "3600"}, "result.chunk_s", "without quotes"),
    ({"mode": "streaming", "chunk_s": float("nan")}, "result.chunk_s", "finite"),
    ({"mode": "table", "chunk_s": 3600}, "result", "only to mode 'streaming'"),
    ({"mode": "streaming", "chunks": 3600}, "result.chunks", "did you mean 'chunk_s'"),
    ([1, 2], "result", "must be an object"),
])
def test_bad_result_options_name_the_field_with_a_hint(value, where, words):
    with pytest.raises(ScenarioError) as err:
        parse_result_options(value)
    assert err.value.field == where
    assert words in f"{err.value.message} {err.value.hint}"


# ----------------------------------------------------------------------------------------- API -> job -> result
@pytest.mark.django_db(transaction=True)
def test_a_streamed_run_through_the_api_matches_the_table_run_of_the_same_scenario(cast):
    """One chunk longer than the workload: the same simulation as the table mode, so counts, GPU-hours and cost are
    equal, and every streamed percentile is within 0.5 % of the exact nearest-rank one (numpy's on the table's
    per-request latencies, recomputed here with the engine)."""
    sc = small_scenario()
    table = cast.owner.api.post("/api/simulations/", {"scenario": sc}, format="json")
    streamed = cast.owner.api.post("/api/simulations/", {"scenario": sc, "result": {"mode": "streaming",
                                                                                     "chunk_s": 3600}}, format="json")
    assert table.status_code == 201 and streamed.status_code == 201, streamed.content
    assert streamed.json()["result_mode"] == "streaming" and streamed.json()["chunk_s"] == 3600.0
    assert table.json()["result_mode"] == "table" and table.json()["chunk_s"] is None
    t_run = SimulationRun.objects.get(pk=table.json()["id"])
    s_run = SimulationRun.objects.get(pk=streamed.json()["id"])
    assert s_run.job.status == Job.Status.SUCCEEDED, s_run.job.last_error
    assert s_run.job.result["result_mode"] == "streaming" and s_run.job.progress == 100.0
    res = cast.owner.api.get(f"/api/simulations/{s_run.pk}/results/").json()
    t, s = t_run.result["summary"], res["summary"]
    assert res["result_mode"] == "streaming" and res["percentile_rel_error"] == 0.005
    assert s["requests"] == t["requests"] == 300 and s["completed"] == t["completed"] and s["chunks"] == 1
    for key in ("gpu_hours", "cost_usd", "scale_outs", "scale_ins"):
        assert s[key] == pytest.approx(t[key], rel=1e-12), key
    assert s_run.requests_simulated == 300
    # exact percentiles from the same simulation's per-request table
    from simulations.engine import build_workload, parse_scenario, simulate

    scenario = parse_scenario(sc)
    direct = simulate(scenario, build_workload(scenario))
    done = np.asarray(direct.requests["completed"], dtype=bool)
    for metric in ("ttft", "e2e"):
        x = np.asarray(direct.requests[f"{metric}_s"])[done]
        assert s[metric]["mean"] == pytest.approx(float(x.mean()), rel=1e-9)
        for p in (50, 90, 95, 99):
            exact = float(np.percentile(x, p, method="inverted_cdf"))
            assert abs(s[metric][f"p{p}"] - exact) <= 0.005 * exact + 1e-12, (metric, p)
    # hourly rollups add up to the totals
    assert sum(r["requests"] for r in res["hourly"]) == 300
    assert {r["endpoint"] for r in res["hourly"]} <= {"r1/toy", "r2/toy", "(not served)"}


@pytest.mark.django_db(transaction=True)
def test_streamed_chunks_report_progress_and_the_hourly_rollups_cover_every_chunk(cast, monkeypatch):
    seen = []
    from planner.jobs import registry

    real = registry.JobContext.progress

    def spy(self, percent, message="", *, force=False):
        seen.append((percent, message))
        return real(self, percent, message, force=True)

    monkeypatch.setattr(registry.JobContext, "progress", spy)
    resp = cast.owner.api.post("/api/simulations/", {"scenario": small_scenario(), "result": STREAM}, format="json")
    run = SimulationRun.objects.get(pk=resp.json()["id"])
    assert run.job.status == Job.Status.SUCCEEDED, run.job.last_error
    chunk_msgs = [m for _, m in seen if m.startswith("chunk ")]
    assert len(chunk_msgs) == run.result["summary"]["chunks"] == 5  # 600 s in 120 s chunks
    percents = [p for p, m in seen if m.startswith("chunk ")]
    assert percents == sorted(percents) and percents[-1] == pytest.approx(98.0)


@pytest.mark.django_db(transaction=True)
def test_bad_result_options_get_the_documented_400_and_store_nothing(cast):
    before = SimulationRun.objects.count()
    for body, where in (({"mode": "streaming", "chunk_s": 5}, "result.chunk_s"), ({"mode": "month"}, "result.mode"),
                        ({"mode": "table", "chunk_s": 600}, "result"), ("fast", "result.mode")):
        resp = cast.owner.api.post("/api/simulations/", {"scenario": small_scenario(), "result": body}, format="json")
        assert resp.status_code == 400, resp.content
        err = resp.json()["error"]
        assert err["where"] == where and err["message"].startswith(where) and set(err) >= {"hint", "fields"}
    assert SimulationRun.objects.count() == before


@pytest.mark.django_db(transaction=True)
def test_a_horizon_beyond_the_table_caps_is_refused_with_a_hint_and_runs_streamed(cast, settings):
    sc = small_scenario()
    sc["workload"] = {"synthetic": {"duration_s": 10 * 86400, "total_requests": 400}}  # 10 days > 8-day table cap
    resp = cast.owner.api.post("/api/simulations/", {"scenario": sc}, format="json")
    assert resp.status_code == 400
    assert "streaming" in resp.json()["error"]["hint"]
    resp = cast.owner.api.post("/api/simulations/", {"scenario": sc, "result": {"mode": "streaming",
                                                                                 "chunk_s": 86400}}, format="json")
    assert resp.status_code == 201, resp.content
    run = SimulationRun.objects.get(pk=resp.json()["id"])
    assert run.job.status == Job.Status.SUCCEEDED and run.result["summary"]["requests"] == 400
    settings.PLANNER_MAX_STREAM_REQUESTS = 100  # the streaming cap is its own setting
    resp = cast.owner.api.post("/api/simulations/", {"scenario": sc, "result": {"mode": "streaming"}}, format="json")
    assert resp.status_code == 400 and "limit is 100" in resp.json()["error"]["message"]


@pytest.mark.django_db(transaction=True)
def test_a_streamed_run_at_the_time_limit_ends_failed_with_a_reason(cast, monkeypatch):
    monkeypatch.setattr("simulations.streaming.wall_budget_s", lambda: -1.0)
    resp = cast.owner.api.post("/api/simulations/", {"scenario": small_scenario(), "result": STREAM}, format="json")
    run = SimulationRun.objects.get(pk=resp.json()["id"])
    assert run.job.status == Job.Status.FAILED
    assert "job time limit" in run.job.last_error["message"] and run.job.last_error["hint"]
    assert run.result is None


# ----------------------------------------------------------------------------------------- page, CSV
def _streamed_run(cast) -> SimulationRun:
    resp = cast.owner.api.post("/api/simulations/", {"scenario": small_scenario(), "result": STREAM,
                                                     "name": "streamed page"}, format="json")
    run = SimulationRun.objects.get(pk=resp.json()["id"])
    assert run.job.status == Job.Status.SUCCEEDED, run.job.last_error
    return run


@pytest.mark.django_db(transaction=True)
def test_the_streamed_run_page_shows_kpis_percentiles_charts_and_says_what_is_not_available(cast, client):
    run = _streamed_run(cast)
    client.force_login(cast.owner.user)
    page = client.get(f"/simulations/{run.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    for text in ('id="stream-kpis"', "SLO attainment", "GPU-hours", "Energy", 'id="stream-percentiles"',
                 "within ±0.5 % relative", 'id="stream-hourly"', 'id="stream-latency"', "not available for streamed runs",
                 "hourly rollups (CSV)", "streamed</strong> result"):
        assert text in html, text
    assert 'id="timeline"' not in html and 'id="latency"' not in html  # no empty per-request charts
    assert "Mean TTFT per hour, by tier" in html and "Requests per hour (by arrival hour)" in html
    listing = client.get("/simulations/").content.decode()
    assert '<span class="tag">streamed</span>' in listing and 'name="result_mode"' in listing


@pytest.mark.django_db(transaction=True)
def test_unknown_and_missing_keys_of_a_streamed_result_render_without_a_crash(cast, client):
    run = _streamed_run(cast)
    result = json.loads(json.dumps(run.result))
    result["summary"]["exact_inflight"] = 12
    result["exactness"] = {"mode": "exact", "boundary_requests": 0}
    result["hourly"][0]["ttft_p99_s"] = 0.5
    result["tiers"]["IW-F"]["ttft"] = "not a dict"
    run.result = result
    run.save()
    client.force_login(cast.owner.user)
    html = client.get(f"/simulations/{run.pk}/").content.decode()
    assert "summary.exact_inflight" in html and "exactness" in html and "boundary_requests" in html
    assert "ttft_p99_s" in client.get(f"/simulations/{run.pk}/hourly.csv").content.decode()
    run.result = {"result_mode": "streaming"}  # nothing else: still a page
    run.save()
    page = client.get(f"/simulations/{run.pk}/")
    assert page.status_code == 200 and b"No hourly rollups in this result." in page.content
    assert client.get(f"/simulations/{run.pk}/hourly.csv").status_code == 404
    assert cast.owner.api.get(f"/api/simulations/{run.pk}/hourly.csv/").status_code == 409


def test_percentile_rows_and_extras_read_only_what_is_there():
    result = {"result_mode": "streaming", "summary": {"ttft": {"p50": 1.0, "p99": None}, "new": 1.5},
              "tiers": {"NIW": {"e2e": {"p50": 2.0, "mean": 3.0}}}, "future": [1, 2]}
    assert is_streamed(result) and not is_streamed({"summary": {}}) and not is_streamed(None)
    rows = percentile_rows(result)
    assert [(r["scope"], r["metric"], r["p50"], r["p99"]) for r in rows] == [("all", "TTFT", 1.0, None),
                                                                            ("NIW", "E2E", 2.0, None)]
    assert extras(result) == [("summary.new", "1.5"), ("future", "[1, 2]")]
    ctx = page_context(result)
    assert ctx["hourly_json"] is None and ctx["rel_error_pct"] is None


@pytest.mark.django_db(transaction=True)
def test_the_hourly_csv_has_one_row_per_hour_endpoint_and_tier_and_adds_up(cast, client):
    run = _streamed_run(cast)
    client.force_login(cast.owner.user)
    resp = client.get(f"/simulations/{run.pk}/hourly.csv")
    assert resp.status_code == 200 and resp["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(resp.content.decode())))
    assert len(rows) == len(run.result["hourly"])
    assert sum(int(r["requests"]) for r in rows) == 300
    # the known columns first; keys the engine adds (the exact replay's slo_met) follow
    assert list(rows[0])[:7] == ["hour", "endpoint", "tier", "requests", "completed", "ttft_mean_s", "e2e_mean_s"]
    api = cast.owner.api.get(f"/api/simulations/{run.pk}/hourly.csv/")
    assert api.status_code == 200 and api.content.decode() == hourly_csv(run.result)
    assert cast.outsider.api.get(f"/api/simulations/{run.pk}/hourly.csv/").status_code == 404
    other = Client_for(cast.outsider.user)
    assert other.get(f"/simulations/{run.pk}/hourly.csv").status_code == 404


def Client_for(user):  # noqa: N802
    from django.test import Client

    c = Client()
    c.force_login(user)
    return c


@pytest.mark.django_db(transaction=True)
def test_the_form_starts_a_streamed_run_and_refuses_a_bad_chunk(cast, client):
    client.force_login(cast.owner.user)
    resp = client.post("/simulations/", {"scenario": json.dumps(small_scenario()), "result_mode": "streaming",
                                         "chunk_s": "300", "name": "form streamed", "mode": "fast"})
    assert resp.status_code == 302
    run = SimulationRun.objects.get(name="form streamed")
    assert run.streamed and run.chunk_s == 300.0 and run.job.status == Job.Status.SUCCEEDED
    assert run.result["summary"]["chunks"] == 2
    resp = client.post("/simulations/", {"scenario": json.dumps(small_scenario()), "result_mode": "streaming",
                                         "chunk_s": "1", "name": "bad chunk"})
    assert resp.status_code == 400 and b"result.chunk_s" in resp.content
    clone = client.get(f"/simulations/?clone={run.pk}").content.decode()
    assert 'value="streaming" selected' in clone and 'value="300"' in clone


# ----------------------------------------------------------------------------------------- CLI
@pytest.mark.django_db(transaction=True)
def test_simulate_stream_saves_a_streamed_run_like_the_page_and_no_save_keeps_nothing(cast, tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(small_scenario()))
    out = StringIO()
    call_command("simulate", str(path), "--stream", "--chunk-s", "300", "--json", "--no-save", stdout=out)
    data = json.loads(out.getvalue())
    assert data["result_mode"] == "streaming" and data["summary"]["requests"] == 300 and data["chunk_s"] == 300.0
    assert SimulationRun.objects.count() == 0
    out = StringIO()
    call_command("simulate", str(path), "--stream", "--team", "Fleet A", stdout=out)
    run = SimulationRun.objects.get()
    assert run.streamed and run.chunk_s == DEFAULT_CHUNK_S and run.team == cast.owner.team
    assert run.result["summary"]["requests"] == 300 == run.requests_simulated
    assert run.job.status == "succeeded" and run.job.result["result_mode"] == "streaming"
    assert f"saved as simulation #{run.pk}" in out.getvalue() and "within 0.5%" in out.getvalue()
    with pytest.raises(CommandError, match="--chunk-s applies only with --stream"):
        call_command("simulate", str(path), "--chunk-s", "60", "--no-save")
    with pytest.raises(CommandError, match="result.chunk_s"):
        call_command("simulate", str(path), "--stream", "--chunk-s", "5", "--no-save")


@pytest.mark.django_db
def test_the_month_demo_fixture_is_refused_in_table_mode_and_accepted_streamed(cast):
    from rest_framework.exceptions import ValidationError

    from simulations.services import fixture_scenarios, validate_scenario

    data = fixture_scenarios()["month_demo"]
    assert data["workload"]["synthetic"]["duration_s"] == 30 * 86400
    assert data["workload"]["synthetic"]["total_requests"] == 6_000_000
    with pytest.raises(ValidationError) as err:
        validate_scenario(data, team=cast.owner.team)
    assert err.value.detail["error"]["where"] == "scenario.workload.synthetic.duration_s"
    assert "streaming" in err.value.detail["error"]["hint"]
    validate_scenario(data, team=cast.owner.team, streaming=True)


# ----------------------------------------------------------------------------------------- multi-day workloads
def test_a_multi_day_diurnal_workload_is_split_by_the_rate_mass_per_day_and_adds_up():
    from simulations.engine.streaming.dailysynth import day_counts, day_spec, is_daily

    spec = {"duration_s": 2.5 * 86400, "total_requests": 100_001}
    counts = day_counts(spec)
    assert len(counts) == 3 and sum(counts) == 100_001
    assert counts[0] == pytest.approx(counts[1], abs=1) and counts[2] == pytest.approx(counts[0] / 2, rel=0.2)
    burst = {**spec, "burst": {"at_s": 86400 + 3600, "duration_s": 3600, "factor": 9.0}}
    b = day_counts(burst)
    assert sum(b) == 100_001 and b[1] > b[0]  # the burst day gets its extra mass
    assert day_spec(burst, 1, b[1])["burst"] == {"at_s": 3600.0, "duration_s": 3600.0, "factor": 9.0}
    assert "burst" not in day_spec(burst, 0, b[0]) and day_spec(burst, 2, b[2])["duration_s"] == 43200.0
    assert is_daily(spec) and not is_daily({"duration_s": 86400}) and not is_daily({**spec, "kind": "poisson"})


@pytest.mark.django_db(transaction=True)
def test_a_streamed_multi_day_synthetic_run_is_drawn_day_by_day(cast, monkeypatch, tmp_path):
    """Not materialised at once: build_workload is never called; the days add up to the total, each day's
    requests arrive in that day, and the run matches the light CLI's streamed replay of the same scenario."""
    def refuse(*a, **k):
        raise AssertionError("a multi-day diurnal workload was materialised at once")

    monkeypatch.setattr("simulations.engine.streaming.stream.build_workload", refuse)
    sc = small_scenario()
    sc["workload"] = {"synthetic": {"duration_s": 3 * 86400, "total_requests": 900}}
    resp = cast.owner.api.post("/api/simulations/", {"scenario": sc, "result": {"mode": "streaming",
                                                                                 "chunk_s": 21600}}, format="json")
    run = SimulationRun.objects.get(pk=resp.json()["id"])
    assert run.job.status == Job.Status.SUCCEEDED, run.job.last_error
    s = run.result["summary"]
    assert s["requests"] == 900 and s["chunks"] == 12
    from simulations.engine.streaming.dailysynth import day_counts

    per_day = [sum(r["requests"] for r in run.result["hourly"] if r["hour"] // 24 == d) for d in range(3)]
    assert per_day == day_counts(sc["workload"]["synthetic"])
    # the light CLI draws the same streamed workload
    import contextlib

    from simulations.engine.run import main

    path = tmp_path / "daily.json"
    path.write_text(json.dumps(sc))
    buf = StringIO()
    with contextlib.redirect_stdout(buf):
        assert main([str(path), "--stream", "--chunk-s", "21600", "--json"]) == 0
    light = json.loads(buf.getvalue())
    assert light["summary"]["gpu_hours"] == pytest.approx(s["gpu_hours"], rel=1e-12)
    assert light["hourly"] == run.result["hourly"]


@pytest.mark.django_db(transaction=True)
def test_what_a_streamed_run_must_hold_at_once_stays_under_the_table_cap(cast, settings):
    settings.PLANNER_MAX_SIM_REQUESTS = 500
    sc = small_scenario()
    sc["workload"] = {"synthetic": {"duration_s": 3 * 86400, "total_requests": 900}}
    # chunk_s 7000 does not divide a day: this workload would be materialised at once, above the 500 cap
    resp = cast.owner.api.post("/api/simulations/", {"scenario": sc, "result": {"mode": "streaming",
                                                                                 "chunk_s": 7000}}, format="json")
    assert resp.status_code == 400, resp.content
    err = resp.json()["error"]
    assert err["where"] == "scenario.workload.synthetic"
    assert "generated at once" in err["message"] and "one day at a time" in err["hint"]
    # the job checks it too (the setting may change between creation and run)
    resp = cast.owner.api.post("/api/simulations/", {"scenario": sc, "result": {"mode": "streaming",
                                                                                 "chunk_s": 21600}}, format="json")
    run = SimulationRun.objects.get(pk=resp.json()["id"])
    assert run.job.status == Job.Status.SUCCEEDED  # drawn day by day: not bound by the table cap
    run.chunk_s = 7000.0
    run.save()
    from planner.jobs.models import Job as JobRow
    from planner.jobs.services import create_job

    run.job = create_job(team=run.team, user=None, kind="simulation.run", params={"run_id": run.pk})
    run.save()
    job = JobRow.objects.get(pk=run.job.pk)
    assert job.status == Job.Status.FAILED and "one day at a time" in job.last_error["hint"]


def _stored_trace(cast, n: int = 1200, span_s: float = 3 * 3600.0):
    import pandas as pd

    from planner.traces.models import Trace

    user = cast.owner.user
    trace = Trace.objects.create(team=cast.owner.team, created_by=user, name="t", format="native",
                                 storage_key=Trace.new_storage_key(), content_sha256="0" * 64, fingerprint="f" * 64,
                                 span_s=span_s)
    trace.directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(3)
    pd.DataFrame({"arrival_s": np.sort(rng.uniform(0, span_s, n)), "input_tokens": rng.integers(50, 800, n),
                  "output_tokens": rng.integers(5, 200, n), "region": ["r1"] * n, "model": ["toy"] * n,
                  "tier": ["IW-F", "NIW"] * (n // 2)}).to_parquet(trace.normalised_file)
    return trace


@pytest.mark.django_db(transaction=True)
def test_a_stored_trace_is_streamed_from_its_parquet_file_and_matches_the_table_run(cast):
    trace = _stored_trace(cast)
    sc = small_scenario(workload={"trace_id": trace.pk})
    table = cast.owner.api.post("/api/simulations/", {"scenario": sc}, format="json")
    one = cast.owner.api.post("/api/simulations/", {"scenario": sc, "result": {"mode": "streaming",
                                                                                "chunk_s": 86400}}, format="json")
    hourly = cast.owner.api.post("/api/simulations/", {"scenario": sc, "result": {"mode": "streaming",
                                                                                   "chunk_s": 3600}}, format="json")
    t, o, h = (SimulationRun.objects.get(pk=r.json()["id"]) for r in (table, one, hourly))
    assert all(r.job.status == Job.Status.SUCCEEDED for r in (t, o, h)), (o.job.last_error, h.job.last_error)
    ts, os_ = t.result["summary"], o.result["summary"]
    assert os_["requests"] == ts["requests"] == 1200 and os_["completed"] == ts["completed"] and os_["chunks"] == 1
    assert os_["gpu_hours"] == pytest.approx(ts["gpu_hours"], rel=1e-12)
    assert os_["ttft"]["mean"] == pytest.approx(t.result["tiers"]["IW-F"]["ttft"]["mean"] * 0.5
                                                + t.result["tiers"]["NIW"]["ttft"]["mean"] * 0.5, rel=1e-9)
    assert h.result["summary"]["chunks"] == 3 and h.result["summary"]["requests"] == 1200
    # workload.limit is kept when streaming from the file
    sc_lim = small_scenario(workload={"trace_id": trace.pk, "limit": 500})
    lim = cast.owner.api.post("/api/simulations/", {"scenario": sc_lim, "result": {"mode": "streaming"}}, format="json")
    assert SimulationRun.objects.get(pk=lim.json()["id"]).result["summary"]["requests"] == 500


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("value", [5, True, [], "x", {"mode": None}, {"mode": {"a": 1}}, {"chunk_s": True},
                                   {"mode": "streaming", "chunk_s": 1e308}, {"mode": "streaming", "chunk_s": -1},
                                   {"mode": "streaming", "chunk_s": "nan"}, {"mode": "streaming\x00"}, {"": 1}])
def test_odd_result_values_get_a_400_naming_result_never_a_500(cast, value):
    resp = cast.owner.api.post("/api/simulations/", {"scenario": small_scenario(), "result": value}, format="json")
    assert resp.status_code == 400, resp.content
    where = resp.json()["error"]["where"]
    assert where.startswith("result") or (where == "request body" and value == {"mode": "streaming\x00"}), where
    assert SimulationRun.objects.count() == 0


def test_the_openapi_schema_documents_the_result_option_and_the_hourly_csv(tmp_path, db):
    import yaml

    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    schema = yaml.safe_load(out.read_text())
    create = schema["components"]["schemas"]["SimulationRunCreateRequest"]["properties"]["result"]
    assert create["properties"]["mode"]["enum"] == ["table", "streaming"]
    assert create["properties"]["chunk_s"]["minimum"] == 60.0 and create["additionalProperties"] is False
    run = schema["components"]["schemas"]["SimulationRun"]["properties"]
    assert {"result_mode", "chunk_s"} <= set(run)
    assert "/api/simulations/{id}/hourly.csv/" in schema["paths"]


def test_the_hourly_charts_sum_the_tiers_per_endpoint_and_weight_means_by_completions():
    from simulations.streamed_views import hourly_figure, latency_hourly_figure

    rows = [{"hour": 0, "endpoint": "a", "tier": "IW-F", "requests": 3, "completed": 2, "ttft_mean_s": 1.0,
             "e2e_mean_s": 4.0},
            {"hour": 0, "endpoint": "a", "tier": "NIW", "requests": 5, "completed": 5, "ttft_mean_s": 2.0,
             "e2e_mean_s": 6.0},
            {"hour": 0, "endpoint": "b", "tier": "IW-F", "requests": 1, "completed": 1, "ttft_mean_s": 4.0,
             "e2e_mean_s": 8.0},
            {"hour": 72, "endpoint": "a", "tier": "IW-F", "requests": 1, "completed": 0, "ttft_mean_s": None,
             "e2e_mean_s": None}]
    fig = hourly_figure({"hourly": rows})
    a_req = next(t for t in fig.data if t.name == "a" and t.showlegend is not False)
    assert list(a_req.x) == [0.0, 3.0] and list(a_req.y) == [8.0, 1.0]  # days on the axis past 48 h
    lat = latency_hourly_figure({"hourly": rows})
    iwf_ttft = next(t for t in lat.data if t.name == "IW-F" and t.showlegend is not False)
    assert list(iwf_ttft.y) == [pytest.approx((1.0 * 2 + 4.0 * 1) / 3)]  # hour 72 had no completion: no point


@pytest.mark.django_db(transaction=True)
def test_the_exact_replays_added_keys_are_drawn_when_present(cast, client):
    """The exact streamed replay (monthstream) adds usage, hourly_endpoints and window: shown as tables and a chart,
    not dumped as raw JSON."""
    run = _streamed_run(cast)
    result = json.loads(json.dumps(run.result))
    result["usage"] = [{"region": "r1", "model": "toy", "deployment": "toy-dep", "instances_used": 3,
                        "instance_hours": 0.5, "gpu_hours": 4.0, "serving_gpu_hours": 3.0, "idle_gpu_hours": 1.0,
                        "provisioning_gpu_hours": 0.0, "cost_usd": 12.0, "energy_kwh": 1.5}]
    result["hourly_endpoints"] = [{"hour": 0, "endpoint": "r1/toy", "instance_hours": 2.0, "gpu_hours": 16.0,
                                   "serving_mean": 2.0, "utilisation_mean": 0.1, "queue_mean": 0.0},
                                  {"hour": 1, "endpoint": "r1/toy", "instance_hours": 1.0, "gpu_hours": 8.0}]
    result["window"] = {"exact": True, "max_requests_held": 4321, "trimmed": True}
    run.result = result
    run.save()
    client.force_login(cast.owner.user)
    html = client.get(f"/simulations/{run.pk}/").content.decode()
    assert 'id="stream-usage"' in html and "toy-dep" in html and 'id="stream-fleet"' in html
    assert "Serving instances per hour (mean), per endpoint" in html
    assert "exact across chunk boundaries" in html and "4,321" in html
    assert "<code>usage</code>" not in html and "<code>hourly_endpoints</code>" not in html


def test_tbt_and_energy_breakdown_are_drawn_not_listed_when_present():
    result = {"result_mode": "streaming", "summary": {"tbt_mean": {"p50": 0.03}, "busy_kwh": 2.0,
                                                      "preemptions_per_request": {"max": 2}},
              "tiers": {"IW-F": {"tbt_max": {"p99": 0.2}}}}
    assert [(r["scope"], r["metric"]) for r in percentile_rows(result)] == [("all", "mean TBT"), ("IW-F", "max TBT")]
    assert extras(result) == []
