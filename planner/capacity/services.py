"""Writes: start a capacity search, run its rounds as child jobs, record probes, finish with the answer.

Fan-out / fan-in, as comparisons do it (planner/comparisons/services.py): the parent Job (``capacity.search``)
is created without dispatch and waits. A ``capacity.step`` child job replays the search
(planner.capacity.core.driver.advance) over the finished probes and creates one ``capacity.probe`` child job per
missing (fleet, seed), each with its ``Probe`` row (unique per search: the memo); probes already running are left
to run. There is no round barrier: a probe that is the last of its (sub-search, fleet, load) to finish counts a
change (``CapacitySearch.changes``), and a step is claimed with a conditional UPDATE (``stepping`` false -> true,
exactly one wins) whenever changes are not yet replayed, so the sub-search that probe was waiting on moves on while
slower probes of other sub-searches still run. A step ends by releasing ``stepping`` and claiming the next one if
changes came in meanwhile. The step that finds nothing missing (nothing running either) claims ``finishing`` and
dispatches the parent, which builds the answer. Workers anywhere on the broker run the probes; cancelling the
parent cancels them.
"""

from __future__ import annotations

import math

from django.conf import settings
from django.db import transaction
from django.db.models import F

from planner.capacity.core.disagg import pair_count, pool_start
from planner.capacity.core.driver import advance, estimate_start, plan_start, subs_of
from planner.capacity.core.plan_draws import PLAN_TOKENS, SPOT_INTERRUPTIONS_PER_HOUR
from planner.capacity.core.spec import SearchSpec, SpecError, parse_spec, probes_upper_bound
from planner.capacity.models import CapacitySearch, Probe
from planner.jobs.models import Job
from planner.jobs.services import create_job, mark_and_dispatch


def bundle_names() -> set[str]:
    from planner.comparisons.core.bundles import bundle_names as names

    return set(names())


def check_strategies(spec: SearchSpec) -> None:
    from planner.comparisons.core.variants import STRATEGIES

    known = set(STRATEGIES) | bundle_names()
    for i, name in enumerate(spec.strategies):
        if name not in known:
            raise SpecError(f"strategies[{i}]", f"unknown strategy {name!r}",
                            hint=f"use one of {', '.join(sorted(STRATEGIES))} or a bundle (GET /api/comparisons/bundles/)")


def requests_per_run(scenario: dict, team=None) -> int:
    """Requests one probe simulates: from the synthetic spec when it says, else by building the workload once."""
    block = scenario.get("plan_draws")
    if block:  # the forecast plus two spreads, every hour
        tps = sum(t + 2 * sd for g in block["groups"] for t, sd in zip(g["tps"], g["sigma"], strict=True))
        return int(math.ceil(tps * float(block["seconds_per_hour"]) / float(block["tokens"]["input_mean"])))
    wl = scenario.get("workload") or {}
    syn = wl.get("synthetic")
    if isinstance(syn, dict) and syn.get("total_requests"):
        return int(syn["total_requests"])
    if isinstance(syn, dict) and syn.get("rate_rps") and syn.get("duration_s"):
        return int(math.ceil(float(syn["rate_rps"]) * float(syn["duration_s"])))
    from planner.comparisons.core.runner import engine_scenario_dict, load_workload
    from planner.limits import scenario_limits
    from simulations.engine import parse_scenario

    eng = parse_scenario(engine_scenario_dict(scenario, {"strategy": "static", "key": "size"}), limits=scenario_limits())
    return len(load_workload(scenario, eng, trace=trace_file(scenario, team)))


def trace_file(scenario: dict, team):
    """The normalised file of the team's trace the scenario replays (``workload.trace_id``), else None; the engine
    reads it with its one trace reader."""
    trace_id = (scenario.get("workload") or {}).get("trace_id")
    if trace_id is None:
        return None
    from planner.comparisons.services import team_trace

    return team_trace(trace_id, team).normalised_file


