"""The API's "a scenario object, or the name of a bundled one" input, checked in one place.

A create serializer that offers both a ``scenario`` JSON field and a ``scenario_fixture`` name calls
``resolve_scenario(attrs)`` from its ``validate``: it loads the named fixture (fixtures/scenarios/) and
refuses a missing, unknown or non-object scenario with a ValidationError on the field to fix.
"""

from __future__ import annotations

from rest_framework import serializers


def resolve_scenario(attrs: dict) -> dict:
    """``attrs`` with ``attrs["scenario"]`` set: the object given, else the fixture named."""
    from planner.comparisons.selectors import load_fixture, scenario_fixtures

    if not attrs.get("scenario") and not attrs.get("scenario_fixture"):
        raise serializers.ValidationError({"scenario": "give a scenario object or scenario_fixture "
                                                       f"(one of {scenario_fixtures()})"})
    if attrs.get("scenario_fixture"):
        try:
            attrs["scenario"] = load_fixture(attrs["scenario_fixture"])
        except KeyError:
            raise serializers.ValidationError({"scenario_fixture": f"unknown fixture; use one of "
                                                                   f"{scenario_fixtures()}"}) from None
    if not isinstance(attrs["scenario"], dict):
        raise serializers.ValidationError({"scenario": "must be a JSON object"})
    return attrs
