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

import pulp

from planner.optimizer.solver import HAS_SOLUTION, ArrayModel, SolverOptions, solve, solve_arrays

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
        for key, windows in self.rho.items():
            if len(windows) == 0:
                raise ValueError(f"rho{key} has no windows")
            if any((not math.isfinite(x)) or x < 0 for x in windows):
                raise ValueError(f"rho{key} must hold finite non-negative TPS values")
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

    @property
    def ok(self) -> bool:
        return self.status in HAS_SOLUTION

    def target(self, model: str, region: str) -> int:
        """Instances the endpoint should have after this hour's change (all GPU types)."""
        return sum(v for (i, j, _k), v in self.instances.items() if i == model and j == region)


def sigma_of(inputs: HourlyInputs, model: str, gpu: str) -> float:
    if inputs.sigma is not None and (model, gpu) in inputs.sigma:
        return float(inputs.sigma[(model, gpu)])
    return float(inputs.alpha[gpu]) * float(inputs.startup_s.get((model, gpu), 0.0)) / 3600.0


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


def solve_hourly(inputs: HourlyInputs) -> HourlyPlan:
    """Solve one hourly decision. Raises ValueError only for malformed inputs, never for a hard hour.

    The ILP is split, exactly, into independent blocks before solving (``decompose=True``): keys of one
    endpoint are always together; the global row of model i joins its endpoints unless it is implied
    (hard coverage with epsilon = 1: the sum of regional peaks is at least the peak of the sum); a quota
    joins the models of its (region, GPU type). With SageServe's defaults (epsilon = 1, no quotas) this
    gives one 1-to-g-variable knapsack per endpoint, which HiGHS solves in milliseconds, whereas the
    monolithic 20 x 20 x 5 model stalls HiGHS's root node for tens of seconds (see docs/optimizer.md).
    """
    inputs.validate()
    started = time.perf_counter()
    models, regions, gpus = list(inputs.models), list(inputs.regions), list(inputs.gpus)
    local_peak, global_peak = planned_demand(inputs)
    n_of: dict[Key3, int] = {}
    for i in models:
        for j in regions:
            for k in gpus:
                n = int(inputs.n.get((i, j, k), 0))
                if float(inputs.theta.get((i, k), 0.0)) > 0 or n > 0:
                    n_of[(i, j, k)] = n
    soft = inputs.shortfall_penalty is not None
    global_implied = inputs.regional_coverage and inputs.epsilon >= 1.0 and not soft
    blocks = _blocks(inputs, n_of, global_implied) if inputs.decompose else [(models, regions)]
    build_time = time.perf_counter() - started

    direct = inputs.options.solver == "highs" and not inputs.use_pulp
    highs = None
    if direct:
        import highspy

        highs = highspy.Highs()  # one solver object for every block: its model is replaced each time
    deadline = time.perf_counter() + inputs.options.time_limit_s
    d_val: dict[Key3, int] = {}
    shortfall: dict[str, float] = {}
    statuses: list[str] = []
    objective = bound = 0.0
    solve_time = 0.0
    details: set[str] = set()
    for block_models, block_regions in blocks:
        t0 = time.perf_counter()
        with_global = not (global_implied and inputs.decompose)
        args = (inputs, block_models, block_regions, n_of, local_peak, global_peak)
        remaining = max(0.01, deadline - time.perf_counter())
        options = replace(inputs.options, time_limit_s=min(inputs.options.time_limit_s, remaining))
        if direct:
            model, delta_col, short_col, offset = _build_arrays(*args, with_global=with_global)
            build_time += time.perf_counter() - t0
            info, values = solve_arrays(model, options, highs)
            delta_value = {key: values[col] for key, col in delta_col.items()} if values is not None else {}
            short_value = {name: values[col] for name, col in short_col.items()} if values is not None else {}
        else:
            prob, delta, short, offset = _build(*args, with_global=with_global)
            build_time += time.perf_counter() - t0
            info = solve(prob, options)
            delta_value = {key: var.varValue or 0.0 for key, var in delta.items()}
            short_value = {name: var.varValue or 0.0 for name, var in short.items()}
        solve_time += info.solve_time_s
        statuses.append(info.status)
        details.add(info.detail)
        if not info.has_solution:
            break
        objective += info.objective - offset
        bound += (info.best_bound if info.best_bound is not None else info.objective) - offset
        for key, value in delta_value.items():
            d_val[key] = int(round(value))
        for name, value in short_value.items():
            if value > 1e-6:
                shortfall[name] = float(value)
    status = _worst(statuses)
    detail = "; ".join(sorted(details)) + (f" ({len(blocks)} independent blocks)" if len(blocks) > 1 else "")
    if status not in HAS_SOLUTION:
        return HourlyPlan(
            status=status,
            objective=None,
            gamma=None,
            mu=None,
            delta={},
            instances={},
            per_endpoint_delta={},
            demand_tps=local_peak,
            capacity_tps={},
            rerouted_tps={},
            shortfall_tps={},
            solve_time_s=solve_time,
            build_time_s=build_time,
            gap=None,
            solver=inputs.options.solver,
            detail=detail,
        )

    def theta_of(i: str, k: str) -> float:
        return float(inputs.theta.get((i, k), 0.0))

    instances = {key: n_of[key] + d for key, d in d_val.items() if n_of[key] + d}
    per_endpoint: dict[Key2, int] = {}
    capacity: dict[Key2, float] = {(i, j): 0.0 for i in models for j in regions}
    for (i, j, k), d in d_val.items():
        per_endpoint[(i, j)] = per_endpoint.get((i, j), 0) + d
        capacity[(i, j)] += (n_of[(i, j, k)] + d) * theta_of(i, k)
    if inputs.gamma_mode == "signed":
        gamma = sum(float(inputs.alpha[k]) * d for (_i, _j, k), d in d_val.items())
    else:
        gamma = sum(float(inputs.alpha[k]) * max(0, d) for (_i, _j, k), d in d_val.items())
    mu = sum(sigma_of(inputs, i, k) * max(0, d) for (i, _j, k), d in d_val.items())
    fleet_cost = sum(float(inputs.alpha[k]) * (n_of[(i, j, k)] + d) for (i, j, k), d in d_val.items()) + mu
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
        shortfall_tps=shortfall,
        solve_time_s=solve_time,
        build_time_s=build_time,
        gap=gap,
        solver=inputs.options.solver,
        detail=detail,
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


