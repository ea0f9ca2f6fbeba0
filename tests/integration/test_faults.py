"""Fault tests: jobs never strand. Real PostgreSQL, real celery worker processes, and a
private Redis on its own port that these tests kill and restart (never the machine's shared one).

- kill -9 of a pool child mid-simulation (the OOM killer's way): the job ends failed, "worker lost";
- kill -9 of a whole worker mid-comparison: the lost strategy is failed by the reaper of a new worker,
  the comparison still aggregates and ends "partial", naming the failure;
- Redis killed and restarted empty with jobs queued: every queued job runs afterwards; the API answered
  503 JSON while Redis was down, and that upload left nothing stored.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest
import requests

from planner.jobs.models import Job
from tests.integration.conftest import wait_for_job
from tests.integration.faults import PrivateRedis, WebServer, Worker, private_dispatch

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]
AZURE_CODE = ROOT / "fixtures" / "traces" / "azure_code_2023.csv"


@pytest.fixture
def stack(request, monkeypatch):
    """A private Redis, and whatever workers/servers the test starts (all stopped at the end)."""
    from conftest import _services_or_fail

    _services_or_fail()
    redis_server = PrivateRedis().start()
    started: list = []

    class Stack:
        redis = redis_server

        @staticmethod
        def worker(name: str, concurrency: int = 1) -> Worker:
            w = Worker(redis_server.url, name, concurrency)
            started.append(w)
            return w.wait_ready()

        @staticmethod
        def web() -> WebServer:
            s = WebServer(redis_server.url)
            started.append(s)
            return s

    monkeypatch.setattr("planner.jobs.services.dispatch", private_dispatch(redis_server.url))
    yield Stack
    for thing in reversed(started):
        thing.stop()
    redis_server.kill()
    shutil.rmtree(redis_server.dir, ignore_errors=True)


def _long_scenario(requests_n: int) -> dict:
    scenario = json.loads((ROOT / "fixtures/scenarios/bench_day.json").read_text())
    scenario["workload"]["synthetic"]["total_requests"] = requests_n
    return scenario


def _wait_progress(job: Job, above: float, timeout: float = 120.0) -> Job:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status == "running" and job.progress > above:
            return job
        assert job.status in ("queued", "running"), (job.status, job.last_error)
        time.sleep(0.1)
    raise AssertionError(f"job {job.pk} never got past {above}% ({job.status}, {job.progress})")


def _pid_of(job: Job) -> int:
    return int(job.worker.rsplit(":", 1)[1])


def test_kill_9_of_the_pool_child_running_a_simulation_fails_it_as_worker_lost(cast, stack):
    from simulations.services import create_run

    worker = stack.worker("oom")
    run = create_run(team=cast.owner.team, user=cast.owner.user, scenario=_long_scenario(1_000_000))
    job = _wait_progress(run.job, above=2)
    child = _pid_of(job)
    assert child != worker.proc.pid
    os.kill(child, signal.SIGKILL)  # what the kernel's OOM killer does to the biggest process
    wait_for_job(job, timeout=120)
    assert job.status == "failed", (job.status, job.last_error, worker.log())
    assert job.last_error["type"] == "WorkerLost" and job.last_error["message"].startswith("worker lost")
    assert job.finished is not None and job.progress < 100
    # the worker replaced its child and keeps serving
    from planner.jobs.services import create_job

    after = create_job(team=cast.owner.team, kind="system.sleep", params={"seconds": 0.2})
    wait_for_job(after, timeout=120)
    assert after.status == "succeeded", after.last_error


def test_a_comparison_whose_worker_is_killed_mid_strategy_still_aggregates_and_shows_the_failure(cast, stack):
    from planner.comparisons.models import Comparison
    from planner.comparisons.services import start_comparison

    first = stack.worker("cmp-a")
    comp = start_comparison(team=cast.owner.team, user=cast.owner.user, scenario=_long_scenario(400_000),
                            strategies=["static", "reactive-unified"], baseline="reactive-unified")
    children = {r.key: r.job for r in comp.results.all()}
    killed = _wait_progress(children["static"], above=2)  # one worker process: the first strategy runs first
    first.kill9()
    stack.worker("cmp-b")  # its reaper sees the dead attempt; it runs the other strategy and the aggregation
    wait_for_job(comp.job, timeout=300)
    comp = Comparison.objects.get(pk=comp.pk)
    killed.refresh_from_db()
    assert killed.status == "failed" and killed.last_error["type"] == "WorkerLost", killed.last_error
    assert comp.job.status == "partial", (comp.job.status, comp.job.last_error)
    assert "static (failed)" in comp.job.last_error["message"]
    assert comp.summary["missing"] == {"static": "failed"}
    assert [r["key"] for r in comp.summary["rows"]] == ["reactive-unified"]
    lost = comp.results.get(key="static")
    assert lost.status == "failed" and lost.error["type"] == "WorkerLost"


def _upload(web: WebServer, token: str, tier: str):
    with AZURE_CODE.open("rb") as fh:
        return requests.post(f"{web.url}/api/traces/", headers={"Authorization": f"Token {token}"},
                             files={"file": ("azure_code_2023.csv", fh, "text/csv")},
                             data={"region": "eastus", "model": "llama2-70b", "tier": tier}, timeout=120)


def test_redis_restarted_empty_with_jobs_queued_every_job_runs_afterwards(cast, stack, settings):
    from planner.jobs.services import create_job
    from planner.traces.models import Trace, trace_root

    web = stack.web()
    worker = stack.worker("outage")
    busy = create_job(team=cast.owner.team, kind="system.sleep", params={"seconds": 20})  # keeps the worker busy
    wait_for_job(busy, until=("running",), timeout=60)
    queued = []
    for tier in ("IW-F", "IW-N", "NIW"):
        response = _upload(web, cast.owner.token, tier)
        assert response.status_code == 202, response.text
        queued.append(Trace.objects.get(pk=response.json()["id"]).job)  # its normalisation
    for job in queued:
        job.refresh_from_db()
        assert job.status == "queued" and job.celery_task_id  # their messages wait in Redis

    stack.redis.kill()  # Redis dies; it keeps nothing on disk
    time.sleep(2)  # past the web process's one-second memory of a good ping
    traces_before, folders_before = Trace.objects.count(), sorted(p.name for p in trace_root().iterdir())
    refused = _upload(web, cast.owner.token, "IW-F:0.5,NIW:0.5")  # a new trace, not a duplicate
    assert refused.status_code == 503, refused.text
    assert refused.headers["Content-Type"].startswith("application/json")
    assert "job queue is unavailable" in refused.json()["error"]["message"]
    assert Trace.objects.count() == traces_before  # nothing half-stored: no row ...
    assert sorted(p.name for p in trace_root().iterdir()) == folders_before  # ... and no files

    stack.redis.start()  # back, empty: the three queued messages are gone
    for job in [busy, *queued]:
        wait_for_job(job, timeout=180)
        assert job.status == "succeeded", (job.kind, job.status, job.last_error, worker.log())
    traces = list(Trace.objects.filter(pk__in=[job.params["trace_id"] for job in queued]))
    assert len(traces) == 3
    for trace in traces:  # normalised, then characterised by the job the normalisation queued
        assert trace.status == "ready" and trace.job.kind == "trace.characterise", trace.status
        wait_for_job(trace.job, timeout=180)
        trace.refresh_from_db()
        assert trace.characterisation is not None
    # the API works again
    again = _upload(web, cast.owner.token, "IW-F")
    assert again.status_code == 409, again.text  # a duplicate of a complete trace, so the first upload is whole


def test_a_job_survives_postgresql_dropping_its_connections_mid_run(cast, stack):
    """What a PostgreSQL restart does to a worker: every connection is cut. Only this test database's
    backends are terminated (the shared server keeps running); the job's writes reconnect and retry."""
    from django.db import connection

    from planner.jobs.services import create_job

    worker = stack.worker("pg")
    job = create_job(team=cast.owner.team, kind="system.sleep", params={"seconds": 8})
    _wait_progress(job, above=10)
    with connection.cursor() as cur:
        cur.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        (terminated,) = cur.fetchone()
    assert terminated >= 1
    wait_for_job(job, timeout=120)
    assert job.status == "succeeded", (job.status, job.last_error, worker.log())
    assert job.result == {"slept_s": 8.0} and job.progress == 100.0
    assert "database unavailable during" in worker.log()  # the write failed once and was retried
