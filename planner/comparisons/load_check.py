"""The decision card's load sensitivity for a fleet comparison: the chosen strategy replayed at 1.2x the load.

The fleet kind's part of the kind interface (``FleetKind.load_check_pending`` and ``FleetKind.aggregate``,
planner/comparisons/kinds/fleet.py): the other kinds replay nothing, and nothing here asks which kind a scenario is.
When every strategy run of a fleet comparison is final, the last one to finish picks the answer the card will give
(the compact table's: the cheapest strategy that meets every target on every seed) and, instead of dispatching
the aggregation, starts one more child run per seed of that strategy on the scenario at ``LOAD_STEP`` x the
requests (``VariantResult`` rows with role ``load``, hidden from the strategy table, figures and exports). The last
of those to finish dispatches the aggregation, which stores their attainment as ``summary["load_check"]``; the
card's sensitivity (core/sensitivity.py) reads it. A comparison without an answer replays nothing.
"""

from __future__ import annotations

from django.db import transaction

from planner.comparisons.core.sensitivity import LOAD_STEP
from planner.comparisons.models import Comparison, VariantResult

SUFFIX = f"@load{LOAD_STEP:g}"


def _load_runs(comp: Comparison):
    return VariantResult.all_runs.filter(comparison=comp, role=VariantResult.LOAD)


def load_check_pending(comp: Comparison) -> bool:
    """Whether the aggregation must wait for load replays: they are running, or this call has just started them
    (every strategy run is final when it is called)."""
    runs = _load_runs(comp)
    if runs.exists():
        return runs.exclude(status__in=VariantResult.FINAL).exists()
    return start_load_check(comp)


def chosen_runs(comp: Comparison) -> tuple[str | None, list[VariantResult]]:
    """The strategy the card will choose from the finished runs and its runs (one per seed): the compact table's
    answer over the same rows the aggregation builds (core/aggregate.py). Fleet comparisons only: the fleet kind
    (kinds/fleet.py) is the one caller, through ``load_check_pending``."""
    from planner.comparisons.core.aggregate import aggregate
    from planner.comparisons.core.table import strategy_table

    results = list(comp.results.all())
    summaries = {r.key: r.metrics for r in results if r.status == VariantResult.Status.DONE and r.metrics}
    if comp.baseline not in summaries:
        return None, []
    summary = aggregate(summaries, comp.baseline, order=[r.key for r in results])
    if not summary.get("rows"):
        return None, []
    choice = strategy_table(summary, comp.variants or [])["answer"]
    meta = {v.get("key"): v for v in comp.variants or []}
    runs = [r for r in results if r.status == VariantResult.Status.DONE
            and meta.get(r.key, {}).get("group", r.key) == choice and meta.get(r.key, {}).get("role") != "tuning"]
    return choice, runs


def start_load_check(comp: Comparison) -> bool:
    """Create the load replays of the chosen strategy (once: the comparison row is locked while they are made);
    True when there are replays to wait for."""
    from planner.jobs.services import create_job
    from simulations.services import work_requests

    with transaction.atomic():
        Comparison.objects.select_for_update().filter(pk=comp.pk).first()
        runs = _load_runs(comp)
        if runs.exists():  # another finishing run got here first
            return runs.exclude(status__in=VariantResult.FINAL).exists()
        choice, chosen = chosen_runs(comp)
        if not chosen or comp.job is None:
            return False
        requests = int(work_requests(comp.scenario, comp.team) * LOAD_STEP)
        for i, run in enumerate(chosen):
            child = create_job(team=comp.team, user=comp.created_by, kind="comparisons.variant", parent=comp.job,
                               params={"comparison": comp.pk, "key": run.key + SUFFIX}, requests=requests)
            VariantResult.all_runs.create(comparison=comp, key=run.key + SUFFIX, position=10_000 + i,
                                          strategy=run.strategy, scheduler=run.scheduler, knobs=run.knobs,
                                          role=VariantResult.LOAD, job=child)
    return True


def load_variant(comp: Comparison, result: VariantResult) -> tuple[dict, dict]:
    """(scenario, variant meta) of a run: a load replay runs its strategy run's variant on the scaled scenario."""
    from planner.capacity.core.driver import scaled_load

    key = result.key[: -len(SUFFIX)] if result.role == VariantResult.LOAD else result.key
    meta = next((v for v in comp.variants or [] if v.get("key") == key), {})
    if result.role == VariantResult.LOAD:
        return scaled_load(comp.scenario, LOAD_STEP), meta
    return comp.scenario, meta


def load_check_summary(comp: Comparison) -> dict | None:
    """``summary["load_check"]``: the strategy, the factor and one row per replay (attainment per tier, NIW
    deadlines met, cost), the failed replays named; None when nothing was replayed."""
    from planner.comparisons.core.aggregate import aggregate

    runs = list(_load_runs(comp))
    if not runs:
        return None
    meta = {v.get("key"): v for v in comp.variants or []}
    rows, failed = [], []
    for r in runs:
        if r.status != VariantResult.Status.DONE or not r.metrics:
            failed.append({"key": r.key, "status": r.status, "error": r.error})
            continue
        row = aggregate({r.key: r.metrics}, r.key)["rows"][0]
        rows.append({"key": r.key, "seed": meta.get(r.key[: -len(SUFFIX)], {}).get("seed"), "tiers": row["tiers"],
                     "niw_deadline_met": row["niw_deadline_met"], "cost_usd": row.get("cost_usd")})
    strategy = meta.get(runs[0].key[: -len(SUFFIX)], {}).get("group", runs[0].key[: -len(SUFFIX)])
    return {"strategy": strategy, "factor": LOAD_STEP, "rows": rows, "failed": failed}
