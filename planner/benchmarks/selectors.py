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