def check_search(scenario: dict, spec_data: dict, team=None, *, plan_check: bool = False) -> tuple[SearchSpec, int]:
    """Everything refused at the boundary: the scenario (its own schema), the spec, the strategies, the GPU options
    and quotas, and the bound on simulated requests. Returns the spec and the requests bound."""
    from planner.comparisons.services import validate_scenario

    if isinstance(scenario.get("workload"), dict) and "trace_id" in scenario["workload"]:
        from planner.comparisons.services import team_trace

        team_trace(scenario["workload"]["trace_id"], team)
    if "plan_draws" in scenario and not plan_check:
        raise SpecError("scenario.plan_draws", "is written by a plan's check by simulation, not accepted here",
                        hint="open the plan and use 'Check by simulation', or remove plan_draws")
    validate_scenario({k: v for k, v in scenario.items() if k != "plan_draws"})
    spec = parse_spec(spec_data)
    _start_plan(spec, team)
    if "plan_draws" in scenario:
        from planner.capacity.core.plan_draws import drawn_scenario

        validate_scenario(drawn_scenario(scenario, spec.seeds[0])[0])  # one draw, as the probes will build it
    check_strategies(spec)
    regions = {r["name"] for r in scenario["fleet"]["regions"]}
    for region in spec.quota_gpus:
        if region not in regions:
            raise SpecError(f"quota_gpus.{region}", f"no region {region!r} in the scenario",
                            hint=f"regions: {', '.join(sorted(regions))}")
    from planner.capacity.core.driver import deployment_of

    for model, names in spec.gpu_options.items():
        for i, name in enumerate(names):
            if not deployment_of(scenario, name):
                raise SpecError(f"gpu_options.{model}[{i}]", f"unknown deployment {name!r}",
                                hint="name one of the scenario's deployments or the catalogue's")
    from planner.capacity.core.disagg_checks import check_disaggregated
    from planner.capacity.core.driver import strategy_ref

    check_disaggregated(scenario, spec, validate_scenario,
                        lambda name: strategy_ref(name, bundle_names())["strategy"])
    total = search_probes_bound(scenario, spec) * requests_per_run(scenario, team)
    limit = int(settings.PLANNER_MAX_SEARCH_REQUESTS)
    if total > limit:
        raise SpecError("spec", f"the search may simulate up to {total:,} requests; the limit is {limit:,}",
                        hint="use fewer strategies, seeds, band_draws, GPU options or disaggregated pairs, a shorter "
                             "workload, or lower the endpoints' max (or ask the operator to raise PLANNER_MAX_SEARCH_REQUESTS)")
    return spec, total


def search_probes_bound(scenario: dict, spec: SearchSpec) -> int:
    """Most probes the search may run: what it can need (spec.probes_upper_bound for the scenario's ceilings and
    options) and its spare work (``spare_budget``)."""
    upper = max(int(e.get("max", 20)) for e in scenario["fleet"]["endpoints"])
    options = max([len(v) for v in spec.gpu_options.values()] + [1])
    return probes_upper_bound(spec, upper, options, pair_count(spec)) + spare_budget(spec)


def spare_budget(spec: SearchSpec) -> int:
    """Spare probes one search may run in all (CAPACITY_SEARCH_WORKERS > 0): one candidate's band draws and search
    seeds per strategy; 0 without spare work."""
    if int(settings.CAPACITY_SEARCH_WORKERS) <= 0:
        return 0
    return len(spec.strategies) * (spec.band_draws + len(spec.seeds))


@transaction.atomic
def start_search(*, team, user=None, scenario: dict, spec: dict, name: str = "", plan=None) -> CapacitySearch:
    checked, total = check_search(scenario, spec, team, plan_check=plan is not None)
    parent = create_job(team=team, user=user, kind="capacity.search", params={}, enqueue=False)
    search = CapacitySearch.objects.create(team=team, created_by=user, name=name or scenario.get("name", ""),
                                           scenario=scenario, spec=checked.model_dump(), job=parent, round=1,
                                           stepping=True, max_requests=total, plan=plan)
    Job.objects.filter(pk=parent.pk).update(params={"search": search.pk}, message="step 1: estimating start counts")
    create_job(team=team, user=user, kind="capacity.step", parent=parent, params={"search": search.pk, "round": 1})
    return search


def start_counts(search: CapacitySearch, spec: SearchSpec) -> dict:
    """First counts per sub-search from the goodput table (theta), computed once on the first seed's workload."""
    from planner.comparisons.core.runner import engine_scenario_dict, load_workload, with_seed
    from planner.limits import scenario_limits
    from simulations.engine import parse_scenario

    if spec.mode == "check":  # no search: the scenario's own counts
        return {}
    scenario = with_seed(search.scenario, spec.seeds[0])
    eng = parse_scenario(engine_scenario_dict(scenario, {"strategy": "static", "key": "start"}),
                         limits=scenario_limits())
    workload = load_workload(scenario, eng, trace=trace_file(search.scenario, search.team))
    plan = _start_plan(spec, search.team)
    out = {}
    for sub in subs_of(spec, search.scenario, bundle_names()):
        out[sub.key] = estimate_start(search.scenario, workload)
        if plan is not None:  # the ILP's counts where it has them, the goodput estimate elsewhere
            out[sub.key].update({g: n for g, n in plan_start(plan.result).items() if g in out[sub.key]})
        out[sub.key] = pool_start(sub, out[sub.key])  # a disaggregated endpoint: both pools start there
    return out


