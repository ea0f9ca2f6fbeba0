"""A simulation run on a real Celery worker: created through the API, progress, results; and cancellation."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from simulations.models import SimulationRun
from tests.integration.conftest import artifacts_dir, logged_in_page, wait_for_job, wait_for_worker_task

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]


def test_a_run_created_through_the_api_is_simulated_by_a_worker(cast, celery_worker_process):
    resp = cast.owner.api.post("/api/simulations/", {"fixture": "small_reactive"}, format="json")
    assert resp.status_code == 201, resp.content
    run = SimulationRun.objects.get(pk=resp.json()["id"])
    wait_for_job(run.job, timeout=180)
    assert run.job.status == "succeeded", run.job.last_error
    assert run.job.celery_task_id, "the job did not go through Celery"
    run.refresh_from_db()
    assert run.requests_simulated == 20000
    results = cast.owner.api.get(f"/api/simulations/{run.pk}/results/").json()
    assert results["summary"]["completed"] == 20000
    # the worker's run summary carries the preemptions per request, and the API shows them
    api_run = cast.owner.api.get(f"/api/simulations/{run.pk}/").json()
    assert set(api_run["preemptions_per_request"]) == {"max", "p99", "requests_preempted"}
    assert api_run["preemptions_per_request"] == results["summary"]["preemptions_per_request"]


def test_cancelling_a_running_simulation_stops_the_worker_at_its_next_progress_report(cast, celery_worker_process):
    scenario = json.loads((ROOT / "fixtures/scenarios/bench_day.json").read_text())
    scenario["workload"]["synthetic"]["total_requests"] = 1_000_000
    resp = cast.owner.api.post("/api/simulations/", {"scenario": scenario}, format="json")
    run = SimulationRun.objects.get(pk=resp.json()["id"])
    wait_for_job(run.job, timeout=120, until=("running",))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        run.job.refresh_from_db()
        if run.job.progress > 2:
            break
        time.sleep(0.5)
    assert run.job.progress > 2, "no progress by simulated time was reported"
    cancel = cast.owner.api.post(f"/api/jobs/{run.job.pk}/cancel/")
    assert cancel.status_code == 200
    wait_for_job(run.job, timeout=60, until=("cancelled",))
    # the worker's task ends early with 'cancelled' (1M requests would take far longer than this wait)
    _, outcome = wait_for_worker_task(run.job.celery_task_id, timeout=30)
    assert outcome == "cancelled", "the worker did not stop the cancelled simulation"
    run.refresh_from_db()
    assert run.job.status == "cancelled"
    assert run.result is None


@pytest.mark.browser
def test_a_user_starts_a_simulation_from_the_page_and_sees_its_charts(cast, live_server, celery_worker_process,
                                                                       tmp_path):
    with logged_in_page(live_server, "owner", "owner-pass-123") as page:
        page.goto(f"{live_server.url}/simulations/")
        page.select_option("select[name=fixture]", "small_reactive")
        page.fill("input[name=name]", "browser run")
        page.click("#new-run button[type=submit]")
        page.wait_for_url("**/simulations/*/", timeout=60_000)
        # the job status poller reloads the page when the worker has finished; then Plotly draws
        page.wait_for_selector("#timeline .main-svg", timeout=180_000)
        page.wait_for_selector("#latency .main-svg", timeout=30_000)
        artifacts = artifacts_dir(tmp_path)
        page.screenshot(path=str(artifacts / "simulation-page.png"), full_page=True)
    run = SimulationRun.objects.get(name="browser run")
    assert run.team == cast.owner.team and run.job.celery_task_id and run.result["summary"]["completed"] == 20000
