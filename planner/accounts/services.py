from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from knox.models import AuthToken

from planner.accounts.models import Membership, Team


class TooManyTokens(Exception):
    pass


def live_tokens(user):
    return AuthToken.objects.filter(user=user).filter(Q(expiry__isnull=True) | Q(expiry__gt=timezone.now()))


def issue_token(user) -> tuple[AuthToken, str]:
    """A new API token for ``user``: (row, key). Only the key's digest is stored; it expires after
    API_TOKEN_TTL_DAYS (settings.REST_KNOX). Expired tokens of the user are deleted on the way; past
    API_TOKENS_PER_USER live tokens, TooManyTokens (every request authenticates against the user's token list)."""
    AuthToken.objects.filter(user=user, expiry__lte=timezone.now()).delete()
    if live_tokens(user).count() >= settings.API_TOKENS_PER_USER:
        raise TooManyTokens(f"{user.get_username()} has {settings.API_TOKENS_PER_USER} live API tokens already")
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
