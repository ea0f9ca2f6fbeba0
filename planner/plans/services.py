"""Writes for capacity plans: create (validate, then queue the solve) and run (solve, store)."""

from __future__ import annotations

from django.db import transaction

from planner.jobs.services import create_job
from planner.optimizer.multiperiod import solve_plan
from planner.optimizer.scenario import ScenarioError, parse_scenario
from planner.plans.models import CapacityPlan

JOB_KIND = "plan.solve"


def validate(scenario: dict, hours: int | None = None):
    """Parse a scenario; raises ScenarioError(field, message)."""
    return parse_scenario(scenario, hours=hours)


@transaction.atomic
def create_plan(*, team, user, scenario: dict, name: str = "", hours: int | None = None) -> CapacityPlan:
    """Validate the scenario (ScenarioError on bad input: nothing is stored) and queue its solve."""
    parsed = validate(scenario, hours)
    plan = CapacityPlan.objects.create(
        team=team,
        created_by=user,
        name=(name or parsed.name)[:200],
        scenario=scenario,
        hours=parsed.hours,
    )
    plan.job = create_job(team=team, kind=JOB_KIND, user=user, params={"plan_id": plan.pk})
    plan.save(update_fields=["job"])
    return plan


def run_plan(plan: CapacityPlan, progress=None) -> dict:
    """Solve ``plan`` and store the result on it. Returns a small summary for the job row."""
    try:
        scenario = parse_scenario(plan.scenario, hours=plan.hours)
    except ScenarioError:
        raise
    result = solve_plan(scenario, progress=progress)
    plan.result = result.to_dict()
    plan.solver_status = result.status
    plan.total_cost = result.cost.get("total")
    plan.static_peak_cost = result.static_peak.get("total")
    plan.solve_time_s = result.solve_time_s
    plan.feasible = result.feasible if result.ok else None
    plan.save(update_fields=["result", "solver_status", "total_cost", "static_peak_cost", "solve_time_s", "feasible"])
    return {
        "plan_id": plan.pk,
        "status": result.status,
        "total_cost": plan.total_cost,
        "gap": result.gap,
        "solve_time_s": round(result.solve_time_s, 3),
        "uncovered_endpoints": len(result.shortfalls),
    }
