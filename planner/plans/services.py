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


def resolve_trace_demand(scenario: dict, *, team=None, hours: int | None = None) -> dict:
    """Fill ``demand`` from ``demand_from_trace`` ({"trace_id": N} of the team, or {"path": parquet}).

    Returns the scenario unchanged when it has no such section or it was resolved already."""
    spec = scenario.get("demand_from_trace") if isinstance(scenario, dict) else None
    if spec is None or (isinstance(spec, dict) and spec.get("resolved")):
        return scenario
    if not isinstance(spec, dict):
        raise ScenarioError("demand_from_trace", 'must be an object like {"trace_id": 3}')
    from planner.ingest.normalised import read_trace
    from planner.optimizer.demand import merge_trace_demand

    columns = ["arrival_s", "input_tokens", "model", "region", "tier"]
    if "trace_id" in spec:
        from planner.traces.models import Trace

        traces = Trace.objects.all() if team is None else Trace.objects.filter(team=team)
        trace = traces.filter(pk=spec["trace_id"]).first() if str(spec["trace_id"]).isdigit() else None
        if trace is None:
            raise ScenarioError("demand_from_trace.trace_id", f"no trace {spec['trace_id']!r} in your team")
        if not trace.is_ready:
            raise ScenarioError("demand_from_trace.trace_id",
                                f"trace {trace.pk} is {trace.current_status()[0]}, not ready; wait for its normalisation")
        path = trace.normalised_file
    elif "path" in spec and team is None:  # the CLI only: a normalised Parquet on disk
        path = spec["path"]
    else:
        raise ScenarioError("demand_from_trace", "needs trace_id (the id of one of your team's traces)")
    try:
        frame = read_trace(path, columns=columns)
    except (OSError, KeyError) as exc:
        raise ScenarioError("demand_from_trace", f"cannot read the trace: {exc}") from None
    return merge_trace_demand(scenario, frame, hours)


@transaction.atomic
def create_plan(*, team, user, scenario: dict, name: str = "", hours: int | None = None) -> CapacityPlan:
    """Validate the scenario (ScenarioError on bad input: nothing is stored) and queue its solve.
    Demand taken from a trace is resolved now, so the stored scenario is self-contained."""
    scenario = resolve_trace_demand(scenario, team=team, hours=hours)
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
    scenario = parse_scenario(plan.scenario, hours=plan.hours)  # ScenarioError: the job handler words it
    result = solve_plan(scenario, progress=progress)
    store_result(plan, result)
    return {
        "plan_id": plan.pk,
        "status": result.status,
        "total_cost": plan.total_cost,
        "gap": result.gap,
        "solve_time_s": round(result.solve_time_s, 3),
        "uncovered_endpoints": len(result.shortfalls),
    }


def store_result(plan: CapacityPlan, result) -> None:
    """Keep a solver result on the plan row (the job handler and ``manage.py plan`` both call this)."""
    plan.result = result.to_dict()
    plan.solver_status = result.status
    plan.total_cost = result.cost.get("total")
    plan.static_peak_cost = result.static_peak.get("total")
    plan.solve_time_s = result.solve_time_s
    plan.feasible = result.feasible if result.ok else None
    plan.save(update_fields=["result", "solver_status", "total_cost", "static_peak_cost", "solve_time_s", "feasible"])
