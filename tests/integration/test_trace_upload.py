"""A trace uploaded over HTTP is characterised by a real worker through Redis; a browser sees its charts."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from planner.traces.models import Trace
from tests.integration.conftest import artifacts_dir, logged_in_page, wait_for_job

ROOT = Path(__file__).resolve().parents[2]
AZURE_CODE = ROOT / "fixtures" / "traces" / "azure_code_2023.csv"

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.mark.integration
def test_an_upload_over_http_is_characterised_by_the_worker(cast, live_server, celery_worker_process):
    with AZURE_CODE.open("rb") as fh:
        response = requests.post(
            f"{live_server.url}/api/traces/",
            headers={"Authorization": f"Token {cast.owner.token}"},
            files={"file": ("azure_code_2023.csv", fh, "text/csv")},
            data={"name": "code trace", "region": "eastus", "model": "llama2-70b", "tier": "IW-F"},
            timeout=60,
        )
    assert response.status_code == 202, response.text
    body = response.json()
    assert response.headers["Location"] == f"/api/traces/{body['id']}/"
    assert body["job"]["kind"] == "trace.normalise" and body["status"] in ("pending", "normalising", "ready")
    trace = Trace.objects.get(pk=body["id"])
    assert trace.job is not None and trace.job.celery_task_id, "normalisation was not sent to the worker"
    wait_for_job(trace.job)
    assert trace.job.status == "succeeded", trace.job.last_error
    trace.refresh_from_db()
    assert trace.status == "ready" and trace.requests == 8819
    assert trace.job.kind == "trace.characterise" and trace.job.celery_task_id, "characterisation was not sent"
    wait_for_job(trace.job)
    assert trace.job.status == "succeeded", trace.job.last_error
    trace.refresh_from_db()
    assert trace.characterisation is not None and trace.characterised is not None
    # The outsider neither sees it through the API nor can delete it.
    other = requests.get(f"{live_server.url}/api/traces/{trace.pk}/",
                         headers={"Authorization": f"Token {cast.outsider.token}"}, timeout=30)
    assert other.status_code == 404


@pytest.mark.browser
def test_a_user_logs_in_uploads_a_trace_and_sees_its_charts(cast, live_server, celery_worker_process, tmp_path):
    with logged_in_page(live_server, "owner", "owner-pass-123") as page:
        page.goto(f"{live_server.url}/traces/upload/")
        page.set_input_files("input[name=file]", str(AZURE_CODE))
        page.fill("input[name=name]", "browser upload")
        page.click("main form[enctype='multipart/form-data'] button[type=submit]")
        page.wait_for_url("**/traces/*/", timeout=60_000)
        # The job status poller reloads the page when the worker has finished; then Plotly draws.
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=120_000)
        charts = page.locator(".js-plotly-plot").count()
        artifacts = artifacts_dir(tmp_path)
        page.screenshot(path=str(artifacts / "trace-page.png"), full_page=True)
    assert charts >= 2
    trace = Trace.objects.get(name="browser upload")
    assert trace.team == cast.owner.team and trace.characterisation is not None
