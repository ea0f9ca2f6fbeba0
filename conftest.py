"""Fixtures shared by every app's tests (settings: planner/settings_test.py)."""

from __future__ import annotations

import pytest


@pytest.fixture
def cast(db):
    """The named cast for permission tests: owner and teammate share a team, outsider does not."""
    from rest_framework.test import APIClient

    from planner.accounts.services import create_user

    people = {}
    for name, team in (("owner", "Fleet A"), ("teammate", "Fleet A"), ("outsider", "Fleet B")):
        user, token = create_user(name, f"{name}-pass-123", team)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        people[name] = type("Member", (), {"user": user, "token": token, "api": client, "team": user.membership.team})
    return type("Cast", (), people)
