"""The kinds of comparison, and the one parser of a comparison request (form, API and CLI).

``kind_of(scenario)`` names the kind a scenario is (its ``"kind"`` field; a serverless spec is recognised by its
shape too); every caller then asks the kind. Adding a kind is one module with a ``ComparisonKind`` subclass and
one entry in ``KINDS``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from planner.comparisons.kinds.base import ComparisonKind, ComparisonRequest, RequestError
from planner.comparisons.kinds.fleet import FleetKind
from planner.comparisons.kinds.operator import OperatorLevelKind
from planner.comparisons.kinds.serverless import ServerlessKind

# the order in which a scenario is matched: the serverless shape before the fleet default
KINDS: dict[str, ComparisonKind] = {k.name: k for k in (ServerlessKind(), OperatorLevelKind(), FleetKind())}

__all__ = ["KINDS", "ComparisonKind", "ComparisonRequest", "RequestError", "answer_of", "export_csv", "export_pdf",
           "kind_of", "kind_of_comparison", "parse_request"]


def kind_of(scenario) -> ComparisonKind:
    """The kind of a scenario (a comparison's stored scenario or a request's); RequestError if it names none."""
    if not isinstance(scenario, dict):
        raise RequestError("scenario", "must be a JSON object", "see docs/comparisons.md")
    named = scenario.get("kind")
    if named is not None and named not in KINDS:
        raise RequestError("scenario.kind", f"unknown kind {named!r}", f"use one of {', '.join(KINDS)}")
    return next(k for k in KINDS.values() if k.matches(scenario))


def _names(data: Mapping, field: str) -> tuple[str, ...]:
    value = data.get(field) or []
    if isinstance(value, str):
        value = [x.strip() for x in value.split(",") if x.strip()]
    if not isinstance(value, list | tuple) or not all(isinstance(x, str) for x in value):
        raise RequestError(field, "must be a list of names", 'e.g. ["reactive-unified", "lt-ua"]')
    return tuple(dict.fromkeys(value))


def _object(data: Mapping, field: str) -> dict:
    value = data.get(field) or {}
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except json.JSONDecodeError as exc:
            raise RequestError(field, f"does not parse as JSON ({exc})", "give a JSON object") from None
    if not isinstance(value, dict):
        raise RequestError(field, "must be a JSON object", "")
    return value


def _scenario(data: Mapping) -> dict:
    from planner.comparisons.selectors import load_fixture, scenario_fixtures

    scenario = data.get("scenario")
    if isinstance(scenario, str):
        if not scenario.strip():
            scenario = None
        else:
            try:
                scenario = json.loads(scenario)
            except json.JSONDecodeError as exc:
                raise RequestError("scenario", f"the scenario JSON does not parse: {exc}",
                                   "paste a JSON object, or choose a fixture") from None
    fixture = data.get("scenario_fixture") or ""
    if not scenario and fixture:
        try:
            scenario = load_fixture(fixture)
        except KeyError:
            raise RequestError("scenario_fixture", f"unknown fixture {fixture!r}",
                               f"use one of {', '.join(scenario_fixtures())}") from None
    if not scenario:
        raise RequestError("scenario", "give a scenario object or a scenario fixture",
                           f"fixtures: {', '.join(scenario_fixtures())}")
    if not isinstance(scenario, dict):
        raise RequestError("scenario", "must be a JSON object", "see docs/comparisons.md")
    return scenario


def parse_request(data: Mapping, *, base_dir: str = "") -> tuple[ComparisonKind, ComparisonRequest]:
    """A comparison request from plain data (the API's JSON body, the form's fields, the CLI's options).

    Fields: ``scenario`` (object or JSON text) or ``scenario_fixture``; ``name``; ``strategies`` or ``systems``
    (the variants by name); ``baseline``; for fleet comparisons also ``schedulers``, ``variants``, ``bundles``,
    ``seeds``, ``tune`` and ``projection``. RequestError names the first bad field."""
    scenario = _scenario(data)
    kind = kind_of(scenario)
    seeds = data.get("seeds") or []
    if isinstance(seeds, str):
        seeds = [x.strip() for x in seeds.split(",") if x.strip()]
    try:
        seeds = tuple(int(s) for s in seeds)
    except (TypeError, ValueError):
        raise RequestError("seeds", "must be whole numbers", "e.g. 2025,2026,2027") from None
    variants = data.get("variants") or []
    if not isinstance(variants, list) or not all(isinstance(v, dict) for v in variants):
        raise RequestError("variants", "must be a list of objects", '[{"strategy": "lt-ua", "knobs": {...}}]')
    name = data.get("name") or ""
    if not isinstance(name, str) or len(name) > 200:
        raise RequestError("name", "must be text of at most 200 characters", "")
    baseline = data.get("baseline") or ""
    if not isinstance(baseline, str):
        raise RequestError("baseline", "must be a variant key or strategy name", "")
    request = ComparisonRequest(
        scenario=scenario, name=name, choices=_names(data, "strategies") + _names(data, "systems"),
        baseline=baseline, schedulers=_names(data, "schedulers"), variants=tuple(variants),
        bundles=_names(data, "bundles"), seeds=seeds, tune=_object(data, "tune"),
        projection=_object(data, "projection"), base_dir=base_dir)
    return kind, request


def kind_of_comparison(comp) -> ComparisonKind:
    """The kind of a stored comparison (stored scenarios always name a known kind or none)."""
    return kind_of(comp.scenario or {})


def answer_of(comp) -> dict | None:
    """The decision card's answer of a stored comparison (its kind's; None before the aggregate)."""
    return kind_of_comparison(comp).answer(comp)


def export_csv(comp) -> str:
    """Every number of a comparison, long CSV, in its kind's layout."""
    from planner.comparisons.selectors import summaries_of

    return kind_of_comparison(comp).export_csv(comp, summaries_of(comp))


def export_pdf(comp) -> bytes:
    """The comparison's PDF report (its kind's)."""
    from planner.comparisons.outcome import failures_of
    from planner.comparisons.selectors import summaries_of

    return kind_of_comparison(comp).export_pdf(comp, summaries_of(comp), failures_of(comp))
