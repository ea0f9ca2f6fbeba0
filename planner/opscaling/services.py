"""Writes for operator-level plans: create (validate once, queue the job) and run (compute, store)."""

from __future__ import annotations

from django.db import transaction

from planner.jobs.services import create_job
from planner.opscale.spec import OpscaleSpec, SpecError, parse_spec

JOB_KIND = "opscale.plan"
TRACE_COLUMNS = ["arrival_s", "input_tokens", "output_tokens"]


def _team_trace(spec: OpscaleSpec, team):
    from planner.traces.models import Trace

    if spec.workload.path is not None:
        raise SpecError("workload.path", "files on the server are for the CLI only; pick one of your team's traces")
    trace = Trace.objects.filter(team=team, pk=spec.workload.trace_id).first()
    if trace is None:
        raise SpecError("workload.trace_id", f"no trace {spec.workload.trace_id} in your team")
    if not trace.is_ready:
        raise SpecError("workload.trace_id", f"trace {spec.workload.trace_id} is {trace.current_status()[0]}, not ready")
    return trace


@transaction.atomic
def create_operator_plan(*, team, user, spec: dict, name: str = ""):
    """Validate (SpecError on bad input: nothing is stored), then queue the computation."""
    from planner.opscaling.models import OperatorPlan

    parsed = parse_spec(spec)
    trace = _team_trace(parsed, team)
    label = name or parsed.name or f"{parsed.model} on {parsed.gpu}, trace {trace.name}"
    plan = OperatorPlan.objects.create(team=team, created_by=user, name=label[:200], spec=spec, trace=trace)
    plan.job = create_job(team=team, kind=JOB_KIND, user=user, params={"operator_plan_id": plan.pk})
    plan.save(update_fields=["job"])
    return plan


def load_frame(spec: OpscaleSpec, trace=None):
    """The trace's requests (arrival, input, output tokens), from the team's normalised Parquet or, for the
    CLI, a raw or normalised file on disk (any format the ingest reads)."""
    import tempfile
    from pathlib import Path

    from planner.ingest.normalised import read_trace

    if trace is not None:
        return read_trace(trace.normalised_file, columns=TRACE_COLUMNS)
    path = Path(spec.workload.path)
    if not path.exists():
        raise SpecError("workload.path", f"{path}: no such file")
    if path.suffix == ".parquet":
        return read_trace(path, columns=TRACE_COLUMNS)
    from planner.ingest.errors import TraceFormatError
    from planner.ingest.pipeline import ingest

    with tempfile.TemporaryDirectory() as tmp:
        dst = Path(tmp) / "trace.parquet"
        try:
            ingest(path, dst)
        except TraceFormatError as exc:
            raise SpecError("workload.path", str(exc)) from None
        return read_trace(dst, columns=TRACE_COLUMNS)


def run_operator_plan(plan, progress=None) -> dict:
    """Compute ``plan`` and store the result on it. Returns a small summary for the job row."""
    from planner.opscale.plan import run_plan

    spec = parse_spec(plan.spec)
    if plan.trace is None:
        raise SpecError("workload.trace_id", "the trace was deleted")
    frame = load_frame(spec, plan.trace)
    try:
        result = run_plan(spec, frame, progress=progress)
    except ValueError as exc:
        raise SpecError("workload", str(exc)) from None
    pre = result["totals"]["prefill"]["operator_level"]["savings_vs_model_level"]
    dec = result["totals"]["decode"]["operator_level"]["savings_vs_model_level"]
    plan.result = result
    plan.prefill_gpu_savings = pre["gpu_s"]
    plan.decode_gpu_savings = dec["gpu_s"]
    plan.memory_savings = pre["memory_gb_s"]
    plan.feasible = result["infeasible_windows"] == 0
    plan.runtime_s = result["runtime_s"]
    plan.save(
        update_fields=["result", "prefill_gpu_savings", "decode_gpu_savings", "memory_savings", "feasible", "runtime_s"]
    )
    return {
        "operator_plan_id": plan.pk,
        "windows": result["windows"],
        "prefill_gpu_savings": plan.prefill_gpu_savings,
        "decode_gpu_savings": plan.decode_gpu_savings,
        "infeasible_windows": result["infeasible_windows"],
        "runtime_s": round(plan.runtime_s, 3),
    }
