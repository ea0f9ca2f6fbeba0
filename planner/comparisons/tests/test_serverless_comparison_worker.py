"""A serverless comparison on a real Celery worker: created through the API, one Celery task per system,
aggregated by the worker, shown on the comparison page (browser: the decision card and Plotly figures) and in the PDF."""

from __future__ import annotations

import pytest

from planner.comparisons import kinds
from planner.comparisons.models import Comparison
from tests.integration.conftest import wait_for_job

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
SCENARIO = {"kind": "serverless", "name": "worker serverless", "workload": {"models": 32, "duration_s": 120},
            "nodes": {"cpu": 4, "gpu": 4}}


def _run(cast, systems):
    resp = cast.owner.api.post("/api/comparisons/", {"scenario": SCENARIO, "systems": systems}, format="json")
    assert resp.status_code == 201, resp.content
    comp = Comparison.objects.select_related("job").get(pk=resp.json()["id"])
    wait_for_job(comp.job, timeout=300)
    comp.refresh_from_db()
    return comp


def test_a_serverless_comparison_runs_its_systems_on_a_worker(cast, celery_worker_process):
    comp = _run(cast, ["sllm", "sllm+c+s", "slinfer"])
    assert comp.status == "succeeded", comp.job.last_error
    assert comp.job.celery_task_id and all(r.job.celery_task_id for r in comp.results.all()), "not through Celery"
    rows = {r["key"]: r for r in comp.summary["rows"]}
    assert set(rows) == {"sllm", "sllm+c+s", "slinfer"} and all(r["no_oom"] for r in rows.values())
    assert rows["slinfer"]["slo_met_vs_baseline"] == pytest.approx(rows["slinfer"]["slo_met"] / rows["sllm"]["slo_met"])
    pdf = cast.owner.api.get(f"/api/comparisons/{comp.pk}/pdf/")
    assert pdf.status_code == 200 and pdf.content[:4] == b"%PDF"


@pytest.mark.browser
def test_a_planner_compares_serverless_systems_from_the_page(cast, live_server, celery_worker_process, tmp_path):
    from tests.integration.conftest import artifacts_dir, logged_in_page

    artifacts = artifacts_dir(tmp_path)
    with logged_in_page(live_server, "owner", "owner-pass-123") as page:
        page.goto(f"{live_server.url}/simulations/serverless/")
        form = "#new-serverless"
        page.fill(f"{form} [name=sl-workload__duration_s]", str(SCENARIO["workload"]["duration_s"]))
        page.fill(f"{form} [name=sl-nodes__cpu]", str(SCENARIO["nodes"]["cpu"]))
        page.fill(f"{form} [name=sl-nodes__gpu]", str(SCENARIO["nodes"]["gpu"]))
        for system in ("sllm", "sllm+c+s", "slinfer", "slinfer-no-cpu"):
            page.check(f"{form} input[name=sl-systems][value='{system}']")
        page.uncheck(f"{form} input[name=sl-systems][value='sllm+c']")
        page.select_option(f"{form} [name=sl-baseline]", "sllm")
        page.click(f"{form} [data-serverless-compare]")
        page.wait_for_url("**/comparisons/*/", timeout=60_000)
        # the job poller reloads the page when the worker has finished; then Plotly draws the five figures
        page.wait_for_selector("#fig-nodes .main-svg", timeout=300_000)
        charts = page.locator(".js-plotly-plot").count()
        card = page.locator("[data-decision-card]")
        cards, verdict, card_text = card.locator(".kpi[data-kpi]").count(), card.get_attribute("data-status"), \
            card.inner_text()
        card.screenshot(path=str(artifacts / "serverless-decision-card.png"))
        rows = page.locator("#serverless-systems tbody tr").count()
        status = page.locator("[data-comparison-status]").inner_text()
        page.screenshot(path=str(artifacts / "serverless-comparison-page.png"), full_page=True)
        pk = int(page.url.rstrip("/").rsplit("/", 1)[1])  # no ORM inside Playwright's event loop
        pdf = page.request.get(f"{live_server.url}/comparisons/{pk}/report.pdf")
        pdf_status, pdf_body = pdf.status, pdf.body()
        (artifacts / "serverless-comparison.pdf").write_bytes(pdf_body)
    comp = Comparison.objects.get(pk=pk)
    assert status == "succeeded" and charts == 4 and rows == 4
    # the decision card: cost (not known: no prices), SLO attainment, GPU and CPU node-hours, energy; or the closest
    answer = kinds.answer_of(comp)
    assert verdict == answer["status"] and answer["headline"] in card_text, card_text
    assert (cards == 5 and "not known" in card_text) if verdict == "answer" else "Closest candidate" in card_text
    assert "What would change the answer most" in card_text
    assert [r.key for r in comp.results.all()] == ["sllm", "sllm+c+s", "slinfer", "slinfer-no-cpu"]
    assert pdf_status == 200 and pdf_body[:4] == b"%PDF"
