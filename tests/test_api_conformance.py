"""The API and its OpenAPI schema agree: schemathesis' conformance checks over every operation of /api/schema/.

Generated requests, valid and invalid by the schema, go through the WSGI app (Django's test database) as a team
member who owns a trace. Every response must be: not a 5xx, a status code the schema documents for the
operation, a documented content type, a body that validates against the documented schema; a request the
schema calls valid must not be rejected (positive_data_acceptance) and one it calls invalid must not be
accepted (negative_data_rejection). Jobs are not dispatched, so a valid POST never starts work here.

Bounded for CI: CONFORMANCE_EXAMPLES examples per operation and mode (default 4), derandomised so a run is
repeatable. ``CONFORMANCE_REPORT=FILE`` records every failure as JSON lines instead of failing (to count them).
"""

from __future__ import annotations

import json
import os

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import checks
from schemathesis.core.failures import FailureGroup

EXAMPLES = int(os.environ.get("CONFORMANCE_EXAMPLES", "4"))
REPORT = os.environ.get("CONFORMANCE_REPORT", "")
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.positive_data_acceptance,
    checks.negative_data_rejection,
]


@pytest.fixture
def api_schema(cast, monkeypatch):
    from django.core.wsgi import get_wsgi_application
    from drf_spectacular.generators import SchemaGenerator

    import planner.jobs.services as job_services
    from tests.test_fuzz_api import _seed_data

    monkeypatch.setattr(job_services, "dispatch", lambda job_id: None, raising=False)  # queued, never run here
    _seed_data(cast)
    raw = json.loads(json.dumps(SchemaGenerator().get_schema(request=None, public=True), default=str))
    FREE_FORM.clear()
    FREE_FORM.update(free_form_bodies(raw))
    schema = schemathesis.openapi.from_dict(raw)
    schema.app = get_wsgi_application()
    schema.config.generation.update(modes=list(schemathesis.GenerationMode), max_examples=EXAMPLES)
    return schema


# Operations whose body holds a free-form object (a scenario, a spec, a latency fit): the OpenAPI schema describes
# the envelope and says "any object" there; the object is checked by its own pydantic schema (README "Limits"), so
# a schema-valid envelope with a made-up scenario is rightly a 400. Found from the schema, not listed by hand.
FREE_FORM: set[str] = set()


def free_form_bodies(raw: dict) -> set[str]:
    components = raw.get("components", {}).get("schemas", {})

    def free(node, seen=()) -> bool:
        if not isinstance(node, dict):
            return False
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            return name not in seen and free(components.get(name, {}), (*seen, name))
        if node.get("type") == "object" and not node.get("properties") or node == {}:
            return True
        return any(free(child, seen) for key in ("properties",) for child in node.get(key, {}).values()) or any(
            free(node.get(key), seen) for key in ("items", "additionalProperties")) or any(
            free(child, seen) for key in ("oneOf", "anyOf", "allOf") for child in node.get(key, []))

    found = set()
    for path, operations in raw.get("paths", {}).items():
        for method, operation in operations.items():
            content = (operation.get("requestBody") or {}).get("content", {}) if isinstance(operation, dict) else {}
            if any(free(media.get("schema")) for media in content.values()):
                found.add(f"{method.upper()} {path}")
    return found


schema = schemathesis.pytest.from_fixture("api_schema")
if os.environ.get("CONFORMANCE_PATHS"):  # a regex: check only these paths (to look into a failure)
    schema = schema.include(path_regex=os.environ["CONFORMANCE_PATHS"])


def _record(case, exc: BaseException) -> None:
    failures = exc.exceptions if isinstance(exc, FailureGroup) else [exc]
    with open(REPORT, "a") as fh:
        for failure in failures:
            fh.write(json.dumps({"operation": f"{case.method} {case.path}", "check": type(failure).__name__,
                                 "title": getattr(failure, "title", str(failure))[:200],
                                 "status": getattr(failure, "status_code", None),
                                 "message": str(getattr(failure, "message", ""))[:300],
                                 "request": {"query": case.query, "path_parameters": case.path_parameters,
                                             "body": str(case.body)[:500], "media_type": case.media_type}},
                                default=str) + "\n")


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(1800)  # one pytest test per operation; the limit is generous for a loaded machine
@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
def test_every_response_conforms_to_the_schema(case, cast):
    headers = {"Authorization": f"Token {cast.owner.token}"}
    excluded = []
    if case.path == "/api/auth/token/" or f"{case.method.upper()} {case.path}" in FREE_FORM:
        # credentials: a schema says which requests are well formed, not which passwords are right; a free-form
        # object: see FREE_FORM. Every other check still applies to these operations.
        excluded = [checks.positive_data_acceptance]
    if case.path.startswith("/api/auth/token/") and case.method.upper() == "POST" and case.path != "/api/auth/token/":
        headers = {"Authorization": f"Token {_spare_token(cast)}"}  # rotate/revoke end a token: not the fixture's
    response = case.call(headers=headers)
    try:
        case.validate_response(response, checks=[c for c in CHECKS if c not in excluded], headers=headers)
    except (AssertionError, FailureGroup) as exc:
        if not REPORT:
            raise
        _record(case, exc)


def _spare_token(cast) -> str:
    from planner.accounts.services import issue_token

    return issue_token(cast.owner.user)[1]
