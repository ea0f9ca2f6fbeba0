"""Writes: validate a scenario, create a run and its job, execute it (called by the job handler)."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.db import transaction

from planner.input_errors import input_error, scenario_error
from planner.inputs import suggest
from planner.jobs.services import create_job
from planner.limits import run_limits
from simulations.engine import ScenarioError, build_workload, parse_scenario, simulate
from simulations.engine.policies import AUTOSCALERS
from simulations.engine.scenario.runoptions import ResultOptions, parse_result_options
from simulations.models import SimulationRun

FIXTURE_DIR = Path(settings.BASE_DIR) / "fixtures" / "scenarios"


def fixture_scenarios() -> dict[str, dict]:
    """Example scenarios shipped in fixtures/scenarios/ (name -> JSON)."""
    out = {}
    for path in sorted(FIXTURE_DIR.glob("*.json")):
        try:
            out[path.stem] = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
    return out


def validate_result_options(result) -> ResultOptions:
    """The run option ``result`` (table / streaming, chunk_s) through its schema; errors name ``result.<field>``."""
    try:
        return parse_result_options(result)
    except ScenarioError as exc:
        raise scenario_error(exc, prefix="") from None


def validate_scenario(scenario, *, strategy: str = "", team=None, streaming: bool = False,
                      chunk_s: float = 3600.0) -> None:
    """Parse the scenario through its schema (the one gate; errors name ``scenario.<field>``) and check that a
    ``trace_id`` is one of the team's traces. Raises DRF ValidationError in the API's error shape. A streamed
    run is checked against the streaming caps (PLANNER_MAX_STREAM_*), a table run against the table caps."""
    if isinstance(scenario, str):
        try:
            scenario = json.loads(scenario)
        except ValueError as exc:
            raise input_error("scenario", f"is not valid JSON: {exc}", "paste a JSON object") from None
    try:
        parsed = parse_scenario(scenario, limits=run_limits(streaming))
    except ScenarioError as exc:
        error = scenario_error(exc)
        if not streaming and "the limit is" in exc.message:
            error.detail["error"]["hint"] = (str(error.detail["error"]["hint"]) + "; or run it streamed "
                                             '(result {"mode": "streaming"}): larger caps, bounded memory').lstrip("; ")
        raise error from None
    if streaming:
        from simulations.streaming import check_synthetic_at_once

        try:
            check_synthetic_at_once(parsed, chunk_s)
        except ScenarioError as exc:
            raise scenario_error(exc) from None
    syn = parsed.workload_spec.get("synthetic")
    span = float(syn.get("duration_s") or 0.0) if isinstance(syn, dict) else 0.0
    if span > parsed.limits.max_sim_time_s:  # refused now rather than after generating it in the job
        raise input_error("scenario.workload.synthetic.duration_s",
                          f"is {span:,.0f} simulated seconds; the limit is {parsed.limits.max_sim_time_s:,.0f} per "
                          + ("streamed run" if streaming else "run"),
                          "ask the operator to raise PLANNER_MAX_STREAM_TIME_S" if streaming else
                          'run it streamed (result {"mode": "streaming"}): month-scale caps, bounded memory')
    if strategy and strategy not in AUTOSCALERS:
        raise input_error("strategy", f"unknown strategy {strategy!r}", suggest(strategy, list(AUTOSCALERS)))
    if "trace_id" in parsed.workload_spec:
        _trace_for(parsed.workload_spec["trace_id"], team)


def _trace_for(trace_id, team):
    from planner.traces.models import Trace

    try:
        trace = Trace.objects.get(pk=int(trace_id), team=team)
    except (Trace.DoesNotExist, TypeError, ValueError):
        raise input_error("scenario.workload.trace_id", f"no trace #{trace_id} in your team",
                          "use the id of one of your team's traces (GET /api/traces/)") from None
    if not trace.is_ready or not trace.normalised_file.exists():
        raise input_error("scenario.workload.trace_id", f"trace #{trace_id} is {trace.current_status()[0]}, not ready",
                          "wait until the trace's status is ready (GET /api/traces/ID/); a failed one says why")
    return trace


def work_requests(scenario: dict, team) -> int | None:
    """How many requests a run of this scenario simulates: its size, which picks the job queue (short or long
    work). None when the workload's size is not known up front (it then runs as short work)."""
    workload = scenario.get("workload") if isinstance(scenario, dict) else None
    if not isinstance(workload, dict):
        return None
    syn = workload.get("synthetic")
    try:
        if isinstance(syn, dict):
            if syn.get("total_requests") is not None:
                return max(0, int(syn["total_requests"]))
            return max(0, int(float(syn.get("rps", 10.0)) * float(syn.get("duration_s", 86400.0))))
        if "trace_id" in workload:
            from planner.traces.models import Trace

            return Trace.objects.filter(pk=int(workload["trace_id"]), team=team).values_list(
                "requests", flat=True).first()
    except (TypeError, ValueError, OverflowError):
        return None
    return None


