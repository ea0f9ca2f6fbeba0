"""SageServe's hourly ILP (paper section 5, Table 2), as published, plus the limits the paper mentions.

Decision: delta[i,j,k], the integer change in instances of model i in region j on GPU type k.

    regional coverage  sum_k (n+delta)[i,j,k] * theta[i,k] >= max_w eps * rho[i,j](w)      for all i, j
    global coverage    sum_j sum_k (n+delta)[i,j,k] * theta[i,k] >= max_w sum_j rho[i,j](w)  for all i
    no over-removal    delta[i,j,k] >= -n[i,j,k]
    objective          min gamma + mu,
                       gamma = sum_k alpha[k] * sum_{i,j} delta[i,j,k]          (signed, as written)
                       mu    = sum_{i,j,k} sigma[i,k] * max(0, delta[i,j,k])    (linearised with p >= delta, p >= 0)

rho includes SageServe's buffer beta (section 6.3): beta_fraction (10 %) of the past hour's NIW load of
(model, region), added to every window. Optional extras the paper mentions but does not formulate
(spec section 8, row 11): min / max instances per endpoint (model, region), GPU quotas per (region, GPU
type), and penalised shortfall so an over-constrained hour still returns a plan with the gap named.

Everything is keyed by names (strings) so the simulator can call ``solve_hourly(HourlyInputs(...))``
every simulated hour without building index arrays. Django-free.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from planner.optimizer.hourly_model import PoolDemand, describe, sigma_of, to_pulp
from planner.optimizer.solver import HAS_SOLUTION, SolverOptions, solve, solve_arrays

Key3 = tuple[str, str, str]  # (model, region, gpu)
Key2 = tuple[str, str]


@dataclass(frozen=True)
class HourlyInputs:
    """Inputs of one hourly decision. Missing entries mean 0 (n, rho, niw) or "not possible" (theta).

    models, regions, gpus: the index sets (l, r, g in Table 2).
    n[(model, region, gpu)]: instances running now (int >= 0).
    rho[(model, region)]: forecast input TPS per window w of the next hour (any number of windows >= 1).
    theta[(model, gpu)]: input TPS one instance sustains at its SLA; absent or 0 = the model cannot be
        placed on that GPU type (existing instances there may only be removed).
    alpha[gpu]: cost of one VM (instance) of that GPU type, e.g. $ per instance-hour.
    startup_s[(model, gpu)]: average start-up time in seconds; sigma = alpha * startup_s / 3600
        (paper: "the product of alpha_k with the average start-up time"). ``sigma`` overrides it if given.
    epsilon: in (0, 1], share of its own peak each region must serve locally (default 1: no reliance on
        rerouting, the public code's behaviour).
    niw_past_hour_tps[(model, region)] and beta_fraction: the buffer beta = beta_fraction * NIW load of the
        past hour (unit: mean NIW input TPS over the past hour, spec section 8 row 14), added to rho.
    min_instances / max_instances[(model, region)]: bounds on the endpoint's total instances over GPU types.
    quota_gpus[(region, gpu)] with gpus_per_instance[(model, gpu)] (default 1): sum_i (n+delta)*gpus <= quota.
    gamma_mode: "signed" (as published: removals earn alpha) or "additions" (alpha only on max(0, delta),
        spec section 8 row 12); with "additions" a tiny holding cost breaks ties towards fewer instances.
    shortfall_penalty: None = coverage is hard (an impossible hour is "infeasible"); a number = cost per TPS
        of uncovered demand, so the solve always returns a plan and reports the shortfall.

    Prefill/decode disaggregated endpoints (the two-pool capacity form): an endpoint with ``decode_rho`` is
    served by a prefill pool and a decode pool. Its n / theta / rho above are then the prefill pool's (prompt
    TPS); the decode pool has its own instances ``decode_n[(model, region, gpu)]``, throughput
    ``decode_theta[(model, gpu)]`` (output TPS one decode instance sustains at its ITL target) and demand
    ``decode_rho[(model, region)]`` (output TPS per window), covered by rows of the same form (regional at epsilon,
    global), priced at the same alpha per GPU type, counted in min / max instances and quotas.
    """

    models: Sequence[str]
    regions: Sequence[str]
    gpus: Sequence[str]
    n: Mapping[Key3, int]
    rho: Mapping[Key2, Sequence[float]]
    theta: Mapping[Key2, float]
    alpha: Mapping[str, float]
    startup_s: Mapping[Key2, float] = field(default_factory=dict)
    sigma: Mapping[Key2, float] | None = None
    epsilon: float = 1.0
    niw_past_hour_tps: Mapping[Key2, float] = field(default_factory=dict)
    beta_fraction: float = 0.10
    min_instances: Mapping[Key2, int] = field(default_factory=dict)
    max_instances: Mapping[Key2, int] = field(default_factory=dict)
    quota_gpus: Mapping[Key2, int] = field(default_factory=dict)
    gpus_per_instance: Mapping[Key2, int] = field(default_factory=dict)
    regional_coverage: bool = True
    global_coverage: bool = True
    gamma_mode: str = "signed"
    shortfall_penalty: float | None = None
    decompose: bool = True  # solve independent blocks separately (exact); False = one monolithic model
    # HiGHS only: False (default) hands each block to highspy as arrays (fast path); True builds it with
    # PuLP (the reference path, always used with CBC). Same model, same options, same status rules.
    use_pulp: bool = False
    decode_n: Mapping[Key3, int] = field(default_factory=dict)
    decode_rho: Mapping[Key2, Sequence[float]] = field(default_factory=dict)
    decode_theta: Mapping[Key2, float] = field(default_factory=dict)
    options: SolverOptions = field(default_factory=lambda: SolverOptions(time_limit_s=10.0, gap_rel=1e-4))

    def validate(self) -> None:
        if not (0 < self.epsilon <= 1):
            raise ValueError(f"epsilon must be in (0, 1], got {self.epsilon}")
        if self.gamma_mode not in ("signed", "additions"):
            raise ValueError(f"gamma_mode must be 'signed' or 'additions', got {self.gamma_mode!r}")
        for name, seq in (("models", self.models), ("regions", self.regions), ("gpus", self.gpus)):
            if len(set(seq)) != len(seq) or not seq:
                raise ValueError(f"{name} must be a non-empty list of distinct names")
        for key, value in self.n.items():
            if int(value) != value or value < 0:
                raise ValueError(f"n{key} must be a non-negative integer, got {value}")
        for name, series in (("rho", self.rho), ("decode_rho", self.decode_rho)):
            for key, windows in series.items():
                if len(windows) == 0:
                    raise ValueError(f"{name}{key} has no windows")
                if any((not math.isfinite(x)) or x < 0 for x in windows):
                    raise ValueError(f"{name}{key} must hold finite non-negative TPS values")
        for key, value in self.decode_n.items():
            if int(value) != value or value < 0 or (key[0], key[1]) not in self.decode_rho:
                raise ValueError(f"decode_n{key} must be a non-negative integer of a disaggregated endpoint "
                                 "(one with decode_rho)")
        for gpu in self.gpus:
            if gpu not in self.alpha:
                raise ValueError(f"alpha has no cost for GPU type {gpu!r}")
        if self.shortfall_penalty is not None and self.shortfall_penalty <= 0:
            raise ValueError("shortfall_penalty must be positive (or None for hard coverage)")


@dataclass(frozen=True)
class HourlyPlan:
    status: str  # optimal | time_limit | infeasible | no_solution | error (see planner.optimizer.solver)
    objective: float | None  # gamma + mu (+ shortfall penalty); None without a solution
    gamma: float | None
    mu: float | None
    delta: dict[Key3, int]  # only non-zero changes
    instances: dict[Key3, int]  # n + delta, only non-zero counts
    per_endpoint_delta: dict[Key2, int]  # delta summed over GPU types: what the paper's scaler receives
    demand_tps: dict[Key2, float]  # max_w rho (+ beta): the peak each endpoint plans for
    capacity_tps: dict[Key2, float]  # sum_k (n+delta) theta after the change
    rerouted_tps: dict[Key2, float]  # peak demand above local capacity, to be served elsewhere (eps < 1)
    shortfall_tps: dict[str, float]  # uncovered peak TPS (shortfall_penalty only): "model@region" / "model"
    solve_time_s: float  # the solver call
    build_time_s: float  # building the PuLP model
    gap: float | None  # relative to the fleet cost sum alpha (n + delta) + mu (see solve_hourly)
    solver: str
    detail: str
    # the decode pools of disaggregated endpoints (the two-pool form; empty without decode_rho)
    decode_delta: dict[Key3, int] = field(default_factory=dict)
    decode_instances: dict[Key3, int] = field(default_factory=dict)
    decode_demand_tps: dict[Key2, float] = field(default_factory=dict)  # max_w decode_rho
    decode_capacity_tps: dict[Key2, float] = field(default_factory=dict)  # sum_k (dn + delta) decode_theta

    @property
    def ok(self) -> bool:
        return self.status in HAS_SOLUTION

    def target(self, model: str, region: str) -> int:
        """Instances the endpoint should have after this hour's change (all GPU types)."""
        return sum(v for (i, j, _k), v in self.instances.items() if i == model and j == region)


