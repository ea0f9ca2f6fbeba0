"""The 50-client load check: small interactive simulations finish within a minute while one team's long routing
sweeps run on the long-work queue.

Loopback only, bounded in count and time: a private Redis, a web process, a short-work worker (2 slots, queue
JOBS_QUEUE) and a long-work worker (1 slot, JOBS_QUEUE.long), all on this run's database. One team starts
routing sweeps of several million requests each (long work, at most JOBS_MAX_LONG_PER_TEAM = 2 at once: the
third is refused with 429); then LOAD_CLIENTS (50) API clients of five other teams each start one small
simulation (2,000 requests) at the same moment and poll it until it ends. Every small simulation must
succeed within LOAD_LIMIT_S (60 s) of its request while the sweeps are still running; the figures are printed
as one JSON line (BENCHMARKS.md).
"""

from __future__ import annotations

import copy
import json
import os
import statistics
import threading
import time
from pathlib import Path

import pytest
import requests
from django.conf import settings

from planner.jobs.models import Job
from tests.integration import test_faults
from tests.integration.faults import WebServer, Worker

stack = test_faults.stack  # the private Redis (and its dispatch)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]
CLIENTS = int(os.environ.get("LOAD_CLIENTS", "50"))
LIMIT_S = float(os.environ.get("LOAD_LIMIT_S", "60"))
SWEEP = {"rates": [2000, 3000], "routers": ["round-robin", "least-requests"], "minutes": 10}  # 6M requests


def _small_scenario() -> dict:
    scenario = json.loads((ROOT / "fixtures" / "scenarios" / "small_reactive.json").read_text())
    scenario["workload"]["synthetic"]["total_requests"] = 2000
    return scenario


def _client(url: str, token: str, scenario: dict, start: threading.Event, out: list) -> None:
    api = {"Authorization": f"Token {token}"}
    start.wait()
    t0 = time.monotonic()
    r = requests.post(f"{url}/api/simulations/", json={"scenario": scenario, "name": "load"}, headers=api, timeout=120)
    if r.status_code not in (201, 202):
        out.append({"status": f"http {r.status_code}", "s": time.monotonic() - t0, "body": r.text[:300]})
        return
    job_id = r.json()["job"]
    status = "queued"
    while time.monotonic() - t0 < 3 * LIMIT_S:
        status = requests.get(f"{url}/api/jobs/{job_id}/", headers=api, timeout=60).json()["status"]
        if status in Job.FINAL:
            break
        time.sleep(0.5)
    out.append({"status": status, "s": time.monotonic() - t0, "job": job_id})


def test_fifty_clients_small_runs_finish_within_a_minute_while_long_sweeps_run(cast, stack):
    from planner.accounts.services import create_user

    web = WebServer(stack.redis.url)
    short = Worker(stack.redis.url, "load-short", concurrency=2, queues=[settings.JOBS_QUEUE]).wait_ready()
    long = Worker(stack.redis.url, "load-long", concurrency=1, queues=[settings.JOBS_LONG_QUEUE]).wait_ready()
    try:
        sweeper = {"Authorization": f"Token {cast.outsider.token}"}
        sweeps = [requests.post(f"{web.url}/api/comparisons/routing-sweeps/", json=SWEEP, headers=sweeper, timeout=60)
                  for _ in range(3)]
        assert [r.status_code for r in sweeps[:2]] == [202, 202], [r.text[:300] for r in sweeps]
        assert sweeps[2].status_code == 429 and sweeps[2].headers.get("Retry-After"), sweeps[2].text[:300]
        sweep_jobs = [Job.objects.get(pk=r.json()["id"]) for r in sweeps[:2]]
        assert all(job.is_long for job in sweep_jobs)

        tokens = [create_user(f"load{i}", f"load-pass-{i}-xyz", f"Load team {i}")[1] for i in range(5)]
        scenario, start, results = _small_scenario(), threading.Event(), []
        threads = [threading.Thread(target=_client, args=(web.url, tokens[i % 5], copy.deepcopy(scenario), start,
                                                          results)) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        began = time.monotonic()
        start.set()
        for t in threads:
            t.join(timeout=4 * LIMIT_S)
        wall = time.monotonic() - began
        for job in sweep_jobs:
            job.refresh_from_db()
        sweeps_active = [job.status for job in sweep_jobs]
    finally:
        for job in Job.objects.filter(status__in=Job.ACTIVE):  # the sweeps would run for many minutes more
            from planner.jobs.services import cancel_job

            cancel_job(job)
        long.stop()
        short.stop()
        web.stop()

    seconds = sorted(r["s"] for r in results)
    figures = {"clients": CLIENTS, "succeeded": sum(r["status"] == "succeeded" for r in results),
               "p50_s": round(statistics.median(seconds), 1) if seconds else None,
               "p95_s": round(seconds[int(0.95 * (len(seconds) - 1))], 1) if seconds else None,
               "max_s": round(seconds[-1], 1) if seconds else None, "wall_s": round(wall, 1),
               "long_sweeps_running_at_the_end": sweeps_active.count("running"),
               "long_sweeps_status": sweeps_active}
    print("load check:", json.dumps(figures))
    assert len(results) == CLIENTS, figures
    assert figures["succeeded"] == CLIENTS, [r for r in results if r["status"] != "succeeded"][:5]
    assert figures["max_s"] < LIMIT_S, figures
    # the sweeps were not starved nor finished: they ran on the long queue the whole time
    assert "running" in sweeps_active and all(s in Job.ACTIVE for s in sweeps_active), figures
