from planner.jobs.registry import JobError, handler
from planner.opscale.spec import SpecError
from planner.opscaling.models import OperatorPlan
from planner.opscaling.services import JOB_KIND, run_operator_plan


@handler(JOB_KIND, idempotent=True)  # it overwrites its plan's result fields: safe to run again after a lost worker
def compute(job, ctx):
    plan_id = job.params.get("operator_plan_id")
    plan = OperatorPlan.objects.filter(pk=plan_id, team=job.team).select_related("trace").first()
    if plan is None:
        raise JobError(
            f"operator-level plan {plan_id} does not exist",
            where="params.operator_plan_id",
            hint="the plan was deleted; create it again",
        )
    ctx.progress(1, "reading the trace")
    try:
        return run_operator_plan(plan, progress=ctx.callback(2, 99))
    except SpecError as exc:
        raise JobError(exc.message, where=f"spec.{exc.field}", hint="fix the spec and create the plan again") from None
