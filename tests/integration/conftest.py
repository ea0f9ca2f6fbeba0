"""Helpers for integration tests. The `celery_worker_process` fixture lives in the root conftest.py so
that every app's integration tests share one worker per session."""

from __future__ import annotations

import os
import re
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


def worker_log_path() -> Path:
    """The session worker's log: in TEST_ARTIFACTS when set (CI keeps that folder), else in the data folder."""
    from django.conf import settings

    folder = Path(os.environ.get("TEST_ARTIFACTS") or settings.DATA_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / "celery-worker.log"


def wait_for_worker_task(task_id: str, *, timeout: float = 60.0) -> tuple[float, str]:
    """Wait until the session worker's log says the Celery task ended; return (seconds it ran, its return value).

    A job row can be marked cancelled at once by the web process; only this line proves that the worker's
    task itself stopped (``execute`` returns the job's final status)."""
    assert task_id, "the job was never sent to Celery"
    pattern = re.compile(rf"Task planner\.jobs\.run_job\[{re.escape(task_id)}\] \w+ in ([0-9.]+)s: '?([^'\n]*)'?")
    deadline = time.monotonic() + timeout
    while True:
        found = pattern.search(worker_log_path().read_text(errors="replace"))
        if found:
            return float(found.group(1)), found.group(2)
        if time.monotonic() > deadline:
            raise AssertionError(f"the worker's task {task_id} did not end within {timeout} s (see {worker_log_path()})")
        time.sleep(0.5)


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
            try:
                yield page
            except BaseException:
                _screenshot_on_failure(page)
                raise
        finally:
            browser.close()


def _screenshot_on_failure(page) -> None:
    """Keep what the page showed when a browser test failed (a timed-out wait included) in TEST_ARTIFACTS."""
    folder = Path(os.environ.get("TEST_ARTIFACTS") or "test-artifacts")
    test = os.environ.get("PYTEST_CURRENT_TEST", "browser-test").split(" ")[0]
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", test)[-150:]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(folder / f"FAILED-{name}.png"), full_page=True, timeout=15_000)
        (folder / f"FAILED-{name}.html").write_text(page.content())
        print(f"page at the failure: {folder / f'FAILED-{name}.png'} ({page.url})")
    except Exception as exc:  # the page itself may be what broke
        print(f"no screenshot of the failed page ({exc})")
