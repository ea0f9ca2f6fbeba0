from planner.accounts.access import visible_to
from planner.backtests.models import Backtest


def backtests_for(user):
    return visible_to(user, Backtest.objects.select_related("job", "created_by"))
