"""A benchmark run uploaded through the API is calibrated by a real celery worker (Redis, PostgreSQL)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from planner.hardware.models import Deployment
from planner.jobs.models import Job
from tests.integration.conftest import wait_for_job

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
RUNS = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks" / "inference-perf-h100"


def _zip(path: Path) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for p in sorted(path.rglob("*")):
            if p.is_file():
                zf.writestr(str(p.relative_to(path)), p.read_bytes())
    return buf.getvalue()


def test_a_calibration_job_runs_on_the_worker_and_saves_a_new_version(cast, celery_worker_process):
    ids = []
    for name in ("20260217-202857-llama-2-70b-tp4-general", "20260217-203421-llama-2-70b-hf-tp4-codegen"):
        f = SimpleUploadedFile(f"{name}.zip", _zip(RUNS / name), content_type="application/zip")
        r = cast.owner.api.post("/api/benchmarks/runs/", {"file": f, "gpu": "h100-80gb"}, format="multipart")
        assert r.status_code == 201, r.content
        ids.append(r.json()["id"])
    r = cast.owner.api.post("/api/benchmarks/runs/calibrate/", {"run_ids": ids, "holdout": 0.5, "maxiter": 5,
                                                                 "seeds": 1}, format="json")
    assert r.status_code == 202
    job = Job.objects.get(pk=r.json()["id"])
    wait_for_job(job, timeout=300)
    assert job.status == "succeeded", job.last_error
    dep = Deployment.objects.get(pk=job.result["deployments"][0]["deployment_id"])
    assert dep.name == "llama2-70b/h100-80gb/tp4/physics-v1" and not dep.builtin
    v = cast.owner.api.get(f"/api/benchmarks/validations/?deployment={dep.pk}").json()
    assert v["count"] == 1 and v["results"][0]["kind"] == "heldout"