def planned_demand(inputs: HourlyInputs) -> tuple[dict[Key2, float], dict[str, float]]:
    """(max_w rho[i,j](w) + beta[i,j] per endpoint, max_w sum_j (rho+beta)[i,j](w) per model).

    Windows of different endpoints are aligned by position; a shorter series is padded with its last
    value. The global peak is the peak of the sum, which can be lower than the sum of the peaks.
    """
    local: dict[Key2, float] = {}
    global_: dict[str, float] = {}
    for i in inputs.models:
        series = []
        for j in inputs.regions:
            windows = [float(x) for x in inputs.rho.get((i, j), [0.0])]
            beta = inputs.beta_fraction * float(inputs.niw_past_hour_tps.get((i, j), 0.0))
            windows = [x + beta for x in windows]
            local[(i, j)] = max(windows)
            series.append(windows)
        width = max(len(s) for s in series)
        totals = [sum(s[min(w, len(s) - 1)] for s in series) for w in range(width)]
        global_[i] = max(totals)
    return local, global_


def decode_pools(inputs: HourlyInputs) -> PoolDemand:
    """The decode pools: instances now per key where the model can decode (or has instances), and the output-TPS
    peaks (max_w per disaggregated endpoint; max_w of the sum over its regions per model; no NIW buffer)."""
    n_of: dict[Key3, int] = {}
    local: dict[Key2, float] = {}
    global_: dict[str, float] = {}
    for i in inputs.models:
        series = []
        for j in inputs.regions:
            if (i, j) not in inputs.decode_rho:
                continue
            windows = [float(x) for x in inputs.decode_rho[(i, j)]]
            local[(i, j)] = max(windows)
            series.append(windows)
            for k in inputs.gpus:
                n = int(inputs.decode_n.get((i, j, k), 0))
                if float(inputs.decode_theta.get((i, k), 0.0)) > 0 or n > 0:
                    n_of[(i, j, k)] = n
        if series:
            width = max(len(s) for s in series)
            global_[i] = max(sum(s[min(w, len(s) - 1)] for s in series) for w in range(width))
    return PoolDemand(n_of, local, global_)


