"""Catalogue pages: list, detail with the fit plot and error table, forms, upload; team scoping."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from planner.hardware.models import Deployment, GpuType, ModelProfile

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "hardware"


@pytest.fixture
def owner_client(client, cast):
    client.force_login(cast.owner.user)
    return client


def test_the_catalogue_page_lists_builtins_and_filters(owner_client):
    r = owner_client.get("/hardware/")
    assert r.status_code == 200
    html = r.content.decode()
    assert "llama2-70b/a100-80gb/tp8" in html and "mi300x-192gb" in html and "(assumed)" in html
    r = owner_client.get("/hardware/", {"gpu": "h200-141gb"})
    assert "llama2-70b/a100-80gb/tp8" not in r.content.decode()


def test_a_fitted_deployment_page_shows_the_plot_errors_and_flags(owner_client):
    dep = Deployment.objects.get(builtin=True, name="llama2-70b/a100-80gb/tp2")
    r = owner_client.get(f"/hardware/deployments/{dep.pk}/")
    html = r.content.decode()
    assert r.status_code == 200
    assert 'id="fit-plot"' in html and "vendor/plotly.min.js" in html and "cdn" not in html.lower()
    assert 'id="errors"' in html and "held-out rows" in html
    assert "prompt_time:non_monotonic" in html  # the batch-64 collapse
    figure = json.loads(r.context["figure_json"])
    assert len(figure["data"]) >= 4
    assert json.loads(r.context["spec_json"])["kv_capacity_tokens"] == 18432
    assert "Copy to my team" in html and "/edit/" not in html


def test_an_estimated_deployment_page_states_its_rule(owner_client):
    dep = Deployment.objects.get(builtin=True, name="llama2-70b/mi300x-192gb/tp8")
    html = owner_client.get(f"/hardware/deployments/{dep.pk}/").content.decode()
    assert "Scaling rule" in html and "spec_ratio" in html and "estimated" in html


def test_copy_then_edit_through_the_pages(owner_client, cast):
    dep = Deployment.objects.get(builtin=True, name="bloom-176b/h100-80gb/tp8")
    r = owner_client.post(f"/hardware/deployments/{dep.pk}/copy/")
    copy = Deployment.objects.get(team=cast.owner.team)
    assert r.status_code == 302 and r["Location"].endswith(f"/hardware/deployments/{copy.pk}/")
    form = owner_client.get(f"/hardware/deployments/{copy.pk}/edit/")
    assert form.status_code == 200
    data = {k: v for k, v in form.context["form"].initial.items() if v is not None}
    data.update({"max_batch_size": 32, "theta_tps": ""})
    r = owner_client.post(f"/hardware/deployments/{copy.pk}/edit/", data)
    assert r.status_code == 302, r.context["form"].errors if r.context else r
    copy.refresh_from_db()
    assert copy.max_batch_size == 32
    assert owner_client.get(f"/hardware/deployments/{dep.pk}/edit/").status_code == 403


def test_an_outsider_gets_404_for_another_teams_deployment_page(client, cast):
    dep = Deployment.objects.get(builtin=True, name="bloom-176b/h100-80gb/tp8")
    client.force_login(cast.owner.user)
    client.post(f"/hardware/deployments/{dep.pk}/copy/")
    copy = Deployment.objects.get(team=cast.owner.team)
    client.force_login(cast.outsider.user)
    assert client.get(f"/hardware/deployments/{copy.pk}/").status_code == 404
    assert client.get(f"/hardware/deployments/{dep.pk}/").status_code == 200


def test_new_gpu_with_prices_and_new_model_through_the_forms(owner_client, cast):
    r = owner_client.post(
        "/hardware/gpus/new/",
        {
            "name": "l4-24gb",
            "memory_gb": 24,
            "gpus_per_vm": 8,
            "prices-TOTAL_FORMS": 3,
            "prices-INITIAL_FORMS": 0,
            "prices-0-cloud": "gcp",
            "prices-0-region": "us-central1",
            "prices-0-kind": "on_demand",
            "prices-0-usd_per_gpu_hour": 0.8,
            "prices-0-source": "a quote",
            "prices-0-as_of": "2026-11-01",
        },
    )
    assert r.status_code == 302
    gpu = GpuType.objects.get(team=cast.owner.team, name="l4-24gb")
    assert gpu.prices.get().source == "a quote"
    r = owner_client.post(
        "/hardware/models/new/",
        {"name": "qwen-7b", "parameters_billion": 7.6, "layers": 28, "kv_heads": 4, "head_dim": 128, "dtype_bytes": 2},
    )
    assert r.status_code == 302
    assert ModelProfile.objects.get(team=cast.owner.team).kv_bytes_per_token == 2 * 28 * 4 * 128 * 2


def test_upload_page_imports_a_table_and_shows_errors(owner_client, cast):
    data = (FIXTURES / "sageserve" / "Llama-3.1-8B-tp-4.csv").read_bytes()
    r = owner_client.post(
        "/hardware/upload/",
        {
            "file": SimpleUploadedFile("t.csv", data),
            "time_unit": "auto",
            "token_time": "auto",
            "split": "rows",
            "holdout": 0.2,
            "seed": 0,
            "loss": "l1",
        },
    )
    assert r.status_code == 200 and "llama3.1-8b/a100-80gb/tp4" in r.content.decode()
    held = Deployment.objects.get(team=cast.owner.team).fit_report["heldout"]["prompt_time"]["median_ape"]
    assert f"{100 * held:.1f} %" in r.content.decode()
    assert Deployment.objects.filter(team=cast.owner.team).count() == 1
    bad = data.replace(b"0.03297734260559082", b"fast", 1)
    r = owner_client.post(
        "/hardware/upload/",
        {
            "file": SimpleUploadedFile("t.csv", bad),
            "time_unit": "auto",
            "token_time": "auto",
            "split": "rows",
            "holdout": 0.2,
            "seed": 0,
            "loss": "l1",
        },
    )
    html = r.content.decode()
    assert "line 2, column prompt_time" in html and "fix the value" in html


def test_the_upload_page_fits_the_richer_prefill_form_on_request(owner_client, cast):
    data = (FIXTURES / "sageserve" / "perf_model.csv").read_bytes()
    r = owner_client.post(
        "/hardware/upload/",
        {"file": SimpleUploadedFile("t.csv", data), "time_unit": "auto", "token_time": "auto", "split": "rows",
         "holdout": 0.2, "seed": 0, "loss": "l1", "prefill_form": "rich"},
    )
    assert r.status_code == 200
    deps = Deployment.objects.filter(team=cast.owner.team)
    assert deps and all(d.fit_report["prefill_form"] == "rich" for d in deps)
    dep = next(d for d in deps if d.prefill_c_sq or d.prefill_c_req)
    page = owner_client.get(f"/hardware/deployments/{dep.pk}/").content.decode()
    assert "rich prefill form" in page and "Σprompt²" in page and "c_sq" in page.split('id="engine-spec"')[1]


def test_a_slinfer_cpu_deployment_page_shows_its_device_power_plot_and_cross_validated_error(owner_client):
    dep = Deployment.objects.get(name="llama2-7b/xeon-6462c/tp1", builtin=True)
    assert dep.device_kind == "cpu" and dep.device_power["busy_w"] == 250
    html = owner_client.get(f"/hardware/deployments/{dep.pk}/").content.decode()
    assert 'id="device"' in html and "CPU: idle 80 W, busy 250 W per device" in html and "(assumed)" in html
    assert "fit-plot" in html and "5-fold cross-validation" in html
    listing = owner_client.get("/hardware/").content.decode()
    assert "xeon-6462c" in listing and "CPU: idle 80, busy 250" in listing


def test_a_team_sets_its_own_watts_on_a_copied_deployment_through_the_api(owner_client, cast):
    dep = Deployment.objects.get(name="llama2-7b/a100-80gb/tp1", builtin=True)
    copy = cast.owner.api.post(f"/api/hardware/deployments/{dep.pk}/copy/").json()
    r = cast.owner.api.patch(f"/api/hardware/deployments/{copy['id']}/",
                             {"idle_w": 60.0, "busy_w": 300.0, "power_source": "measured with a meter",
                              "power_assumed": False}, format="json")
    assert r.status_code == 200, r.content
    spec = cast.owner.api.get(f"/api/hardware/deployments/{copy['id']}/engine-spec/").json()
    assert spec["device"] == {"kind": "gpu", "idle_w": 60.0, "busy_w": 300.0, "source": "measured with a meter",
                              "assumed": False}
    bad = cast.owner.api.patch(f"/api/hardware/deployments/{copy['id']}/", {"idle_w": 400.0, "busy_w": 300.0},
                               format="json")
    assert bad.status_code == 400 and "busy_w" in bad.content.decode()


def test_every_deployment_row_shows_its_price_per_instance_hour_and_a_theta_in_words(owner_client):
    import re

    html = owner_client.get("/hardware/").content.decode()
    rows = re.findall(r"<tr>\s*<td><a href=\"/hardware/deployments/\d+/\">([^<]+)</a>(.*?)</tr>", html, re.S)
    assert len(rows) == Deployment.objects.filter(team=None).count()
    for name, row in rows:
        assert re.search(r"data-price-per-instance-hour>\$[\d,.]+<", row), name
        theta = re.search(r"data-theta>(.*?)</td>", row, re.S).group(1)
        assert theta.strip() != "0", f"{name}: theta 0 shown as a number"
    h100 = dict(rows)["llama2-70b/h100-80gb/tp8"]
    assert "$98.32" in h100  # 8 x the catalogue's $12.29 per H100-hour, as the simulator bills it
    assert "none: misses the target" in dict(rows)["llama2-13b/xeon-6462c/tp1"]
    assert "estimated <span class=\"status\">estimated" not in html


def test_a_deployment_page_shows_its_price_per_instance_hour(owner_client):
    dep = Deployment.objects.get(team=None, name="llama2-70b/h100-80gb/tp8")
    html = owner_client.get(f"/hardware/deployments/{dep.pk}/").content.decode()
    assert "$98.32 on demand (8 GPUs per instance)" in html
