"""Dispatch when the broker is down: the API answers 503 JSON and stores nothing, a dispatch that
fails after the commit leaves a complete, queued row for the sweep (never a "ghost" trace), and the
effective Celery settings are the ones the design relies on."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from planner.jobs import services as job_services
from planner.jobs.models import Job
from planner.traces.models import Trace, trace_root

NATIVE = "arrival_s,input_tokens,output_tokens\n0,100,10\n5,200,20\n65,300,30\n"

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def broker_down(settings, monkeypatch):
    settings.JOBS_RUNNER = "celery"
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1: refused at once
    monkeypatch.setattr(job_services, "_queue_ok_until", 0.0)


def _upload(client, content=NATIVE, **fields):
    return client.post("/api/traces/", {"file": SimpleUploadedFile("t.csv", content.encode()), **fields},
                       format="multipart")


def _folders():
    root = trace_root()
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


def test_an_upload_while_the_broker_is_down_is_a_503_json_and_stores_nothing(cast, broker_down):
    response = _upload(cast.owner.api)
    assert response.status_code == 503, response.content
    assert response["Content-Type"].startswith("application/json") and response["Retry-After"]
    error = response.json()["error"]
    assert "job queue is unavailable" in error["message"] and error["where"] and error["hint"]
    assert Trace.objects.count() == 0 and Job.objects.count() == 0 and _folders() == []


def test_a_synthesis_while_the_broker_is_down_is_a_503_too(cast, broker_down):
    spec = {"regions": ["r"], "models": ["m"], "total_rps": 0.01, "days": 0.05, "seed": 1}
    response = cast.owner.api.post("/api/traces/synthesise/", {"spec": spec}, format="json")
    assert response.status_code == 503 and response.json()["error"]["message"]
    assert Trace.objects.count() == 0 and _folders() == []


def test_a_dispatch_that_fails_after_the_commit_leaves_a_complete_queued_trace(cast, settings, monkeypatch):
    """The old ghost: row committed, files deleted, retries refused as duplicates."""
    from kombu.exceptions import OperationalError as BrokerDown

    from planner.jobs import services

    settings.JOBS_RUNNER = "celery"
    for where in ("planner.jobs.services", "planner.traces.services"):  # Redis dies after the check
        monkeypatch.setattr(f"{where}.ensure_queue_available", lambda: None)

    def refuse(*args, **kwargs):
        raise BrokerDown("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    # the task as dispatch() sends it: loading the Celery app on first use binds a fresh task object, so a
    # patch of the module attribute taken before that would miss when this test runs on its own
    monkeypatch.setattr(services._celery_task(), "apply_async", refuse)
    response = _upload(cast.owner.api)
    assert response.status_code == 202, response.content
    trace = Trace.objects.get(pk=response.json()["id"])
    assert trace.status == "pending" and trace.original_path.is_file() and not trace.normalised_file.exists()
    job = Job.objects.get(pk=trace.job_id)
    assert job.kind == "trace.normalise"
    assert job.status == "queued" and job.dispatched is not None and job.celery_task_id == ""
    # the same file again is a duplicate of the stored upload, not of a ghost
    assert _upload(cast.owner.api).status_code == 409
    # and the orphan sweep finds nothing wrong with it
    call_command("sweep_orphans", "--json", stdout=(out := _Buf()))
    report = json.loads(out.text)
    assert report["ghost_rows"] == [] and report["orphan_folders"] == [] and report["checksum_mismatches"] == []
    assert report["checked_files"] == 1  # the original, against the manifest
    # The web process restarts (in-process runner): the queued normalisation runs, nothing of the upload is lost.
    from planner.jobs.reaper import fail_orphans_of_this_runner

    settings.JOBS_RUNNER = "inline"
    assert fail_orphans_of_this_runner() == {job.pk: "redispatched"}
    trace.refresh_from_db()
    assert trace.status == "ready" and trace.requests == 3 and trace.job.kind == "trace.characterise"
    assert Job.objects.get(pk=job.pk).status == "succeeded" and trace.job.status == "succeeded"
    call_command("sweep_orphans", "--json", stdout=(out := _Buf()))
    assert json.loads(out.text)["checked_files"] == 2  # original and normalised


def test_the_orphan_sweep_reports_and_removes_leftovers_and_catches_corruption(cast):
    from planner.traces import services

    ok = _upload(cast.owner.api)
    assert ok.status_code == 202
    trace = Trace.objects.get(pk=ok.json()["id"])
    stray = trace_root() / "0123456789abcdef0123456789abcdef"  # files with no row
    stray.mkdir(parents=True)
    (stray / "original.csv").write_text(NATIVE)
    (trace.directory / "characterisation.json.tmp").write_text("{")
    with open(trace.normalised_file, "r+b") as fh:  # a flipped byte on disk
        fh.seek(20)
        byte = fh.read(1)
        fh.seek(20)
        fh.write(bytes([byte[0] ^ 0xFF]))
    ghost = Trace.objects.create(team=cast.owner.team, name="ghost", format="native", storage_key="f" * 32,
                                 content_sha256="x", fingerprint="ghost")
    out = _Buf()
    with pytest.raises(SystemExit):
        call_command("sweep_orphans", "--json", "--remove", "--min-age-s", "0", stdout=out)
    report = json.loads(out.text)
    assert report["orphan_folders"] == [str(stray)] and str(stray) in report["removed"] and not stray.exists()
    assert report["ghost_rows"] == [{"trace": ghost.pk, "missing": str(ghost.directory)}]
    assert [m["file"] for m in report["checksum_mismatches"]] == [str(trace.normalised_file)]
    assert not (trace.directory / "characterisation.json.tmp").exists()
    assert services.file_sha256(trace.original_path) == trace.content_sha256  # the original is untouched


class _Buf:
    def __init__(self):
        self.text = ""

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_the_effective_celery_settings_make_lost_work_come_back():
    from django.conf import settings

    from planner.celery import app
    from planner.jobs.tasks import run_job

    conf = app.conf
    assert conf.task_acks_late is True and conf.task_reject_on_worker_lost is True
    assert conf.worker_prefetch_multiplier == 1
    assert conf.broker_transport_options["visibility_timeout"] > conf.task_time_limit
    assert conf.worker_max_memory_per_child == settings.CELERY_WORKER_MAX_MEMORY_PER_CHILD > 0
    assert conf.worker_cancel_long_running_tasks_on_connection_loss is False
    assert conf.task_ignore_result is True
    assert run_job.acks_late is True and run_job.reject_on_worker_lost is True
    assert settings.JOBS_HEARTBEAT_S < settings.JOBS_HEARTBEAT_TIMEOUT_S


def test_the_upload_page_while_the_broker_is_down_is_a_503_page_and_stores_nothing(cast, client, broker_down):
    client.force_login(cast.owner.user)
    response = client.post("/traces/upload/", {"file": SimpleUploadedFile("t.csv", NATIVE.encode()), "name": "x",
                                                "format": "auto"})
    assert response.status_code == 503 and b"Job queue unavailable" in response.content
    assert response["Retry-After"]
    assert Trace.objects.count() == 0 and _folders() == []
