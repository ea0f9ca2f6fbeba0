"""A capacity plan through the API, Redis and a real celery worker, stored in PostgreSQL.
Run by .ci/test-integration (marker "integration")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from planner.accounts.services import create_user
from planner.plans.models import CapacityPlan
from tests.integration.conftest import wait_for_job

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "plans"


def test_a_plan_created_through_the_api_is_solved_by_a_worker_and_explained(celery_worker_process):
    _user, key = create_user("planner-olga", "pw-olga-123", "plans-team")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    scenario = json.loads((FIXTURES / "infeasible_westus_quota.json").read_text())
    resp = api.post("/api/plans/", {"scenario": scenario, "hours": 12}, format="json")
    assert resp.status_code == 201, resp.content
    plan = CapacityPlan.objects.get(pk=resp.json()["id"])
    wait_for_job(plan.job, timeout=120)
    plan.refresh_from_db()
    assert plan.job.status == "succeeded", plan.job.last_error
    assert plan.job.celery_task_id  # it went through Celery, not the inline runner
    assert plan.solver_status == "optimal" and plan.feasible is False
    assert "westus" in plan.result["diagnosis"][0] and "quota" in plan.result["diagnosis"][0]
    assert api.get(f"/api/plans/{plan.pk}/csv/").status_code == 200
