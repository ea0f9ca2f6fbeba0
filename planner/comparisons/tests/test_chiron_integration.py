"""The chiron.* bundles through the API, Redis and a real celery worker: one task per bundle, the
Llumnix-like knob sweep as tasks, aggregated; the result page and the CLI list them. Run by .ci/test-integration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client

from planner.comparisons.models import Comparison
from planner.jobs.models import Job
from tests.integration.conftest import wait_for_job

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
TINY = json.loads((Path(__file__).resolve().parent / "chiron_tiny_scenario.json").read_text())


def test_chiron_bundles_and_a_llumnix_sweep_point_run_on_the_workers(cast, celery_worker_process):
    body = {"scenario": TINY, "bundles": ["chiron.default", "chiron.llumnix"],
            "tune": {"base": "chiron.llumnix", "points": [{"max_batch": 1024, "scale_up_below": 50.0}]},
            "baseline": "chiron.llumnix"}
    resp = cast.owner.api.post("/api/comparisons/", body, format="json")
    assert resp.status_code == 201, resp.content
    comp = Comparison.objects.get(pk=resp.json()["id"])
    wait_for_job(comp.job, timeout=600)
    comp.refresh_from_db()
    assert comp.job.status == "succeeded", comp.job.last_error
    ids = {c.celery_task_id for c in Job.objects.filter(parent=comp.job, variant__role="")}
    assert len(ids) == 3 and "" not in ids  # two bundles + one sweep point, each its own Celery task
    runs = {r.key: r.metrics for r in comp.results.all()}
    assert {"chiron.default", "chiron.llumnix", "tune.chiron.llumnix.1"} <= set(runs)
    browser = Client()
    browser.force_login(cast.owner.user)
    page = browser.get(f"/comparisons/{comp.pk}/")
    assert page.status_code == 200 and b"chiron.default" in page.content
    # the page's form offers the bundles (checkboxes) and the API lists them
    assert b"chiron.llumnix" in browser.get("/comparisons/").content
    listed = cast.owner.api.get("/api/comparisons/bundles/").json()
    assert "chiron.default" in json.dumps(listed)
