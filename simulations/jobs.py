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
    from celery.exceptions import SoftTimeLimitExceeded

    from simulations.streaming import StreamStopped

    ctx.progress(1, "starting" + (" (streamed)" if run.streamed else ""), force=True)
    try:
        return execute_run(run, progress=ctx.callback(2, 98))
    except ScenarioError as exc:
        raise JobError(exc.message, where=f"scenario.{exc.field}",
                       hint=exc.hint or "fix the scenario JSON and run again") from exc
    except StreamStopped as exc:  # a streamed run at the job time limit
        raise JobError(exc.message, where="run", hint=exc.hint) from exc
    except SoftTimeLimitExceeded as exc:
        raise JobError("stopped at the job time limit (CELERY_TASK_SOFT_TIME_LIMIT)", where="run",
                       hint="shorten the horizon, or run it streamed (result mode streaming) with a smaller horizon; "
                            "the operator can raise CELERY_TASK_TIME_LIMIT") from exc
    except MemoryError as exc:
        raise JobError("the run ran out of memory", where="run",
                       hint="run it streamed (result mode streaming), with a smaller chunk_s if it already is") from exc


# --- serverless (SLINFER shared-node executor) ---------------------------------------------------------
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
