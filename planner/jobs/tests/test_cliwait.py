"""Waiting on a job from a management command: a queued job with no Celery worker is reported on stderr (what, how
to fix, how long), then the wait ends at the timeout with the job's page named; a finished job returns at once."""

import io
from types import SimpleNamespace

import pytest
from django.core.management.base import CommandError

from planner import health
from planner.jobs.cliwait import wait_for


def _obj(active: bool):
    return SimpleNamespace(job=SimpleNamespace(is_active=active))


def test_a_queued_job_without_a_worker_is_reported_and_the_wait_is_bounded(settings, monkeypatch):
    settings.JOBS_RUNNER = "celery"
    monkeypatch.setattr(health, "workers", lambda: {"ok": False, "error": "no worker answered a ping within 2 s"})
    err = io.StringIO()
    with pytest.raises(CommandError, match=r"comparison 7 still running after 0 s; see /comparisons/7/"):
        wait_for(lambda: _obj(True), what="comparison 7", url="/comparisons/7/", timeout_s=0, stderr=err)
    notice = err.getvalue()
    assert "comparison 7 is queued but no Celery worker is running" in notice
    assert "celery -A planner worker" in notice and "Waiting up to 0 s" in notice


def test_a_running_worker_or_an_in_process_runner_gives_no_notice(settings, monkeypatch):
    monkeypatch.setattr(health, "workers", lambda: {"ok": True, "answered": 1})
    settings.JOBS_RUNNER = "celery"
    err = io.StringIO()
    with pytest.raises(CommandError):
        wait_for(lambda: _obj(True), what="comparison 8", url="/comparisons/8/", timeout_s=0, stderr=err)
    assert err.getvalue() == ""
    settings.JOBS_RUNNER = "thread"
    monkeypatch.setattr(health, "workers", lambda: pytest.fail("no ping without Celery"))
    with pytest.raises(CommandError):
        wait_for(lambda: _obj(True), what="comparison 9", url="/comparisons/9/", timeout_s=0, stderr=err)
    assert err.getvalue() == ""


def test_a_finished_job_returns_at_once_without_a_ping(settings, monkeypatch):
    settings.JOBS_RUNNER = "celery"
    monkeypatch.setattr(health, "workers", lambda: pytest.fail("no ping for a finished job"))
    done = _obj(False)
    assert wait_for(lambda: done, what="comparison 1", url="/comparisons/1/", timeout_s=0, stderr=io.StringIO()) is done