@transaction.atomic
def create_run(*, team, user, scenario: dict, strategy: str = "", mode: str = "fast", name: str = "",
               result=None) -> SimulationRun:
    """``result``: the run option (``{"mode": "table"}`` default, or ``{"mode": "streaming", "chunk_s": S}``)."""
    options = validate_result_options(result)
    validate_scenario(scenario, strategy=strategy, team=team, streaming=options.streaming, chunk_s=options.chunk)
    if mode not in ("fast", "reference"):
        raise input_error("mode", "must be 'fast' or 'reference'")
    stored = options.stored()
    run = SimulationRun.objects.create(team=team, created_by=user, scenario=scenario, strategy=strategy, mode=mode,
                                       result_mode=stored["mode"], chunk_s=stored.get("chunk_s"),
                                       name=name or str(scenario.get("name", "simulation"))[:200])
    run.job = create_job(team=team, user=user, kind="simulation.run", params={"run_id": run.pk},
                         requests=work_requests(scenario, team))
    run.save(update_fields=["job"])
    return run


def execute_run(run: SimulationRun, progress=None) -> dict:
    """Parse, load the workload, simulate, store the result on the row. Returns a small summary."""
    scenario = parse_scenario(run.scenario, limits=run_limits(run.streamed))
    scenario = scenario.with_strategy(run.strategy or None, mode=run.mode or "fast")
    if run.streamed:
        return _execute_streamed(run, scenario, progress)
    trace = None  # a stored trace is read by the engine's one reader (traceio), like a file given on the CLI
    if "trace_id" in scenario.workload_spec:
        trace = _trace_for(scenario.workload_spec["trace_id"], run.team).normalised_file
    if progress:
        progress(0.0, "loading workload")
    workload = build_workload(scenario, trace=trace)
    result = simulate(scenario, workload, progress=progress)
    run.result = result.to_dict()
    run.requests_simulated = result.summary["requests"]
    run.wall_s = result.summary["wall_s"]
    run.save(update_fields=["result", "requests_simulated", "wall_s"])
    s = result.summary
    return {"run_id": run.pk, "requests_simulated": s["requests"], "wall_s": round(s["wall_s"], 3),
            "gpu_hours": s["gpu_hours"], "slo_attainment": s["slo_attainment"]}


def _execute_streamed(run: SimulationRun, scenario, progress) -> dict:
    """A streamed run (simulations.streaming): chunk by chunk, the accumulated result stored on the row."""
    from simulations.streaming import execute_stream

    trace_path = span_s = None
    if "trace_id" in scenario.workload_spec:
        trace = _trace_for(scenario.workload_spec["trace_id"], run.team)
        trace_path, span_s = trace.normalised_file, float(trace.span_s)
    out = execute_stream(scenario, chunk_s=float(run.chunk_s or 3600.0), trace_path=trace_path, span_s=span_s,
                         progress=progress)
    s = out["summary"]
    run.result = out
    run.requests_simulated = int(s.get("requests") or 0)
    run.wall_s = s.get("wall_s")
    run.save(update_fields=["result", "requests_simulated", "wall_s"])
    return {"run_id": run.pk, "result_mode": "streaming", "requests_simulated": run.requests_simulated,
            "wall_s": round(run.wall_s or 0.0, 3), "chunks": s.get("chunks"), "gpu_hours": s.get("gpu_hours"),
            "slo_attainment": s.get("slo_attainment")}
