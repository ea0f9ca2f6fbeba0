"""The generator's new kinds through the synthesise API, page and command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client

from planner.ingest.normalised import read_trace
from planner.traces.models import Trace

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "workloads"
NATIVE = "arrival_s,input_tokens,output_tokens\n0,100,10\n5,200,20\n65,300,30\n"

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def synth(client, spec, **extra):
    return client.post("/api/traces/synthesise/", {"spec": spec, **extra}, format="json")


def test_every_bundled_generator_fixture_synthesises_through_the_api(cast):
    for name in ("poisson_sharegpt", "gamma_bursty", "batch_dump", "slinfer_32_functions"):
        response = synth(cast.owner.api, json.loads((FIXTURES / f"{name}.json").read_text()), name=name)
        assert response.status_code == 201, (name, response.content)
        assert response.json()["job"]["status"] == "succeeded"
    slinfer = Trace.objects.get(name="slinfer_32_functions")
    assert read_trace(slinfer.normalised_file)["model"].nunique() == 32


def test_stream_kinds_take_lengths_from_a_teams_trace_and_refuse_paths(cast):
    trace_id = cast.owner.api.post(
        "/api/traces/", {"file": SimpleUploadedFile("t.csv", NATIVE.encode())}, format="multipart").json()["id"]
    spec = {"kind": "gamma", "rate_rps": 2.0, "cv": 2.0, "duration_s": 60, "seed": 1}
    ok = synth(cast.owner.api, spec, token_trace=trace_id)
    assert ok.status_code == 201, ok.content
    frame = read_trace(Trace.objects.get(pk=ok.json()["id"]).normalised_file)
    assert set(frame["input_tokens"]) <= {100, 200, 300}
    sneaky = synth(cast.owner.api, {**spec, "lengths": {"empirical": {"path": "/etc/passwd"}}})
    assert sneaky.status_code == 400 and "one of your traces" in sneaky.json()["error"]["message"]
    outside = synth(cast.owner.api, {"kind": "slinfer", "path": "/etc/passwd"})
    assert outside.status_code == 400 and outside.json()["error"]["where"] == "spec.path"


def test_a_bad_generator_spec_is_a_400_naming_the_key(cast):
    bad = synth(cast.owner.api, {"kind": "poisson", "rate_rps": 1.0, "duraton_s": 60})
    error = bad.json()["error"]
    assert bad.status_code == 400 and error["where"] == "spec.duraton_s" and "duration_s" in error["hint"]
    big = synth(cast.owner.api, {"kind": "poisson", "rate_rps": 1000.0, "duration_s": 86400})
    assert big.status_code == 400 and big.json()["error"]["where"] == "spec.rate_rps"
    assert Trace.objects.count() == 0


def test_the_page_offers_the_new_kinds_and_the_command_writes_them(cast, tmp_path):
    page = Client()
    page.force_login(cast.owner.user)
    form = page.get("/traces/synthesise/?fixture=gamma_bursty").content.decode()
    assert "&quot;kind&quot;: &quot;gamma&quot;" in form and "slinfer_32_functions" in form
    spec = json.loads((FIXTURES / "batch_dump.json").read_text())
    response = page.post("/traces/synthesise/", {"spec": json.dumps(spec), "name": "dump"})
    assert response.status_code == 302, response.content.decode()[:2000]
    out = tmp_path / "p.parquet"
    call_command("synth_trace", str(FIXTURES / "poisson_sharegpt.json"), "--out", str(out), "--json")
    frame = read_trace(out)
    assert 2200 < len(frame) < 2600 and set(frame["model"]) == {"llama-2-7b"}
