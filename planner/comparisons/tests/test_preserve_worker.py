"""PreServe bundles through the API, Redis and a real celery worker: the load-aware router and an
RQ3 baseline, the paper's MU baseline and the Llumnix-like with live migration, each its own Celery task, aggregated, shown on the
comparison page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.comparisons.models import Comparison
from planner.jobs.models import Job
from tests.integration.conftest import wait_for_job

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
SCENARIO = json.loads((Path(__file__).resolve().parents[3] / "fixtures/scenarios/preserve_routing.json").read_text())


def test_preserve_bundles_run_on_the_workers_and_show_on_the_page(cast, celery_worker_process):
    sc = json.loads(json.dumps(SCENARIO))
    sc["workload"]["synthetic"].update(rate_rps=14.0, duration_s=600)  # past the knee: migrations happen
    body = {"scenario": sc, "bundles": ["preserve.router-table2", "preserve.baseline-least-requests",
                                        "preserve.baseline-llumnix-migrate", "preserve.baseline-gpu-memory-usage"],
            "baseline": "preserve.baseline-least-requests"}
    resp = cast.owner.api.post("/api/comparisons/", body, format="json")
    assert resp.status_code == 201, resp.content
    comp = Comparison.objects.get(pk=resp.json()["id"])
    wait_for_job(comp.job, timeout=600)
    comp.refresh_from_db()
    assert comp.job.status == "succeeded", comp.job.last_error
    ids = {c.celery_task_id for c in Job.objects.filter(parent=comp.job, variant__role="")}
    assert len(ids) == 4 and "" not in ids
    runs = {r.key: r.metrics for r in comp.results.all()}
    assert set(runs) == {"preserve.router-table2", "preserve.baseline-least-requests",
                         "preserve.baseline-llumnix-migrate", "preserve.baseline-gpu-memory-usage"}
    assert all(m["requests"] > 500 for m in runs.values())
    from django.test import Client

    browser = Client()
    browser.force_login(cast.owner.user)
    page = browser.get(f"/comparisons/{comp.pk}/")
    assert page.status_code == 200 and b"preserve.router-table2" in page.content
    assert b"preserve.baseline-llumnix-migrate" in page.content
    assert b"preserve.baseline-gpu-memory-usage" in page.content
