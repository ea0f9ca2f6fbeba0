"""Reads: what a user may see in the catalogue (their team's entries plus the built-ins)."""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.http import Http404

from planner.accounts.access import team_of
from planner.hardware.models import Deployment, GpuType, ModelProfile


def visible_catalogue(user, queryset: QuerySet) -> QuerySet:
    """Rows the user's team owns plus built-in rows (nothing at all for a user without a team)."""
    team = team_of(user)
    if team is None:
        return queryset.none()
    return queryset.filter(Q(team=team) | Q(builtin=True, team__isnull=True))


def get_visible_or_404(user, queryset: QuerySet, **lookup):
    try:
        return visible_catalogue(user, queryset).get(**lookup)
    except queryset.model.DoesNotExist:
        raise Http404("not found") from None


def can_edit(user, entry) -> bool:
    """Team members edit their team's entries; nobody edits a built-in."""
    team = team_of(user)
    return team is not None and not entry.builtin and entry.team_id == team.pk


def deployments_for(user) -> QuerySet:
    return visible_catalogue(user, Deployment.objects.select_related("model", "gpu"))


def gpus_for(user) -> QuerySet:
    return visible_catalogue(user, GpuType.objects.prefetch_related("prices"))


def models_for(user) -> QuerySet:
    return visible_catalogue(user, ModelProfile.objects.all())


def resolve_gpu(team, name: str) -> GpuType | None:
    """The team's GPU type of that name, else the built-in one."""
    own = GpuType.objects.filter(team=team, name=name).first() if team is not None else None
    return own or GpuType.objects.filter(builtin=True, team__isnull=True, name=name).first()


def resolve_model(team, name: str) -> ModelProfile | None:
    """The team's model of that name or alias (case-insensitive), else the built-in one."""
    wanted = name.strip().lower()
    for qs in (
        ModelProfile.objects.filter(team=team) if team is not None else ModelProfile.objects.none(),
        ModelProfile.objects.filter(builtin=True, team__isnull=True),
    ):
        for m in qs:
            if m.name.lower() == wanted or wanted in {a.lower() for a in (m.aliases or [])}:
                return m
    return None


def deployment_by_name(team, name: str) -> Deployment | None:
    """The team's deployment of that name, else the built-in one (what a scenario's name refers to)."""
    qs = Deployment.objects.select_related("model", "gpu")
    own = qs.filter(team=team, name=name).first() if team is not None else None
    return own or qs.filter(builtin=True, team__isnull=True, name=name).first()


def engine_spec_for(team, name: str) -> dict | None:
    """Engine spec (contract dict) of a deployment a team may use, by name; None if there is none."""
    dep = deployment_by_name(team, name)
    return dep.engine_spec() if dep is not None else None
