"""import_profile (CLI and API) on good and bad files: clear errors, nothing half-stored."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from planner.hardware.models import Deployment, GpuPrice, GpuType, ModelProfile

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "hardware"
PERF = FIXTURES / "sageserve" / "perf_model.csv"
HEADER = "model,hardware,prompt_size,batch_size,token_size,peak_power,average_power,prompt_time,token_time,e2e_time,tensor_parallel\n"


def _counts():
    return (Deployment.objects.count(), GpuType.objects.count(), ModelProfile.objects.count(), GpuPrice.objects.count())


def _run(*args) -> dict:
    out = io.StringIO()
    call_command("import_profile", *args, "--json", stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def test_importing_perf_model_csv_fits_one_deployment_per_group(cast):
    out = _run(str(PERF), "--team", "Fleet A")
    names = {d["name"] for d in out["deployments"]}
    # 3 GPUs (incl. the power-capped H100) x llama2-70b TP2/4/8 + bloom-176b TP8
    assert len(names) == 12 and "llama2-70b/h100-80gb-pcap/tp8" in names
    d = Deployment.objects.get(team=cast.owner.team, name="llama2-70b/a100-80gb/tp8")
    assert d.basis == "fitted" and d.fit_report["units"]["time_unit"] == "ms"
    held = d.fit_report["heldout"]
    assert held["token_time"]["median_ape"] < 0.05 and held["prompt_time"]["n"] > 10
    # the same coefficients as the built-in entry (same data, seed and split)
    builtin = Deployment.objects.get(builtin=True, name=d.name)
    assert d.prefill == pytest.approx(builtin.prefill) and d.decode == pytest.approx(builtin.decode)


def test_importing_again_updates_instead_of_duplicating(cast):
    _run(str(FIXTURES / "sageserve" / "Llama-3.1-8B-tp-2.csv"), "--team", "Fleet A")
    out = _run(str(FIXTURES / "sageserve" / "Llama-3.1-8B-tp-2.csv"), "--team", "Fleet A", "--seed", "3")
    assert [d["created"] for d in out["deployments"]] == [False]
    dep = Deployment.objects.get(team=cast.owner.team)
    assert dep.name == "llama3.1-8b/a100-80gb/tp2"  # the file's "Llama-3.1-8B" is an alias
    assert dep.fit_report["units"] == {
        "time_unit": "s",
        "token_time": "total",
        "reason": dep.fit_report["units"]["reason"],
    }


def test_importing_the_example_catalogue_json(cast):
    out = _run(str(FIXTURES / "example_catalogue.json"), "--team", "Fleet A")
    assert out["format"] == "json" and len(out["deployments"]) == 2
    mine = Deployment.objects.get(team=cast.owner.team, name="mistral-7b/l40s-48gb/tp1")
    spec = mine.engine_spec()
    assert spec["price_per_instance_hour"]["on_demand"] == pytest.approx(1.80)
    slow = Deployment.objects.get(team=cast.owner.team, name="llama2-70b/h100-80gb/tp8")
    assert slow.gpu.builtin and slow.vm_acquire_s == 300 and slow.load_same_region_s == 600


@pytest.mark.parametrize(
    "name, content, where, words",
    [
        (
            "bad.csv",
            HEADER + "llama2-70b,a100-80gb,512,1,128,1,1,94,45,5800,8\n"
            "llama2-70b,a100-80gb,512,1,128,1,1,n/a,45,5800,8\n",
            "line 3, column prompt_time",
            "not a number",
        ),
        (
            "unknown.csv",
            HEADER
            + "".join(f"llama2-70b,a100-80gb,{p},1,128,1,1,{p / 5},45,5800,8\n" for p in (128, 256, 512, 1024))
            + "".join(f"mystery-9b,a100-80gb,{p},1,128,1,1,{p / 9},20,2600,1\n" for p in (128, 256, 512, 1024)),
            "line 6, column model",
            "unknown model",
        ),
        (
            "gpu.csv",
            HEADER + "llama2-70b,tpu-v9,512,1,128,1,1,94,45,5800,8\n",
            "line 2, column hardware",
            "unknown GPU type",
        ),
        (
            "cat.json",
            json.dumps(
                {
                    "gpu_types": [{"name": "ok-gpu", "memory_gb": 40}],
                    "deployments": [
                        {
                            "model": "llama2-70b",
                            "gpu": "ok-gpu",
                            "tp": 1,
                            "prefill": {"c0": 0.1, "c1": 0.001, "c2": 0},
                            "decode": {"c0": 0.1, "c_batch": 0.001, "c_ctx": 0},
                        }
                    ],
                }
            ),
            "$.deployments[0].tp",
            "do not fit",
        ),
        ("cat.json", '{"models": [}', "line 1, column 13", "invalid JSON"),
        (
            "cat.json",
            json.dumps(
                {"deployments": [{"model": "llama2-70b", "gpu": "h100-80gb", "tp": 8, "prefill": {"c0": "fast"}}]}
            ),
            "$.deployments[0].prefill.c0",
            "must be a number",
        ),
    ],
)
def test_a_bad_file_names_the_place_and_stores_nothing(cast, tmp_path, name, content, where, words):
    path = tmp_path / name
    path.write_text(content)
    before = _counts()
    out = io.StringIO()
    with pytest.raises(CommandError) as err:
        call_command("import_profile", str(path), "--team", "Fleet A", "--json", stdout=out)
    payload = json.loads(out.getvalue().strip())
    assert payload["ok"] is False
    assert payload["error"]["where"] == where and words in payload["error"]["message"]
    assert words in str(err.value)
    assert _counts() == before


def test_the_command_needs_an_existing_team(cast):
    with pytest.raises(CommandError, match="no team"):
        call_command("import_profile", str(PERF), "--team", "Nobody")


def test_upload_through_the_api_and_its_errors(cast):
    f = SimpleUploadedFile("Llama-3.2-3B-tp-2.csv", (FIXTURES / "sageserve" / "Llama-3.2-3B-tp-2.csv").read_bytes())
    r = cast.teammate.api.post("/api/hardware/import/", {"file": f, "split": "configs"}, format="multipart")
    assert r.status_code == 201, r.content
    dep = Deployment.objects.get(pk=r.json()["deployments"][0]["id"])
    assert dep.team == cast.owner.team and dep.fit_report["split"] == "configs"
    bad = SimpleUploadedFile("bad.csv", b"model,hardware\nx,y\n")
    before = _counts()
    r = cast.owner.api.post("/api/hardware/import/", {"file": bad}, format="multipart")
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["where"] == "line 1 (header)" and "missing column" in err["message"] and err["hint"]
    assert _counts() == before
    assert cast.outsider.api.get(f"/api/hardware/deployments/{dep.pk}/").status_code == 404


def test_the_richer_prefill_form_fits_better_and_reaches_the_engine_spec(cast):
    # the same table fitted with both forms; the richer one's held-out prompt_time error is lower on the groups
    # whose batched prefills cost more than one prompt of the same total (bloom-176b H100: 16 x 512 vs 8192)
    contract = _run(str(PERF), "--team", "Fleet A")
    rich = _run(str(PERF), "--team", "Fleet B", "--prefill-form", "rich")
    err = {
        kind: sorted(d["heldout"]["prompt_time"]["median_ape"] for d in out["deployments"])
        for kind, out in (("contract", contract), ("rich", rich))
    }
    assert sum(err["rich"]) < 0.8 * sum(err["contract"]), err
    dep = Deployment.objects.get(team=cast.outsider.team, name="bloom-176b/h100-80gb/tp8")
    assert dep.prefill_c_sq > 0 or dep.prefill_c_req > 0
    assert dep.fit_report["prefill_form"] == "rich"
    spec = dep.engine_spec()
    assert set(spec["prefill"]) >= {"c_sq", "c_req"}
    from simulations.engine.scenario.config import DeploymentSpec

    parsed = DeploymentSpec.from_dict(spec)
    assert (parsed.prefill.c_sq, parsed.prefill.c_req) == (dep.prefill_c_sq, dep.prefill_c_req)
    # the contract-form deployment carries no richer terms
    plain = Deployment.objects.get(team=cast.owner.team, name="bloom-176b/h100-80gb/tp8")
    assert "c_sq" not in plain.engine_spec()["prefill"]
