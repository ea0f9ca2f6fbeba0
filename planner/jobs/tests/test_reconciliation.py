"""Jobs never strand: the reaper, the claim of redelivered messages, the in-process runner's start-up,
transient database errors, and cancellation of work that does not report progress."""

from __future__ import annotations

import subprocess
import threading
import time
from datetime import timedelta

import pytest
from django.db import OperationalError
from django.db.models import QuerySet
from django.utils import timezone

from planner.jobs import reaper
from planner.jobs.models import Job
from planner.jobs.registry import handler
from planner.jobs.services import cancel_job
from planner.jobs.tasks import execute, worker_id

LOST_HOOK_CALLS: list[int] = []


def _record_lost(job):
    LOST_HOOK_CALLS.append(job.pk)


@handler("test.lossy", on_lost=_record_lost)
def _lossy(job, ctx):
    ctx.progress(50, "half way", force=True)
    return {"ran": True}


@handler("test.redo", idempotent=True)
def _redo(job, ctx):
    return {"attempt": Job.objects.get(pk=job.pk).attempts}


@handler("test.busy")
def _busy(job, ctx):
    """Pure-Python work that never reports progress (like one long characterisation step)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        sum(range(2000))
    return {"ran_out": True}


@handler("test.db_down")
def _db_down(job, ctx):
    raise OperationalError("could not connect to server: Connection refused")


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _running(cast, kind, *, heartbeat_age_s=0.0, worker=None, attempts=1, **params):
    now = timezone.now()
    beat = now - timedelta(seconds=heartbeat_age_s)
    return Job.objects.create(team=cast.owner.team, kind=kind, params=params, status=Job.Status.RUNNING,
                              started=beat, heartbeat=beat, attempts=attempts, dispatched=beat,
                              worker=worker or "celery:some-other-host:12345")


def test_a_running_job_whose_heartbeat_stopped_is_failed_as_worker_lost_and_its_hook_runs(cast, settings):
    settings.JOBS_HEARTBEAT_TIMEOUT_S = 30
    LOST_HOOK_CALLS.clear()
    stale = _running(cast, "test.lossy", heartbeat_age_s=120)
    alive = _running(cast, "test.lossy", heartbeat_age_s=5)
    assert reaper.reap_running() == {stale.pk: "failed"}
    stale.refresh_from_db()
    alive.refresh_from_db()
    assert stale.status == "failed" and stale.finished is not None
    assert stale.last_error["type"] == "WorkerLost" and stale.last_error["message"].startswith("worker lost")
    assert "no heartbeat for 1" in stale.last_error["message"] and stale.last_error["hint"]
    assert alive.status == "running"
    assert LOST_HOOK_CALLS == [stale.pk]
    assert reaper.reap_running() == {}  # settled once


def test_an_idempotent_job_whose_worker_died_is_requeued_and_runs_again(cast, settings):
    settings.JOBS_HEARTBEAT_TIMEOUT_S = 30
    job = _running(cast, "test.redo", heartbeat_age_s=120)
    assert reaper.reap_running() == {job.pk: "requeued"}  # the inline runner runs it at once
    job.refresh_from_db()
    assert job.status == "succeeded" and job.result == {"attempt": 2} and job.attempts == 2


def test_an_idempotent_job_that_used_its_attempts_is_failed(cast, settings):
    settings.JOBS_HEARTBEAT_TIMEOUT_S = 30
    settings.JOBS_MAX_ATTEMPTS = 2
    job = _running(cast, "test.redo", heartbeat_age_s=120, attempts=2)
    assert reaper.reap_running() == {job.pk: "failed"}
    job.refresh_from_db()
    assert job.status == "failed" and job.last_error["type"] == "WorkerLost"


def test_a_job_whose_process_is_gone_on_this_host_is_reaped_without_waiting_for_the_heartbeat(cast):
    import socket

    job = _running(cast, "test.lossy", worker=f"celery:{socket.gethostname()}:{_dead_pid()}")
    assert reaper.reap_running() == {job.pk: "failed"}
    job.refresh_from_db()
    assert "is gone" in job.last_error["message"]


def test_a_redelivered_message_for_a_dead_attempt_fails_a_non_idempotent_job(cast):
    import socket

    job = _running(cast, "test.lossy", worker=f"celery:{socket.gethostname()}:{_dead_pid()}")
    assert execute(job.pk) == "failed"
    job.refresh_from_db()
    assert job.status == "failed" and job.last_error["type"] == "WorkerLost"
    assert "delivered again" in job.last_error["message"]


def test_a_redelivered_message_for_a_dead_attempt_reruns_an_idempotent_job(cast):
    import socket

    job = _running(cast, "test.redo", worker=f"celery:{socket.gethostname()}:{_dead_pid()}")
    assert execute(job.pk) == "succeeded"
    job.refresh_from_db()
    assert job.result == {"attempt": 2} and job.worker == worker_id()


def test_a_duplicate_message_for_a_live_attempt_is_skipped(cast):
    job = _running(cast, "test.lossy", heartbeat_age_s=1)  # another host, fresh heartbeat
    assert execute(job.pk) == "skipped"
    job.refresh_from_db()
    assert job.status == "running" and job.attempts == 1


def test_a_queued_job_whose_message_was_lost_is_dispatched_again(cast, settings):
    settings.JOBS_REDISPATCH_AFTER_S = 30
    old = timezone.now() - timedelta(seconds=300)
    lost = Job.objects.create(team=cast.owner.team, kind="test.lossy", dispatched=old)
    fresh = Job.objects.create(team=cast.owner.team, kind="test.lossy", dispatched=timezone.now())
    waiting_parent = Job.objects.create(team=cast.owner.team, kind="test.lossy", dispatched=None)
    assert reaper.redispatch_queued() == [lost.pk]
    for job in (lost, fresh, waiting_parent):
        job.refresh_from_db()
    assert lost.status == "succeeded"
    assert fresh.status == "queued" and waiting_parent.status == "queued"  # a fan-in parent waits


def test_with_celery_a_queued_job_whose_message_is_still_in_the_broker_is_left_alone(cast, settings, monkeypatch):
    settings.JOBS_RUNNER = "celery"
    settings.JOBS_REDISPATCH_AFTER_S = 30
    old = timezone.now() - timedelta(seconds=300)
    waiting = Job.objects.create(team=cast.owner.team, kind="test.lossy", dispatched=old,
                                 celery_task_id="0b3c1a8e-1111-4222-8333-944445555666")
    lost = Job.objects.create(team=cast.owner.team, kind="test.lossy", dispatched=old,
                              celery_task_id="0b3c1a8e-aaaa-4bbb-8ccc-9ddddeeeefff")
    sent = []
    monkeypatch.setattr(reaper, "live_task_ids", lambda: {waiting.celery_task_id})
    monkeypatch.setattr("planner.jobs.services.dispatch", sent.append)
    assert reaper.redispatch_queued() == [lost.pk] and sent == [lost.pk]
    monkeypatch.setattr(reaper, "live_task_ids", lambda: None)  # broker unreachable: do nothing
    Job.objects.filter(pk=lost.pk).update(dispatched=old)
    assert reaper.redispatch_queued() == []


def test_the_in_process_runner_settles_jobs_a_restart_orphaned(cast, settings, monkeypatch):
    import socket

    settings.JOBS_RUNNER = "thread"
    host = socket.gethostname()
    orphan = _running(cast, "test.lossy", worker=f"thread:{host}:{_dead_pid()}")
    ours = _running(cast, "test.lossy", worker=worker_id("thread"))  # this process: alive
    queued = Job.objects.create(team=cast.owner.team, kind="test.lossy", dispatched=timezone.now())
    sent = []
    monkeypatch.setattr("planner.jobs.services.dispatch", sent.append)
    outcomes = reaper.fail_orphans_of_this_runner()
    assert outcomes == {orphan.pk: "failed", queued.pk: "redispatched"} and sent == [queued.pk]
    orphan.refresh_from_db()
    ours.refresh_from_db()
    assert orphan.status == "failed" and "restart" in orphan.last_error["message"]
    assert ours.status == "running"


def test_a_database_error_inside_a_job_fails_it_as_database_unavailable(cast):
    job = Job.objects.create(team=cast.owner.team, kind="test.db_down")
    assert execute(job.pk) == "failed"
    job.refresh_from_db()
    assert job.last_error["type"] == "DatabaseUnavailable"
    assert job.last_error["message"].startswith("database unavailable") and job.last_error["hint"]


@pytest.mark.django_db(transaction=True)
def test_transient_database_errors_in_progress_and_finish_writes_are_retried(cast, monkeypatch, settings):
    settings.JOBS_DB_RETRY_S = 30
    real_update = QuerySet.update
    failures = {"left": 4}

    def flaky_update(self, **kwargs):  # the first job-row writes fail as during a PostgreSQL restart
        if self.model is Job and failures["left"] > 0 and ("progress" in kwargs or "result" in kwargs):
            failures["left"] -= 1
            raise OperationalError("server closed the connection unexpectedly")
        return real_update(self, **kwargs)

    monkeypatch.setattr(QuerySet, "update", flaky_update)
    job = Job.objects.create(team=cast.owner.team, kind="test.lossy")
    assert execute(job.pk) == "succeeded"
    job.refresh_from_db()
    assert failures["left"] == 0 and job.status == "succeeded" and job.result == {"ran": True}


@pytest.mark.django_db(transaction=True)
def test_a_database_outage_longer_than_the_retry_window_gives_up_and_the_reaper_settles_it(cast, monkeypatch, settings):
    settings.JOBS_DB_RETRY_S = 1
    real_update = QuerySet.update

    def down(self, **kwargs):
        if self.model is Job and "result" in kwargs:
            raise OperationalError("the database system is shutting down")
        return real_update(self, **kwargs)

    monkeypatch.setattr(QuerySet, "update", down)
    job = Job.objects.create(team=cast.owner.team, kind="test.redo")
    with pytest.raises(OperationalError):
        execute(job.pk)
    monkeypatch.setattr(QuerySet, "update", real_update)
    job.refresh_from_db()
    assert job.status == "running"  # its final write never landed ...
    settings.JOBS_HEARTBEAT_TIMEOUT_S = 30
    Job.objects.filter(pk=job.pk).update(heartbeat=timezone.now() - timedelta(seconds=60))
    assert reaper.reap_running() == {job.pk: "requeued"}  # ... so the reaper re-runs it (idempotent)
    job.refresh_from_db()
    assert job.status == "succeeded" and job.attempts == 2


@pytest.mark.django_db(transaction=True)
def test_cancel_stops_a_job_that_never_reports_progress(cast, settings):
    settings.JOBS_CANCEL_POLL_S = 1
    job = Job.objects.create(team=cast.owner.team, kind="test.busy")
    outcome = {}
    runner = threading.Thread(target=lambda: outcome.setdefault("status", execute(job.pk)))
    runner.start()
    deadline = time.monotonic() + 30
    while Job.objects.get(pk=job.pk).status != "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.monotonic()
    assert cancel_job(job) is True
    runner.join(timeout=45)
    assert not runner.is_alive() and outcome["status"] == "cancelled"
    assert time.monotonic() - started < 45  # stopped long before its 60 s of work
    job.refresh_from_db()
    assert job.status == "cancelled" and job.result == {}


@pytest.mark.django_db(transaction=True)
def test_cancel_stops_a_trace_characterisation_deep_in_one_computation(cast, settings, monkeypatch):
    from pathlib import Path

    from planner.traces import services

    settings.JOBS_CANCEL_POLL_S = 1
    fixture = Path(__file__).resolve().parents[3] / "fixtures" / "traces" / "azure_code_2023.csv"
    trace = services.import_trace_file(fixture, team=cast.owner.team, region="eastus", model="m", tier="IW-F")
    assert trace.job.refresh_from_db() or trace.job.status == "succeeded"
    entered = threading.Event()

    def endless_characterise(path, progress=None, **_):  # e.g. a huge span: minutes of binning, no progress
        entered.set()
        while True:
            sum(range(2000))

    monkeypatch.setattr("planner.traces.jobs.characterise", endless_characterise)
    job = services.create_job(team=cast.owner.team, kind="trace.characterise", params={"trace_id": trace.pk},
                              enqueue=False)
    outcome = {}
    runner = threading.Thread(target=lambda: outcome.setdefault("status", execute(job.pk)))
    runner.start()
    assert entered.wait(30)
    assert cancel_job(job) is True
    runner.join(timeout=45)
    assert not runner.is_alive() and outcome["status"] == "cancelled"
    job.refresh_from_db()
    assert job.status == "cancelled"


@pytest.mark.django_db(transaction=True)
def test_a_fan_in_parent_whose_dispatch_failed_while_the_broker_was_down_is_sent_by_the_sweep(cast, settings,
                                                                                             monkeypatch):
    """The last child finishes while Redis is down: the parent's outbox mark survives, the sweep sends it."""
    from django.db import transaction

    from planner.jobs import services

    parent = services.create_job(team=cast.owner.team, kind="test.lossy", enqueue=False)
    assert parent.dispatched is None
    monkeypatch.setattr(services, "dispatch", lambda job_id: False)  # what a refused send amounts to
    with transaction.atomic():
        services.mark_and_dispatch(parent.pk)
    parent.refresh_from_db()
    assert parent.status == "queued" and parent.dispatched is not None
    monkeypatch.undo()
    settings.JOBS_REDISPATCH_AFTER_S = 30
    Job.objects.filter(pk=parent.pk).update(dispatched=timezone.now() - timedelta(seconds=60))
    assert reaper.redispatch_queued() == [parent.pk]
    parent.refresh_from_db()
    assert parent.status == "succeeded"


