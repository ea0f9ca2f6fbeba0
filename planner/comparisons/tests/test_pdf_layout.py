"""The PDF reports fit the page: every page is rendered (pdfplumber / PDFium) and every character's box must lie
inside the page; no raw "{}" or empty price / theta cells. A fleet comparison with seeds (bands), a serverless one
and an operator-level one, each through the product's own services."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pdfplumber
import pytest

from planner.comparisons.kinds import answer_of, export_pdf
from planner.comparisons.models import Comparison

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
TINY = json.loads((HERE / "tiny_scenario.json").read_text())


def layout_problems(pdf: bytes, name: str) -> list[str]:
    """Characters outside the page box, per page; every page is also rendered to PNG (written to
    $PLANNER_ARTIFACTS when set, to look at)."""
    out_dir = Path(os.environ["PLANNER_ARTIFACTS"]) if os.environ.get("PLANNER_ARTIFACTS") else None
    problems = []
    with pdfplumber.open(io.BytesIO(pdf)) as doc:
        for i, page in enumerate(doc.pages, start=1):
            image = page.to_image(resolution=40)
            if out_dir is not None:
                out_dir.mkdir(parents=True, exist_ok=True)
                image.save(out_dir / f"{name}-page{i}.png")
            outside = [c for c in page.chars if c["x0"] < -0.5 or c["x1"] > page.width + 0.5
                       or c["top"] < -0.5 or c["bottom"] > page.height + 0.5]
            if outside:
                text = "".join(c["text"] for c in outside[:40])
                problems.append(f"{name} page {i}: {len(outside)} characters outside the page, e.g. {text!r}")
    return problems


def _text(pdf: bytes) -> str:
    with pdfplumber.open(io.BytesIO(pdf)) as doc:
        return "\n".join(page.extract_text() or "" for page in doc.pages)


@pytest.mark.django_db(transaction=True)
def test_the_fleet_cost_report_fits_the_page_and_fills_prices_and_theta(cast):
    catalogue_names = {k: v for k, v in TINY.items() if k != "deployments"}  # as the builder writes it
    resp = cast.owner.api.post("/api/comparisons/", {
        "scenario": catalogue_names, "strategies": ["reactive-unified", "lt-i", "lt-ua"], "seeds": [7, 8]}, format="json")
    assert resp.status_code == 201, resp.content
    comp = Comparison.objects.get(pk=resp.json()["id"])
    assert comp.status == "succeeded"
    pdf = export_pdf(comp)
    assert not layout_problems(pdf, "fleet"), layout_problems(pdf, "fleet")
    text = _text(pdf)
    assert "{}" not in text, text[text.index("{}") - 300:text.index("{}") + 50]
    assert "(extrapolated)" in text
    assert "-$" not in text, "a saving printed as a negative amount"
    fleet = text[text.index("Appendix B"):]
    assert "$98.32" in fleet, "on-demand $/instance-hour missing from the fleet appendix"
    assert "3,761" in fleet, "theta missing from the fleet appendix"


@pytest.mark.django_db(transaction=True)
def test_the_serverless_and_operator_level_reports_fit_the_page_and_lead_with_the_card(cast, client):
    from planner.traces.services import import_trace_file

    serverless = cast.owner.api.post("/api/comparisons/", {"scenario": {
        "kind": "serverless", "model": "llama-2-7b", "workload": {"models": 32, "duration_s": 30},
        "nodes": {"cpu": 2, "gpu": 2}}}, format="json")
    trace = import_trace_file(ROOT / "fixtures/traces/azure_code_2023.csv", team=cast.owner.team,
                              user=cast.owner.user, name="code", region="eastus", model="llama2-70b", tier="IW-F")
    operator = cast.owner.api.post("/api/comparisons/", {"scenario": {
        "kind": "operator-level", "model": "llama3.1-8b", "gpu": "a100-80gb",
        "workload": {"trace_id": trace.pk, "window_s": 600}, "sweeps": False}}, format="json")
    for name, resp in (("serverless", serverless), ("operator", operator)):
        comp = Comparison.objects.get(pk=resp.json()["id"])
        assert comp.status == "succeeded", (name, comp.summary)
        pdf = export_pdf(comp)
        assert not layout_problems(pdf, name), layout_problems(pdf, name)
        assert "{}" not in _text(pdf)
        answer = answer_of(comp)
        with pdfplumber.open(io.BytesIO(pdf)) as doc:
            page1 = " ".join((doc.pages[0].extract_text() or "").split())
        assert "Decision: " + answer["headline"][:40] in page1 and "Cost: not known" in page1, (name, page1[:600])
        client.force_login(cast.owner.user)
        html = client.get(f"/comparisons/{comp.pk}/").content.decode()
        assert "data-decision-card" in html and "data-decision-plan" in html and "not known" in html, name
