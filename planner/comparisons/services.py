"""Writes: create a comparison and fan its variants out as child jobs; record results; aggregate.

Fan-out / fan-in. ``start_comparison`` creates the parent Job (kind ``comparisons.aggregate``) WITHOUT
dispatching it, and one child Job (kind ``comparisons.variant``) per variant, dispatched after commit:
with JOBS_RUNNER=celery each child is its own Celery task, so several workers on several machines run
the variants in parallel. Each child records its VariantResult; the child that finds every variant
final claims ``Comparison.aggregation_started`` with a conditional UPDATE (exactly one wins, even when
two finish together) and dispatches the parent, which aggregates. That is a Celery chord without the
chord: it works the same with the thread and inline runners, and it survives a worker restart between
children because the state is in the database. Cancelling the parent (queued while children run)
cancels the children (planner.jobs.services.cancel_job).
"""

from __future__ import annotations

import logging

from django.db import transaction

from planner.comparisons.core.variants import build_variants, pick_baseline
from planner.comparisons.models import Comparison, VariantResult
from planner.jobs.models import Job
from planner.jobs.services import check_long_job_budget, create_job, mark_and_dispatch
from simulations.services import work_requests

log = logging.getLogger(__name__)


def validate_scenario(scenario) -> None:
    """Parse the scenario with the engine once, so a bad one fails at creation, not in every child."""
    from planner.comparisons.core.runner import engine_scenario_dict
    from planner.limits import scenario_limits
    from simulations.engine import ScenarioError, parse_scenario
    from simulations.engine.policies.params import check_params
    from simulations.engine.scenario.schema import synth_spec, validate_input

    if not isinstance(scenario, dict):
        raise ScenarioError("scenario", "must be a JSON object (an engine scenario, see docs/comparisons.md)")
    checked = validate_input(scenario)  # the whole scenario, comparison keys included (one schema)
    for name, knobs in checked.strategy_params.items():  # knobs per strategy, checked before any child runs
        engine_name = "reactive-unified-niwq" if name == "reactive-unified" and checked.niw_queue else name
        check_params(engine_name, knobs, f"strategy_params.{name}")
    if checked.workload.synthesize is not None:
        synth_spec(checked.workload)
    parse_scenario(engine_scenario_dict(scenario, {"strategy": "static", "key": "check"}), limits=scenario_limits())


