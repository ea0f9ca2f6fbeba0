from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.db import transaction
from knox.models import AuthToken

from planner.accounts.models import Membership, Team


def issue_token(user) -> tuple[AuthToken, str]:
    """A new API token for ``user``: (row, key). Only the key's digest is stored; it expires after
    API_TOKEN_TTL_DAYS (settings.REST_KNOX)."""
    return AuthToken.objects.create(user=user)


@transaction.atomic
def rotate_token(current: AuthToken) -> tuple[AuthToken, str]:
    """Replace ``current`` by a new token of the same user (the old key stops working at once)."""
    user = current.user
    current.delete()
    return issue_token(user)


@transaction.atomic
def create_user(username: str, password: str, team_name: str, *, role: str = Membership.Role.MEMBER, email: str = ""):
    """Create a user in ``team_name`` (created if new) and return (user, token key).

    The password must pass AUTH_PASSWORD_VALIDATORS (django.core.exceptions.ValidationError otherwise)."""
    User = get_user_model()
    validate_password(password, user=User(username=username, email=email))
    team, _ = Team.objects.get_or_create(name=team_name)
    user = User.objects.create_user(username=username, password=password, email=email)
    Membership.objects.create(user=user, team=team, role=role)
    _, token = issue_token(user)
    return user, token
