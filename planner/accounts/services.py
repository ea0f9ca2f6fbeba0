from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from rest_framework.authtoken.models import Token

from planner.accounts.models import Membership, Team


@transaction.atomic
def create_user(username: str, password: str, team_name: str, *, role: str = Membership.Role.MEMBER, email: str = ""):
    """Create a user in ``team_name`` (created if new) and return (user, token key)."""
    team, _ = Team.objects.get_or_create(name=team_name)
    user = get_user_model().objects.create_user(username=username, password=password, email=email)
    Membership.objects.create(user=user, team=team, role=role)
    token, _ = Token.objects.get_or_create(user=user)
    return user, token.key
