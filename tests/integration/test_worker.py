"""Jobs travel through Redis to a real celery worker process that writes to PostgreSQL."""

from __future__ import annotations

import pytest

from planner.jobs.models import Job
from planner.jobs.services import cancel_job, create_job
from tests.integration.conftest import wait_for_job, wait_for_worker_task

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_a_job_created_in_the_web_process_is_finished_by_the_worker(cast, celery_worker_process):
    job = create_job(team=cast.owner.team, kind="system.sleep", params={"seconds": 0.5})
    job.refresh_from_db()
    assert job.celery_task_id, "the job was not sent to Celery"
    wait_for_job(job)
    assert job.status == "succeeded" and job.result == {"slept_s": 0.5} and job.progress == 100.0


def test_a_running_job_is_cancelled_through_the_api_and_the_worker_stops(cast, celery_worker_process):
    response = cast.owner.api.get("/api/jobs/")
    assert response.status_code == 200
    job = create_job(team=cast.owner.team, kind="system.sleep", params={"seconds": 300})
    wait_for_job(job, until=("running",), timeout=30)
    response = cast.owner.api.post(f"/api/jobs/{job.pk}/cancel/")
    assert response.status_code == 200
    wait_for_job(job, until=("cancelled",), timeout=10)
    # the row is marked at once by the web process; the worker's task must end too, long before the 300 s sleep
    ran_s, outcome = wait_for_worker_task(job.celery_task_id, timeout=60)
    assert outcome == "cancelled" and ran_s < 60
    job.refresh_from_db()
    assert job.status == Job.Status.CANCELLED and job.progress < 100
    assert cancel_job(job) is False
