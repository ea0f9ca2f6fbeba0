"""Forecast runs through the API: create -> parent job -> one job per series -> stored results."""

from __future__ import annotations

import numpy as np
import pytest

from forecasts.models import ForecastRun
from planner.jobs.models import Job

pytestmark = pytest.mark.django_db(transaction=True)

QUICK = {"resolution": "15min", "horizon": "1h", "candidates": "naive,seasonal_naive_daily,arima"}


def test_a_run_created_through_the_api_fans_out_one_job_per_series_and_stores_the_results(cast, make_trace):
    trace = make_trace(cast.owner.team)
    response = cast.owner.api.post("/api/forecasts/", {"trace": trace.pk, **QUICK}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "succeeded", body
    assert len(body["series"]) == 4  # 2 regions x 1 model x 2 tiers
    run = ForecastRun.objects.get(pk=body["id"])
    assert run.job.kind == "forecasts.run" and run.created_by == cast.owner.user
    children = Job.objects.filter(parent=run.job)
    assert children.count() == 4 and set(children.values_list("status", flat=True)) == {"succeeded"}
    assert run.summary["finished"] == 4

    frame = trace.frame
    for row in body["series"]:
        assert row["chosen_method"] in ("naive", "seasonal_naive_daily", "arima")
        assert row["chosen_method"] == row["best_method"] == row["leaderboard"][0]["method"]
        fc = row["forecast"]
        assert len(fc["mean"]) == 4 and fc["peak"] == pytest.approx(max(fc["mean"]), rel=1e-4)
        assert all(lo <= m <= hi for lo, m, hi in zip(fc["lower"], fc["mean"], fc["upper"], strict=False))
        detail = cast.owner.api.get(f"/api/forecasts/{run.pk}/series/{row['id']}/").json()
        values = np.asarray(detail["result"]["values"])
        group = frame[(frame["region"] == row["group"]["region"]) & (frame["tier"] == row["group"]["tier"])]
        in_bins = group[group["arrival_s"] < len(values) * 900]
        # the series is input tokens per second per 15-minute bin: bins x 900 s = the group's tokens
        assert values.sum() * 900 == pytest.approx(in_bins["input_tokens"].sum(), rel=1e-4)
        assert set(detail["result"]["methods"]) == {"naive", "seasonal_naive_daily", "arima"}


def test_a_run_is_visible_to_the_team_and_not_to_outsiders(cast, make_trace):
    trace = make_trace(cast.owner.team)
    run_id = cast.owner.api.post(
        "/api/forecasts/", {"trace": trace.pk, **QUICK, "method": "naive"}, format="json"
    ).json()["id"]
    assert cast.teammate.api.get(f"/api/forecasts/{run_id}/").status_code == 200
    assert [r["id"] for r in cast.teammate.api.get("/api/forecasts/").json()["results"]] == [run_id]
    assert cast.outsider.api.get(f"/api/forecasts/{run_id}/").status_code == 404
    assert cast.outsider.api.get("/api/forecasts/").json()["results"] == []
    series_id = ForecastRun.objects.get(pk=run_id).series.first().pk
    assert cast.outsider.api.get(f"/api/forecasts/{run_id}/series/{series_id}/").status_code == 404
    # nor can an outsider forecast someone else's trace
    response = cast.outsider.api.post("/api/forecasts/", {"trace": trace.pk}, format="json")
    assert response.status_code == 400 and "trace" in response.json()["error"]["fields"]


@pytest.mark.parametrize(
    "field,value",
    [
        ("resolution", "7min"),
        ("method", "prophet"),
        ("horizon", "2d"),
        ("horizon", "soon"),
        ("group_by", "country"),
        ("metrics", "latency"),
        ("level", 1.5),
        ("rank_metric", "coverage"),
        ("candidates", "naive,oracle"),
    ],
)
def test_bad_parameters_are_a_400_naming_the_field_and_store_nothing(cast, make_trace, field, value):
    trace = make_trace(cast.owner.team)
    response = cast.owner.api.post("/api/forecasts/", {"trace": trace.pk, field: value}, format="json")
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert field in fields, fields
    assert ForecastRun.objects.count() == 0 and not Job.objects.filter(kind__startswith="forecasts").exists()


def test_a_horizon_shorter_than_one_bin_is_refused(cast, make_trace):
    trace = make_trace(cast.owner.team)
    response = cast.owner.api.post(
        "/api/forecasts/", {"trace": trace.pk, "resolution": "15min", "horizon": "5min"}, format="json"
    )
    assert response.status_code == 400 and "horizon" in response.json()["error"]["fields"]


def test_a_run_whose_trace_file_is_gone_fails_with_a_message_saying_so(cast, make_trace):
    trace = make_trace(cast.owner.team)
    trace.normalised_file.unlink()
    response = cast.owner.api.post("/api/forecasts/", {"trace": trace.pk, **QUICK}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "failed"
    error = body["job"]["last_error"]
    assert "normalised file" in error["message"] and error["hint"]


def test_a_series_job_for_a_deleted_run_fails_cleanly(cast, make_trace):
    from planner.jobs.services import create_job

    job = create_job(team=cast.owner.team, kind="forecasts.series", params={"series_id": 123456})
    job.refresh_from_db()
    assert job.status == "failed" and "no longer exists" in job.last_error["message"]


def test_the_run_summary_is_written_even_when_the_last_series_fails(cast, make_trace, monkeypatch):
    from forecasts import jobs

    calls = {"n": 0}
    real = jobs.analyse_series

    def flaky(values, options, progress=None):
        calls["n"] += 1
        if calls["n"] == 4:  # the last of the four series
            raise ValueError("horizon: broken on purpose")
        return real(values, options, progress)

    monkeypatch.setattr(jobs, "analyse_series", flaky)
    trace = make_trace(cast.owner.team)
    body = cast.owner.api.post("/api/forecasts/", {"trace": trace.pk, **QUICK}, format="json").json()
    assert body["status"] == "partial"  # 3 of 4 series forecast: not "succeeded", not all "failed"
    summary = ForecastRun.objects.get(pk=body["id"]).summary
    assert (summary["series"], summary["finished"]) == (4, 3)
    failed = [s for s in body["series"] if s["job_status"] == "failed"]
    assert len(failed) == 1 and failed[0]["chosen_method"] == ""
