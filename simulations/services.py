"""Writes: validate a scenario, create a run and its job, execute it (called by the job handler)."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.db import transaction
from rest_framework.exceptions import ValidationError

from planner.jobs.services import create_job
from simulations.engine import ScenarioError, build_workload, parse_scenario, simulate
from simulations.engine.policies import AUTOSCALERS
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


def validate_scenario(scenario, *, strategy: str = "", team=None) -> None:
    """Raise DRF ValidationError naming the scenario field (prefixed ``scenario.``) when it cannot run."""
    if isinstance(scenario, str):
        try:
            scenario = json.loads(scenario)
        except ValueError as exc:
            raise ValidationError({"scenario": f"is not valid JSON: {exc}"}) from None
    try:
        parsed = parse_scenario(scenario)
    except ScenarioError as exc:
        raise ValidationError({f"scenario.{exc.field}": exc.message}) from None
    if strategy and strategy not in AUTOSCALERS:
        raise ValidationError({"strategy": f"unknown strategy {strategy!r}; known: {sorted(AUTOSCALERS)}"})
    wl = parsed.workload_spec
    if "trace_id" in wl:
        _trace_for(wl["trace_id"], team)
    elif "trace_path" in wl:
        _check_trace_path(wl["trace_path"])


def _check_trace_path(path: str) -> None:
    """Only files inside the repository's fixtures/ or MEDIA_ROOT may be read through the web app."""
    p = Path(path)
    if not p.is_absolute():
        p = Path(settings.BASE_DIR) / p
    p = p.resolve()
    allowed = [(Path(settings.BASE_DIR) / "fixtures").resolve(), Path(settings.MEDIA_ROOT).resolve()]
    if not any(p.is_relative_to(a) for a in allowed):
        raise ValidationError({"scenario.workload.trace_path": "must point inside fixtures/ or the media folder; "
                                                               "upload other traces and use trace_id"})
    if not p.exists():
        raise ValidationError({"scenario.workload.trace_path": f"file {path!r} does not exist"})


def _trace_for(trace_id, team):
    from planner.traces.models import Trace

    try:
        trace = Trace.objects.get(pk=int(trace_id), team=team)
    except (Trace.DoesNotExist, TypeError, ValueError):
        raise ValidationError({"scenario.workload.trace_id": f"no trace #{trace_id} in your team"}) from None
    if not trace.normalised_file.exists():
        raise ValidationError({"scenario.workload.trace_id": f"trace #{trace_id} has no normalised file yet"})
    return trace


@transaction.atomic
def create_run(*, team, user, scenario: dict, strategy: str = "", mode: str = "fast", name: str = "") -> SimulationRun:
    validate_scenario(scenario, strategy=strategy, team=team)
    if mode not in ("fast", "reference"):
        raise ValidationError({"mode": "must be 'fast' or 'reference'"})
    run = SimulationRun.objects.create(team=team, created_by=user, scenario=scenario, strategy=strategy, mode=mode,
                                       name=name or str(scenario.get("name", "simulation"))[:200])
    run.job = create_job(team=team, user=user, kind="simulation.run", params={"run_id": run.pk})
    run.save(update_fields=["job"])
    return run


def execute_run(run: SimulationRun, progress=None) -> dict:
    """Parse, load the workload, simulate, store the result on the row. Returns a small summary."""
    scenario = parse_scenario(run.scenario, base_dir=FIXTURE_DIR)
    scenario = scenario.with_strategy(run.strategy or None, mode=run.mode or "fast")
    frame = None
    if "trace_id" in scenario.workload_spec:
        from planner.ingest.normalised import read_trace

        frame = read_trace(_trace_for(scenario.workload_spec["trace_id"], run.team).normalised_file)
    if progress:
        progress(0.0, "loading workload")
    workload = build_workload(scenario, frame=frame)
    result = simulate(scenario, workload, progress=progress)
    run.result = result.to_dict()
    run.requests_simulated = result.summary["requests"]
    run.wall_s = result.summary["wall_s"]
    run.save(update_fields=["result", "requests_simulated", "wall_s"])
    s = result.summary
    return {"run_id": run.pk, "requests_simulated": s["requests"], "wall_s": round(s["wall_s"], 3),
            "gpu_hours": s["gpu_hours"], "slo_attainment": s["slo_attainment"]}
