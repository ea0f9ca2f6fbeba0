"""PostgreSQL down longer than the jobs' retry window, without touching the shared server: the web process and the
worker reach the database through a TCP relay on a port of this test (tests/integration/faults.py, TcpProxy),
which the test cuts for about three retry windows and then restores.

Meanwhile the API answers 503 in the JSON error shape with Retry-After (and /healthz says the database is down);
afterwards every job has ended (succeeded, or failed with a reason in last_error) and the API answers again.
"""

from __future__ import annotations

import time

import pytest
import requests
from django.conf import settings

from planner.jobs.models import Job
from tests.integration import test_faults
from tests.integration.conftest import wait_for_job
from tests.integration.faults import TcpProxy, WebServer, Worker

stack = test_faults.stack  # the private Redis, and jobs dispatched to it

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

RETRY_S = 4  # JOBS_DB_RETRY_S of the processes under test: the outage lasts about three of these


@pytest.fixture
def relay():
    db = settings.DATABASES["default"]
    proxy = TcpProxy(int(db["PORT"] or 5432), db["HOST"] or "127.0.0.1").start()
    yield proxy
    proxy.stop()


def _through(relay: TcpProxy) -> dict:
    db = settings.DATABASES["default"]
    return {"DATABASE_URL": f"postgres://{db['USER'] or 'postgres'}@127.0.0.1:{relay.port}/{db['NAME']}",
            "JOBS_DB_RETRY_S": str(RETRY_S)}


def test_postgresql_down_longer_than_the_retry_window_503_meanwhile_and_every_job_ends(cast, stack, relay):
    from planner.jobs.services import create_job

    env = _through(relay)
    web = WebServer(stack.redis.url, env=env)
    worker = Worker(stack.redis.url, "pgdown", env=env).wait_ready()
    try:
        _run_the_outage(cast, web, relay, create_job, worker)
    finally:
        worker.stop()
        web.stop()


def _run_the_outage(cast, web, relay, create_job, worker) -> None:
    api = {"Authorization": f"Token {cast.owner.token}"}
    assert requests.get(f"{web.url}/api/jobs/", headers=api, timeout=30).status_code == 200
    running = create_job(team=cast.owner.team, kind="system.sleep", params={"seconds": 40})
    waiting = create_job(team=cast.owner.team, kind="system.sleep", params={"seconds": 1})  # behind it (1 slot)
    wait_for_job(running, until=("running",), timeout=90)

    relay.cut()
    down_since = time.monotonic()
    answers = []
    while time.monotonic() - down_since < 3 * RETRY_S:
        r = requests.get(f"{web.url}/api/jobs/", headers=api, timeout=30)
        answers.append(r)
        time.sleep(1.0)
    health = requests.get(f"{web.url}/healthz", timeout=30)
    relay.restore()

    assert answers and all(r.status_code == 503 for r in answers), [r.status_code for r in answers]
    for r in answers:
        assert r.headers["Content-Type"].startswith("application/json") and r.headers.get("Retry-After")
        err = r.json()["error"]
        assert err["message"] and err["where"] and err["hint"], err
    assert health.status_code == 503 and health.json()["checks"]["database"]["ok"] is False

    for job in (running, waiting):
        wait_for_job(job, timeout=240)
    for job in (running, waiting):
        assert job.status in Job.FINAL, (job.pk, job.status, worker.log())
        if job.status != Job.Status.SUCCEEDED:
            assert job.last_error and job.last_error.get("message"), (job.pk, job.status, job.last_error)
    # the one that held the database across the outage cannot have finished normally
    assert running.status == Job.Status.FAILED, (running.status, running.last_error, worker.log())
    assert not Job.objects.filter(status__in=Job.ACTIVE).exists()
    assert requests.get(f"{web.url}/api/jobs/", headers=api, timeout=30).status_code == 200
