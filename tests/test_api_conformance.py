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
    raw = SchemaGenerator().get_schema(request=None, public=True)
    schema = schemathesis.openapi.from_dict(json.loads(json.dumps(raw, default=str)))
    schema.app = get_wsgi_application()
    schema.config.generation.update(modes=list(schemathesis.GenerationMode), max_examples=EXAMPLES)
    return schema


schema = schemathesis.pytest.from_fixture("api_schema")


def _record(case, exc: BaseException) -> None:
    failures = exc.exceptions if isinstance(exc, FailureGroup) else [exc]
    with open(REPORT, "a") as fh:
        for failure in failures:
            fh.write(json.dumps({"operation": f"{case.method} {case.path}", "check": type(failure).__name__,
                                 "title": getattr(failure, "title", str(failure))[:200]}) + "\n")


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(1800)  # one pytest test per operation; the limit is generous for a loaded machine
@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
def test_every_response_conforms_to_the_schema(case, cast):
    headers = {"Authorization": f"Token {cast.owner.token}"}
    if case.path.startswith("/api/auth/token/") and case.method.upper() == "POST" and case.path != "/api/auth/token/":
        headers = {"Authorization": f"Token {_spare_token(cast)}"}  # rotate/revoke end a token: not the fixture's
    response = case.call(headers=headers)
    try:
        case.validate_response(response, checks=CHECKS, headers=headers)
    except (AssertionError, FailureGroup) as exc:
        if not REPORT:
            raise
        _record(case, exc)


def _spare_token(cast) -> str:
    from planner.accounts.services import issue_token

    return issue_token(cast.owner.user)[1]
