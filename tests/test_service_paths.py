"""Paths of the service that no other test ran: the demo loader (`make run`), the in-process thread runner
(`make run`'s default), the simulation job's time-limit and out-of-memory handlers, and CSRF on the forms."""

from __future__ import annotations

import io
import json
import re
import time
from pathlib import Path

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from planner.jobs.models import Job
from planner.jobs.services import create_job
from planner.traces.models import Trace
from simulations.models import SimulationRun

ROOT = Path(__file__).resolve().parents[1]
SMALL = json.loads((ROOT / "fixtures" / "scenarios" / "small_reactive.json").read_text())

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def test_load_demo_creates_a_user_who_can_log_in_and_the_demo_traces_and_is_idempotent():
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    user = get_user_model().objects.get(username="demo")
    traces = Trace.objects.filter(team=user.membership.team)
    assert sorted(traces.values_list("name", flat=True)) == [
        "Azure code 2023 (1 h, public)", "Mooncake synthetic (public)", "SageServe-like day (synthetic)"]
    assert traces.get(name="Azure code 2023 (1 h, public)").requests == 8819  # the bundled file's rows
    assert all(t.normalised_file.is_file() for t in traces)
    from planner.comparisons.builder import catalogue, trace_groups

    day = traces.get(name="SageServe-like day (synthetic)")
    day.refresh_from_db()
    models = {m for _, m in trace_groups(day)}  # the catalogue's model names, so the builder's rows map onto it
    assert models == {"llama2-70b", "bloom-176b", "llama3.1-8b", "llama3.2-3b"}, models
    assert models <= {d.model.name for d in catalogue(None, builtin_only=True)}
    assert Client().login(username="demo", password="demo-planner")
    call_command("load_demo", stdout=io.StringIO())
    assert Trace.objects.filter(team=user.membership.team).count() == 3
    assert get_user_model().objects.filter(username="demo").count() == 1


def test_the_thread_runner_runs_a_job_beside_the_request_and_it_ends_succeeded(cast, settings):
    settings.JOBS_RUNNER = "thread"
    job = create_job(team=cast.owner.team, kind="system.sleep", params={"seconds": 0.3})
    deadline = time.monotonic() + 120  # a bound for a loaded machine, not a timing assertion
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in Job.FINAL:
            break
        time.sleep(0.1)
    assert job.status == "succeeded" and job.result == {"slept_s": 0.3} and job.progress == 100.0
    assert job.worker.startswith("thread:")  # claimed by the in-process runner, not inline


@pytest.mark.parametrize("raised, message, hint", [
    (SoftTimeLimitExceeded(), "stopped at the job time limit", "CELERY_TASK_TIME_LIMIT"),
    (MemoryError(), "ran out of memory", "streamed"),
])
def test_a_simulation_stopped_by_the_time_limit_or_out_of_memory_fails_with_a_reason_and_no_result(
        cast, monkeypatch, raised, message, hint):
    import simulations.services

    def stopped(*args, **kwargs):
        raise raised

    monkeypatch.setattr(simulations.services, "simulate", stopped)
    response = cast.owner.api.post("/api/simulations/", {"scenario": SMALL}, format="json")
    assert response.status_code == 201, response.content
    run = SimulationRun.objects.get(pk=response.json()["id"])
    job = run.job
    job.refresh_from_db()
    assert job.status == "failed", (job.status, job.last_error)
    assert message in job.last_error["message"] and hint in job.last_error["hint"] and job.last_error["where"] == "run"
    assert job.finished is not None and run.result is None


def _csrf_token(client: Client, path: str) -> str:
    page = client.get(path).content.decode()
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert found, f"{path} has no CSRF token in its form"
    return found.group(1)


def test_the_login_form_refuses_a_post_without_its_csrf_token(cast):
    client = Client(enforce_csrf_checks=True)
    assert client.post("/login/", {"username": "owner", "password": "owner-pass-123"}).status_code == 403
    token = _csrf_token(client, "/login/")
    ok = client.post("/login/", {"username": "owner", "password": "owner-pass-123", "csrfmiddlewaretoken": token})
    assert ok.status_code == 302


@pytest.mark.parametrize("path, data", [
    ("/simulations/", {"scenario": json.dumps(SMALL)}),
    ("/traces/upload/", {"name": "x"}),
])
def test_a_page_form_post_without_the_csrf_token_is_refused_and_stores_nothing(cast, path, data):
    client = Client(enforce_csrf_checks=True)
    client.force_login(cast.owner.user)
    refused = client.post(path, data)
    assert refused.status_code == 403
    assert SimulationRun.objects.count() == 0 and Trace.objects.count() == 0
    token = _csrf_token(client, path)
    accepted = client.post(path, {**data, "csrfmiddlewaretoken": token})
    assert accepted.status_code != 403


def test_the_api_with_a_session_needs_the_csrf_header_but_not_with_a_token(cast):
    client = Client(enforce_csrf_checks=True)
    client.force_login(cast.owner.user)
    assert client.post("/api/simulations/", {"scenario": SMALL}, content_type="application/json").status_code == 403
    assert SimulationRun.objects.count() == 0
    assert cast.owner.api.post("/api/simulations/", {"scenario": SMALL}, format="json").status_code == 201
