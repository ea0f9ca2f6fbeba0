"""Catalogue API: built-ins visible to all and read-only; team entries for the team only."""

from __future__ import annotations

import pytest

from planner.hardware.models import Deployment, GpuType, ModelProfile

pytestmark = pytest.mark.django_db

NEW_GPU = {
    "name": "l40s-48gb",
    "memory_gb": 48,
    "vendor": "NVIDIA",
    "prices": [
        {
            "cloud": "acme",
            "region": "eu-1",
            "kind": "on_demand",
            "usd_per_gpu_hour": 1.5,
            "source": "quote from acme sales",
            "as_of": "2026-11-01",
            "assumed": False,
        }
    ],
}


def _builtin(name="llama2-70b/a100-80gb/tp8") -> Deployment:
    return Deployment.objects.get(builtin=True, name=name)


def _own_deployment(cast) -> dict:
    r = cast.owner.api.post(f"/api/hardware/deployments/{_builtin().pk}/copy/")
    assert r.status_code == 201, r.content
    return r.json()


def test_builtin_catalogue_is_loaded_after_migrate():
    assert GpuType.objects.filter(builtin=True).count() == 7  # 6 GPUs (A40 for PreServe) + the SLINFER Xeon (cpu)
    assert ModelProfile.objects.filter(builtin=True).count() == 6
    assert Deployment.objects.filter(builtin=True, basis="fitted").count() == 20  # 12 SageServe + 8 SLINFER


def test_every_team_sees_the_builtins(cast):
    for who in (cast.owner, cast.outsider):
        r = who.api.get("/api/hardware/deployments/", {"builtin": "true", "page_size": 100})
        assert r.status_code == 200
        assert r.json()["count"] == Deployment.objects.filter(builtin=True).count()


def test_anonymous_callers_see_nothing(client):
    assert client.get("/api/hardware/deployments/").status_code in (401, 403)


def test_a_builtin_cannot_be_changed_or_deleted_and_the_error_says_copy_it(cast):
    pk = _builtin().pk
    r = cast.owner.api.patch(f"/api/hardware/deployments/{pk}/", {"max_batch_size": 8}, format="json")
    assert r.status_code == 403
    assert "copy" in r.json()["error"]["message"]
    assert cast.owner.api.delete(f"/api/hardware/deployments/{pk}/").status_code == 403
    assert _builtin().max_batch_size == 512


def test_a_copy_belongs_to_the_team_and_its_teammates_can_edit_it(cast):
    mine = _own_deployment(cast)
    assert mine["builtin"] is False and mine["editable"] is True and mine["name"] == "llama2-70b/a100-80gb/tp8"
    r = cast.teammate.api.patch(f"/api/hardware/deployments/{mine['id']}/", {"max_batch_size": 64}, format="json")
    assert r.status_code == 200, r.content
    assert r.json()["max_batch_size"] == 64


def test_an_outsider_neither_sees_nor_changes_another_teams_entry(cast):
    mine = _own_deployment(cast)
    api = cast.outsider.api
    assert api.get(f"/api/hardware/deployments/{mine['id']}/").status_code == 404
    assert api.patch(f"/api/hardware/deployments/{mine['id']}/", {"tp": 4}, format="json").status_code == 404
    assert api.delete(f"/api/hardware/deployments/{mine['id']}/").status_code == 404
    names = [d["id"] for d in api.get("/api/hardware/deployments/", {"builtin": "false"}).json()["results"]]
    assert mine["id"] not in names


def test_changing_coefficients_recomputes_theta_unless_it_is_given(cast):
    mine = _own_deployment(cast)
    url = f"/api/hardware/deployments/{mine['id']}/"
    slower = {**mine["decode"], "c0": mine["decode"]["c0"] * 2}
    r = cast.owner.api.patch(url, {"decode": slower}, format="json")
    assert r.status_code == 200 and r.json()["theta_tps"] < mine["theta_tps"]
    r = cast.owner.api.patch(url, {"theta_tps": 1234.5}, format="json")
    assert r.json()["theta_tps"] == 1234.5


