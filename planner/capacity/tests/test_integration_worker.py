"""A capacity search through Redis and a real celery worker: one Celery task per probe and per round, the last
probe of a round claims the next, all in PostgreSQL. Run by .ci/test-integration."""

from __future__ import annotations

import pytest

from planner.capacity.models import CapacitySearch
from planner.capacity.tests.scenarios import two_region_queue
from planner.jobs.models import Job
from tests.integration.conftest import wait_for_job

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_a_search_created_through_the_api_is_run_by_the_workers_one_task_per_probe(cast, celery_worker_process):
    """Two strategies on a worker with CAPACITY_SEARCH_WORKERS=2 (conftest): its idle process may take spare work
    (early band draws of the first candidate found); the answer is the in-process one's."""
    spec = {"strategies": ["static", "reactive-unified"], "targets": {"IW-F": 0.9}, "probability": 0.66, "seeds": [1, 2, 3],
            "band_draws": 3}
    resp = cast.owner.api.post("/api/capacity-searches/", {"scenario": two_region_queue(), "spec": spec}, format="json")
    assert resp.status_code == 201, resp.content
    search = CapacitySearch.objects.get(pk=resp.json()["id"])
    wait_for_job(search.job, timeout=600)
    search.refresh_from_db()
    assert search.job.status == "succeeded", search.job.last_error
    probes = Job.objects.filter(parent=search.job, kind="capacity.probe")
    ids = set(probes.values_list("celery_task_id", flat=True))
    assert len(ids) == probes.count() == search.probes.count() and "" not in ids
    assert set(probes.values_list("worker", flat=True)) != {""}
    assert search.answer["status"] == "answer"
    assert {r["count"] for r in search.answer["choice"]["fleet"]} == {12}
    assert 0 <= search.state.get("spare_probes", 0) <= 2 * (3 + 3)  # within the spare budget
