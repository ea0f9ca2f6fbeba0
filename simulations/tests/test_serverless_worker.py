"""A serverless (SLINFER) scenario on a real Celery worker: created through the API, run by the worker, metrics
in the job's result, visible on the page."""

from __future__ import annotations

import pytest

from planner.jobs.models import Job
from tests.integration.conftest import wait_for_job

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_a_serverless_scenario_posted_to_the_api_runs_on_a_worker(cast, celery_worker_process):
    spec = {"name": "worker", "systems": ["slinfer", "sllm+c+s"], "workload": {"models": 32, "duration_s": 120}}
    resp = cast.owner.api.post("/api/serverless/", {"spec": spec}, format="json")
    assert resp.status_code == 202, resp.content
    job = Job.objects.get(pk=resp.json()["id"])
    wait_for_job(job, timeout=180)
    assert job.status == "succeeded", job.last_error
    assert job.celery_task_id, "the job did not go through Celery"
    res = job.result["results"]
    assert res["slinfer"]["no_oom"] and res["slinfer"]["requests"] == job.result["requests"] > 0
    from django.test import Client

    page = Client()
    page.force_login(cast.owner.user)
    html = page.get("/simulations/serverless/").content.decode()
    assert f"#{job.pk}" in html and "sllm+c+s" in html