def solve_hourly(inputs: HourlyInputs) -> HourlyPlan:
    """Solve one hourly decision. Raises ValueError only for malformed inputs, never for a hard hour.

    The ILP is split, exactly, into independent blocks before solving (``decompose=True``): keys of one
    endpoint are always together; the global row of model i joins its endpoints unless it is implied
    (hard coverage with epsilon = 1: the sum of regional peaks is at least the peak of the sum); a quota
    joins the models of its (region, GPU type). With SageServe's defaults (epsilon = 1, no quotas) this
    gives one 1-to-g-variable knapsack per endpoint, which HiGHS solves in milliseconds, whereas the
    monolithic 20 x 20 x 5 model stalls HiGHS's root node for tens of seconds (see docs/optimizer.md).
    Each block's model is stated once (planner/optimizer/hourly_model.py) and solved by highspy from its
    arrays, or through PuLP (``use_pulp``, or CBC).
    """
    inputs.validate()
    started = time.perf_counter()
    local_peak, global_peak = planned_demand(inputs)
    n_of: dict[Key3, int] = {}
    for i in inputs.models:
        for j in inputs.regions:
            for k in inputs.gpus:
                n = int(inputs.n.get((i, j, k), 0))
                if float(inputs.theta.get((i, k), 0.0)) > 0 or n > 0:
                    n_of[(i, j, k)] = n
    decode = decode_pools(inputs)
    global_implied = inputs.regional_coverage and inputs.epsilon >= 1.0 and inputs.shortfall_penalty is None
    blocks = (_blocks(inputs, n_of, global_implied) if inputs.decompose
              else [(list(inputs.models), list(inputs.regions))])
    run = _Run(build_time=time.perf_counter() - started)
    with_global = not (global_implied and inputs.decompose)
    _solve_blocks(inputs, blocks, run, n_of, local_peak, global_peak, with_global, decode)
    status = _worst(run.statuses)
    detail = "; ".join(sorted(run.details)) + (f" ({len(blocks)} independent blocks)" if len(blocks) > 1 else "")
    if status not in HAS_SOLUTION:
        return HourlyPlan(status=status, objective=None, gamma=None, mu=None, delta={}, instances={},
                          per_endpoint_delta={}, demand_tps=local_peak, capacity_tps={}, rerouted_tps={},
                          shortfall_tps={}, solve_time_s=run.solve_time, build_time_s=run.build_time, gap=None,
                          solver=inputs.options.solver, detail=detail)
    return _plan(inputs, run, n_of, local_peak, status, detail, decode)


