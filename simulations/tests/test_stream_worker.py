"""Streamed runs on a real Celery worker: created through the API, replayed chunk by chunk by the worker,
the result on the page; a streamed run cancelled mid-way ends cancelled; a planner starts the month demo from the
page and sees its charts (browser)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from django.test import Client

from simulations.models import SimulationRun
from tests.integration.conftest import artifacts_dir, logged_in_page, wait_for_job, wait_for_worker_task

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]


def month_demo(total: int) -> dict:
    sc = json.loads((ROOT / "fixtures/scenarios/month_demo.json").read_text())
    sc["workload"]["synthetic"]["total_requests"] = total
    return sc


def test_a_streamed_month_runs_on_the_worker_and_shows_on_the_page(cast, celery_worker_process):
    body = {"scenario": month_demo(150_000), "result": {"mode": "streaming", "chunk_s": 3600}, "name": "month api"}
    resp = cast.owner.api.post("/api/simulations/", body, format="json")
    assert resp.status_code == 201, resp.content
    run = SimulationRun.objects.get(pk=resp.json()["id"])
    assert run.result_mode == "streaming"
    wait_for_job(run.job, timeout=600)
    assert run.job.status == "succeeded", run.job.last_error
    assert run.job.celery_task_id, "the job did not go through Celery"
    assert run.job.message == "done" and run.job.result["result_mode"] == "streaming"
    res = cast.owner.api.get(f"/api/simulations/{run.pk}/results/").json()
    s = res["summary"]
    assert s["requests"] == 150_000 and s["chunks"] == 720 and res["result_mode"] == "streaming"
    assert s["completed"] + s["dropped"] == 150_000
    hours = {r["hour"] for r in res["hourly"]}
    assert min(hours) == 0 and max(hours) == 719  # 30 days of hourly rollups
    assert sum(r["requests"] for r in res["hourly"]) == 150_000
    api_run = cast.owner.api.get(f"/api/simulations/{run.pk}/").json()
    assert api_run["result_mode"] == "streaming" and api_run["requests_simulated"] == 150_000
    browser = Client()
    browser.force_login(cast.owner.user)
    page = browser.get(f"/simulations/{run.pk}/").content.decode()
    assert 'id="stream-kpis"' in page and "150,000" in page and "not available for streamed runs" in page
    csv_text = browser.get(f"/simulations/{run.pk}/hourly.csv").content.decode()
    assert csv_text.count("\n") == len(res["hourly"]) + 1


def test_a_streamed_run_cancelled_on_the_worker_ends_cancelled_without_a_result(cast, celery_worker_process):
    resp = cast.owner.api.post("/api/simulations/", {"scenario": month_demo(3_000_000),
                                                     "result": {"mode": "streaming"}}, format="json")
    run = SimulationRun.objects.get(pk=resp.json()["id"])
    wait_for_job(run.job, timeout=120, until=("running",))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        run.job.refresh_from_db()
        if run.job.progress > 3 and run.job.message.startswith("chunk "):
            break
        time.sleep(0.5)
    assert run.job.message.startswith("chunk "), f"no progress per chunk was reported: {run.job.message!r}"
    assert cast.owner.api.post(f"/api/jobs/{run.job.pk}/cancel/").status_code == 200
    wait_for_job(run.job, timeout=60, until=("cancelled",))
    # the worker notices at its next chunk; once its task has ended, nothing may have stored a result
    ran_s, outcome = wait_for_worker_task(run.job.celery_task_id, timeout=120)
    assert outcome == "cancelled"
    run.refresh_from_db()
    assert run.job.status == "cancelled" and run.result is None
    assert run.job.progress < 50, "the month ran on for long after the cancel"


@pytest.mark.browser
def test_a_planner_starts_a_streamed_month_from_the_page_and_sees_its_charts(cast, live_server, celery_worker_process,
                                                                            tmp_path):
    scenario = month_demo(150_000)
    with logged_in_page(live_server, "owner", "owner-pass-123") as page:
        page.goto(f"{live_server.url}/simulations/")
        page.fill("textarea[name=scenario]", json.dumps(scenario))
        page.select_option("select[name=result_mode]", "streaming")
        page.fill("input[name=chunk_s]", "3600")
        page.fill("input[name=name]", "browser month")
        page.click("#new-run button[type=submit]")
        page.wait_for_url("**/simulations/*/", timeout=60_000)
        page.wait_for_selector("#stream-hourly .main-svg", timeout=600_000)
        page.wait_for_selector("#stream-latency .main-svg", timeout=30_000)
        assert page.locator("#stream-kpis").is_visible()
        assert "not available for streamed runs" in page.content()
        artifacts = artifacts_dir(tmp_path)
        page.screenshot(path=str(artifacts / "streamed-run-page.png"), full_page=True)
    run = SimulationRun.objects.get(name="browser month")
    assert run.streamed and run.job.celery_task_id and run.result["summary"]["requests"] == 150_000
