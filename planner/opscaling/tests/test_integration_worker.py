"""An operator-level plan through the API, Redis and a real celery worker, stored in PostgreSQL.
Run by .ci/test-integration (marker "integration")."""

from __future__ import annotations

from pathlib import Path

import pytest
from rest_framework.test import APIClient

from planner.accounts.services import create_user
from planner.opscaling.models import OperatorPlan
from planner.traces import services as trace_services
from tests.integration.conftest import wait_for_job

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
TRACE = Path(__file__).resolve().parents[3] / "fixtures" / "traces" / "mooncake_synthetic.jsonl"


def test_an_operator_level_plan_created_through_the_api_is_computed_by_a_worker(celery_worker_process):
    user, key = create_user("planner-opal", "pw-opal-123", "opscale-team")
    trace = trace_services.import_trace_file(TRACE, team=user.membership.team, user=user, name="mooncake")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    spec = {"model": "llama-3-8b", "gpu": "a100", "workload": {"trace_id": trace.pk, "window_s": 120}}
    resp = api.post("/api/operator-plans/", {"spec": spec}, format="json")
    assert resp.status_code == 201, resp.content
    plan = OperatorPlan.objects.get(pk=resp.json()["id"])
    wait_for_job(plan.job, timeout=300)
    plan.refresh_from_db()
    assert plan.job.status == "succeeded", plan.job.last_error
    assert plan.job.celery_task_id  # it went through Celery, not the inline runner
    assert plan.result["windows"] == 9 and plan.result["sweeps"]["qps"]
    assert plan.feasible is True and plan.memory_savings is not None
    body = api.get(f"/api/operator-plans/{plan.pk}/").json()
    assert body["job"]["status"] == "succeeded" and body["prefill_gpu_savings"] == pytest.approx(
        plan.prefill_gpu_savings
    )


@pytest.mark.browser
def test_a_planner_picks_a_trace_on_the_page_and_sees_the_operator_level_figures(
    cast, live_server, celery_worker_process, tmp_path
):
    from tests.integration.conftest import artifacts_dir, logged_in_page

    trace = trace_services.import_trace_file(TRACE, team=cast.owner.team, user=cast.owner.user, name="mooncake page")
    with logged_in_page(live_server, "owner", "owner-pass-123") as page:
        page.goto(f"{live_server.url}/operator-plans/")
        page.select_option("select[name=trace_id]", str(trace.pk))
        page.select_option("select[name=model]", "llama3.1-8b")
        page.select_option("select[name=gpu]", "a100-80gb")
        page.fill("input[name=window_s]", "300")
        page.click("main form button[type=submit]")
        page.wait_for_url("**/operator-plans/*/", timeout=60_000)
        # the job poller reloads the page when the worker has finished; then Plotly draws five figures
        page.wait_for_selector("#fig-qps .main-svg", timeout=300_000)
        charts = page.locator(".js-plotly-plot").count()
        totals = page.locator("#opscale-totals tbody tr").count()
        # the product's fallback is on by default: the Mooncake prefill window that needed more GPUs shows it
        fallback_note = page.locator("#opscale-fallback").inner_text()
        fallback_row = page.locator("#opscale-totals .fallback-note").first.inner_text()
        artifacts = artifacts_dir(tmp_path)
        page.screenshot(path=str(artifacts / "operator-plan-page.png"), full_page=True)
    assert charts == 5 and totals == 8
    assert "on (the default)" in fallback_note and "1 prefill" in fallback_note, fallback_note
    assert "fell back to the model-level placement" in fallback_row
    plan = OperatorPlan.objects.get(trace=trace)
    assert plan.job.status == "succeeded" and plan.job.celery_task_id
