"""Job rows and their runner: claim, progress, success, structured failure, cancellation, access."""

from __future__ import annotations

import pytest

from planner.jobs.models import Job
from planner.jobs.registry import JobError, handler
from planner.jobs.services import cancel_job, create_job
from planner.jobs.tasks import execute


@handler("test.echo")
def _echo(job, ctx):
    ctx.progress(50, "half way", force=True)
    return {"echo": job.params.get("value")}


@handler("test.bad_input")
def _bad_input(job, ctx):
    raise JobError("column 'ContextTokens' is missing", where="line 1", hint="add the column")


@handler("test.crash")
def _crash(job, ctx):
    raise ZeroDivisionError("boom")


@handler("test.cancel_midway")
def _cancel_midway(job, ctx):
    Job.objects.filter(pk=job.pk).update(status=Job.Status.CANCELLED)  # as the user's click would
    ctx.progress(60, "still going", force=True)
    raise AssertionError("progress() must raise JobCancelled once the row is cancelled")


def _job(cast, kind, **params):
    return Job.objects.create(team=cast.owner.team, created_by=cast.owner.user, kind=kind, params=params)


def test_a_job_runs_to_success_and_keeps_its_result(cast):
    job = _job(cast, "test.echo", value=7)
    assert execute(job.pk) == "succeeded"
    job.refresh_from_db()
    assert (job.status, job.progress, job.result) == ("succeeded", 100.0, {"echo": 7})
    assert job.started is not None and job.finished is not None and job.finished >= job.started


def test_a_job_with_bad_input_fails_with_a_structured_error(cast):
    job = _job(cast, "test.bad_input")
    execute(job.pk)
    job.refresh_from_db()
    assert job.status == "failed"
    assert job.last_error == {"type": "JobError", "message": "column 'ContextTokens' is missing",
                              "where": "line 1", "hint": "add the column"}


def test_a_crashing_job_is_recorded_as_failed_with_the_exception(cast):
    job = _job(cast, "test.crash")
    execute(job.pk)
    job.refresh_from_db()
    assert job.status == "failed"
    assert job.last_error["type"] == "ZeroDivisionError" and "boom" in job.last_error["message"]


def test_a_job_is_claimed_only_once(cast):
    job = _job(cast, "test.echo")
    assert execute(job.pk) == "succeeded"
    assert execute(job.pk) == "skipped"


def test_a_missing_job_id_is_a_no_op(db):
    assert execute(999_999) == "skipped"


def test_a_job_cancelled_while_running_stops_and_stays_cancelled(cast):
    job = _job(cast, "test.cancel_midway")
    assert execute(job.pk) == "cancelled"
    job.refresh_from_db()
    assert job.status == "cancelled" and job.finished is not None


def test_a_queued_job_cancelled_before_it_starts_never_runs(cast):
    job = _job(cast, "test.echo")
    assert cancel_job(job) is True
    assert execute(job.pk) == "skipped"
    assert cancel_job(job) is False  # already ended


@pytest.mark.django_db(transaction=True)
def test_create_job_dispatches_after_commit(cast):
    job = create_job(team=cast.owner.team, kind="test.echo", params={"value": "x"})
    job.refresh_from_db()
    assert job.status == "succeeded" and job.result == {"echo": "x"}


def test_the_jobs_api_shows_a_job_to_its_team_only(cast):
    job = _job(cast, "test.echo")
    assert cast.owner.api.get(f"/api/jobs/{job.pk}/").status_code == 200
    assert cast.teammate.api.get(f"/api/jobs/{job.pk}/").status_code == 200
    assert cast.outsider.api.get(f"/api/jobs/{job.pk}/").status_code == 404
    assert cast.outsider.api.get("/api/jobs/").json()["count"] == 0
    assert cast.owner.api.get("/api/jobs/").json()["count"] == 1


def test_a_teammate_can_cancel_through_the_api_but_an_outsider_cannot(cast):
    job = _job(cast, "test.echo")
    assert cast.outsider.api.post(f"/api/jobs/{job.pk}/cancel/").status_code == 404
    response = cast.teammate.api.post(f"/api/jobs/{job.pk}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert cast.teammate.api.post(f"/api/jobs/{job.pk}/cancel/").status_code == 409


def test_the_api_refuses_anonymous_callers(client, db):
    response = client.get("/api/jobs/")
    assert response.status_code in (401, 403)
    assert "error" in response.json()


def test_the_job_page_has_a_cancel_button_for_an_active_job(cast, client):
    job = _job(cast, "test.echo")
    client.force_login(cast.owner.user)
    page = client.get(f"/jobs/{job.pk}/")
    assert page.status_code == 200 and b"Cancel" in page.content
    response = client.post(f"/jobs/{job.pk}/cancel/")
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.status == "cancelled"
    client.force_login(cast.outsider.user)
    assert client.get(f"/jobs/{job.pk}/").status_code == 404
