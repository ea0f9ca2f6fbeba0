"""access.team_required: every API write refuses a user without a team with the documented 400 naming ``team``,
and stores nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("url, body", [
    ("/api/comparisons/", lambda: {"scenario": json.loads((ROOT / "fixtures/scenarios/small_reactive.json").read_text()),
                                   "strategies": ["static"]}),
    ("/api/comparisons/routing-sweeps/", lambda: {"rates": [1, 2]}),
    ("/api/simulations/", lambda: {"fixture": "code_anchor"}),
    ("/api/plans/", lambda: {"scenario": json.loads((ROOT / "fixtures/plans/small_two_regions.json").read_text())}),
])
def test_a_user_without_a_team_gets_a_400_naming_team(db, url, body):
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    from planner.comparisons.models import Comparison
    from planner.plans.models import CapacityPlan
    from simulations.models import SimulationRun

    user = get_user_model().objects.create_user("loner", password="loner-pass-123")
    client = APIClient()
    client.force_authenticate(user)
    resp = client.post(url, body(), format="json")
    assert resp.status_code == 400, resp.content
    err = resp.json()["error"]
    assert "team" in err["fields"] and "no team" in json.dumps(err["fields"]["team"])
    assert not Comparison.objects.exists() and not CapacityPlan.objects.exists() and not SimulationRun.objects.exists()