def validate_variants(scenario: dict, variants: list[dict]) -> None:
    """Parse each distinct variant's engine scenario once (its strategy, bundle, knobs and scheduler applied), so
    a strategy the scenario cannot run (e.g. one that moves KV on a deployment without kv_bytes_per_token) is
    refused when the comparison starts, not in its child job. Seeds change no configuration: one parse per
    variant without its seed."""
    import json

    from planner.comparisons.core.runner import engine_scenario_dict
    from planner.limits import scenario_limits
    from simulations.engine import parse_scenario

    seen: set[str] = set()
    for v in variants:
        plain = {k: v.get(k) for k in ("strategy", "bundle", "scheduler", "knobs")}
        key = json.dumps(plain, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            parse_scenario(engine_scenario_dict(scenario, {**plain, "key": v["key"]}), limits=scenario_limits())


def team_trace(trace_id, team):
    """The team's uploaded trace a scenario's ``workload.trace_id`` names; ScenarioError if it is not theirs or
    has no normalised file yet."""
    from planner.traces.models import Trace
    from simulations.engine import ScenarioError

    trace = Trace.objects.filter(pk=int(trace_id), team=team).first() if str(trace_id).isdigit() else None
    if trace is None:
        raise ScenarioError("workload.trace_id", f"no trace #{trace_id} in your team",
                            hint="upload the trace first, or pick one of yours")
    if not trace.is_ready or not trace.normalised_file.exists():
        raise ScenarioError("workload.trace_id", f"trace #{trace_id} is {trace.current_status()[0]}, not ready",
                            hint="wait until its status is ready; a failed trace says why")
    return trace


@transaction.atomic
def start_comparison(*, team, user=None, scenario: dict, strategies=None, schedulers=None, variants=None,
                     baseline: str | None = None, name: str = "", projection: dict | None = None,
                     base_dir: str = "", bundles=None, seeds=None, tune=None) -> Comparison:
    """Create the comparison, its parent job and one child job per variant (dispatched after commit).
    ``bundles``: named strategy bundles; ``seeds``: every variant once per workload seed; ``tune``: the
    equal-SLO baseline sweep (core/variants.tuning_variants), each point a child job too."""
    if isinstance(scenario, dict) and isinstance(scenario.get("workload"), dict) and "trace_id" in scenario["workload"]:
        team_trace(scenario["workload"]["trace_id"], team)  # another team's trace is refused here, not in a child
    vs = build_variants(strategies, schedulers, variants, bundles=bundles, seeds=seeds, tune=tune)
    base = pick_baseline(vs, baseline)
    validate_variants(scenario, vs)
    per_variant = work_requests(scenario, team)  # each child's size: short or long work
    check_long_job_budget(team, per_variant)  # a comparison of long runs counts once against the team's limit
    parent = create_job(team=team, user=user, kind="comparisons.aggregate", params={}, enqueue=False)
    comp = Comparison.objects.create(team=team, created_by=user, name=name or scenario.get("name", ""),
                                     scenario=scenario, variants=vs, baseline=base,
                                     projection=projection or {}, job=parent)
    Job.objects.filter(pk=parent.pk).update(
        params={"comparison": comp.pk, "variants": [v["key"] for v in vs], "base_dir": base_dir},
        message=f"waiting for {len(vs)} strategy runs")
    for i, v in enumerate(vs):
        child = create_job(team=team, user=user, kind="comparisons.variant", parent=parent,
                           params={"comparison": comp.pk, "key": v["key"], "base_dir": base_dir},
                           requests=per_variant)
        VariantResult.objects.create(comparison=comp, key=v["key"], position=i, strategy=v["strategy"],
                                     scheduler=v["scheduler"], knobs=v["knobs"], job=child)
    return comp


def record_variant(result: VariantResult, *, status: str, metrics: dict | None = None, error: dict | None = None,
                   wall_s: float | None = None) -> None:
    result.status = status
    if metrics is not None:
        result.metrics = metrics
    result.error = error
    result.wall_s = wall_s
    result.save(update_fields=["status", "metrics", "error", "wall_s"])
    _report_parent_progress(result.comparison)


def _report_parent_progress(comp: Comparison) -> None:
    rows = list(comp.results.values_list("key", "status"))
    final = [k for k, s in rows if s in VariantResult.FINAL]
    if comp.job_id:
        Job.objects.filter(pk=comp.job_id, status=Job.Status.QUEUED).update(
            progress=90.0 * len(final) / max(1, len(rows)),
            message=f"{len(final)}/{len(rows)} strategy runs finished")


def maybe_trigger_aggregation(comp: Comparison, kind) -> bool:
    """If every variant is final (and the runs its kind adds too: ``kind.load_check_pending``, a fleet comparison's
    load replays), claim the aggregation (once) and dispatch the parent job after commit. ``kind`` is the
    comparison's ``ComparisonKind`` (planner/comparisons/kinds), given by the caller: the kinds import this module."""
    if comp.results.exclude(status__in=VariantResult.FINAL).exists():
        return False
    try:
        if kind.load_check_pending(comp):  # e.g. the chosen strategy's replays at 1.2x the load come first
            return False
    except Exception:  # never strand the parent: aggregate without the load check (the card says not replayed)
        log.exception("comparison %s: the load check could not start; aggregating without it", comp.pk)
    claimed = Comparison.objects.filter(pk=comp.pk, aggregation_started=False).update(aggregation_started=True)
    if not claimed or not comp.job_id:
        return False
    mark_and_dispatch(comp.job_id)  # outbox mark in this transaction; the sweep re-sends a lost message
    return True
