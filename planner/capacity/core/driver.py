"""The whole search as a replayable state machine. Django-free.

``advance(spec, base, known, start)`` runs every sub-search (one per strategy and GPU option) as far as the
probes in ``known`` allow and returns the probes still missing. The caller runs them (the workers, as child
jobs; or ``run_all`` here, in-process) and calls ``advance`` again; when nothing is missing the state holds
every sub-search's fleet, its bands and its load check, and ``done`` is true. Probe ids are text
(``sub|fleet|seed|load``) so they can be database keys: the memo that makes "never the same (fleet, seed)
twice" hold across workers and restarts.

Phase one, per sub-search: the count search on ``spec.seeds`` (and, per strategy with several GPU options, the
per-group cheapest option, Melange's mix, checked on the same seeds). Phase two, once every count search has
ended: candidates dominated on the search seeds (another costs no more and meets every group at least as often)
are pruned; the others are replayed on ``spec.band_seeds`` (new seeds: the risk bands), and the cheapest accepted
one at ``load_sensitivity`` x the load on the search seeds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from planner.capacity.core.disagg import (
    disagg_subs,
    group_hopeless,
    group_ok,
    group_shortfall,
    pool_bounds,
    pool_order,
)
from planner.capacity.core.probe import (
    deployment_of,
    fleet_key,
    group_deployments,
    group_of,
    groups_of,
    hopeless,
    meets,
    parse_fleet_key,
    shortfall,
)
from planner.capacity.core.search import MemoEvaluator, Pending, min_counts
from planner.capacity.core.spec import SearchSpec

AUTOSCALED_MODE = "floor"
EARLY_MISS = True  # search.min_counts: a fleet every open group misses on its first seeds is not run on the rest


@dataclass(frozen=True)
class Sub:
    key: str
    strategy: dict
    mode: str
    deployments: dict = field(default_factory=dict)  # group -> deployment name ({} = the scenario's)
    option: str = ""  # the GPU option's label ("" = the scenario's deployments, "mix" = the checked mix)
    pools: dict = field(default_factory=dict)  # group -> {"prefill", "decode", "kv_link"}: disaggregated (disagg.py)


def probe_id(sub: str, fleet: str, seed: int, load: float = 1.0) -> str:
    return f"{sub}|{fleet}|{int(seed)}|{load:g}"


def split_probe_id(pid: str) -> tuple[str, str, int, float]:
    sub, fleet, seed, load = pid.split("|")
    return sub, fleet, int(seed), float(load)


def strategy_ref(name: str, bundle_names: set[str]) -> dict:
    """A strategy name, or a registered bundle (its engine strategy is the bundle's)."""
    if name in bundle_names:
        from planner.comparisons.core.bundles import get_bundle

        b = get_bundle(name)
        knobs = dict(b.params)  # as a comparison's bundle variant (planner.comparisons.core.variants)
        if b.predictor:
            knobs.setdefault("forecast_method", b.predictor)
        return {"strategy": b.strategy, "bundle": name, "key": name, "knobs": knobs}
    return {"strategy": name, "key": name}


def subs_of(spec: SearchSpec, base: Mapping, bundle_names: set[str]) -> list[Sub]:
    out = []
    models = {e["model"] for e in base["fleet"]["endpoints"]}
    options = sorted({len(v) for m, v in spec.gpu_options.items() if m in models} | {1})[-1]
    for name in spec.strategies:
        ref = strategy_ref(name, bundle_names)
        mode = "static" if ref["strategy"] == "static" else AUTOSCALED_MODE
        if options <= 1:
            out.append(Sub(key=name, strategy=ref, mode=mode))
        for i in range(options if options > 1 else 0):
            deps = {}
            for e in base["fleet"]["endpoints"]:
                opts = spec.gpu_options.get(e["model"]) or []
                if opts:
                    deps[group_of(e)] = opts[min(i, len(opts) - 1)]
            label = "+".join(sorted({d.split("/")[1] if "/" in d else d for d in deps.values()}))
            out.append(Sub(key=f"{name}@{label}", strategy=ref, mode=mode, deployments=deps, option=label))
        out.extend(disagg_subs(spec, base, name, ref, mode, Sub))
    return out


def bounds(spec: SearchSpec, base: Mapping, sub: Sub) -> tuple[dict, dict, dict]:
    """(lower, upper, gpus per instance) per group: the endpoint's ceiling, capped by its region's GPU quota."""
    if sub.pools:
        return pool_bounds(spec, base, sub, deployment_of)
    lower, upper, gpus = {}, {}, {}
    for e in base["fleet"]["endpoints"]:
        g = group_of(e)
        dep = deployment_of(base, sub.deployments.get(g, e["deployment"]))
        per = int(dep.get("gpus_per_instance") or 1)
        cap = int(e.get("max", 20))
        quota = spec.quota_gpus.get(e["region"])
        if quota is not None:
            cap = min(cap, quota // per)
        lower[g], upper[g], gpus[g] = 1, cap, per
    return lower, upper, gpus


def estimate_start(base: Mapping, workload, *, bin_s: float = 900.0, statistic: str = "peak") -> dict[str, int]:
    """The first count to probe per group, from the goodput table (the deployments' theta: input tokens/s one
    instance serves within the TTFT target): the peak 15-minute input TPS divided by theta, for a static count and
    an autoscaler's floor alike (``statistic="mean"``: the mean instead). A high start is the cheaper mistake: below
    the answer a fleet is settled on its first seed (``min_counts``' early miss), above it every seed must pass, and
    an autoscaler's floor must carry the load while it provisions (on the bench day every autoscaled answer was at or
    above the peak start; the mean start fell below it in 8 of the 12 Bloom groups). Groups without theta start at
    1."""
    deps = group_deployments(base)
    arr = np.asarray(workload.arrival_s)
    tokens = np.asarray(workload.input_tokens, dtype=float)
    code = np.asarray(workload.region) * len(workload.model_names) + np.asarray(workload.model)
    span = max(float(arr[-1]) if arr.size else 0.0, bin_s)
    nb = int(math.ceil(span / bin_s))
    out = {}
    for g, dep in deps.items():
        region, model = g.split("/", 1)
        if region not in workload.region_names or model not in workload.model_names:
            out[g] = 1
            continue
        c = workload.region_names.index(region) * len(workload.model_names) + workload.model_names.index(model)
        sel = code == c
        tps = np.bincount(np.minimum((arr[sel] // bin_s).astype(int), nb - 1), weights=tokens[sel], minlength=nb)
        load = (tps.mean() if statistic == "mean" else tps.max()) / bin_s
        theta = float(dep.get("theta_tps") or 0.0)
        out[g] = max(1, math.ceil(load / theta)) if theta > 0 else 1
    return out


def plan_start(result: Mapping) -> dict[str, int]:
    """The first count to probe per group from an ILP plan's result: its peak hourly instances per (region, model),
    all GPU types together, for a static count and an autoscaler's floor alike (as ``estimate_start``)."""
    per_hour: dict[str, dict[int, int]] = {}
    for row in result.get("instances") or []:
        g = f"{row['region']}/{row['model']}"
        per_hour.setdefault(g, {})
        per_hour[g][int(row["hour"])] = per_hour[g].get(int(row["hour"]), 0) + int(row["instances"])
    return {g: max(1, max(h.values())) for g, h in per_hour.items()}


def group_ok_for(targets: Mapping[str, float]) -> Callable[[dict, str], bool]:
    def ok(outcome: dict, group: str) -> bool:
        return group_ok(outcome, group, targets, meets)  # a disaggregated endpoint's pool: its own signal
    return ok


def group_hopeless_for(targets: Mapping[str, float]) -> Callable[[dict, str], bool]:
    def no_count_helps(outcome: dict, group: str) -> bool:
        return group_hopeless(outcome, group, targets, hopeless)
    return no_count_helps


def group_shortfall_for(targets: Mapping[str, float]) -> Callable[[dict, str], tuple[float, float] | None]:
    def gap(outcome: dict, group: str) -> tuple[float, float] | None:
        return group_shortfall(outcome, group, targets, shortfall)
    return gap


_NONE: Mapping = {}


@dataclass
class State:
    pending: list[str] = field(default_factory=list)  # probe ids nobody has run yet
    spare: list[str] = field(default_factory=list)  # probes it will probably need next, best guesses first (spare_work)
    subs: dict = field(default_factory=dict)  # sub key -> {"sub", "search", "bands", "load"}
    done: bool = False


def _collect(known: Mapping[str, dict], sub: Sub, fleet: str, seeds, load: float, pending: list[str],
             failed: Mapping[str, dict] = _NONE):
    """The outcomes of ``fleet`` on ``seeds``; None while some are missing. Failed probes are left out (a band
    of fewer draws, its ``n`` says how many), never asked for again."""
    ids = [probe_id(sub.key, fleet, s, load) for s in seeds]
    missing = [i for i in ids if i not in known and i not in failed]
    if missing:
        pending.extend(missing)
        return None
    return [known[i] for i in ids if i in known]


def advance(spec: SearchSpec, base: Mapping, known: Mapping[str, dict], start: Mapping[str, dict],
            bundle_names: set[str] = frozenset(), failed: Mapping[str, dict] = _NONE) -> State:
    """One replay of every sub-search over ``known``; ``start[sub.key]`` = first counts (estimate_start).
    A sub-search that needs a probe in ``failed`` stops there with ``entry["failed"]`` saying which (the others
    go on: a partial answer)."""
    state = State()
    ok = group_ok_for(spec.targets)
    finished: dict[str, list] = {}
    if spec.mode == "check":  # the scenario's own fleet, replayed: no search
        for sub in subs_of(spec, base, set(bundle_names)):
            counts: dict[str, int] = {}
            for e in base["fleet"]["endpoints"]:
                counts[group_of(e)] = counts.get(group_of(e), 0) + int(e.get("initial", e.get("min", 1)))
            check_fleet(spec, base, known, state, sub, counts, failed)
        if not state.pending:
            replay_new_seeds(spec, known, state, failed, prune=False)
        state.pending = list(dict.fromkeys(state.pending))
        state.done = not state.pending
        return state
    for sub in subs_of(spec, base, set(bundle_names)):
        entry = state.subs.setdefault(sub.key, {"sub": sub.__dict__, "search": None, "bands": None, "load": None})
        lower, upper, gpus = bounds(spec, base, sub)
        if any(upper[g] < lower[g] for g in lower):  # the quota leaves no room for one instance
            entry["search"] = {"counts": {g: 0 for g in lower}, "feasible": {g: upper[g] >= lower[g] for g in lower},
                               "verified": False, "fleet": "", "rounds": [], "best_share": {},
                               "excluded": "quota"}
            continue
        memo = MemoEvaluator(known={(k, s): v for k, s, v in _memo_rows(known, sub.key)})
        try:
            found = min_counts(memo, spec.seeds, lower=lower, upper=upper, start=start.get(sub.key) or {},
                               group_ok=ok, probability=spec.probability, max_fixups=spec.max_fixups,
                               after=pool_order(sub), hopeless=group_hopeless_for(spec.targets),
                               early_miss=EARLY_MISS, shortfall=group_shortfall_for(spec.targets))
        except Pending as p:
            ids = [probe_id(sub.key, k, s) for k, s in p.missing]
            lost = [i for i in ids if i in failed]
            if lost:
                entry["failed"] = {"probe": lost[0], "error": failed[lost[0]]}
            else:
                state.pending.extend(ids)
                state.spare.extend(probe_id(sub.key, k, s) for k, s in p.spare)
            continue
        found["gpus"] = {g: found["counts"][g] * gpus[g] for g in gpus}
        entry["search"] = found
        finished.setdefault(sub.strategy["key"], []).append((sub, found))
    _mixes(spec, base, known, state, finished, failed)
    if not state.pending:  # every count search has ended: prune, then replay on new seeds
        replay_new_seeds(spec, known, state, failed, prune=True)
    else:
        state.spare.extend(early_bands(spec, known, state))
    state.pending = costliest_first(list(dict.fromkeys(state.pending)), known)
    state.spare = spare_work(state, known, failed)
    state.done = not state.pending
    return state


def early_bands(spec: SearchSpec, known: Mapping[str, dict], state: State) -> list[str]:
    """While some count searches still run: the band draws of the candidates already found that none of the others
    found dominates, cheapest first (the likeliest to be replayed on new seeds once every search has ended)."""
    found = [f for f in _found(spec, known, state) if f.feasible]
    dominated = dominated_by(found)
    out = []
    for f in sorted(found, key=lambda f: (f.cost, f.order)):
        if f.key not in dominated:
            fleet = state.subs[f.key]["search"]["fleet"]
            out.extend(probe_id(f.sub.key, fleet, s) for s in spec.band_seeds)
    return out


def spare_work(state: State, known: Mapping[str, dict], failed: Mapping[str, dict]) -> list[str]:
    """``state.spare`` without what is known, failed or pending: work for a worker that would otherwise idle, the
    next fleets of climbing count searches first (they shorten the search's longest chain), then early band
    draws. Running them never changes the answer (the search asks for the same probes; a spare one it asks for is
    a memo hit), only how many probes run."""
    taken = set(known) | set(failed) | set(state.pending)
    return [pid for pid in dict.fromkeys(state.spare) if pid not in taken]


def costliest_first(pending: list[str], known: Mapping[str, dict]) -> list[str]:
    """The probes to run, those of the sub-searches whose probes took longest so far first (one not probed yet
    first of all: its cost is unknown), each sub-search's own in their order. The workers' broker and the
    benchmark's pool serve first come first served, so a slow strategy's next fleet starts before the cheap ones
    of the same step instead of trailing them. Only the order changes: the search takes the same path."""
    walls: dict[str, list[float]] = {}
    for pid, outcome in known.items():
        walls.setdefault(pid.split("|", 1)[0], []).append(float(outcome.get("wall_s") or 0.0))
    mean = {sub: sum(w) / len(w) for sub, w in walls.items()}
    return sorted(pending, key=lambda pid: -mean.get(pid.split("|", 1)[0], math.inf))


@dataclass
class _Found:
    key: str
    sub: Sub
    cost: float  # median cost over the search seeds
    shares: dict  # group -> share of search seeds meeting the targets (the found fleet's own replay)
    feasible: bool
    order: int = 0  # the sub-search's place in the spec (ties go to the earlier strategy)


def _found(spec: SearchSpec, known: Mapping[str, dict], state: State) -> list[_Found]:
    out = []
    for order, (key, entry) in enumerate(state.subs.items()):
        search = entry.get("search") or {}
        if entry.get("failed") or not search.get("fleet"):
            continue
        sub = sub_from_state(entry)
        outcomes = _probe_outcomes(known, sub.key, search["fleet"], spec.seeds)
        costs = [o.get("cost_usd") for o in outcomes if o.get("cost_usd") is not None]
        shares = dict((search.get("rounds") or [{}])[-1].get("passed") or {})
        out.append(_Found(key, sub, float(np.median(costs)) if costs else math.inf, shares,
                          bool(search["feasible"]) and all(search["feasible"].values()), order))
    return out


def dominated_by(found: list[_Found]) -> dict[str, str]:
    """Candidates another one dominates on the search seeds: it costs no more, meets every group's targets on at
    least as large a share of the seeds, is feasible if this one is, and is strictly better somewhere (ties: the
    earlier strategy in the spec). A dominated candidate is not replayed on new seeds unless no candidate that is not dominated gets
    accepted there."""
    out = {}
    by_cost = sorted(found, key=lambda f: (f.cost, f.order))  # named: the cheapest that dominates
    for b in found:
        for a in by_cost:
            if a is b or a.cost > b.cost or (b.feasible and not a.feasible):
                continue
            if any(a.shares.get(g, 0.0) < share for g, share in b.shares.items()):
                continue
            better = (a.cost < b.cost or any(a.shares.get(g, 0.0) > share for g, share in b.shares.items())
                      or a.feasible > b.feasible or a.order < b.order)
            if better:
                out[b.key] = a.key
                break
    return out


def _accepted(spec: SearchSpec, f: _Found, draws: list[dict] | None) -> bool:
    if not f.feasible or not draws:
        return False
    met = sum(1 for o in draws if meets(o["tiers"], spec.targets))
    return met / len(draws) >= spec.probability


def replay_new_seeds(spec: SearchSpec, known: Mapping[str, dict], state: State, failed: Mapping[str, dict], *,
                     prune: bool) -> None:
    """Phase two, once every count search has ended: the candidates no other dominates are replayed on the band
    seeds (the feasible dominated ones too if none of those is accepted there); the cheapest accepted one is replayed at
    ``load_sensitivity`` x the load on the search seeds (the card's load sensitivity)."""
    found = _found(spec, known, state)
    dominated = dominated_by(found) if prune else {}
    live = [f for f in found if f.key not in dominated]
    pending_before = len(state.pending)

    def bands(group: list[_Found]) -> None:
        for f in group:
            fleet = state.subs[f.key]["search"]["fleet"]
            state.subs[f.key]["bands"] = _collect(known, f.sub, fleet, spec.band_seeds, 1.0, state.pending, failed)

    bands(live)
    if len(state.pending) > pending_before:
        return
    if dominated and not any(_accepted(spec, f, state.subs[f.key]["bands"]) for f in live):
        # the dominated ones get their chance on the new seeds, those that can be accepted there: one that misses
        # some group even at its ceiling on the search seeds (infeasible) never is, so its draws could not change
        # the answer; it stays pruned, its figures over the search seeds
        fallback = [f for f in found if f.key in dominated and f.feasible]
        live = live + fallback
        bands(fallback)
        dominated = {k: v for k, v in dominated.items() if k not in {f.key for f in fallback}}
        if len(state.pending) > pending_before:
            return
    for f in found:
        if f.key in dominated:
            state.subs[f.key]["pruned"] = {"by": dominated[f.key], "outcomes": _probe_outcomes(
                known, f.sub.key, state.subs[f.key]["search"]["fleet"], spec.seeds)}
    accepted = [f for f in live if _accepted(spec, f, state.subs[f.key]["bands"])]
    if not accepted:
        return
    def band_cost(f: _Found) -> float:
        costs = [o.get("cost_usd") for o in state.subs[f.key]["bands"] if o.get("cost_usd") is not None]
        return float(np.median(costs)) if costs else math.inf
    choice = min(accepted, key=lambda f: (band_cost(f), f.order))
    fleet = state.subs[choice.key]["search"]["fleet"]
    state.subs[choice.key]["load"] = _collect(known, choice.sub, fleet, spec.seeds, spec.load_sensitivity,
                                              state.pending, failed)


def _memo_rows(known: Mapping[str, dict], sub_key: str):
    prefix = sub_key + "|"
    for pid, outcome in known.items():
        if pid.startswith(prefix):
            _, fleet, seed, load = split_probe_id(pid)
            if load == 1.0:
                yield fleet, seed, outcome


def _mixes(spec: SearchSpec, base: Mapping, known: Mapping[str, dict], state: State, finished: dict,
           failed: Mapping[str, dict]) -> None:
    """Per strategy with GPU options: each group on its cheapest feasible option, checked by simulation."""
    for name, results in finished.items():
        options = [r for r in results if r[0].option and not r[0].pools]
        if len(options) < 2 or len(options) != sum(1 for s in state.subs.values()
                                                   if s["sub"]["strategy"]["key"] == name and not s["sub"].get("pools")):
            continue
        groups = groups_of(base)
        deps, counts = {}, {}
        for g in groups:
            best = None
            for sub, found in options:
                if not found["feasible"].get(g):
                    continue
                costs = [o["endpoints"].get(g, {}).get("cost_usd") or 0.0
                         for o in _probe_outcomes(known, sub.key, found["fleet"], spec.seeds)]
                cost = float(np.median(costs)) if costs else math.inf
                if best is None or cost < best[0]:
                    best = (cost, sub, found["counts"][g])
            if best is None:
                best = (math.inf, options[0][0], options[0][1]["counts"][g])
            deps[g] = best[1].deployments.get(g, "")
            counts[g] = best[2]
        sub = Sub(key=f"{name}@mix", strategy=options[0][0].strategy, mode=options[0][0].mode, deployments=deps,
                  option="mix")
        if any(all(deps.get(g) == s.deployments.get(g) for g in groups) for s, _ in options):
            continue  # the mix is one of the options already searched
        check_fleet(spec, base, known, state, sub, counts, failed)


def check_fleet(spec: SearchSpec, base: Mapping, known: Mapping[str, dict], state: State, sub: Sub,
                counts: Mapping[str, int], failed: Mapping[str, dict]) -> None:
    """A given fleet (no search): on the search seeds (feasibility per group); the bands come in phase two."""
    groups = sorted(counts)
    fleet = fleet_key(counts)
    check = _collect(known, sub, fleet, spec.seeds, 1.0, state.pending, failed)
    entry = {"sub": sub.__dict__, "search": None, "bands": None, "load": None}
    if check:
        ok = group_ok_for(spec.targets)
        shares = {g: sum(ok(o, g) for o in check) / len(check) for g in groups}
        deps = group_deployments(base)
        entry["search"] = {"counts": dict(counts), "feasible": {g: shares[g] >= spec.probability for g in groups},
                           "verified": all(shares[g] >= spec.probability for g in groups), "fleet": fleet,
                           "rounds": [{"fleet": fleet, "passed": shares}], "best_share": {},
                           "gpus": {g: counts[g] * int(deployment_of(base, sub.deployments[g]).get("gpus_per_instance")
                                                       or 1) if g in sub.deployments else
                                    counts[g] * int(deps[g].get("gpus_per_instance") or 1) for g in groups}}
    state.subs[sub.key] = entry


def _probe_outcomes(known: Mapping[str, dict], sub_key: str, fleet: str, seeds) -> list[dict]:
    return [known[probe_id(sub_key, fleet, s)] for s in seeds if probe_id(sub_key, fleet, s) in known]


def sub_from_state(entry: Mapping) -> Sub:
    return Sub(**entry["sub"])


def probe_inputs(state_subs: Mapping, pid: str) -> dict:
    """What a worker needs to run one probe id: strategy, mode, deployments, fleet, seed and load factor."""
    sub_key, fleet, seed, load = split_probe_id(pid)
    sub = state_subs[sub_key]["sub"]
    return {"strategy": sub["strategy"], "mode": sub["mode"], "deployments": sub["deployments"],
            "pools": sub.get("pools") or {}, "fleet": parse_fleet_key(fleet), "seed": seed, "load": load}


def scaled_load(scenario: Mapping, factor: float) -> dict:
    """The scenario with ``factor`` x the requests: a synthetic workload's total or rate, else rate_scale."""
    import copy

    d = copy.deepcopy(dict(scenario))
    if factor == 1.0:
        return d
    wl = d.setdefault("workload", {})
    syn = wl.get("synthetic")
    if isinstance(syn, dict) and "total_requests" in syn:
        syn["total_requests"] = int(round(syn["total_requests"] * factor))
    elif isinstance(syn, dict) and "rate_rps" in syn:
        syn["rate_rps"] = float(syn["rate_rps"]) * factor
    else:
        wl["rate_scale"] = float(wl.get("rate_scale", 1.0)) * factor
    return d


def run_probe_inputs(base: Mapping, inputs: Mapping, *, trace=None, limits=None, progress=None) -> dict:
    """Run one probe (``probe_inputs``) on the base scenario."""
    from planner.capacity.core.probe import run_probe

    strategy, hourly = inputs["strategy"], None
    if "plan_draws" in base:  # a plan's check: this draw's hourly demand, and the plan's hourly fleet with preemptions
        from planner.capacity.core.plan_draws import drawn_scenario

        hourly = int(base["plan_draws"]["hours"])
        base, knobs = drawn_scenario(base, int(inputs["seed"]))
        strategy = {"strategy": "as-run", "key": strategy.get("key", "plan"), "knobs": knobs}
    scenario = scaled_load(base, float(inputs.get("load", 1.0)))
    out = run_probe(scenario, strategy, inputs["fleet"], int(inputs["seed"]), mode=inputs["mode"],
                    deployments=inputs.get("deployments") or None, pools=inputs.get("pools") or None, trace=trace, limits=limits, progress=progress,
                    hourly=hourly)
    out["load"] = float(inputs.get("load", 1.0))
    return out


def run_all(spec: SearchSpec, base: Mapping, run: Callable[[dict], dict], *, start: Mapping | None = None,
            bundle_names: set[str] = frozenset(), on_round: Callable[[State], None] | None = None,
            max_rounds: int = 200) -> tuple[State, dict]:
    """In-process: advance, run what is missing, repeat. ``run(probe_inputs)`` -> outcome. Returns the final
    state and the memo."""
    known: dict[str, dict] = {}
    start = dict(start or {})
    for _ in range(max_rounds):
        state = advance(spec, base, known, start, bundle_names)
        if on_round:
            on_round(state)
        if state.done:
            return state, known
        for pid in state.pending:
            known[pid] = run(probe_inputs(state.subs, pid))
    raise RuntimeError("the search did not converge within max_rounds")