@dataclass
class _Run:
    """What the blocks' solves add up to."""

    build_time: float = 0.0
    solve_time: float = 0.0
    objective: float = 0.0
    bound: float = 0.0
    statuses: list[str] = field(default_factory=list)
    details: set[str] = field(default_factory=set)
    delta: dict[Key3, int] = field(default_factory=dict)
    decode_delta: dict[Key3, int] = field(default_factory=dict)
    shortfall: dict[str, float] = field(default_factory=dict)


def _solve_blocks(inputs: HourlyInputs, blocks: list, run: _Run, n_of: dict, local_peak: dict, global_peak: dict,
                  with_global: bool, decode: PoolDemand | None = None) -> None:
    """Describe and solve each block in turn (stopping at the first without a solution), adding up into ``run``."""
    direct = inputs.options.solver == "highs" and not inputs.use_pulp
    highs = None
    if direct:
        import highspy

        highs = highspy.Highs()  # one solver object for every block: its model is replaced each time
    deadline = time.perf_counter() + inputs.options.time_limit_s
    for block_models, block_regions in blocks:
        t0 = time.perf_counter()
        desc = describe(inputs, block_models, block_regions, n_of, local_peak, global_peak, with_global=with_global,
                        decode=decode)
        remaining = max(0.01, deadline - time.perf_counter())
        options = replace(inputs.options, time_limit_s=min(inputs.options.time_limit_s, remaining))
        if direct:
            run.build_time += time.perf_counter() - t0
            info, values = solve_arrays(desc.model, options, highs)
        else:
            prob, variables = to_pulp(desc)
            run.build_time += time.perf_counter() - t0
            info = solve(prob, options)
            values = [var.varValue or 0.0 for var in variables]
        run.solve_time += info.solve_time_s
        run.statuses.append(info.status)
        run.details.add(info.detail)
        if not info.has_solution or values is None:
            break
        offset = desc.model.offset
        run.objective += info.objective - offset
        run.bound += (info.best_bound if info.best_bound is not None else info.objective) - offset
        for key, col in desc.delta.items():
            run.delta[key] = int(round(values[col]))
        for key, col in desc.decode_delta.items():
            run.decode_delta[key] = int(round(values[col]))
        for name, col in desc.short.items():
            if values[col] > 1e-6:
                run.shortfall[name] = float(values[col])


