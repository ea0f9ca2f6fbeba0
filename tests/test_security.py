"""Safe by default: production settings, the JSON error shape on /api/ (5xx included), deep JSON, error pages."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.http import JsonResponse
from django.test import override_settings
from django.urls import include, path

ROOT = Path(__file__).resolve().parents[1]
PRODUCTION_ENV = {
    "DEBUG": "false",
    "SECRET_KEY": "Zq8v-3JwqN_a7kQe0mYt2LxS9cVbRf4HuPo6GiDn1WsEyTlAjKzXgUhCrMdBpOv",
    "ALLOWED_HOSTS": "planner.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://planner.example.com",
    "BEHIND_TLS": "true",
}


def _run(args: list[str], env: dict, drop=("DATABASE_URL", "REDIS_URL", "JOBS_RUNNER", "SECRET_KEY", "DEBUG",
                                            "DJANGO_SETTINGS_MODULE", "BEHIND_TLS", "ALLOWED_HOSTS")):
    full_env = {k: v for k, v in os.environ.items() if k not in drop}
    full_env.update(env)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=full_env, cwd=ROOT,
                          check=False, timeout=300)


# --- settings --------------------------------------------------------------------------------------------------

def test_check_deploy_is_clean_in_the_production_configuration():
    out = _run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], PRODUCTION_ENV)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "System check identified no issues" in out.stdout
    assert "WARNINGS" not in out.stderr


def test_check_deploy_warns_when_debug_is_on_so_the_clean_check_above_can_fail():
    out = _run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], {**PRODUCTION_ENV, "DEBUG": "true"})
    assert out.returncode != 0 and "security.W018" in out.stderr


def test_debug_is_off_unless_the_environment_turns_it_on():
    code = "import django; django.setup(); from django.conf import settings as s; print(s.DEBUG, s.SESSION_COOKIE_SECURE)"
    out = _run(["-c", code], {"DJANGO_SETTINGS_MODULE": "planner.settings", "SECRET_KEY": "x" * 60})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]


def test_without_a_secret_key_and_debug_off_the_process_refuses_to_start():
    out = _run(["manage.py", "check"], {})
    assert out.returncode != 0
    assert "SECRET_KEY is not set and DEBUG is off" in out.stderr
    out = _run(["manage.py", "check"], {"DEBUG": "true"})  # the local demo (`make run` sets DEBUG=true)
    assert out.returncode == 0, out.stderr


def test_behind_tls_cookies_are_secure_http_is_redirected_and_hsts_is_sent():
    code = ("import django; django.setup(); from django.conf import settings as s; "
            "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS)")
    out = _run(["-c", code], {**PRODUCTION_ENV, "DJANGO_SETTINGS_MODULE": "planner.settings"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "True", str(365 * 24 * 3600)]


@override_settings(SECURE_SSL_REDIRECT=True, SECURE_HSTS_SECONDS=3600)
def test_with_tls_settings_plain_http_redirects_but_healthz_answers_for_load_balancers(client, db):
    assert client.get("/login/").status_code == 301
    assert client.get("/healthz").status_code == 200
    secure = client.get("/login/", secure=True)
    assert secure.status_code == 200 and "max-age=3600" in secure["Strict-Transport-Security"]


# --- the JSON error shape on /api/ ------------------------------------------------------------------------------

def _boom(request):
    raise RuntimeError("secret detail: postgres://user:hunter2@db/planner")


def _db_down(request):
    from django.db import OperationalError

    raise OperationalError('connection to server at "db" failed')


def _fine(request):
    return JsonResponse({"ok": True})


urlpatterns = [
    path("api/test-boom/", _boom),
    path("api/test-db-down/", _db_down),
    path("page-boom/", _boom),
    path("page-fine/", _fine),
    path("", include("planner.urls")),
]


def _assert_error_shape(response, status):
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body["error"]) >= {"message", "where", "hint"}
    return body


@pytest.mark.parametrize("debug", [False, True])
def test_an_exception_in_an_api_view_is_a_500_json_with_a_request_id_that_is_logged(client, db, caplog, settings,
                                                                                    debug):
    settings.ROOT_URLCONF = __name__
    settings.DEBUG = debug
    caplog.set_level(logging.ERROR, logger="planner.errors")
    response = client.get("/api/test-boom/")
    body = _assert_error_shape(response, 500)
    request_id = response["X-Request-ID"]
    assert body["error"]["request_id"] == request_id and len(request_id) >= 8
    assert b"hunter2" not in response.content and b"Traceback" not in response.content
    logged = [r for r in caplog.records if r.name == "planner.errors"]
    assert logged and logged[0].request_id == request_id and logged[0].exc_info[0] is RuntimeError


def test_the_request_id_is_in_the_log_format(settings):
    from planner.request_id import RequestIdFilter, current_request_id

    formatter = logging.Formatter(settings.LOGGING["formatters"]["plain"]["format"])
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "hello", None, None)
    token = current_request_id.set("abc123def456")
    try:
        RequestIdFilter().filter(record)
    finally:
        current_request_id.reset(token)
    assert "[abc123def456] hello" in formatter.format(record)


def test_a_database_outage_on_the_api_is_a_503_json_with_retry_after(client, db, settings):
    settings.ROOT_URLCONF = __name__
    response = client.get("/api/test-db-down/")
    body = _assert_error_shape(response, 503)
    assert response["Retry-After"] == "30" and "unavailable" in body["error"]["message"]
    assert b'"db"' not in response.content


def test_django_pages_for_unknown_api_urls_and_wrong_methods_become_json(client, cast):
    _assert_error_shape(client.get("/api/no-such-thing/"), 404)
    response = cast.owner.api.delete("/api/auth/token/")
    _assert_error_shape(response, 405)
    response = client.put("/api/auth/token/")
    _assert_error_shape(response, 405)


def test_an_api_error_completed_by_the_middleware_says_its_own_length(client, cast):
    # A refused token, a missing row, a wrong method: the middleware adds where/hint after Content-Length was set;
    # a real client reads only Content-Length bytes, so a stale header cuts the JSON off.
    for response in (client.get("/api/jobs/", HTTP_AUTHORIZATION="Token not-a-token"),
                     client.get("/api/jobs/999999/", HTTP_AUTHORIZATION=f"Token {cast.owner.token}"),
                     client.put("/api/auth/token/")):
        assert response.status_code >= 400 and response.has_header("Content-Length")
        assert int(response["Content-Length"]) == len(response.content), response.content
        assert json.loads(response.content)["error"]["hint"]


def test_api_errors_are_json_even_for_a_browser_asking_for_html(client, cast):
    response = client.get("/api/jobs/999999/", HTTP_ACCEPT=BROWSER_ACCEPT, HTTP_AUTHORIZATION=f"Token {cast.owner.token}")
    _assert_error_shape(response, 404)
    response = client.get("/api/jobs/", HTTP_ACCEPT=BROWSER_ACCEPT)
    _assert_error_shape(response, 401)


def test_a_page_error_is_a_plain_500_page_without_details(client, db, settings):
    settings.ROOT_URLCONF = __name__
    client.raise_request_exception = False
    response = client.get("/page-boom/")
    assert response.status_code == 500
    assert b"Server error" in response.content and b"hunter2" not in response.content
    assert b"Traceback" not in response.content and b"SECRET_KEY" not in response.content
    assert response["X-Request-ID"]


def test_an_unknown_page_is_a_plain_404_page(client, db):
    response = client.get("/no/such/page/")
    assert response.status_code == 404 and b"Not found" in response.content and b"urlpatterns" not in response.content


def test_a_proxy_request_id_is_kept_and_a_malformed_one_replaced(client, db, settings):
    settings.ROOT_URLCONF = __name__
    assert client.get("/page-fine/", HTTP_X_REQUEST_ID="lb-0123456789")["X-Request-ID"] == "lb-0123456789"
    replaced = client.get("/page-fine/", HTTP_X_REQUEST_ID="x\nINFO fake log line")["X-Request-ID"]
    assert "\n" not in replaced and len(replaced) == 32


# --- deep JSON ------------------------------------------------------------------------------------------------

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
DEEP = "[" * 100_000 + "]" * 100_000


def test_the_reproducer_a_100000_deep_array_posted_anonymously_to_the_token_endpoint_is_a_400_json(client, db):
    response = client.post("/api/auth/token/", DEEP, content_type="application/json")
    body = _assert_error_shape(response, 400)
    assert "nested more than 64 levels" in body["error"]["message"] and body["error"]["where"] == "request body"
    for secret in (b"DATABASE_URL", b"REDIS_URL", b"SECRET_KEY", b"/work/", b"Traceback"):
        assert secret not in response.content


def test_deep_json_is_refused_on_an_authenticated_json_endpoint_and_in_a_form_field(cast):
    response = cast.owner.api.post("/api/plans/", DEEP, content_type="application/json")
    _assert_error_shape(response, 400)
    response = cast.owner.api.post("/api/plans/", {"name": "x", "scenario": DEEP}, format="multipart")
    body = _assert_error_shape(response, 400)
    assert body["error"]["where"] == "form field 'scenario'"


@pytest.mark.parametrize("url,field", [("/simulations/", "scenario"), ("/comparisons/new/", "scenario_json"),
                                       ("/plans/new/", "scenario")])
def test_deep_json_in_a_page_form_field_is_a_plain_400_page(client, cast, url, field):
    client.force_login(cast.owner.user)
    response = client.post(url, {field: DEEP, "name": "deep"})
    assert response.status_code == 400
    assert b"nested more than 64 levels" in response.content and b"Traceback" not in response.content


def test_json_within_the_depth_limit_still_parses(cast):
    ok = "[" * 63 + "]" * 63  # 64 levels with the object around it
    response = cast.owner.api.post("/api/auth/token/", json.dumps({"username": "owner", "password": "owner-pass-123",
                                                                   "pad": json.loads(ok)}),
                                   content_type="application/json")
    assert response.status_code == 200, response.content


def test_nan_in_a_json_body_is_refused(client, db):
    response = client.post("/api/auth/token/", '{"username": NaN, "password": "x"}', content_type="application/json")
    _assert_error_shape(response, 400)
