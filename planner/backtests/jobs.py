from planner.backtests.models import Backtest
from planner.backtests.services import JOB_KIND, run
from planner.jobs.registry import JobError, handler
from simulations.engine import ScenarioError


@handler(JOB_KIND, idempotent=True)  # it overwrites its back-test's result: safe to run again after a lost worker
def run_backtest_job(job, ctx):
    bt = Backtest.objects.filter(pk=job.params.get("backtest_id"), team=job.team).first()
    if bt is None:
        raise JobError(f"back-test {job.params.get('backtest_id')} does not exist", where="params.backtest_id",
                       hint="the back-test was deleted; create it again")
    ctx.progress(1, "replaying the window as run")
    try:
        return run(bt, progress=ctx.callback(2, 99))
    except ScenarioError as exc:
        raise JobError(exc.message, where=exc.field, hint="fix the scenario and create the back-test again") from None