def _plan(inputs: HourlyInputs, run: _Run, n_of: dict, local_peak: dict, status: str, detail: str,
          decode: PoolDemand) -> HourlyPlan:
    """The plan of a solved hour: instances, per-endpoint changes, gamma and mu of the chosen deltas, the gap."""
    d_val = run.delta
    instances = {key: n_of[key] + d for key, d in d_val.items() if n_of[key] + d}
    dec = run.decode_delta
    decode_capacity: dict[Key2, float] = {key: 0.0 for key in decode.local_peak}
    for (i, j, k), d in dec.items():
        decode_capacity[(i, j)] += (decode.n_of[(i, j, k)] + d) * float(inputs.decode_theta.get((i, k), 0.0))
    both = [(key, d, n_of[key]) for key, d in d_val.items()] + [(key, d, decode.n_of[key]) for key, d in dec.items()]
    per_endpoint: dict[Key2, int] = {}
    capacity: dict[Key2, float] = {(i, j): 0.0 for i in inputs.models for j in inputs.regions}
    for (i, j, k), d in d_val.items():
        per_endpoint[(i, j)] = per_endpoint.get((i, j), 0) + d
        capacity[(i, j)] += (n_of[(i, j, k)] + d) * float(inputs.theta.get((i, k), 0.0))
    if inputs.gamma_mode == "signed":
        gamma = sum(float(inputs.alpha[k]) * d for (_i, _j, k), d, _n in both)
    else:
        gamma = sum(float(inputs.alpha[k]) * max(0, d) for (_i, _j, k), d, _n in both)
    mu = sum(sigma_of(inputs, i, k) * max(0, d) for (i, _j, k), d, _n in both)
    fleet_cost = sum(float(inputs.alpha[k]) * (n + d) for (_i, _j, k), d, n in both) + mu
    objective, bound = run.objective, run.bound
    gap = (
        0.0
        if status == "optimal" and abs(objective - bound) < 1e-9
        else abs(objective - bound) / max(abs(fleet_cost), 1e-9)
    )
    rerouted = {key: local_peak[key] - capacity[key] for key in capacity if local_peak[key] > capacity[key] + 1e-9}
    return HourlyPlan(
        status=status,
        objective=objective,
        gamma=gamma,
        mu=mu,
        delta={k: v for k, v in d_val.items() if v},
        instances=instances,
        per_endpoint_delta={k: v for k, v in per_endpoint.items() if v},
        demand_tps=local_peak,
        capacity_tps=capacity,
        rerouted_tps=rerouted,
        shortfall_tps=run.shortfall,
        solve_time_s=run.solve_time,
        build_time_s=run.build_time,
        gap=gap,
        solver=inputs.options.solver,
        detail=detail,
        decode_delta={k: v for k, v in dec.items() if v},
        decode_instances={key: decode.n_of[key] + d for key, d in dec.items() if decode.n_of[key] + d},
        decode_demand_tps=dict(decode.local_peak),
        decode_capacity_tps=decode_capacity,
    )


_SEVERITY = {"optimal": 0, "time_limit": 1, "no_solution": 2, "infeasible": 3, "error": 4}


def _worst(statuses: list[str]) -> str:
    return max(statuses, key=lambda st: _SEVERITY.get(st, 4)) if statuses else "optimal"


def _blocks(inputs: HourlyInputs, n_of: dict[Key3, int], global_implied: bool) -> list[tuple[list[str], list[str]]]:
    """Independent sub-problems as (models, regions) pairs whose keys are exactly their cross product
    (within n_of). Union-find over endpoints: global rows join a model's regions, quotas a region's models."""
    parent: dict[Key2, Key2] = {(i, j): (i, j) for i in inputs.models for j in inputs.regions}

    def find(x: Key2) -> Key2:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: Key2, b: Key2) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[rb] = ra

    if inputs.global_coverage and not global_implied:
        for i in inputs.models:
            for j in inputs.regions[1:]:
                union((i, inputs.regions[0]), (i, j))
    for j, _k in inputs.quota_gpus:
        if j in inputs.regions:
            for i in inputs.models[1:]:
                union((inputs.models[0], j), (i, j))
    groups: dict[Key2, list[Key2]] = {}
    for endpoint in parent:
        groups.setdefault(find(endpoint), []).append(endpoint)
    blocks = []
    for members in groups.values():
        ms = sorted({i for i, _ in members}, key=list(inputs.models).index)
        rs = sorted({j for _, j in members}, key=list(inputs.regions).index)
        # a block is always a full cross product: a model's global row spans all regions, a quota all models
        blocks.append((ms, rs))
    return blocks