def test_a_deployment_can_be_created_by_hand_and_gets_kv_capacity_and_theta(cast):
    model = ModelProfile.objects.get(builtin=True, name="llama2-70b")
    gpu = GpuType.objects.get(builtin=True, name="h100-80gb")
    body = {
        "model": model.pk,
        "gpu": gpu.pk,
        "tp": 4,
        "prefill": {"c0": 0.02, "c1": 1e-4, "c2": 0.0},
        "decode": {"c0": 0.03, "c_batch": 3e-4, "c_ctx": 0.0},
    }
    r = cast.owner.api.post("/api/hardware/deployments/", body, format="json")
    assert r.status_code == 201, r.content
    d = r.json()
    # 4 x 80 GB x 0.9 - 137.96 GB = 150.04 GB of KV at 327,680 B/token
    assert d["kv_capacity_tokens"] == int(150.04e9 // 327_680)
    assert d["theta_tps"] > 0 and d["basis"] == "manual" and d["name"] == "llama2-70b/h100-80gb/tp4"
    spec = cast.owner.api.get(f"/api/hardware/deployments/{d['id']}/engine-spec/").json()
    assert spec["price_per_instance_hour"]["on_demand"] == pytest.approx(98.32 / 2)


def test_a_deployment_that_cannot_hold_its_weights_is_refused_with_a_hint(cast):
    model = ModelProfile.objects.get(builtin=True, name="bloom-176b")
    gpu = GpuType.objects.get(builtin=True, name="a100-80gb")
    body = {
        "model": model.pk,
        "gpu": gpu.pk,
        "tp": 2,
        "prefill": {"c0": 0.02, "c1": 1e-4, "c2": 0.0},
        "decode": {"c0": 0.03, "c_batch": 3e-4, "c_ctx": 0.0},
    }
    r = cast.owner.api.post("/api/hardware/deployments/", body, format="json")
    assert r.status_code == 400
    assert "do not fit" in r.json()["error"]["message"] and r.json()["error"]["hint"]


def test_another_teams_gpu_cannot_be_referenced(cast):
    r = cast.owner.api.post("/api/hardware/gpus/", NEW_GPU, format="json")
    assert r.status_code == 201, r.content
    model = ModelProfile.objects.get(builtin=True, name="llama3.2-3b")
    body = {
        "model": model.pk,
        "gpu": r.json()["id"],
        "tp": 1,
        "prefill": {"c0": 0.02, "c1": 1e-5, "c2": 0.0},
        "decode": {"c0": 0.01, "c_batch": 1e-4, "c_ctx": 0.0},
    }
    assert cast.outsider.api.post("/api/hardware/deployments/", body, format="json").status_code == 400
    assert cast.teammate.api.post("/api/hardware/deployments/", body, format="json").status_code == 201


def test_gpu_prices_need_a_source_and_date(cast):
    bad = {**NEW_GPU, "prices": [{**NEW_GPU["prices"][0], "source": ""}]}
    r = cast.owner.api.post("/api/hardware/gpus/", bad, format="json")
    assert r.status_code == 400
    assert not GpuType.objects.filter(name="l40s-48gb").exists()


def test_deployments_filter_by_model_gpu_tp_and_basis(cast):
    api = cast.owner.api
    r = api.get("/api/hardware/deployments/", {"model__name": "llama2-70b", "gpu__name": "h100-80gb", "tp": 8})
    assert [d["name"] for d in r.json()["results"]] == ["llama2-70b/h100-80gb/tp8"]
    r = api.get("/api/hardware/deployments/", {"basis": "estimated", "page_size": 100})
    assert r.json()["count"] == 16 and all(d["estimated"] for d in r.json()["results"])


def test_a_model_profile_computes_kv_bytes_and_weights(cast):
    body = {"name": "mistral-7b", "parameters_billion": 7.24, "layers": 32, "kv_heads": 8, "head_dim": 128}
    r = cast.owner.api.post("/api/hardware/models/", body, format="json")
    assert r.status_code == 201, r.content
    assert r.json()["kv_bytes_per_token"] == 2 * 32 * 8 * 128 * 2
    assert r.json()["weights_gb"] == pytest.approx(14.48)
    assert cast.outsider.api.get(f"/api/hardware/models/{r.json()['id']}/").status_code == 404


def test_a_teams_own_deployment_shadows_the_builtin_of_the_same_name(cast):
    from planner.hardware.selectors import engine_spec_for

    name = "llama2-70b/a100-80gb/tp8"
    assert engine_spec_for(cast.owner.team, name)["max_batch_size"] == 512
    mine = _own_deployment(cast)
    cast.owner.api.patch(f"/api/hardware/deployments/{mine['id']}/", {"max_batch_size": 16}, format="json")
    assert engine_spec_for(cast.owner.team, name)["max_batch_size"] == 16
    assert engine_spec_for(cast.outsider.team, name)["max_batch_size"] == 512
    assert engine_spec_for(cast.owner.team, "nope/none/tp1") is None


def test_a_second_deployment_with_the_same_name_is_refused_not_crashed(cast):
    mine = _own_deployment(cast)
    body = {
        "model": mine["model"],
        "gpu": mine["gpu"],
        "tp": 8,
        "prefill": {"c0": 0.02, "c1": 1e-4},
        "decode": {"c0": 0.03, "c_batch": 3e-4},
    }
    r = cast.owner.api.post("/api/hardware/deployments/", body, format="json")
    assert r.status_code == 400
    assert "already has a deployment" in r.json()["error"]["message"]
    body["tp"] = 4  # c2 and c_ctx may be left out: they default to 0
    r = cast.owner.api.post("/api/hardware/deployments/", body, format="json")
    assert r.status_code == 201 and r.json()["prefill"]["c2"] == 0.0
    r = cast.owner.api.patch(f"/api/hardware/deployments/{r.json()['id']}/", {"tp": 8}, format="json")
    assert r.status_code == 400 and Deployment.objects.filter(team=cast.owner.team).count() == 2


def test_unknown_coefficient_names_are_refused(cast):
    body = {
        "model": ModelProfile.objects.get(builtin=True, name="llama3.2-3b").pk,
        "gpu": GpuType.objects.get(builtin=True, name="h100-80gb").pk,
        "tp": 1,
        "prefill": {"c0": 0.02, "c1": 1e-5, "c3": 1.0},
        "decode": {"c0": 0.01, "c_batch": 1e-4},
    }
    r = cast.owner.api.post("/api/hardware/deployments/", body, format="json")
    assert r.status_code == 400 and r.json()["error"]["where"] == "deployment.prefill"


def test_a_gpu_name_already_used_by_the_team_is_refused(cast):
    assert cast.owner.api.post("/api/hardware/gpus/", NEW_GPU, format="json").status_code == 201
    r = cast.teammate.api.post("/api/hardware/gpus/", NEW_GPU, format="json")
    assert r.status_code == 400 and "already has a GPU type" in r.json()["error"]["message"]
    assert cast.outsider.api.post("/api/hardware/gpus/", NEW_GPU, format="json").status_code == 201


def test_editing_a_deployment_keeps_its_fit_report_and_replots_hand_edited_coefficients(cast):
    mine = _own_deployment(cast)
    dep = Deployment.objects.get(pk=mine["id"])
    report, points = dep.fit_report, dep.points
    cast.owner.api.patch(f"/api/hardware/deployments/{dep.pk}/", {"max_batch_size": 64}, format="json")
    dep.refresh_from_db()
    assert dep.fit_report == report and dep.points == points
    doubled = {k: 2 * v for k, v in dep.decode.items()}
    cast.owner.api.patch(f"/api/hardware/deployments/{dep.pk}/", {"decode": doubled}, format="json")
    dep.refresh_from_db()
    assert "edited" in dep.fit_report
    assert [p["token_time_fit_s"] for p in dep.points] == pytest.approx([2 * p["token_time_fit_s"] for p in points])


def test_editing_a_teams_gpu_recomputes_its_deployments(cast):
    gpu = cast.owner.api.post("/api/hardware/gpus/", NEW_GPU, format="json").json()
    model = ModelProfile.objects.get(builtin=True, name="llama3.1-8b")
    body = {
        "model": model.pk,
        "gpu": gpu["id"],
        "tp": 1,
        "prefill": {"c0": 0.02, "c1": 1e-4},
        "decode": {"c0": 0.03, "c_batch": 3e-4},
    }
    dep = cast.owner.api.post("/api/hardware/deployments/", body, format="json").json()
    # 48 GB x 0.9 - 16.06 GB = 27.14 GB of KV at 131,072 B/token
    assert dep["kv_capacity_tokens"] == int(27.14e9 // 131_072)
    r = cast.owner.api.patch(f"/api/hardware/gpus/{gpu['id']}/", {"memory_gb": 24, "name": "l40s-24gb"}, format="json")
    assert r.status_code == 200, r.content
    d = Deployment.objects.get(pk=dep["id"])
    assert d.kv_capacity_tokens == int((24 * 0.9 - 16.06) * 1e9 // 131_072)
    assert d.name == "llama3.1-8b/l40s-24gb/tp1"
    r = cast.owner.api.patch(f"/api/hardware/gpus/{gpu['id']}/", {"memory_gb": 16}, format="json")
    assert r.status_code == 400 and "do not fit" in r.json()["error"]["message"]
    assert GpuType.objects.get(pk=gpu["id"]).memory_gb == 24  # nothing half-stored