def _build(
    inputs: HourlyInputs,
    models: list[str],
    regions: list[str],
    n_of: dict[Key3, int],
    local_peak: dict[Key2, float],
    global_peak: dict[str, float],
    *,
    with_global: bool,
):
    """PuLP model of the ILP restricted to ``models`` x ``regions`` (every GPU type)."""
    gpus = list(inputs.gpus)
    prob = pulp.LpProblem("sageserve_hourly", pulp.LpMinimize)

    def theta_of(i: str, k: str) -> float:
        return float(inputs.theta.get((i, k), 0.0))

    delta: dict[Key3, pulp.LpVariable] = {}
    plus: dict[Key3, pulp.LpVariable] = {}
    for a, i in enumerate(models):
        for b, j in enumerate(regions):
            for c, k in enumerate(gpus):
                key = (i, j, k)
                if key not in n_of:
                    continue
                n = n_of[key]
                # An explicit upper bound (more than the model's global peak needs is never useful) keeps
                # HiGHS's domain propagation effective; a model that cannot run on k may only shrink there.
                up = 0
                if theta_of(i, k) > 0:
                    need = max(global_peak[i], local_peak[(i, j)])
                    up = max(0, math.ceil(need / theta_of(i, k)) + int(inputs.min_instances.get((i, j), 0)) - n)
                delta[key] = pulp.LpVariable(f"d_{a}_{b}_{c}", lowBound=-n, upBound=up, cat=pulp.LpInteger)
                plus[key] = pulp.LpVariable(f"p_{a}_{b}_{c}", lowBound=0)  # p >= max(0, delta); = at optimum
                prob += pulp.LpAffineExpression([(plus[key], 1.0), (delta[key], -1.0)]) >= 0, f"plus_{a}_{b}_{c}"

    # shortfall slacks (only with shortfall_penalty): "model@region" for regional, "model" for global
    short: dict[str, pulp.LpVariable] = {}
    soft = inputs.shortfall_penalty is not None
    for a, i in enumerate(models):
        if inputs.regional_coverage:
            for b, j in enumerate(regions):
                need = inputs.epsilon * local_peak[(i, j)]
                if need <= 0:
                    continue
                keys = [(i, j, k) for k in gpus if (i, j, k) in delta and theta_of(i, k) > 0]
                have = sum(n_of[key] * theta_of(i, key[2]) for key in keys)
                terms = [(delta[key], theta_of(i, key[2])) for key in keys]
                if soft:
                    short[f"{i}@{j}"] = pulp.LpVariable(f"lshort_{a}_{b}", lowBound=0)
                    terms.append((short[f"{i}@{j}"], 1.0))
                expr = pulp.LpAffineExpression(terms)
                # with no placeable GPU type and hard coverage this row reads 0 >= need: infeasible
                prob += expr >= need - have, f"local_{a}_{b}"
        if with_global and inputs.global_coverage and global_peak[i] > 0:
            keys = [key for key in delta if key[0] == i and theta_of(i, key[2]) > 0]
            have = sum(n_of[key] * theta_of(i, key[2]) for key in keys)
            terms = [(delta[key], theta_of(i, key[2])) for key in keys]
            if soft:
                short[i] = pulp.LpVariable(f"gshort_{a}", lowBound=0)
                terms.append((short[i], 1.0))
            expr = pulp.LpAffineExpression(terms)
            prob += expr >= global_peak[i] - have, f"global_{a}"

    for b, j in enumerate(regions):
        for a, i in enumerate(models):
            keys = [(i, j, k) for k in gpus if (i, j, k) in delta]
            total = pulp.LpAffineExpression([(delta[key], 1.0) for key in keys])
            have = sum(n_of[key] for key in keys)
            if (i, j) in inputs.min_instances and int(inputs.min_instances[(i, j)]) > 0:
                prob += total >= int(inputs.min_instances[(i, j)]) - have, f"min_{a}_{b}"
            if (i, j) in inputs.max_instances:
                prob += total <= int(inputs.max_instances[(i, j)]) - have, f"max_{a}_{b}"
        for c, k in enumerate(gpus):
            if (j, k) in inputs.quota_gpus:
                keys = [(i, j, k) for i in models if (i, j, k) in delta]
                gpi = {key: int(inputs.gpus_per_instance.get((key[0], k), 1)) for key in keys}
                used = sum(gpi[key] * n_of[key] for key in keys)
                prob += (
                    pulp.lpSum(gpi[key] * delta[key] for key in keys) <= int(inputs.quota_gpus[(j, k)]) - used,
                    f"quota_{b}_{c}",
                )

    if inputs.gamma_mode == "signed":
        gamma_terms = [(delta[key], float(inputs.alpha[key[2]])) for key in delta]
    else:
        gamma_terms = [(plus[key], float(inputs.alpha[key[2]])) for key in delta]
        # tie-break: a holding cost 1e-6 * alpha per instance so surplus instances are released
        gamma_terms += [(delta[key], 1e-6 * float(inputs.alpha[key[2]])) for key in delta]
    mu_terms = [(plus[key], sigma_of(inputs, key[0], key[2])) for key in delta]
    # The constant sum_k alpha_k sum_ij n_ijk turns gamma + mu into the cost of the fleet after the change
    # (same argmin). The solver's relative gap is then a share of that cost; on gamma + mu alone, which can
    # be zero or negative, a relative gap means nothing. The caller subtracts ``offset`` again.
    offset = sum(float(inputs.alpha[key[2]]) * n_of[key] for key in delta) if inputs.gamma_mode == "signed" else 0.0
    terms = gamma_terms + mu_terms
    if short:
        terms += [(v, float(inputs.shortfall_penalty)) for v in short.values()]
    # Sum the coefficients per variable: pulp.LpAffineExpression(list) keeps only the LAST coefficient of a
    # repeated variable, which silently dropped gamma (alpha on p) under gamma_mode="additions".
    coefficients: dict[pulp.LpVariable, float] = {}
    for var, coef in terms:
        coefficients[var] = coefficients.get(var, 0.0) + coef
    prob += pulp.LpAffineExpression(list(coefficients.items()), constant=offset)
    return prob, delta, short, offset


