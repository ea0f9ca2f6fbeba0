"""Benchmarks app: upload (API, page, CLI), bad files, team scoping, calibration and validation jobs, pages."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from planner.benchmarks.models import BenchmarkRun, Validation
from planner.benchmarks.selectors import validation_badge
from planner.hardware.models import Deployment
from planner.jobs.models import Job
from planner.jobs.services import create_job
from planner.jobs.tasks import execute

pytestmark = pytest.mark.django_db
RUNS = Path(__file__).resolve().parents[3] / "fixtures" / "benchmarks" / "inference-perf-h100"
R70 = RUNS / "20260217-202857-llama-2-70b-tp4-general"
R7 = RUNS / "20260217-231439-llama-2-7b-tp1-general"


def zipped(path: Path, drop: str = "") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for p in sorted(path.rglob("*")):
            name = str(p.relative_to(path))
            if p.is_file() and not (drop and drop in name):
                zf.writestr(name, p.read_bytes())
    return buf.getvalue()


def upload(api, path: Path, **extra):
    f = SimpleUploadedFile(f"{path.name}.zip", zipped(path, extra.pop("drop", "")), content_type="application/zip")
    return api.post("/api/benchmarks/runs/", {"file": f, "gpu": "h100-80gb", **extra}, format="multipart")


def test_an_upload_stores_the_run_with_its_team_and_catalogue_deployment(cast):
    r = upload(cast.owner.api, R70)
    assert r.status_code == 201, r.content
    run = BenchmarkRun.objects.get(pk=r.json()["id"])
    assert run.team == cast.owner.team and run.tp == 4 and run.stage_count == 2 and not run.overloaded
    assert run.deployment.name == "llama2-70b/h100-80gb/tp4" and run.deployment.builtin
    assert cast.teammate.api.get(f"/api/benchmarks/runs/{run.pk}/").status_code == 200
    assert cast.outsider.api.get(f"/api/benchmarks/runs/{run.pk}/").status_code == 404
    assert cast.outsider.api.get("/api/benchmarks/runs/").json()["count"] == 0


def test_a_folder_without_stage_files_gets_a_400_naming_the_file_and_stores_nothing(cast):
    r = upload(cast.owner.api, R70, drop="stage_")
    assert r.status_code == 400
    err = r.json()["error"]
    assert "stage_0_lifecycle_metrics.json" in err["where"] and err["hint"] and err["request_id"]
    assert BenchmarkRun.objects.count() == 0


def test_engine_settings_without_tp_get_a_400_naming_file_and_field(cast, tmp_path):
    bad = tmp_path / "run"
    for p in R70.rglob("*"):
        if p.is_file():
            (bad / p.relative_to(R70)).parent.mkdir(parents=True, exist_ok=True)
            (bad / p.relative_to(R70)).write_bytes(p.read_bytes())
    (bad / "exp-config.yaml").write_text("model: meta-llama/Llama-2-70b-hf\nmax_num_seqs: 128\n")
    r = upload(cast.owner.api, bad)
    assert r.status_code == 400 and r.json()["error"]["where"] == "exp-config.yaml: tensor_parallelism"
    assert BenchmarkRun.objects.count() == 0


def test_an_unknown_gpu_gets_a_400_naming_the_field(cast):
    f = SimpleUploadedFile("r.zip", zipped(R70), content_type="application/zip")
    r = cast.owner.api.post("/api/benchmarks/runs/", {"file": f, "gpu": "tpu-v9"}, format="multipart")
    assert r.status_code == 400 and r.json()["error"]["where"].endswith("gpu")
    assert "h100-80gb" in r.json()["error"]["hint"]


def test_the_calibrate_endpoint_queues_a_job_and_refuses_a_single_run(cast, django_capture_on_commit_callbacks):
    a, b = upload(cast.owner.api, R70).json()["id"], upload(cast.owner.api, R7).json()["id"]
    with django_capture_on_commit_callbacks(execute=False):
        r = cast.owner.api.post("/api/benchmarks/runs/calibrate/", {"run_ids": [a, b], "holdout": 0.5},
                                format="json")
    assert r.status_code == 202 and r.json()["kind"] == "benchmarks.calibrate"
    assert Job.objects.get(pk=r.json()["id"]).params["run_ids"] == [a, b]
    r = cast.owner.api.post("/api/benchmarks/runs/calibrate/", {"run_ids": [a], "holdout": 0.5}, format="json")
    assert r.status_code == 400
    r = cast.outsider.api.post("/api/benchmarks/runs/calibrate/", {"run_ids": [a, b]}, format="json")
    assert r.status_code == 400 and "run_ids" in r.json()["error"]["where"]


def _run_job(team, user, kind, params, capture):
    with capture(execute=False):
        job = create_job(team=team, user=user, kind=kind, params=params)
    execute(job.pk)
    job.refresh_from_db()
    return job


def test_a_calibration_job_saves_a_new_version_with_its_heldout_error(cast, django_capture_on_commit_callbacks):
    a, b = upload(cast.owner.api, R70).json()["id"], upload(cast.owner.api, R7).json()["id"]
    builtin = Deployment.objects.get(builtin=True, name="llama2-70b/h100-80gb/tp4")
    before = (builtin.prefill, builtin.decode)
    params = {"run_ids": [a, b], "holdout": 0.5, "seed": 0, "seeds": 1, "maxiter": 5, "duration_scale": 0.02}
    job = _run_job(cast.owner.team, cast.owner.user, "benchmarks.calibrate", params,
                   django_capture_on_commit_callbacks)
    assert job.status == "succeeded", job.last_error
    made = job.result["deployments"]
    assert len(made) == 2 and {d["name"] for d in made} == {"llama2-70b/h100-80gb/tp4/physics-v1",
                                                            "llama2-7b/h100-80gb/tp1/physics-v1"}
    dep = Deployment.objects.get(pk=made[0]["deployment_id"])
    assert not dep.builtin and dep.team == cast.owner.team
    report = dep.fit_report["physics"]
    assert len(report["held_out"]) == 1 and report["heldout"]["e2e_mean"]["n"] >= 1
    assert set(report["trained_on"]) | set(report["held_out"]) == {a, b}
    kinds = {Validation.objects.get(pk=d["validation_id"]).kind for d in made}
    assert kinds == {"heldout", "heldout-other-models"}  # one model's run was held out, the other's was not
    v = Validation.objects.get(deployment__in=[d["deployment_id"] for d in made], kind="heldout")
    assert [r.pk for r in v.runs.all()] == report["held_out"] and {row["run"] for row in v.rows} == {
        BenchmarkRun.objects.get(pk=report["held_out"][0]).name}
    builtin.refresh_from_db()
    assert (builtin.prefill, builtin.decode) == before  # never overwritten
    job = _run_job(cast.owner.team, cast.owner.user, "benchmarks.calibrate", params,
                   django_capture_on_commit_callbacks)
    assert job.result["deployments"][0]["name"].endswith("/physics-v2")


def test_a_calibration_job_on_deleted_runs_fails_with_a_reason(cast, django_capture_on_commit_callbacks):
    job = _run_job(cast.owner.team, cast.owner.user, "benchmarks.calibrate", {"run_ids": [998, 999]},
                   django_capture_on_commit_callbacks)
    assert job.status == "failed" and "no longer exist" in job.last_error["message"]


def test_validation_job_and_page_say_how_well_a_deployment_is_checked(cast, client,
                                                                     django_capture_on_commit_callbacks):
    a = upload(cast.owner.api, R70).json()["id"]
    dep = Deployment.objects.get(builtin=True, name="llama2-70b/h100-80gb/tp4")
    client.force_login(cast.owner.user)
    page = client.get(f"/benchmarks/deployments/{dep.pk}/").content.decode()
    assert "not checked against real runs" in page
    job = _run_job(cast.owner.team, cast.owner.user, "benchmarks.validate",
                   {"run_ids": [a], "deployment_id": dep.pk, "seeds": 1}, django_capture_on_commit_callbacks)
    assert job.status == "succeeded", job.last_error
    badge = validation_badge(cast.owner.team, dep)
    assert badge["checked"] and badge["runs"] == 1
    page = client.get(f"/benchmarks/deployments/{dep.pk}/").content.decode()
    assert "checked against 1 real run: median E2E error" in page
    assert "checked against 1 real run: median E2E error" in client.get(f"/hardware/deployments/{dep.pk}/").content.decode()
    # the outsider's team has not checked it
    assert not validation_badge(cast.outsider.team, dep)["checked"]
    v = cast.owner.api.get(f"/api/benchmarks/validations/?deployment={dep.pk}").json()
    assert v["count"] == 1 and v["results"][0]["pooled"]["stages_scored"] == 2


def test_the_pages_list_upload_and_show_a_run(cast, client):
    client.force_login(cast.owner.user)
    r = client.post("/benchmarks/", {"file": SimpleUploadedFile("r.zip", zipped(R70)), "gpu": "h100-80gb"})
    assert r.status_code == 302
    run = BenchmarkRun.objects.get()
    html = client.get(f"/benchmarks/runs/{run.pk}/").content.decode()
    assert "12000 / 0" in html and "llama2-70b/h100-80gb/tp4" in html
    r = client.post("/benchmarks/", {"file": SimpleUploadedFile("r.zip", zipped(R70, "stage_")), "gpu": "h100-80gb"})
    assert r.status_code == 200 and "stage_0_lifecycle_metrics.json" in r.content.decode()
    assert BenchmarkRun.objects.count() == 1


def test_the_cli_imports_and_validates_printing_a_table_and_json(cast, capsys):
    call_command("import_benchmark", str(R70), "--gpu", "h100-80gb", "--team", "Fleet A", "--engine-version",
                 "0.15.1", "--json")
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] and out["imported"][0]["tp"] == 4
    assert BenchmarkRun.objects.get(pk=out["imported"][0]["id"]).engine["engine_version"] == "0.15.1"
    rid = out["imported"][0]["id"]
    call_command("validate", str(rid), "--team", "Fleet A", "--seeds", "1")
    text = capsys.readouterr().out.splitlines()
    assert text[0].startswith("deployment llama2-70b/h100-80gb/tp4")
    assert any(line.startswith("20260217-202857-llama-2-70b-tp4-general") for line in text)
    summary = json.loads(text[-1])
    assert summary["ok"] and summary["validations"][0]["pooled"]["stages_scored"] == 2


def test_a_calibration_on_overloaded_runs_only_fails_with_a_reason(cast, django_capture_on_commit_callbacks):
    runs = [upload(cast.owner.api, RUNS / name).json()["id"] for name in (
        "20260217-170634-llama-2-7b-tp1-reasoning", "20260218-065057-llama-2-70b-hf-tp4-reasoning")]
    job = _run_job(cast.owner.team, cast.owner.user, "benchmarks.calibrate",
                   {"run_ids": runs, "holdout": 0.5, "maxiter": 5}, django_capture_on_commit_callbacks)
    assert job.status == "failed" and "not overloaded" in job.last_error["message"]
    assert job.last_error["where"] == "run_ids" and not Deployment.objects.filter(name__contains="physics").exists()


def test_a_run_larger_than_the_body_cap_uploads_under_its_own_cap(cast, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000  # the cap of any other request body
    assert len(zipped(R70)) > 1000
    assert upload(cast.owner.api, R70).status_code == 201
    settings.BENCHMARK_UPLOAD_MAX_BYTES = 1000
    r = upload(cast.owner.api, R70)
    assert r.status_code == 413 and "BENCHMARK_UPLOAD_MAX_BYTES" in r.json()["error"]["hint"]
