"""A forecast run on a real Celery worker: the parent job fans out, the worker runs every series."""

from __future__ import annotations

import time

import pytest

from forecasts.models import ForecastRun
from planner.jobs.models import Job
from tests.integration.conftest import wait_for_job

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_a_run_is_fanned_out_to_series_jobs_that_a_worker_finishes(cast, make_trace, celery_worker_process):
    trace = make_trace(cast.owner.team)
    response = cast.owner.api.post(
        "/api/forecasts/",
        {"trace": trace.pk, "resolution": "15min", "candidates": "naive,seasonal_naive_daily,arima"},
        format="json",
    )
    assert response.status_code == 201, response.content
    run = ForecastRun.objects.get(pk=response.json()["id"])
    wait_for_job(run.job, timeout=120)
    assert run.job.status == "succeeded", run.job.last_error
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and run.status not in ("succeeded", "failed"):
        time.sleep(1)
    assert run.status == "succeeded"
    children = Job.objects.filter(parent=run.job)
    assert children.count() == 4
    assert all(child.celery_task_id for child in children), "series jobs did not go through Celery"
    assert all(s.chosen_method for s in run.series.all())
    run.refresh_from_db()
    assert run.summary["finished"] == 4
