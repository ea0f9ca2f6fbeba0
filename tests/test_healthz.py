"""/healthz: database, broker and workers; 503 JSON (never an HTML 500) when one is down."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_security import PRODUCTION_ENV

ROOT = Path(__file__).resolve().parents[1]


def test_healthz_checks_the_database_in_the_in_process_mode(client, db):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True and body["checks"]["database"]["ok"] is True
    assert "broker" not in body["checks"] and "workers" not in body["checks"]  # no REDIS_URL, jobs in-process


def test_an_unreachable_broker_is_a_503_json_and_the_workers_are_not_pinged(client, db, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    settings.JOBS_RUNNER = "celery"
    response = client.get("/healthz")
    assert response.status_code == 503 and response["Content-Type"] == "application/json"
    body = response.json()
    assert body["ok"] is False and body["checks"]["database"]["ok"] is True
    assert body["checks"]["broker"] == {"ok": False, "error": "unavailable (ConnectionError)",
                                        "ms": body["checks"]["broker"]["ms"]}
    assert body["checks"]["workers"]["ok"] is False and "broker is down" in body["checks"]["workers"]["error"]
    assert body["error"]["message"] == "unhealthy: broker, workers"


_IN_SUBPROCESS = """
import json, django
django.setup()
from django.test import Client
c = Client()
h = c.get("/healthz")
a = c.get("/api/jobs/", HTTP_AUTHORIZATION="Token " + "0" * 64)
print(json.dumps({"healthz": [h.status_code, h["Content-Type"], h.content.decode()],
                  "api": [a.status_code, a["Content-Type"], a.content.decode()]}))
"""


@pytest.mark.parametrize("debug", ["false", "true"])
def test_with_the_database_down_healthz_and_the_api_answer_503_json(tmp_path, debug):
    """A real connection failure: PostgreSQL on a port where nothing listens, in a fresh process."""
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "JOBS_RUNNER"}}
    env.update(PRODUCTION_ENV)
    env.update({"DEBUG": debug, "ALLOWED_HOSTS": "testserver", "BEHIND_TLS": "false",
                "DATABASE_URL": "postgres://postgres@127.0.0.1:1/planner", "PLANNER_DATA_DIR": str(tmp_path),
                "DJANGO_SETTINGS_MODULE": "planner.settings"})
    out = subprocess.run([sys.executable, "-c", _IN_SUBPROCESS], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    status, content_type, text = result["healthz"]
    assert status == 503 and content_type == "application/json"
    body = json.loads(text)
    assert body["checks"]["database"]["ok"] is False and body["error"]["message"] == "unhealthy: database"
    assert "127.0.0.1" not in text and "postgres" not in text
    status, content_type, text = result["api"]
    assert status == 503 and content_type == "application/json", text[:300]
    assert json.loads(text)["error"]["message"].startswith("a service the planner needs")


def test_no_live_worker_is_a_503(client, db, settings, monkeypatch):
    from planner import health
    from planner.celery import app

    settings.JOBS_RUNNER = "celery"
    monkeypatch.setattr(health, "broker", lambda: {"ok": True})  # the broker itself is covered above
    monkeypatch.setattr(app.control, "ping", lambda **kwargs: [])
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["checks"]["workers"]["error"] == "no worker answered a ping within 1 s"
