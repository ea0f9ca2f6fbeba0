"""A trace's characterisation counts the requests beyond each catalogue model's context limit."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client

AZURE_CODE = Path(__file__).resolve().parents[3] / "fixtures" / "traces" / "azure_code_2023.csv"  # bundled, real
# prompts 100 / 3000 (+2000 output) / 5000 / 200000
LONG = "arrival_s,input_tokens,output_tokens\n0,100,10\n1,3000,2000\n2,5000,10\n3,200000,10\n"

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def test_upload_counts_requests_over_each_models_context_on_the_api_and_the_page(cast):
    """By hand: Llama-2 (4,096): prompts over 5000, 200000 -> 2; with output also 3000+2000 -> 3; prompt tokens
    over 205000/208100. BLOOM (2,048): prompts over 3000, 5000, 200000 -> 3. Llama-3.x (131,072): 200000 -> 1."""
    r = cast.owner.api.post("/api/traces/", {"file": SimpleUploadedFile("long.csv", LONG.encode())}, format="multipart")
    assert r.status_code == 202, r.content
    summary = cast.owner.api.get(f"/api/traces/{r.json()['id']}/").json()["characterisation"]
    rows = {c["model"]: c for c in summary["context_limits"]}
    assert (rows["llama2-70b"]["prompt_over"], rows["llama2-70b"]["total_over"]) == (2, 3)
    assert rows["llama2-70b"]["prompt_tokens_over_share"] == pytest.approx(205000 / 208100)
    assert rows["llama2-70b"]["prompt_over_percent"] == 50.0
    assert rows["bloom-176b"]["prompt_over"] == 3 and rows["bloom-176b"]["max_model_len"] == 2048
    assert rows["llama3.1-8b"]["prompt_over"] == 1 and rows["llama3.2-3b"]["prompt_over"] == 1
    page = Client()
    page.force_login(cast.owner.user)
    html = page.get(f"/traces/{r.json()['id']}/").content.decode()
    assert 'id="context-limits"' in html and "bloom-176b" in html and "50.00 %" in html


def test_import_trace_json_reports_context_limits(db):
    """1,241 of the Azure code trace's 8,819 prompts exceed Llama-2's 4,096 tokens: the same count the run summary's
    validity report gives for the code_anchor scenario (simulations/tests/test_validity.py), by another path."""
    out = io.StringIO()
    call_command("import_trace", str(AZURE_CODE), "--json", "--seed", "1", stdout=out)
    body = json.loads(out.getvalue())
    rows = {c["model"]: c for c in body["context_limits"]}
    assert rows["llama2-70b"]["prompt_over"] == 1241
    assert rows["llama2-70b"]["total_over"] == 1257