def _build_arrays(
    inputs: HourlyInputs,
    models: list[str],
    regions: list[str],
    n_of: dict[Key3, int],
    local_peak: dict[Key2, float],
    global_peak: dict[str, float],
    *,
    with_global: bool,
) -> tuple[ArrayModel, dict[Key3, int], dict[str, int], float]:
    """The model of ``_build`` (same columns, rows, bounds and objective) as arrays for highspy.

    Returns (model, column of delta per key, column of each shortfall slack, objective offset)."""
    gpus = list(inputs.gpus)
    inf = math.inf
    cost: list[float] = []
    lower: list[float] = []
    upper: list[float] = []
    integer: list[bool] = []
    row_lower: list[float] = []
    row_upper: list[float] = []
    start: list[int] = [0]
    index: list[int] = []
    value: list[float] = []

    def column(lo: float, up: float, is_int: bool) -> int:
        cost.append(0.0)
        lower.append(lo)
        upper.append(up)
        integer.append(is_int)
        return len(cost) - 1

    def row(cols: list[int], coefs: list[float], lo: float, up: float) -> None:
        index.extend(cols)
        value.extend(coefs)
        start.append(len(index))
        row_lower.append(lo)
        row_upper.append(up)

    theta = {(i, k): float(inputs.theta.get((i, k), 0.0)) for i in models for k in gpus}
    delta: dict[Key3, int] = {}
    plus: dict[Key3, int] = {}
    for i in models:
        for j in regions:
            for k in gpus:
                key = (i, j, k)
                if key not in n_of:
                    continue
                n = n_of[key]
                up = 0
                if theta[(i, k)] > 0:
                    need = max(global_peak[i], local_peak[(i, j)])
                    up = max(0, math.ceil(need / theta[(i, k)]) + int(inputs.min_instances.get((i, j), 0)) - n)
                delta[key] = column(-n, up, True)
                plus[key] = column(0.0, inf, False)
                row([plus[key], delta[key]], [1.0, -1.0], 0.0, inf)

    short: dict[str, int] = {}
    soft = inputs.shortfall_penalty is not None
    for i in models:
        if inputs.regional_coverage:
            for j in regions:
                need = inputs.epsilon * local_peak[(i, j)]
                if need <= 0:
                    continue
                keys = [(i, j, k) for k in gpus if (i, j, k) in delta and theta[(i, k)] > 0]
                have = sum(n_of[key] * theta[(i, key[2])] for key in keys)
                cols = [delta[key] for key in keys]
                coefs = [theta[(i, key[2])] for key in keys]
                if soft:
                    short[f"{i}@{j}"] = column(0.0, inf, False)
                    cols.append(short[f"{i}@{j}"])
                    coefs.append(1.0)
                row(cols, coefs, need - have, inf)
        if with_global and inputs.global_coverage and global_peak[i] > 0:
            keys = [key for key in delta if key[0] == i and theta[(i, key[2])] > 0]
            have = sum(n_of[key] * theta[(i, key[2])] for key in keys)
            cols = [delta[key] for key in keys]
            coefs = [theta[(i, key[2])] for key in keys]
            if soft:
                short[i] = column(0.0, inf, False)
                cols.append(short[i])
                coefs.append(1.0)
            row(cols, coefs, global_peak[i] - have, inf)

    for j in regions:
        for i in models:
            keys = [(i, j, k) for k in gpus if (i, j, k) in delta]
            cols = [delta[key] for key in keys]
            have = sum(n_of[key] for key in keys)
            if (i, j) in inputs.min_instances and int(inputs.min_instances[(i, j)]) > 0:
                row(cols, [1.0] * len(cols), int(inputs.min_instances[(i, j)]) - have, inf)
            if (i, j) in inputs.max_instances:
                row(cols, [1.0] * len(cols), -inf, int(inputs.max_instances[(i, j)]) - have)
        for k in gpus:
            if (j, k) in inputs.quota_gpus:
                keys = [(i, j, k) for i in models if (i, j, k) in delta]
                gpi = [int(inputs.gpus_per_instance.get((key[0], k), 1)) for key in keys]
                used = sum(g * n_of[key] for g, key in zip(gpi, keys, strict=True))
                row([delta[key] for key in keys], [float(g) for g in gpi], -inf, int(inputs.quota_gpus[(j, k)]) - used)

    for key, col in delta.items():
        alpha = float(inputs.alpha[key[2]])
        if inputs.gamma_mode == "signed":
            cost[col] += alpha
        else:
            cost[plus[key]] += alpha
            cost[col] += 1e-6 * alpha  # the same tie-break holding cost as _build
        cost[plus[key]] += sigma_of(inputs, key[0], key[2])
    for col in short.values():
        cost[col] += float(inputs.shortfall_penalty)
    offset = sum(float(inputs.alpha[key[2]]) * n_of[key] for key in delta) if inputs.gamma_mode == "signed" else 0.0
    model = ArrayModel(cost, lower, upper, integer, row_lower, row_upper, start, index, value, offset)
    return model, delta, short, offset
