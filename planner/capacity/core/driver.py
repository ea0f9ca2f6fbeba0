"""The whole search as a replayable state machine. Django-free.

``advance(spec, base, known, start)`` runs every sub-search (one per strategy and GPU option) as far as the
probes in ``known`` allow and returns the probes still missing. The caller runs them (the workers, as child
jobs; or ``run_all`` here, in-process) and calls ``advance`` again; when nothing is missing the state holds
every sub-search's fleet, its bands and its load check, and ``done`` is true. Probe ids are text
(``sub|fleet|seed|load``) so they can be database keys: the memo that makes "never the same (fleet, seed)
twice" hold across workers and restarts.

Phases per sub-search: count search on ``spec.seeds`` -> the found fleet replayed on ``spec.band_seeds`` (new
seeds: the risk bands) -> the same fleet at ``load_sensitivity`` x the load on the search seeds. Then, per
strategy with several GPU options, the per-group cheapest option (Melange's mix) is checked the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from planner.capacity.core.probe import (
    deployment_of,
    fleet_key,
    group_deployments,
    group_of,
    groups_of,
    meets,
    parse_fleet_key,
)
from planner.capacity.core.search import MemoEvaluator, Pending, min_counts
from planner.capacity.core.spec import SearchSpec

AUTOSCALED_MODE = "floor"


@dataclass(frozen=True)
class Sub:
    key: str
    strategy: dict
    mode: str
    deployments: dict = field(default_factory=dict)  # group -> deployment name ({} = the scenario's)
    option: str = ""  # the GPU option's label ("" = the scenario's deployments, "mix" = the checked mix)


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
            continue
        for i in range(options):
            deps = {}
            for e in base["fleet"]["endpoints"]:
                opts = spec.gpu_options.get(e["model"]) or []
                if opts:
                    deps[group_of(e)] = opts[min(i, len(opts) - 1)]
            label = "+".join(sorted({d.split("/")[1] if "/" in d else d for d in deps.values()}))
            out.append(Sub(key=f"{name}@{label}", strategy=ref, mode=mode, deployments=deps, option=label))
    return out


def bounds(spec: SearchSpec, base: Mapping, sub: Sub) -> tuple[dict, dict, dict]:
    """(lower, upper, gpus per instance) per group: the endpoint's ceiling, capped by its region's GPU quota."""
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


def estimate_start(base: Mapping, workload, *, bin_s: float = 900.0, mode: str = "static") -> dict[str, int]:
    """The first count to probe per group, from the goodput table (the deployments' theta: input tokens/s one
    instance serves within the TTFT target): the peak 15-minute input TPS (static) or the mean (autoscaled)
    divided by theta. Groups without theta start at 1."""
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
        load = (tps.max() if mode == "static" else tps.mean()) / bin_s
        theta = float(dep.get("theta_tps") or 0.0)
        out[g] = max(1, math.ceil(load / theta)) if theta > 0 else 1
    return out


def group_ok_for(targets: Mapping[str, float]) -> Callable[[dict, str], bool]:
    def ok(outcome: dict, group: str) -> bool:
        return meets(outcome["groups"].get(group), targets)
    return ok


_NONE: Mapping = {}


@dataclass
class State:
    pending: list[str] = field(default_factory=list)  # probe ids nobody has run yet
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
                               group_ok=ok, probability=spec.probability, max_fixups=spec.max_fixups)
        except Pending as p:
            ids = [probe_id(sub.key, k, s) for k, s in p.missing]
            lost = [i for i in ids if i in failed]
            if lost:
                entry["failed"] = {"probe": lost[0], "error": failed[lost[0]]}
            else:
                state.pending.extend(ids)
            continue
        found["gpus"] = {g: found["counts"][g] * gpus[g] for g in gpus}
        entry["search"] = found
        finished.setdefault(sub.strategy["key"], []).append((sub, found))
        entry["bands"] = _collect(known, sub, found["fleet"], spec.band_seeds, 1.0, state.pending, failed)
        entry["load"] = _collect(known, sub, found["fleet"], spec.seeds, spec.load_sensitivity, state.pending, failed)
    _mixes(spec, base, known, state, finished, failed)
    state.pending = list(dict.fromkeys(state.pending))
    state.done = not state.pending
    return state


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
        options = [r for r in results if r[0].option]
        if len(options) < 2 or len(options) != sum(1 for s in state.subs.values()
                                                   if s["sub"]["strategy"]["key"] == name):
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
    state.done = not state.pending


def check_fleet(spec: SearchSpec, base: Mapping, known: Mapping[str, dict], state: State, sub: Sub,
                counts: Mapping[str, int], failed: Mapping[str, dict]) -> None:
    """A given fleet (no search): on the search seeds (feasibility per group), then the bands and the load check."""
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
        entry["bands"] = _collect(known, sub, fleet, spec.band_seeds, 1.0, state.pending, failed)
        entry["load"] = _collect(known, sub, fleet, spec.seeds, spec.load_sensitivity, state.pending, failed)
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
            "fleet": parse_fleet_key(fleet), "seed": seed, "load": load}


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


def run_probe_inputs(base: Mapping, inputs: Mapping, *, frame=None, limits=None, progress=None) -> dict:
    """Run one probe (``probe_inputs``) on the base scenario."""
    from planner.capacity.core.probe import run_probe

    scenario = scaled_load(base, float(inputs.get("load", 1.0)))
    out = run_probe(scenario, inputs["strategy"], inputs["fleet"], int(inputs["seed"]), mode=inputs["mode"],
                    deployments=inputs.get("deployments") or None, frame=frame, limits=limits, progress=progress)
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
