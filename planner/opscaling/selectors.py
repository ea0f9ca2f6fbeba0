from planner.accounts.access import visible_to
from planner.opscaling.models import OperatorPlan


def operator_plans_for(user):
    return visible_to(user, OperatorPlan.objects.select_related("job", "trace", "created_by"))


def operator_level_story(team, trace_id) -> list:
    """Report flowables of the team's latest operator-level plan on the same trace as a comparison, for its PDF
    ([] if none, or when the comparison runs a synthetic workload: a plan of another trace answers another
    question)."""
    from planner.opscale.report import section

    if not str(trace_id).isdigit():
        return []
    plan = (OperatorPlan.objects.filter(team=team, trace_id=int(trace_id), result__isnull=False)
            .order_by("-created", "-id").first())
    return section(plan.result, f"Plan #{plan.pk} ({plan.name})") if plan is not None else []
