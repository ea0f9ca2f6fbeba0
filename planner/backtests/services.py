"""Writes for back-tests: check everything at creation (a bad replica row, scenario or strategy stores nothing),
queue the job; run it and store the result."""

from __future__ import annotations

from django.db import transaction

from planner.backtests.core.latency import parse_latency
from planner.backtests.core.replicas import ReplicaFileError, parse_replicas
from planner.backtests.core.run import MAX_ALTERNATIVES, MAX_SEEDS, run_backtest
from planner.backtests.models import Backtest
from planner.comparisons.core.runner import engine_scenario_dict, load_workload
from planner.comparisons.core.variants import VariantError, build_variants
from planner.comparisons.services import team_trace, validate_scenario
from planner.jobs.services import create_job
from planner.limits import scenario_limits
from simulations.engine import parse_scenario

JOB_KIND = "backtests.run"


def _engine_and_workload(scenario: dict, team):
    """The parsed engine scenario and its workload (the trace's requests)."""
    validate_scenario(scenario)
    trace = None  # the trace's normalised file, read by the engine's one trace reader
    trace_id = (scenario.get("workload") or {}).get("trace_id")
    if trace_id is not None:
        trace = team_trace(trace_id, team).normalised_file
    eng = parse_scenario(engine_scenario_dict(scenario, {"strategy": "static", "key": "check"}),
                         limits=scenario_limits())
    return eng, load_workload(scenario, eng, trace=trace)


def endpoint_names(eng) -> list[str]:
    return [f"{e.region}/{e.model}" + ("" if e.pool == "all" else f"/{e.pool}") for e in eng.fleet.endpoints]


def check_backtest(*, team, scenario: dict, replicas_csv: str, origin: str | None = None, strategies=None,
                   bundles=None, max_gap_s: float = 900.0, latency_csv: str = "") -> tuple[dict, list, dict | None]:
    """(recorded replicas, alternative variants, measured latency or None), or ScenarioError / ReplicaFileError /
    VariantError."""
    eng, workload = _engine_and_workload(scenario, team)
    end = float(workload.arrival_s[-1]) if len(workload.arrival_s) else 0.0
    recorded = parse_replicas(replicas_csv, endpoint_names(eng), trace_end_s=end, origin=origin, max_gap_s=max_gap_s)
    measured = parse_latency(latency_csv) if latency_csv.strip() else None
    variants = build_variants(strategies, bundles=bundles)
    if any(v["key"] == "as-run" for v in variants):
        raise VariantError("strategies", "'as-run' is the back-test's own baseline; do not list it")
    if len(variants) > MAX_ALTERNATIVES:
        raise VariantError("strategies", f"{len(variants)} alternatives; a back-test replays at most "
                                         f"{MAX_ALTERNATIVES}: split them over several back-tests")
    return recorded, variants, measured


@transaction.atomic
def start_backtest(*, team, user, scenario: dict, recorded: dict, alternatives: list, name: str = "",
                   startup_s: float | None = None, measured: dict | None = None, seeds=None):
    if len(seeds or []) > MAX_SEEDS:
        raise VariantError("seeds", f"{len(seeds)} seeds; a back-test runs at most {MAX_SEEDS}")
    bt = Backtest.objects.create(team=team, created_by=user, name=(name or scenario.get("name", ""))[:200],
                                 scenario=scenario, recorded=recorded, alternatives=alternatives, startup_s=startup_s,
                                 measured=measured, seeds=[int(x) for x in seeds or []])
    bt.job = create_job(team=team, kind=JOB_KIND, user=user, params={"backtest_id": bt.pk})
    bt.save(update_fields=["job"])
    return bt


def run(bt, progress=None) -> dict:
    """Run ``bt`` and store its result; a small summary for the job row."""
    result = run_backtest(bt.scenario, bt.recorded, bt.alternatives, startup_s=bt.startup_s, measured=bt.measured,
                          seeds=bt.seeds or None, progress=progress, limits=scenario_limits())
    bt.result = result
    bt.as_run_exact = result["as_run_exact"]
    bt.save(update_fields=["result", "as_run_exact"])
    return {"backtest_id": bt.pk, "as_run_exact": result["as_run_exact"],
            "runs": [{"key": r["key"], "gpu_hours_delta": round(r["gpu_hours_delta"], 3)} for r in result["runs"]]}


__all__ = ["ReplicaFileError", "check_backtest", "start_backtest", "run", "JOB_KIND"]
