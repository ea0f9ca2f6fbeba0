from planner.accounts.access import visible_to
from planner.opscaling.models import OperatorPlan


def operator_plans_for(user):
    return visible_to(user, OperatorPlan.objects.select_related("job", "trace", "created_by"))
