"""A back-test through the API, Redis and a real celery worker, shown on its page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client

from planner.backtests.models import Backtest
from tests.integration.conftest import wait_for_job

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[3]
SCENARIO = json.loads((ROOT / "fixtures/scenarios/industry_burst.json").read_text())


def test_a_backtest_runs_on_a_worker_and_shows_on_its_page(cast, celery_worker_process):
    sc = json.loads(json.dumps(SCENARIO))
    sc["workload"]["synthetic"].update(duration_s=900, total_requests=3000)
    csv_text = (ROOT / "fixtures/backtests/industry_burst_replicas.csv").read_text()
    resp = cast.owner.api.post("/api/backtests/", {"scenario": sc, "replicas_csv": csv_text,
                                                   "bundles": ["industry.knative-kpa", "industry.llmd-wva"]},
                               format="json")
    assert resp.status_code == 201, resp.content
    bt = Backtest.objects.get(pk=resp.json()["id"])
    wait_for_job(bt.job, timeout=600)
    bt.refresh_from_db()
    assert bt.job.status == "succeeded", bt.job.last_error
    assert bt.job.celery_task_id
    assert bt.as_run_exact is True
    browser = Client()
    browser.force_login(cast.owner.user)
    page = browser.get(f"/backtests/{bt.pk}/")
    assert page.status_code == 200 and b"industry.llmd-wva" in page.content