def _start_plan(spec: SearchSpec, team):
    if spec.start_plan is None:
        return None
    from planner.plans.models import CapacityPlan

    plan = CapacityPlan.objects.filter(pk=spec.start_plan, team=team).first()
    if plan is None or not (plan.result or {}).get("instances"):
        raise SpecError("start_plan", f"no solved capacity plan #{spec.start_plan} in your team",
                        hint="give the id of a plan of yours that has a result (GET /api/plans/)")
    return plan


def known_probes(search: CapacitySearch) -> tuple[dict, dict]:
    done, failed = {}, {}
    for pid, status, outcome, error in search.probes.values_list("pid", "status", "outcome", "error"):
        if status == Probe.Status.DONE:
            done[pid] = outcome
        elif status in (Probe.Status.FAILED, Probe.Status.CANCELLED):
            failed[pid] = error or {"type": status, "message": status}
    return done, failed


def run_step(search: CapacitySearch, ctx=None) -> dict:
    """Replay the search; fan out what is missing, or hand over to the parent to finish. Runs with ``stepping``
    claimed; releases it at the end and claims the next step if probes finished meanwhile."""
    spec = SearchSpec.model_validate(search.spec)
    state_data = dict(search.state or {})
    if "start" not in state_data:
        state_data["start"] = start_counts(search, spec)
    CapacitySearch.objects.filter(pk=search.pk).update(changes_seen=F("changes"))  # before reading the probes
    known, failed = known_probes(search)
    state = advance(spec, search.scenario, known, state_data["start"], bundle_names(), failed)
    state_data["subs"] = state.subs
    state_data["probes_done"] = len(known)
    state_data["probes_failed"] = len(failed)
    with transaction.atomic():
        if not state.done:
            new = _fan_out(search, state.pending)
            running = len(state.pending) - new
            spent = int(state_data.get("spare_probes", 0))
            spare = _fan_out(search, _spare_to_run(search, spec, state.spare, spent))
            state_data["spare_probes"] = spent + spare
            new += spare
        CapacitySearch.objects.filter(pk=search.pk).update(state=state_data)
        if state.done:
            claimed = CapacitySearch.objects.filter(pk=search.pk, finishing=False).update(finishing=True,
                                                                                          stepping=False)
            if claimed and search.job_id:
                mark_and_dispatch(search.job_id)
            return {"round": search.round, "pending": 0, "done": True}
        if search.job_id:
            total = len(known) + len(failed) + len(state.pending)
            Job.objects.filter(pk=search.job_id, status=Job.Status.QUEUED).update(
                progress=95.0 * (len(known) + len(failed)) / max(1, total),
                message=f"step {search.round}: {len(state.pending)} simulations to run or running, {len(known)} done")
        CapacitySearch.objects.filter(pk=search.pk).update(stepping=False)
        transaction.on_commit(lambda: maybe_step(CapacitySearch.objects.get(pk=search.pk)))
    return {"round": search.round, "pending": len(state.pending), "created": new, "running": running, "done": False}


def _fan_out(search: CapacitySearch, pending: list[str]) -> int:
    """One Probe row and one probe job per missing probe nobody has started; returns how many were created."""
    new = 0
    for pid in pending:
        probe, created = Probe.objects.get_or_create(search=search, pid=pid, defaults={"round": search.round})
        if not created:
            continue  # running (or queued) since an earlier step
        job = create_job(team=search.team, user=search.created_by, kind="capacity.probe", parent=search.job,
                         params={"search": search.pk, "probe": probe.pk})
        Probe.objects.filter(pk=probe.pk).update(job=job)
        new += 1
    return new


def _spare_to_run(search: CapacitySearch, spec: SearchSpec, spare: list[str], spent: int) -> list[str]:
    """The spare work (driver.spare_work) for the workers this search's own probes leave idle: up to
    CAPACITY_SEARCH_WORKERS probes in flight, and ``spare_budget`` spare probes in all (``spent`` so far), so the
    probes stay within the bound the search was admitted under. A spare probe still running when the search ends
    runs to its end, nothing reading it; one not yet started is skipped (jobs.probe_job)."""
    slots = int(settings.CAPACITY_SEARCH_WORKERS)
    if slots <= 0 or not spare:
        return []
    inflight = search.probes.filter(status=Probe.Status.PENDING).count()
    return spare[:max(0, min(slots - inflight, spare_budget(spec) - spent))]


