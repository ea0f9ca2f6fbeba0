"""The checks behind /healthz: database, broker (with REDIS_URL), live workers (celery mode). Each returns
{"ok": bool, ...} and never raises; details of a failure go to the log, the answer names only its kind."""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db import connection

logger = logging.getLogger("planner.health")
TIMEOUT_S = 1.0


def _timed(check):
    started = time.perf_counter()
    try:
        result = check()
    except Exception as exc:
        logger.warning("health check %s failed: %s: %s", check.__name__, type(exc).__name__, exc)
        result = {"ok": False, "error": f"unavailable ({type(exc).__name__})"}
    result["ms"] = round((time.perf_counter() - started) * 1000, 1)
    return result


def database() -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return {"ok": True}


def broker() -> dict:
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=TIMEOUT_S, socket_timeout=TIMEOUT_S)
    try:
        client.ping()
    finally:
        client.close()
    return {"ok": True}


def workers() -> dict:
    from planner.celeryapp import app

    replies = app.control.ping(timeout=TIMEOUT_S, limit=1)
    if not replies:
        return {"ok": False, "error": f"no worker answered a ping within {TIMEOUT_S:g} s", "answered": 0}
    return {"ok": True, "answered": len(replies)}


def run_checks() -> dict:
    checks = {"database": _timed(database)}
    if settings.REDIS_URL:
        checks["broker"] = _timed(broker)
    if settings.JOBS_RUNNER == "celery":
        if checks.get("broker", {"ok": True})["ok"]:
            checks["workers"] = _timed(workers)
        else:
            checks["workers"] = {"ok": False, "error": "not checked: the broker is down", "ms": 0.0}
    return checks
