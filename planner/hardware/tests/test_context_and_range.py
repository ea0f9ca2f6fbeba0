"""Context limits and fitted ranges in the catalogue: built-in values, API, pages, edits."""

from __future__ import annotations

import pytest

from planner.hardware.models import Deployment, ModelProfile

pytestmark = pytest.mark.django_db


def _builtin(name="llama2-70b/a100-80gb/tp8") -> Deployment:
    return Deployment.objects.get(builtin=True, name=name)


def test_builtin_models_carry_their_published_context():
    got = dict(ModelProfile.objects.filter(builtin=True).values_list("name", "max_model_len"))
    assert got == {"llama2-70b": 4096, "llama2-7b": 4096, "llama2-13b": 4096, "bloom-176b": 2048,
                   "llama3.1-8b": 131072, "llama3.2-3b": 131072}
    assert all(ModelProfile.objects.filter(builtin=True).values_list("max_model_len_source", flat=True))


def test_every_builtin_deployment_has_a_context_limit_and_a_measured_range():
    for d in Deployment.objects.filter(builtin=True):
        assert d.context_limit == d.model.max_model_len, d.name
        r = d.fitted_range
        assert r["prompt_tokens"][0] <= r["prompt_tokens"][1] and r["batch_size"][0] >= 1, d.name
    # SageServe's Llama-2-70B measurements: prompts 128..8192, batch 1..64 (perf_model.csv, TP8 A100)
    r = _builtin().fitted_range
    assert (r["prompt_tokens"], r["batch_size"]) == ([128.0, 8192.0], [1.0, 64.0])
    # an H200 estimate is scaled from the H100 fit: same measured range as its base
    assert _builtin("llama2-70b/h200-141gb/tp8").fitted_range == _builtin("llama2-70b/h100-80gb/tp8").fitted_range


def test_api_shows_limit_and_range_and_a_team_copy_can_lower_the_limit(cast):
    d = cast.owner.api.get(f"/api/hardware/deployments/{_builtin().pk}/").json()
    assert d["context_limit"] == 4096 and d["max_model_len"] == 4096
    assert d["fitted_range"]["prompt_tokens"] == [128.0, 8192.0]
    m = cast.owner.api.get(f"/api/hardware/models/{_builtin().model_id}/").json()
    assert m["max_model_len"] == 4096 and "Llama 2" in m["max_model_len_source"]
    mine = cast.owner.api.post(f"/api/hardware/deployments/{_builtin().pk}/copy/").json()
    r = cast.owner.api.patch(f"/api/hardware/deployments/{mine['id']}/", {"max_model_len": 2048}, format="json")
    assert r.status_code == 200, r.content
    assert r.json()["context_limit"] == 2048 and r.json()["fitted_range"]["prompt_tokens"] == [128.0, 8192.0]
    bad = cast.owner.api.patch(f"/api/hardware/deployments/{mine['id']}/", {"max_model_len": 8192}, format="json")
    assert bad.status_code == 400
    err = bad.json()["error"]
    assert "4096" in err["message"] and err["where"].endswith("max_model_len") and err["hint"]


def test_pages_show_limit_and_range(client, cast):
    client.force_login(cast.owner.user)
    html = client.get("/hardware/").content.decode()
    assert "Context limit" in html and "128–8192" in html
    html = client.get(f"/hardware/deployments/{_builtin().pk}/").content.decode()
    assert 'id="context-limit"' in html and "4096 tokens" in html
    assert "prompts 128–8192 tokens" in html and "batch 1–64 requests" in html
