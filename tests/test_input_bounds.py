"""Inputs that reached storage or the engine unchecked, or crashed: each is a 4xx in the documented shape
that says what is wrong, where, and how to fix it, and nothing is stored."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.urls import get_resolver

from planner.comparisons.models import Comparison
from planner.traces.models import Trace
from tests.test_bad_input_corpus import SMALL, scenario, upload

ROOT = Path(__file__).resolve().parents[1]
CSV = (ROOT / "fixtures" / "traces" / "azure_code_2023.csv").read_bytes()[:2000].rsplit(b"\n", 1)[0] + b"\n"
DEEP = "[" * 5000 + "]" * 5000


def explained(response, status=400) -> dict:
    """A 4xx in the documented shape whose where and hint are filled in (not just a message)."""
    assert response.status_code == status, (response.status_code, response.content[:400])
    err = response.json()["error"]
    assert err["message"] and err["where"] and err["hint"], err
    assert err["request_id"], err
    return err


def api_routes() -> list[str]:
    """Every API route that accepts a body, with its ids filled in with 1 (the route need not find a row)."""
    routes = []

    def walk(resolver, prefix):
        for entry in resolver.url_patterns:
            pattern = prefix + str(entry.pattern).lstrip("^").rstrip("$")
            if hasattr(entry, "url_patterns"):
                walk(entry, pattern)
            elif pattern.startswith("api/") and "format" not in pattern and not pattern.endswith(("docs/", "redoc/")):
                for name in ("pk", "series_id"):
                    pattern = pattern.replace(f"(?P<{name}>[^/.]+)", "1").replace(f"(?P<{name}>\\d+)", "1")
                routes.append("/" + pattern)

    walk(get_resolver(), "")
    return sorted(set(routes))


def test_the_route_list_covers_the_api():
    routes = api_routes()
    assert {"/api/traces/synthesise/", "/api/comparisons/", "/api/simulations/", "/api/auth/token/",
            "/api/hardware/import/", "/api/serverless/"} <= set(routes), routes


@pytest.mark.parametrize("method", ["post", "put", "patch"])
def test_deeply_nested_json_is_a_400_on_every_api_route(cast, method):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(cast.owner.user)  # the token routes (revoke, rotate) must not log the test out
    failures = {}
    for route in api_routes():
        r = getattr(client, method)(route, DEEP, content_type="application/json")
        if r.status_code in (404, 405):  # no such row or method: answered before the body is read
            continue
        if r.status_code != 400 or r.json()["error"]["where"] != "request body" or "nested" not in r.json()["error"]["message"]:
            failures[route] = (r.status_code, r.content[:200])
    assert not failures, failures


@pytest.mark.parametrize("strategies", [[["static"]], [{"strategy": "static"}], [{"strategy": ["static"]}],
                                        [{"strategy": {"name": "static"}}], [None], [1.5]])
def test_a_list_or_object_where_a_strategy_name_belongs_is_a_400(cast, strategies):
    r = cast.owner.api.post("/api/comparisons/", {"scenario": SMALL, "strategies": strategies}, format="json")
    err = explained(r)
    assert "strateg" in err["where"], err
    assert Comparison.objects.count() == 0


@pytest.mark.parametrize("field, value, where", [
    ("time_scale", "1e-300", "time_scale"), ("time_scale", "1e300", "time_scale"), ("rate", "1e-300", "rate"),
    ("rate", "1000", "rate"), ("jitter_s", "1e300", "jitter_s"), ("seed", str(10**400), "seed"),
    ("seed", "-1", "seed"), ("region", "r" * 10_000, "region"), ("model", "m" * 10_000, "model"),
    ("tier", "IW-F" * 3000, "tier"), ("description", "d" * 100_000, "description"), ("name", "n" * 1000, "name"),
])
def test_an_upload_option_out_of_bounds_is_a_400_naming_it(cast, field, value, where):
    f = io.BytesIO(CSV)
    f.name = "t.csv"
    err = explained(cast.owner.api.post("/api/traces/", {"file": f, field: value}, format="multipart"))
    assert where in err["where"], err
    assert Trace.objects.count() == 0


def test_a_file_name_of_5000_characters_is_a_400_with_where_and_hint(cast):
    err = explained(upload(cast.owner.api, CSV, name="x" * 5000 + ".csv"))
    assert "file" in err["where"], err
    assert Trace.objects.count() == 0


@pytest.mark.parametrize("seed", [10**400, -1, 2**63])
def test_a_synthesiser_seed_out_of_bounds_is_a_400(cast, seed):
    spec = {"kind": "poisson", "rate_rps": 1, "duration_s": 10}
    body = json.dumps({"spec": spec, "seed": seed})
    err = explained(cast.owner.api.post("/api/traces/synthesise/", body, content_type="application/json"))
    assert "seed" in err["where"], err
    assert Trace.objects.count() == 0


@pytest.mark.parametrize("mutate, where", [
    (lambda d: d.update(seed=10**400), "scenario.seed"),
    (lambda d: d["fleet"]["regions"][0].update(name="r" * 10_000), "scenario.fleet.regions[0].name"),
])
def test_a_scenario_number_or_name_out_of_bounds_is_a_400(cast, mutate, where):
    r = cast.owner.api.post("/api/simulations/", {"scenario": scenario(mutate)}, format="json")
    err = explained(r)
    assert err["where"].startswith(where), err


def test_a_404_and_a_bad_query_say_where_and_how_to_fix(cast):
    explained(cast.owner.api.get("/api/traces/99999999/"), 404)
    err = explained(cast.owner.api.get("/api/traces/?min_requests=1e400"))
    assert "min_requests" in err["where"] and "query" in err["where"], err
