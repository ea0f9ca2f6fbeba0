"""A full disk during an upload is a clear 507 that keeps nothing; orphan folders (an import whose process died)
are removed by sweep_orphans once older than TRACE_ORPHAN_MAX_AGE_S, and only reported with --dry-run."""

from __future__ import annotations

import errno
import io
import json
import os
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from planner.jobs.models import Job
from planner.traces import services
from planner.traces.models import Trace, trace_root

NATIVE = "arrival_s,input_tokens,output_tokens\n" + "".join(f"{i},{100 + i},10\n" for i in range(2000))

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def _folders() -> list[str]:
    root = trace_root()
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


def test_a_full_disk_during_an_upload_is_a_507_in_the_error_shape_and_nothing_is_half_stored(cast, monkeypatch):
    real_copy = services._copy_hashing

    def fill_the_disk(chunks, dest):
        with open(dest, "wb") as out:
            out.write(next(iter(chunks))[:100])  # part of the file is on disk when the disk fills up
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(services, "_copy_hashing", fill_the_disk)
    upload = SimpleUploadedFile("t.csv", NATIVE.encode())
    response = cast.owner.api.post("/api/traces/", {"file": upload}, format="multipart")
    assert response.status_code == 507, response.content
    error = response.json()["error"]
    assert "storage is full" in error["message"] and error["where"] and "free space" in error["hint"]
    assert error["request_id"]
    assert Trace.objects.count() == 0 and Job.objects.count() == 0 and _folders() == []
    monkeypatch.setattr(services, "_copy_hashing", real_copy)  # space again: the same upload now works
    again = cast.owner.api.post("/api/traces/", {"file": SimpleUploadedFile("t.csv", NATIVE.encode())},
                                format="multipart")
    assert again.status_code == 202, again.content


def test_a_full_disk_on_the_upload_page_is_said_plainly_and_nothing_is_stored(cast, client, monkeypatch):
    def fill_the_disk(chunks, dest):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(services, "_copy_hashing", fill_the_disk)
    client.force_login(cast.owner.user)
    response = client.post("/traces/upload/", {"file": SimpleUploadedFile("t.csv", NATIVE.encode()), "format": "auto"})
    assert response.status_code == 507 and b"storage is full" in response.content
    assert Trace.objects.count() == 0 and _folders() == []


def test_a_full_disk_while_the_worker_normalises_fails_the_trace_with_a_reason_and_keeps_no_partial_file(
        cast, monkeypatch):
    from planner.traces import jobs as trace_jobs

    def fill_the_disk(src, dst, **kwargs):
        with open(dst, "wb") as out:
            out.write(b"PAR1 half a file")  # part of the output is on disk when the disk fills up
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(trace_jobs, "ingest", fill_the_disk)
    response = cast.owner.api.post("/api/traces/", {"file": SimpleUploadedFile("t.csv", NATIVE.encode())},
                                   format="multipart")
    assert response.status_code == 202, response.content
    body = cast.owner.api.get(response["Location"]).json()
    assert body["status"] == "failed" and "storage filled up" in body["status_reason"]["message"]
    assert body["status_reason"]["file"] == "t.csv" and "free space" in body["status_reason"]["hint"]
    trace = Trace.objects.get(pk=body["id"])
    assert trace.job.status == "failed" and "storage filled up" in trace.job.last_error["message"]
    assert not trace.normalised_file.exists() and trace.original_path.exists()
    assert sorted(p.name for p in trace.directory.iterdir()) == ["manifest.json", "original.csv"]


def _orphan(name: str, age_s: float):
    folder = trace_root() / name
    folder.mkdir(parents=True)
    (folder / "original.csv").write_text(NATIVE)
    then = time.time() - age_s
    os.utime(folder, (then, then))
    return folder


def test_sweep_orphans_removes_old_orphan_folders_keeps_fresh_ones_and_dry_run_removes_nothing(db, settings):
    settings.TRACE_ORPHAN_MAX_AGE_S = 600
    old = _orphan("a" * 32, age_s=3600)
    fresh = _orphan("b" * 32, age_s=10)  # an upload still in progress
    out = io.StringIO()
    with pytest.raises(SystemExit):  # something is wrong: cron alerts
        call_command("sweep_orphans", "--dry-run", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert sorted(report["orphan_folders"]) == [str(old), str(fresh)] and report["removed"] == []
    assert old.exists() and fresh.exists()
    out = io.StringIO()
    with pytest.raises(SystemExit):  # the fresh one is still there
        call_command("sweep_orphans", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["removed"] == [str(old)] and not old.exists() and fresh.exists()
