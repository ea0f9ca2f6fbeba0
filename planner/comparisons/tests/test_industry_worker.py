"""Industry autoscaler bundles through the API, Redis and a real celery worker, shown on the comparison page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client

from planner.comparisons.models import Comparison
from planner.jobs.models import Job
from tests.integration.conftest import wait_for_job

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
SCENARIO = json.loads((Path(__file__).resolve().parents[3] / "fixtures/scenarios/industry_burst.json").read_text())
BUNDLES = ["industry.hpa-running", "industry.aibrix-apa", "industry.dynamo-kalman", "industry.llmd-wva"]


def test_industry_bundles_run_on_the_workers_and_show_on_the_page(cast, celery_worker_process):
    sc = json.loads(json.dumps(SCENARIO))
    sc["workload"]["synthetic"].update(duration_s=900, total_requests=3000,
                                       burst={"at_s": 300, "duration_s": 300, "factor": 3.0})
    resp = cast.owner.api.post("/api/comparisons/", {"scenario": sc, "strategies": ["static"], "bundles": BUNDLES,
                                                     "baseline": "static"}, format="json")
    assert resp.status_code == 201, resp.content
    comp = Comparison.objects.get(pk=resp.json()["id"])
    wait_for_job(comp.job, timeout=600)
    comp.refresh_from_db()
    assert comp.job.status == "succeeded", comp.job.last_error
    ids = {c.celery_task_id for c in Job.objects.filter(parent=comp.job, variant__role="")}
    assert len(ids) == 5 and "" not in ids
    assert {r.key for r in comp.results.all()} == {"static", *BUNDLES}
    browser = Client()
    browser.force_login(cast.owner.user)
    page = browser.get(f"/comparisons/{comp.pk}/")
    assert page.status_code == 200
    for name in BUNDLES:
        assert name.encode() in page.content
