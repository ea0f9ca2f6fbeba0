"""The production path end to end: collectstatic, then gunicorn (gunicorn.conf.py) with DEBUG off serves pages,
the API's JSON errors and WhiteNoise's static files. Runs on its own SQLite and port, no shared service."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.test_security import PRODUCTION_ENV

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.integration
def test_gunicorn_with_whitenoise_serves_pages_static_files_and_json_errors_with_debug_off(tmp_path):
    port = _free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in {"DATABASE_URL", "REDIS_URL", "JOBS_RUNNER", "DJANGO_SETTINGS_MODULE", "DEBUG"}}
    env.update(PRODUCTION_ENV)
    env.update({"BEHIND_TLS": "false", "ALLOWED_HOSTS": "127.0.0.1", "PLANNER_DATA_DIR": str(tmp_path),
                "HOST": "127.0.0.1", "PORT": str(port), "WEB_CONCURRENCY": "1", "GUNICORN_THREADS": "2"})
    bin_dir = Path(sys.executable).parent
    for args in (["manage.py", "migrate", "--noinput", "-v", "0"], ["manage.py", "collectstatic", "--noinput", "-v", "0"]):
        subprocess.run([sys.executable, *args], cwd=ROOT, env=env, check=True, timeout=600)
    log = open(tmp_path / "gunicorn.log", "w")  # noqa: SIM115
    server = subprocess.Popen([str(bin_dir / "gunicorn"), "-c", "gunicorn.conf.py", "planner.wsgi"], cwd=ROOT, env=env,
                              stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        # The socket accepts before a worker has imported the app; on a loaded machine that takes a while.
        deadline = time.monotonic() + 180
        while True:
            assert server.poll() is None, (tmp_path / "gunicorn.log").read_text()
            try:
                health = requests.get(f"{base}/healthz", timeout=60)
                break
            except (requests.ConnectionError, requests.Timeout):
                assert time.monotonic() < deadline, "gunicorn did not answer within 180 s"
                time.sleep(0.5)
        assert health.status_code == 200 and health.json()["checks"]["database"]["ok"]
        login = requests.get(f"{base}/login/", timeout=60)
        assert login.status_code == 200
        css = re.search(r'href="(/static/css/planner\.[0-9a-f]{12}\.css)"', login.text)
        assert css, "the page does not name the hashed static file"
        static = requests.get(base + css.group(1), headers={"Accept-Encoding": "gzip"}, timeout=60)
        assert static.status_code == 200 and "max-age=315360000" in static.headers["Cache-Control"]
        assert static.headers.get("Content-Encoding") == "gzip"
        plotly = requests.get(f"{base}/static/vendor/plotly.min.js", timeout=60)
        assert plotly.status_code == 200 and len(plotly.content) > 1_000_000
        deep = requests.post(f"{base}/api/auth/token/", data="[" * 100_000 + "]" * 100_000,
                             headers={"Content-Type": "application/json"}, timeout=60)
        assert deep.status_code == 400 and deep.json()["error"]["where"] == "request body"
        assert b"SECRET_KEY" not in deep.content and b"Traceback" not in deep.content
        missing = requests.get(f"{base}/no/such/page/", timeout=60)
        assert missing.status_code == 404 and "Not found" in missing.text and "urlpatterns" not in missing.text
        assert requests.get(f"{base}/api/nothing-here/", timeout=60).json()["error"]["message"] == "not found"
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()