def test_a_comparison_strategy_lost_with_its_worker_is_recorded_and_the_comparison_aggregates(
        cast, settings, monkeypatch, django_capture_on_commit_callbacks):
    from planner.comparisons import jobs as comparison_jobs
    from planner.comparisons.kinds import fleet as fleet_kind
    from planner.comparisons.models import VariantResult
    from planner.comparisons.services import start_comparison
    from planner.comparisons.tests.test_comparisons import TINY

    def fake_run(scenario, variant, *, progress, base_dir):
        return {"totals": {"instance_hours": 10.0, "gpu_hours": 80.0, "cost_usd": 100.0}}

    monkeypatch.setattr(fleet_kind, "_run", fake_run)
    monkeypatch.setattr(comparison_jobs, "aggregate_comparison",
                        lambda comp: {"rows": [], "best": None, "missing": {"static": "failed"}})
    settings.JOBS_HEARTBEAT_TIMEOUT_S = 30
    comp = start_comparison(team=cast.owner.team, scenario=TINY, strategies=["static", "reactive-unified"],
                            baseline="reactive-unified")
    static = comp.results.get(key="static")
    # the static strategy's worker died mid-run; reactive-unified is still to run
    stale = timezone.now() - timedelta(seconds=120)
    Job.objects.filter(pk=static.job_id).update(status="running", started=stale, heartbeat=stale, attempts=1,
                                                worker="celery:elsewhere:1")
    VariantResult.objects.filter(pk=static.pk).update(status="running")
    assert reaper.reap_running() == {static.job_id: "failed"}
    static.refresh_from_db()
    assert static.status == "failed" and static.error["type"] == "WorkerLost"
    comp.job.refresh_from_db()
    assert comp.job.status == "queued"  # still waiting for reactive-unified
    from planner.jobs.tasks import execute

    with django_capture_on_commit_callbacks(execute=True):  # the last child dispatches the parent
        execute(comp.results.get(key="reactive-unified").job_id)
    comp.job.refresh_from_db()
    assert comp.job.status == "partial" and "static (failed)" in comp.job.last_error["message"]


def test_the_reap_jobs_command_runs_one_sweep_and_prints_what_it_settled(cast, settings):
    import io
    import json

    from django.core.management import call_command

    settings.JOBS_HEARTBEAT_TIMEOUT_S = 30
    stale = _running(cast, "test.lossy", heartbeat_age_s=120)
    out = io.StringIO()
    call_command("reap_jobs", stdout=out)
    assert json.loads(out.getvalue()) == {"reaped": {str(stale.pk): "failed"}, "redispatched": []}
