from planner.accounts.access import visible_to
from planner.backtests.models import Backtest


def backtests_for(user):
    return visible_to(user, Backtest.objects.select_related("job", "created_by"))


def deployment_checks(team, scenario: dict) -> list[dict]:
    """Per endpoint of the back-test's fleet: its deployment and what the validation report (planner/benchmarks)
    says of it (checked against N real runs with the median E2E / TTFT error, or not checked): how far the as-run
    replay's latency can be trusted before it is put beside the measured one."""
    from django.db.models import Q

    from planner.benchmarks.selectors import validation_badge
    from planner.hardware.models import Deployment

    out = []
    for ep in ((scenario or {}).get("fleet") or {}).get("endpoints") or []:
        dep = ep.get("deployment")
        name = dep if isinstance(dep, str) else (dep or {}).get("name", "") if isinstance(dep, dict) else ""
        row = (Deployment.objects.filter(name=name).filter(Q(team=team) | Q(builtin=True))
               .order_by("-builtin", "-id").first()) if name else None
        badge = validation_badge(team, row) if row is not None else {
            "checked": False, "text": "not in the hardware catalogue: no validation report"}
        out.append({"endpoint": f"{ep.get('region')}/{ep.get('model')}", "deployment": name or "inline",
                    "deployment_id": row.pk if row is not None else None, **badge})
    return out
