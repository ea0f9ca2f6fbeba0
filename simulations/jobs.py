"""Job handler: ``simulation.run`` (progress by simulated time; cancellation through ctx.progress)."""

from __future__ import annotations

from planner.jobs.registry import JobError, handler
from simulations.engine import ScenarioError


@handler("simulation.run")
def run_simulation(job, ctx):
    from simulations.models import SimulationRun
    from simulations.services import execute_run

    run_id = job.params.get("run_id")
    run = SimulationRun.objects.filter(pk=run_id, team=job.team).first()
    if run is None:
        raise JobError(f"simulation run #{run_id} does not exist", where="job.params.run_id",
                       hint="the run was deleted; create a new one")
    ctx.progress(1, "starting", force=True)
    try:
        return execute_run(run, progress=ctx.callback(2, 98))
    except ScenarioError as exc:
        raise JobError(exc.message, where=f"scenario.{exc.field}", hint="fix the scenario JSON and run again") from exc


# --- serverless (SLINFER shared-node executor, issue 18) ---------------------------------------------------------
@handler("serverless.run", idempotent=True)
def run_serverless(job, ctx):
    """Run a serverless scenario (simulations/engine/serverless/spec.py) for each of its systems; the metrics per
    system are the job's result (small: one dict per system)."""
    from simulations.engine.serverless.spec import SpecError, parse, run

    try:
        spec = parse(job.params.get("spec"))
        ctx.progress(1, f"running {', '.join(spec.systems)}", force=True)
        return run(spec)
    except SpecError as exc:
        raise JobError(exc.message, where=f"spec.{exc.where}", hint=exc.hint) from exc
