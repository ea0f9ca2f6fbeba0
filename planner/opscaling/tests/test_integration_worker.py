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
