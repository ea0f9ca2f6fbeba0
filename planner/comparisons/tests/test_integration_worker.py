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
    ids = {c.celery_task_id for c in Job.objects.filter(parent=comp.job, variant__role="")}
    assert len(ids) == 3 and "" not in ids  # each strategy was its own Celery task
    assert [r["key"] for r in comp.summary["rows"]] == ["static", "reactive-unified", "lt-i"]
    # the chosen strategy replayed at 1.2x the load for the card, as one more task (load_check.py)
    check = comp.summary.get("load_check")
    replays = Job.objects.filter(parent=comp.job, variant__role="load")
    if check is not None:
        assert replays.count() == 1 and replays.get().status == "succeeded" and replays.get().celery_task_id
        assert len(check["rows"]) == 1 and check["strategy"] in ("static", "reactive-unified", "lt-i")
    else:  # no strategy met every target: nothing to replay
        from planner.comparisons.core.table import strategy_table

        assert not replays.exists() and strategy_table(comp.summary, comp.variants)["answer"] is None
    assert cast.teammate.api.get(f"/api/comparisons/{comp.pk}/pdf/").content[:5] == b"%PDF-"


def test_bundles_seeds_and_the_baseline_sweep_fan_out_as_tasks_and_aggregate_both_ways(cast, celery_worker_process):
    # 2 runs (a paper-text and an authors'-code bundle) + 1 sweep point, each on 2 seeds = 6 tasks
    body = {"scenario": TINY, "bundles": ["sageserve-text.reactive-unified", "sageserve-code.reactive-unified"],
            "seeds": [1, 2], "tune": {"points": [{"scale_out_above": 0.5}]}, "baseline": "sageserve-text.reactive-unified"}
    resp = cast.owner.api.post("/api/comparisons/", body, format="json")
    assert resp.status_code == 201, resp.content
    comp = Comparison.objects.get(pk=resp.json()["id"])
    wait_for_job(comp.job, timeout=600)
    comp.refresh_from_db()
    assert comp.job.status == "succeeded", comp.job.last_error
    ids = {c.celery_task_id for c in Job.objects.filter(parent=comp.job, variant__role="")}
    assert len(ids) == 6 and "" not in ids  # the load check's replays come on top (load_check.py)
    fair = comp.summary["fair"]
    assert {r["key"] for r in fair["rows"]} == {"sageserve-text.reactive-unified", "sageserve-code.reactive-unified"}
    code = next(r for r in fair["rows"] if r["key"] == "sageserve-code.reactive-unified")
    assert code["n"] == 2 and code["vs_untuned"]["baseline"] == "sageserve-text.reactive-unified"
    assert code["vs_untuned"]["saved_gpu_hours_pct"] is not None
    # the two seeds are two different days of traffic
    runs = {r.key: r.metrics for r in comp.results.all()}
    assert runs["sageserve-text.reactive-unified+s1"]["requests"] != runs["sageserve-text.reactive-unified+s2"]["requests"] \
        or runs["sageserve-text.reactive-unified+s1"]["totals"] != runs["sageserve-text.reactive-unified+s2"]["totals"]
