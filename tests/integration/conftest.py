"""Helpers for integration tests. The `celery_worker_process` fixture lives in the root conftest.py so
that every app's integration tests share one worker per session."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path


def wait_for_job(job, *, timeout=120.0, until=("succeeded", "failed", "cancelled", "partial")):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in until:
            return job
        time.sleep(0.25)
    raise AssertionError(f"job {job.pk} still {job.status} ({job.progress:.0f}% {job.message}) after {timeout} s")


def artifacts_dir(tmp_path) -> Path:
    """Where a browser test puts its screenshots: $TEST_ARTIFACTS (CI keeps them) or the test's tmp_path."""
    path = Path(os.environ.get("TEST_ARTIFACTS", tmp_path))
    path.mkdir(parents=True, exist_ok=True)
    return path


CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@contextmanager
def logged_in_page(live_server, username: str, password: str):
    """A headless Debian Chromium page (via Playwright) logged in to the live server as ``username``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"),
                                     args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{live_server.url}/login/")
            page.fill("#id_username", username)
            page.fill("#id_password", password)
            page.click("button[type=submit]")
            page.wait_for_url(f"{live_server.url}/")
            yield page
        finally:
            browser.close()
