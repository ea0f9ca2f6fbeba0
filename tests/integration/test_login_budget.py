"""The login budget holds under parallel attempts on the real services (Redis counters, PostgreSQL users):
20 wrong passwords for one username at once, over the token endpoint, the login form and the admin, get exactly
the 10 the budget allows checked, and the right password is refused afterwards."""

from __future__ import annotations

import threading

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _attempt(i: int, password: str, address: str) -> int:
    try:
        if i % 3 == 0:
            return APIClient().post("/api/auth/token/", {"username": "owner", "password": password},
                                    format="json", REMOTE_ADDR=address).status_code
        path = "/login/" if i % 3 == 1 else "/admin/login/"
        return Client().post(path, {"username": "owner", "password": password}, REMOTE_ADDR=address).status_code
    finally:
        connection.close()


def test_twenty_parallel_wrong_passwords_get_ten_checks_and_then_the_right_one_is_refused(cast, settings,
                                                                                        real_services):
    assert settings.CACHES["default"]["BACKEND"].endswith("RedisCache"), "the counters must live in Redis here"
    settings.LOGIN_RATE_PER_IP = "30/hour"
    settings.LOGIN_RATE_PER_USERNAME = "10/hour"
    cache.clear()  # this run's own Redis (.ci/test-integration): nothing shared is flushed
    start = threading.Barrier(20)
    statuses: list[int] = []
    lock = threading.Lock()

    def run(i: int) -> None:
        start.wait()
        status = _attempt(i, f"wrong-{i}", f"10.20.0.{i}")
        with lock:
            statuses.append(status)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(statuses) == 20, statuses
    checked = [s for s in statuses if s != 429]
    assert len(checked) == 10, sorted(statuses)  # 400 (API) or 200 (form re-shown) for a wrong password
    assert set(checked) <= {200, 400}
    assert _attempt(0, "owner-pass-123", "10.20.1.1") == 429
    assert _attempt(1, "owner-pass-123", "10.20.1.2") == 429
    cache.clear()
