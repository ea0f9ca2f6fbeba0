"""Reads of the benchmarks app."""

from __future__ import annotations

from planner.accounts.access import team_of
from planner.benchmarks.models import BenchmarkRun, Validation


def runs_for(user):
    return BenchmarkRun.objects.filter(team=team_of(user)).select_related("deployment")


def validations_for(user):
    return Validation.objects.filter(team=team_of(user)).select_related("deployment").prefetch_related("runs")


def latest_validation(team, deployment) -> Validation | None:
    """The newest validation of a deployment that the team can see (its own)."""
    return Validation.objects.filter(team=team, deployment=deployment).order_by("-created", "-id").first()


def validation_badge(team, deployment) -> dict:
    """What a page says about a deployment: checked against N real runs with the median E2E / TTFT error, or
    not checked."""
    v = latest_validation(team, deployment) if team is not None else None
    if v is None or not v.pooled.get("e2e_mean"):
        return {"checked": False, "text": "not checked against real runs"}
    n = v.runs.count()
    e2e, ttft = v.median_e2e_error, v.median_ttft_error
    text = f"checked against {n} real run{'s' if n != 1 else ''}: median E2E error {e2e:.1f} %"
    if ttft is not None:
        text += f", TTFT {ttft:.1f} %"
    if v.kind == "heldout":
        text += " (held out from the calibration)"
    elif v.kind == "heldout-other-models":
        text += " (held-out runs of other models on this GPU type)"
    return {"checked": True, "text": text, "runs": n, "e2e_pct": e2e, "ttft_pct": ttft, "validation_id": v.pk}


def versions(team, deployment) -> list[dict]:
    """Every version of the deployment's model x GPU type x TP the team sees (the built-in one and the team's
    calibrated ones, never merged), each with its badge: [{"dep", "badge", "this", "best"}], the checked ones first
    by median E2E error. ``best`` marks the version with the lowest checked E2E error (none when nothing is
    checked): the one to plan with."""
    from django.db.models import Q

    from planner.hardware.models import Deployment

    qs = (Deployment.objects.filter(Q(team=team) | Q(builtin=True)) if team is not None
          else Deployment.objects.filter(builtin=True))
    same = qs.filter(model__name=deployment.model.name, gpu__name=deployment.gpu.name, tp=deployment.tp)
    rows = [{"dep": d, "badge": validation_badge(team, d), "this": d.pk == deployment.pk, "best": False}
            for d in same.order_by("-builtin", "pk")]
    checked = [r for r in rows if r["badge"]["checked"]]
    checked.sort(key=lambda r: r["badge"]["e2e_pct"])
    if checked:
        checked[0]["best"] = True
    return checked + [r for r in rows if not r["badge"]["checked"]]
