from planner.accounts.access import visible_to
from planner.opscaling.models import OperatorPlan


def operator_plans_for(user):
    return visible_to(user, OperatorPlan.objects.select_related("job", "trace", "created_by"))


def latest_result(team):
    """The team's most recent computed operator-level plan, or None."""
    return OperatorPlan.objects.filter(team=team, result__isnull=False).order_by("-created", "-id").first()


def operator_level_story(team) -> list:
    """Report flowables of the team's latest operator-level plan, for the comparison PDF ([] if none)."""
    from planner.opscale.report import section

    plan = latest_result(team)
    return section(plan.result, f"Plan #{plan.pk} ({plan.name})") if plan is not None else []
