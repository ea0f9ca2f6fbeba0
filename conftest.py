"""Fixtures shared by every app's tests (settings: planner/settings_test.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings

from tests.integration.conftest import worker_log_path

ROOT = Path(__file__).resolve().parent


@pytest.fixture
def cast(db):
    """The named cast for permission tests: owner and teammate share a team, outsider does not."""
    from rest_framework.test import APIClient

    from planner.accounts.services import create_user

    people = {}
    for name, team in (("owner", "Fleet A"), ("teammate", "Fleet A"), ("outsider", "Fleet B")):
        user, token = create_user(name, f"{name}-pass-123", team)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        people[name] = type("Member", (), {"user": user, "token": token, "api": client, "team": user.membership.team})
    return type("Cast", (), people)


# A real `celery -A planner worker` process against the test PostgreSQL database and Redis.
# Run by `.ci/test-integration` with DATABASE_URL, REDIS_URL and JOBS_RUNNER=celery set. With
# PLANNER_REQUIRE_SERVICES=1 (CI), a missing service fails the run instead of skipping it.

def _services_or_fail():
    problems = []
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        problems.append("DATABASE_URL does not point at PostgreSQL")
    if settings.JOBS_RUNNER != "celery" or not settings.REDIS_URL:
        problems.append("REDIS_URL/JOBS_RUNNER=celery not set")
    if problems:
        message = "integration tests need the real services (run .ci/test-integration): " + "; ".join(problems)
        if os.environ.get("PLANNER_REQUIRE_SERVICES") == "1":
            pytest.fail(message)
        pytest.skip(message)


def worker_queues() -> str:
    """Every queue this deployment routes jobs to (a run of CI names its own, see .ci/test-integration)."""
    return ",".join(settings.JOBS_QUEUES)


@pytest.fixture
def real_services():
    """PostgreSQL and Redis as configured by .ci/test-integration (fails on CI, skips elsewhere, when absent)."""
    _services_or_fail()


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker):
    """Start one worker on the test database and this run's queues; stop it at the end of the session.

    Nothing is flushed: the run has a Redis and queue names of its own (.ci/test-integration), so stale
    messages of another run can neither reach this worker nor be taken by it.
    """
    _services_or_fail()
    db = settings.DATABASES["default"]
    env = dict(os.environ)
    env["DATABASE_URL"] = f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    env["DJANGO_SETTINGS_MODULE"] = "planner.settings"
    env["PLANNER_DATA_DIR"] = str(settings.DATA_DIR)
    env["CAPACITY_SEARCH_WORKERS"] = "2"  # its two processes: capacity searches fill idle ones with spare work
    log_path = worker_log_path()
    log = open(log_path, "a")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "planner", "worker", "--loglevel=INFO", "--concurrency=2",
         "-Q", worker_queues(), "--without-gossip", "--without-mingle", "--without-heartbeat",
         "-n", f"test-{os.getpid()}@%h"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    from planner.celery import app

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"celery worker exited with {proc.returncode}; see {log_path}")
        try:
            if app.control.ping(timeout=1.0):
                break
        except Exception:
            pass
        time.sleep(0.5)
    else:
        proc.terminate()
        pytest.fail(f"celery worker did not answer a ping within 60 s; see {log_path}")
    yield proc
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()
