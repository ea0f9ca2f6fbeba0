"""Short and long work apart: a job's size (the requests it simulates) picks its Celery queue, and a team may have
only JOBS_MAX_LONG_PER_TEAM long jobs queued or running at once (more are a 429 that stores nothing)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from planner.jobs import services as job_services
from planner.jobs import tasks
from planner.jobs.models import Job
from simulations.models import SimulationRun

ROOT = Path(__file__).resolve().parents[3]
SMALL = json.loads((ROOT / "fixtures" / "scenarios" / "small_reactive.json").read_text())

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sent(settings, monkeypatch):
    """Celery as the runner, with the broker replaced by a list of (job id, queue) sent."""
    settings.JOBS_RUNNER = "celery"
    settings.JOBS_LONG_REQUESTS = 100_000
    settings.JOBS_MAX_LONG_PER_TEAM = 2
    monkeypatch.setattr(job_services, "ensure_queue_available", lambda: None)
    messages = []

    def apply_async(args, queue=None, **kwargs):
        messages.append((args[0], queue))
        return type("Sent", (), {"id": f"task-{args[0]}"})()

    monkeypatch.setattr(tasks.run_job, "apply_async", apply_async)
    return messages


def scenario(requests: int) -> dict:
    d = copy.deepcopy(SMALL)
    d["workload"]["synthetic"]["total_requests"] = requests
    return d


def test_a_small_run_goes_to_the_short_queue_and_a_big_one_to_the_long_queue(cast, sent, settings):
    small = cast.owner.api.post("/api/simulations/", {"scenario": scenario(5_000)}, format="json")
    big = cast.owner.api.post("/api/simulations/", {"scenario": scenario(150_000)}, format="json")
    assert small.status_code == big.status_code == 201
    small_job = SimulationRun.objects.get(pk=small.json()["id"]).job
    big_job = SimulationRun.objects.get(pk=big.json()["id"]).job
    assert small_job.work_requests == 5_000 and big_job.work_requests == 150_000
    assert dict(sent) == {small_job.pk: settings.JOBS_QUEUE, big_job.pk: settings.JOBS_LONG_QUEUE}
    assert settings.JOBS_LONG_QUEUE != settings.JOBS_QUEUE


def test_a_team_past_its_long_job_limit_gets_a_429_and_nothing_is_stored_while_short_work_still_starts(cast, sent):
    for _ in range(2):
        assert cast.owner.api.post("/api/simulations/", {"scenario": scenario(150_000)},
                                   format="json").status_code == 201
    runs = SimulationRun.objects.count()
    third = cast.teammate.api.post("/api/simulations/", {"scenario": scenario(150_000)}, format="json")
    assert third.status_code == 429, third.content
    error = third.json()["error"]
    assert "long job" in error["message"] and error["where"] and error["hint"] and error["request_id"]
    assert SimulationRun.objects.count() == runs
    # short work of the same team, and long work of another team, still start
    assert cast.owner.api.post("/api/simulations/", {"scenario": scenario(5_000)}, format="json").status_code == 201
    assert cast.outsider.api.post("/api/simulations/", {"scenario": scenario(150_000)},
                                  format="json").status_code == 201
    # once a long job ends, the team may start another
    first = Job.objects.filter(team=cast.owner.team, work_requests=150_000).order_by("id").first()
    Job.objects.filter(pk=first.pk).update(status=Job.Status.SUCCEEDED)
    assert cast.owner.api.post("/api/simulations/", {"scenario": scenario(150_000)},
                               format="json").status_code == 201


def test_a_comparison_of_long_runs_counts_once_and_its_variants_go_to_the_long_queue(cast, sent, settings):
    r = cast.owner.api.post("/api/comparisons/", {"scenario": scenario(150_000), "strategies": ["static", "lt-i"]},
                            format="json")
    assert r.status_code in (201, 202), r.content
    queues = {queue for _, queue in sent}
    assert queues == {settings.JOBS_LONG_QUEUE}
    assert cast.owner.api.post("/api/simulations/", {"scenario": scenario(150_000)}, format="json").status_code == 201
    refused = cast.owner.api.post("/api/comparisons/", {"scenario": scenario(150_000), "strategies": ["static"]},
                                  format="json")
    assert refused.status_code == 429, refused.content


def test_a_routing_sweep_that_would_simulate_no_request_is_a_400_at_the_boundary(cast, sent):
    r = cast.owner.api.post("/api/comparisons/routing-sweeps/", {"rates": [0.001, 1], "routers": ["round-robin"],
                                                                 "minutes": 1}, format="json")
    assert r.status_code == 400, r.content
    assert "rates" in r.json()["error"]["where"] and r.json()["error"]["hint"]
    assert Job.objects.count() == 0 and sent == []


def test_the_page_of_a_team_past_its_long_job_limit_is_a_429_page_not_a_500(cast, sent, client):
    for _ in range(2):
        cast.owner.api.post("/api/simulations/", {"scenario": scenario(150_000)}, format="json")
    client.force_login(cast.owner.user)
    r = client.post("/simulations/", {"scenario": json.dumps(scenario(150_000))})
    assert r.status_code == 429 and b"long job" in r.content
