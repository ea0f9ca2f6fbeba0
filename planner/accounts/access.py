"""Named access checks. Views and viewsets call these, never filter by hand."""

from __future__ import annotations

from django.db.models import Model, QuerySet
from django.http import Http404

from planner.accounts.models import Team


def team_of(user) -> Team | None:
    if not getattr(user, "is_authenticated", False):
        return None
    membership = getattr(user, "membership", None)
    return membership.team if membership is not None else None


NO_TEAM = "your account belongs to no team; ask an admin to add you to one"


def team_required(user) -> Team:
    """The user's team for an API write; a user without one gets the documented 400 naming ``team``."""
    from rest_framework.exceptions import ValidationError

    team = team_of(user)
    if team is None:
        raise ValidationError({"team": NO_TEAM})
    return team


def visible_to(user, queryset: QuerySet) -> QuerySet:
    """Rows of ``queryset`` that the user's team owns (nothing for a user without a team)."""
    team = team_of(user)
    if team is None:
        return queryset.none()
    return queryset.filter(team=team)


def get_for_user_or_404(user, queryset: QuerySet, **lookup) -> Model:
    """One row the user's team owns; another team's row is a 404, never a 403 (no existence leak)."""
    try:
        return visible_to(user, queryset).get(**lookup)
    except queryset.model.DoesNotExist:
        raise Http404("not found") from None
