"""/healthz against the real PostgreSQL, Redis and a celery worker process."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.mark.integration
def test_healthz_sees_the_database_the_broker_and_a_live_worker(client, celery_worker_process):
    response = client.get("/healthz")
    assert response.status_code == 200, response.content
    checks = response.json()["checks"]
    assert checks["database"]["ok"] and checks["broker"]["ok"]
    assert checks["workers"]["ok"] and checks["workers"]["answered"] >= 1
