from planner.jobs.registry import JobError, handler
from planner.optimizer.scenario import ScenarioError
from planner.plans.models import CapacityPlan
from planner.plans.services import JOB_KIND, run_plan


@handler(JOB_KIND, idempotent=True)
def solve(job, ctx):
    plan_id = job.params.get("plan_id")
    plan = CapacityPlan.objects.filter(pk=plan_id, team=job.team).first()
    if plan is None:
        raise JobError(
            f"capacity plan {plan_id} does not exist",
            where="params.plan_id",
            hint="the plan was deleted; create it again",
        )
    ctx.progress(1, "building the model")
    try:
        return run_plan(plan, progress=ctx.callback(2, 99))
    except ScenarioError as exc:
        raise JobError(
            exc.message, where=f"scenario.{exc.field}", hint="fix the scenario and create the plan again"
        ) from None