def _siblings_final(probe: Probe) -> bool:
    """Whether every probe of ``probe``'s sub-search, fleet and load (its other seeds) is final: only then can a
    replay of the search get further than the last one did (a search asks for the seeds of a fleet together: all
    of them, or its first ones alone, the rest only if those do not settle the fleet)."""
    sub, fleet, _, load = probe.pid.split("|")
    return not Probe.objects.filter(search_id=probe.search_id, pid__startswith=f"{sub}|{fleet}|",
                                    pid__endswith=f"|{load}").exclude(status__in=Probe.FINAL).exists()


def record_probe(probe: Probe, *, status: str, outcome: dict | None = None, error: dict | None = None,
                 wall_s: float | None = None) -> None:
    Probe.objects.filter(pk=probe.pk).update(status=status, outcome=outcome or {}, error=error, wall_s=wall_s)
    if settings.CAPACITY_SEARCH_WORKERS > 0 or _siblings_final(probe):  # with spare work: refill the idle worker
        CapacitySearch.objects.filter(pk=probe.search_id).update(changes=F("changes") + 1)
        maybe_step(probe.search)


def maybe_step(search: CapacitySearch, *, force: bool = False) -> bool:
    """If finished probes are not yet replayed (or ``force``), no step is queued or running and the search is
    still on: claim the next step (exactly one caller wins) and dispatch it."""
    parent = Job.objects.filter(pk=search.job_id).first()
    if parent is None or parent.status not in Job.ACTIVE:
        return False
    claim = CapacitySearch.objects.filter(pk=search.pk, stepping=False, finishing=False)
    if not force:
        claim = claim.filter(changes__gt=F("changes_seen"))
    with transaction.atomic():  # the claim and its step job together: never a claim without a step to release it
        if not claim.update(stepping=True, round=F("round") + 1):
            return False
        current = CapacitySearch.objects.filter(pk=search.pk).values_list("round", flat=True).first()
        create_job(team=search.team, user=search.created_by, kind="capacity.step", parent=parent,
                   params={"search": search.pk, "round": current})
    return True


def finish_search(search: CapacitySearch) -> dict:
    """Build and store the answer from the last replay's state."""
    from planner.decisions.answer import build_answer

    spec = SearchSpec.model_validate(search.spec)
    _, failed = known_probes(search)
    answer = build_answer(spec, search.scenario, (search.state or {}).get("subs") or {}, failed=failed)
    CapacitySearch.objects.filter(pk=search.pk).update(answer=answer)
    return answer


def start_plan_check(plan, *, user=None, band_draws: int = 20,
                     spot_rate: float = SPOT_INTERRUPTIONS_PER_HOUR) -> tuple[CapacitySearch, str]:
    """"Check by simulation": the plan's hourly fleet (per region and model, on the GPU type the plan gives it most
    instance-hours: simulations.plan_chain) replayed hour by hour on ``band_draws`` draws of the hourly demand from
    the forecast's intervals, with spot preemptions drawn (planner.capacity.core.plan_draws). Returns the search and
    what was simplified."""
    from planner.capacity.core.plan_draws import draws_block
    from simulations.plan_chain import scenario_from_plan

    scenario, note = scenario_from_plan(plan.scenario, plan.result, name=f"fleet of plan #{plan.pk}", team=plan.team)
    block = draws_block(plan.scenario, plan.result, spot_rate=spot_rate, tokens=PLAN_TOKENS)
    kept = {f"{e['region']}/{e['model']}" for e in scenario["fleet"]["endpoints"]}
    block["counts"] = {k: v for k, v in block["counts"].items() if k in kept}
    block["groups"] = [g for g in block["groups"] if f"{g['region']}/{g['model']}" in kept]
    if block["groups"] and block["counts"]:
        scenario["plan_draws"] = block
        note = (f"The plan's hourly instance counts of {len(block['counts'])} endpoints replayed hour by hour on "
                f"{band_draws} draws of the hourly demand (normal around the forecast with its interval's spread; "
                f"IW-F requests of {PLAN_TOKENS['input_mean']:.0f} prompt tokens on average) and of spot "
                f"preemptions ({spot_rate:g} per spot instance-hour, assumed)." + note[note.index(".") + 1:])
    spec = {"mode": "check", "strategies": ["static"], "band_draws": band_draws}
    return start_search(team=plan.team, user=user, scenario=scenario, spec=spec,
                        name=f"check of plan #{plan.pk}" + (f": {plan.name}" if plan.name else ""), plan=plan), note
