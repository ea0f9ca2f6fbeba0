from planner.accounts.access import visible_to
from planner.plans.models import CapacityPlan


def plans_for(user):
    return visible_to(user, CapacityPlan.objects.select_related("job", "created_by"))
