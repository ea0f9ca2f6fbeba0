"""A comparison through Redis and a real celery worker (concurrency 2): one Celery task per strategy,
the last child triggers the aggregation, all in PostgreSQL. Run by .ci/test-integration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.comparisons.models import Comparison
from planner.jobs.models import Job
from tests.integration.conftest import wait_for_job

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
TINY = json.loads((Path(__file__).resolve().parent / "tiny_scenario.json").read_text())


def test_a_comparison_created_through_the_api_is_run_by_the_workers_one_task_per_strategy(cast, celery_worker_process):
    resp = cast.owner.api.post("/api/comparisons/", {"scenario": TINY, "strategies": ["static", "reactive-unified", "lt-i"],
                                                     "baseline": "reactive-unified"}, format="json")
    assert resp.status_code == 201, resp.content
    comp = Comparison.objects.get(pk=resp.json()["id"])
    children = list(Job.objects.filter(parent=comp.job))
    assert len(children) == 3
    wait_for_job(comp.job, timeout=300)
    comp.refresh_from_db()
    assert comp.job.status == "succeeded", comp.job.last_error
    ids = {c.celery_task_id for c in Job.objects.filter(parent=comp.job)}
    assert len(ids) == 3 and "" not in ids  # each strategy was its own Celery task
    assert [r["key"] for r in comp.summary["rows"]] == ["static", "reactive-unified", "lt-i"]
    assert cast.teammate.api.get(f"/api/comparisons/{comp.pk}/pdf/").content[:5] == b"%PDF-"
