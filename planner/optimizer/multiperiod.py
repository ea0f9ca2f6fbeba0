"""A multi-period, cost-optimal capacity plan (beyond the SageServe paper), Django-free.

For every hour t of a horizon of H hours (1..168), model i, region j and GPU type k the MILP chooses
integer instances x[i,j,k,t]; GPUs come from three purchase options per (region, GPU type):

    reserved   R[j,k]    integer GPUs, constant over the horizon, paid every hour whether used or not
    on-demand  OD[j,k,t]  GPUs, paid per hour used
    spot       S[j,k,t]  GPUs up to the spot availability, priced spot / (1 - risk_discount) in the objective

    supply     sum_i g[i,k] x[i,j,k,t] <= R[j,k] + OD[j,k,t] + S[j,k,t]      (and R + OD + S <= quota[j,k])
    starts     s[i,j,k,t] >= x[i,j,k,t] - x[i,j,k,t-1]      (x[.,-1] = the initial fleet, 0 by default)
    coverage   sum_k theta[i,k] (x - u[i,k] s)[i,j,k,t] + inflow - outflow + short[i,j,t] >= D[i,j,t]
               u = min(1, startup_s / 3600): a started instance is unavailable for its start-up time
    rerouting  flows f[i,a->b,t] >= 0 only between regions whose latency <= the cap; outflow of a region is
               at most (1 - min_local_share) of its demand
    limits     min/max instances per (model, region) each hour (min is softened by a penalised slack)

    minimise   sum R * H * p_res + sum OD * p_od + sum S * p_spot / (1 - r) + start_fee * sum s
               + penalty * (sum short + sum min_short)

D is the forecast quantile the user chose (``risk_quantile``). Because every uncovered TPS-hour has a
penalty far above any way of serving it, the model is always feasible; a positive slack is an
infeasibility, and ``diagnose`` turns it into words: which demand, where, when, by how much, and which
limit stood in the way.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import pulp

from planner.optimizer.scenario import Scenario
from planner.optimizer.solver import SolverOptions, solve, solve_components


@dataclass
class PlanResult:
    status: str
    solver: str
    solve_time_s: float
    build_time_s: float
    gap: float | None
    detail: str
    hours: int
    size: dict  # variables / integer variables / constraints
    cost: dict = field(default_factory=dict)  # cash by option + total, and the risk-adjusted objective
    gpu_hours: dict = field(default_factory=dict)  # by purchase option
    reserved_gpus: list = field(default_factory=list)  # [{region, gpu, gpus}]
    instances: list = field(default_factory=list)  # [{hour, model, region, gpu, instances, starts}] (non-zero)
    supply: list = field(default_factory=list)  # [{hour, region, gpu, used, reserved, on_demand, spot}]
    coverage: list = field(default_factory=list)  # [{hour, model, region, forecast, covered_target, capacity,
    #                                                 rerouted_in, rerouted_out, shortfall}]
    static_peak: dict = field(default_factory=dict)  # the comparison: constant peak provisioning on demand
    diagnosis: list = field(default_factory=list)  # sentences; empty when everything is covered
    shortfalls: list = field(default_factory=list)  # [{model, region, hours, max_tps, tps_hours, share}]
    demand_source: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status in ("optimal", "time_limit")

    @property
    def feasible(self) -> bool:
        return self.ok and not self.shortfalls

    def to_dict(self) -> dict:
        return asdict(self)


def _spot_price(sc: Scenario, gpu: str) -> float | None:
    p = sc.gpus[gpu].price_per_gpu_hour.get("spot")
    return None if p is None else p / (1.0 - sc.spot_risk_discount)


def _best_reservation(sc: Scenario, region: str, gpu: str, used: list[int], cap, fallback: int) -> int:
    """The cheapest integer reservation for a pool whose hourly GPU use is fixed: reserved for the whole
    horizon, then spot (risk-adjusted, up to its availability), then on demand, exactly as the model
    prices them. ``fallback`` (the LP's value rounded up) when on demand is not offered."""
    prices = sc.gpus[gpu].price_per_gpu_hour
    if "on_demand" not in prices or "reserved" not in prices:
        return fallback
    use = np.asarray(used, dtype=float)
    top = int(use.max()) if use.size else 0
    if cap is not None:
        top = min(top, int(cap))
    r = np.arange(0, top + 1, dtype=float)[:, None]
    rest = np.maximum(use[None, :] - r, 0.0)
    spot_price = _spot_price(sc, gpu)
    spot_cap = sc.spot_available_gpus.get((region, gpu), 0) if spot_price is not None else 0
    if spot_price is not None and spot_cap > 0 and spot_price < prices["on_demand"]:
        spot = np.minimum(rest, spot_cap)
        cost = spot_price * spot.sum(axis=1) + prices["on_demand"] * (rest - spot).sum(axis=1)
    else:
        cost = prices["on_demand"] * rest.sum(axis=1)
    cost = cost + len(used) * prices["reserved"] * r[:, 0]
    return int(np.argmin(cost))


FLOW_COST = 1e-3  # $ per rerouted TPS-hour: a tie-break (1e-6 made the LP badly scaled)


def auto_penalty(sc: Scenario) -> float:
    """Per uncovered TPS-hour: 100 instance-hours of the dearest deployment. A linear penalty makes a
    small shortfall cheap next to a whole instance; at this level even 0.01 TPS costs an instance-hour,
    so slack is used only where no instance can be added."""
    worst = 0.0
    for d in sc.deployments.values():
        worst = max(worst, max(sc.gpus[d.gpu].price_per_gpu_hour.values()) * d.gpus_per_instance)
    return 100.0 * max(worst, 1e-6)


def _add_mir_cuts(prob, integer_terms, continuous, demand: float) -> None:
    """Mixed-integer rounding cuts of one endpoint-hour's coverage row.

    Dropping the start-up losses and the inflow (both only make the row harder) leaves
    sum_k theta_k x_k + y >= D with y = shortfall + outflow >= 0. Divided by delta = theta_m, with
    a_k = theta_k / delta, b = D / delta, f0 = frac(b), f_k = frac(a_k), the MIR inequality is
        sum_k (floor(a_k) + min(f_k, f0) / f0) x_k + y / (delta f0) >= ceil(b),
    valid for every integer x >= 0 and y >= 0. One cut per GPU type as the divisor. HiGHS finds such
    cuts itself, but slowly on tens of thousands of rows; stating them makes the LP bound tight.
    """
    if demand <= 0:
        return
    for _var, delta in {round(th, 9): (None, th) for _v, th in integer_terms}.values():
        b = demand / delta
        f0 = b - math.floor(b)
        if f0 < 1e-3 or f0 > 1 - 1e-6:  # tiny f0: ill-conditioned cut (y / (delta f0)), skip it
            continue
        terms = []
        for var, theta in integer_terms:
            a = theta / delta
            fk = a - math.floor(a)
            if fk < 1e-9 or fk > 1 - 1e-9:
                fk = 0.0
                a = round(a)
            terms.append((var, math.floor(a) + min(fk, f0) / f0))
        terms += [(y, 1.0 / (delta * f0)) for y in continuous]
        prob += pulp.LpAffineExpression(terms) >= math.ceil(b)


MIN_PIECE_COLUMNS = 200  # smaller independent pieces are solved together (one solver call each costs ms)


def solve_plan(sc: Scenario, progress=None, *, mir_cuts: bool = True, decompose: bool = True) -> PlanResult:
    """Build and solve the plan. ``progress`` is an optional plain ``fn(fraction, message)``.

    ``decompose``: solve the model's independent pieces separately (exact; without rerouting every
    region is one, since pools, quotas and coverage never cross regions). False: one model.
    """
    report = progress or (lambda fraction, message="": None)
    started = time.perf_counter()
    H = sc.hours
    T = range(H)
    penalty = sc.shortfall_penalty if sc.shortfall_penalty is not None else auto_penalty(sc)
    pairs = sc.reroute_pairs()
    out_of: dict[str, list[str]] = {j: [b for a, b in pairs if a == j] for j in sc.regions}
    into: dict[str, list[str]] = {j: [a for a, b in pairs if b == j] for j in sc.regions}

    # Which (model, region) endpoints need variables: demand, a floor, an initial fleet, or reroute inflow.
    has_demand = {key for key, series in sc.demand.items() if max(series, default=0.0) > 0}
    endpoints: set[tuple[str, str]] = set(has_demand) | set(sc.min_instances) | {(i, j) for i, j, _ in sc.initial}
    for i, j in list(has_demand):
        for b in out_of[j]:
            endpoints.add((i, b))
    gpus_of = {i: [k for (m, k) in sc.deployments if m == i] for i in sc.models}
    peak_reach: dict[tuple[str, str], float] = {}
    for i, j in endpoints:
        sources = [j] + into[j]
        peak_reach[(i, j)] = max((sum(sc.demand.get((i, a), [0.0] * H)[t] for a in sources) for t in T), default=0.0)

    prob = pulp.LpProblem("capacity_plan", pulp.LpMinimize)
    x: dict[tuple, pulp.LpVariable] = {}
    s: dict[tuple, pulp.LpVariable] = {}
    n_int = 0
    keys3 = []
    for i, j in sorted(endpoints):
        for k in gpus_of[i]:
            d = sc.deployments[(i, k)]
            u = min(1.0, d.startup_s / 3600.0)
            ub = math.ceil(peak_reach[(i, j)] / (d.theta_tps * max(1.0 - u, 0.05)))
            ub += sc.min_instances.get((i, j), 0) + sc.initial.get((i, j, k), 0)
            if (j, k) in sc.quotas_gpus:
                ub = min(ub, sc.quotas_gpus[(j, k)] // d.gpus_per_instance)
            if (i, j) in sc.max_instances:
                ub = min(ub, sc.max_instances[(i, j)])
            ub = max(ub, 0)
            keys3.append((i, j, k))
            for t in T:
                x[(i, j, k, t)] = pulp.LpVariable(f"x_{len(x)}", lowBound=0, upBound=ub, cat=pulp.LpInteger)
                s[(i, j, k, t)] = pulp.LpVariable(f"s_{len(s)}", lowBound=0, upBound=ub)
                n_int += 1
    report(0.1, "variables built")

    # supply options per (region, gpu) pool that any endpoint uses
    pools = sorted({(j, k) for (_i, j, k) in keys3})
    R: dict[tuple, pulp.LpVariable] = {}
    OD: dict[tuple, pulp.LpVariable] = {}
    S: dict[tuple, pulp.LpVariable] = {}
    for j, k in pools:
        prices = sc.gpus[k].price_per_gpu_hour
        quota = sc.quotas_gpus.get((j, k))
        if "reserved" in prices:
            R[(j, k)] = pulp.LpVariable(f"R_{len(R)}", lowBound=0, upBound=quota, cat=pulp.LpInteger)
            n_int += 1
        for t in T:
            if "on_demand" in prices:
                OD[(j, k, t)] = pulp.LpVariable(f"O_{len(OD)}", lowBound=0, upBound=quota)
            if "spot" in prices and sc.spot_available_gpus.get((j, k), 0) > 0:
                cap = sc.spot_available_gpus[(j, k)]
                S[(j, k, t)] = pulp.LpVariable(
                    f"S_{len(S)}", lowBound=0, upBound=min(cap, quota) if quota is not None else cap
                )

    # starts
    for i, j, k in keys3:
        prev0 = sc.initial.get((i, j, k), 0)
        for t in T:
            if t > 0:
                prob += s[(i, j, k, t)] - x[(i, j, k, t)] + x[(i, j, k, t - 1)] >= 0
            else:
                prob += s[(i, j, k, t)] - x[(i, j, k, t)] >= -prev0

    # coverage with rerouting and shortfall slack
    short: dict[tuple, pulp.LpVariable] = {}
    flow: dict[tuple, pulp.LpVariable] = {}
    for i, j in sorted(endpoints):
        dem = sc.demand.get((i, j), [0.0] * H)
        for t in T:
            if dem[t] > 0:
                for b in out_of[j]:
                    if (i, b) in endpoints:
                        flow[(i, j, b, t)] = pulp.LpVariable(f"f_{len(flow)}", lowBound=0)
    for i, j in sorted(endpoints):
        dem = sc.demand.get((i, j), [0.0] * H)
        for t in T:
            terms = []
            for k in gpus_of[i]:
                d = sc.deployments[(i, k)]
                u = min(1.0, d.startup_s / 3600.0)
                terms.append((x[(i, j, k, t)], d.theta_tps))
                if u > 0:
                    terms.append((s[(i, j, k, t)], -d.theta_tps * u))
            for a in into[j]:
                if (i, a, j, t) in flow:
                    terms.append((flow[(i, a, j, t)], -1.0))  # serving someone else's demand uses capacity
            outs = [flow[(i, j, b, t)] for b in out_of[j] if (i, j, b, t) in flow]
            for f in outs:
                terms.append((f, 1.0))  # demand sent away need not be served here
            if dem[t] > 0:
                short[(i, j, t)] = pulp.LpVariable(f"short_{len(short)}", lowBound=0, upBound=dem[t])
                terms.append((short[(i, j, t)], 1.0))
                prob += pulp.LpAffineExpression(terms) >= dem[t]
                if outs:
                    prob += pulp.lpSum(outs) <= (1.0 - sc.min_local_share) * dem[t]
                if mir_cuts:
                    _add_mir_cuts(
                        prob,
                        [(x[(i, j, k, t)], sc.deployments[(i, k)].theta_tps) for k in gpus_of[i]],
                        [short[(i, j, t)], *outs],
                        dem[t],
                    )
            elif len(terms) > 0 and into[j]:
                prob += pulp.LpAffineExpression(terms) >= 0
    report(0.3, "coverage built")

    # supply and quota per pool and hour
    for j, k in pools:
        users = [(i, j, k) for (i, jj, kk) in keys3 if jj == j and kk == k]
        quota = sc.quotas_gpus.get((j, k))
        for t in T:
            terms = [(x[key + (t,)], float(sc.deployments[(key[0], k)].gpus_per_instance)) for key in users]
            supply = []
            if (j, k) in R:
                supply.append(R[(j, k)])
            if (j, k, t) in OD:
                supply.append(OD[(j, k, t)])
            if (j, k, t) in S:
                supply.append(S[(j, k, t)])
            terms += [(v, -1.0) for v in supply]
            prob += pulp.LpAffineExpression(terms) <= 0
            if quota is not None and len(supply) > 1:
                prob += pulp.lpSum(supply) <= quota

    # min / max instances per endpoint and hour
    min_short: dict[tuple, pulp.LpVariable] = {}
    for (i, j), lo in sc.min_instances.items():
        if lo <= 0 or (i, j) not in endpoints:
            continue
        for t in T:
            min_short[(i, j, t)] = pulp.LpVariable(f"mshort_{len(min_short)}", lowBound=0, upBound=lo)
            prob += pulp.lpSum(x[(i, j, k, t)] for k in gpus_of[i]) + min_short[(i, j, t)] >= lo
    for (i, j), hi in sc.max_instances.items():
        if (i, j) not in endpoints:
            continue
        for t in T:
            prob += pulp.lpSum(x[(i, j, k, t)] for k in gpus_of[i]) <= hi

    obj = []
    for (_j, k), v in R.items():
        obj.append((v, H * sc.gpus[k].price_per_gpu_hour["reserved"]))
    for (_j, k, _t), v in OD.items():
        obj.append((v, sc.gpus[k].price_per_gpu_hour["on_demand"]))
    for (_j, k, _t), v in S.items():
        obj.append((v, _spot_price(sc, k)))
    # Each start costs start_fee plus a tie-break of 1 % of an instance-hour at its cheapest price, so
    # that equally cheap fleets do not swap instances between GPU types from hour to hour.
    for (i, _j, k, _t), v in s.items():
        d = sc.deployments[(i, k)]
        tie = 0.01 * d.gpus_per_instance * min(sc.gpus[k].price_per_gpu_hour.values())
        obj.append((v, sc.start_fee + tie))
    obj += [(v, penalty) for v in short.values()]
    inst_penalty = penalty
    obj += [(v, inst_penalty) for v in min_short.values()]
    obj += [(v, FLOW_COST) for v in flow.values()]  # no gratuitous rerouting
    prob += pulp.LpAffineExpression(obj)
    build_time = time.perf_counter() - started
    size = {"variables": len(prob.variables()), "integer_variables": n_int, "constraints": len(prob.constraints)}
    report(0.4, f"solving {size['variables']} variables, {size['constraints']} constraints")

    options = SolverOptions(
        solver=sc.solver,
        time_limit_s=sc.time_limit_s,
        gap_rel=sc.gap_rel,
        start_lp_method="ipm" if flow else "choose",
    )

    def rounder(lp_value, scope=None):
        """Per endpoint, hour by hour: floor every GPU type, then cover what the LP's capacity (start-up
        losses included) still lacks with the fewest instances of the single cheapest type. Rounding every
        type up instead adds one instance per type in use (~30 % on mixed fleets). Reserved GPUs round up."""
        out = {}
        used = {pool: [0] * H for pool in pools}  # GPUs in use per pool and hour after rounding
        for i, j in endpoints:
            ks = gpus_of[i]
            if scope is not None and (not ks or x[(i, j, ks[0], 0)] not in scope):
                continue  # another piece's endpoint (its LP values are not in this solve)
            dep = {k: sc.deployments[(i, k)] for k in ks}
            loss = {k: min(1.0, dep[k].startup_s / 3600.0) for k in ks}
            prev = {k: sc.initial.get((i, j, k), 0) for k in ks}
            unit = {k: dep[k].gpus_per_instance * min(sc.gpus[k].price_per_gpu_hour.values()) for k in ks}
            for t in T:
                vals = {k: lp_value(x[(i, j, k, t)]) for k in ks}
                starts = {k: lp_value(s[(i, j, k, t)]) for k in ks}
                need = sum(dep[k].theta_tps * (vals[k] - loss[k] * starts[k]) for k in ks)
                # Every floor / ceil choice of the fractional types (at most 2^5), each topped up with the
                # fewest instances of the single type that covers the rest most cheaply; keep the cheapest.
                best_cost, ints = math.inf, {}
                choices = [
                    (math.floor(v + 1e-6), math.ceil(v - 1e-6)) if abs(v - round(v)) > 1e-6 else (round(v),)
                    for v in (vals[k] for k in ks)
                ]
                for combo in itertools.product(*choices):
                    trial = dict(zip(ks, combo, strict=True))
                    have = sum(dep[k].theta_tps * (trial[k] - loss[k] * max(0, trial[k] - prev[k])) for k in ks)
                    cost = sum(unit[k] * trial[k] for k in ks)
                    deficit = need - have
                    if deficit > 1e-6:
                        fills = []
                        for k in ks:
                            n = math.ceil(deficit / (dep[k].theta_tps * max(1.0 - loss[k], 0.05)) - 1e-9)
                            room = x[(i, j, k, t)].upBound
                            fits = room is None or trial[k] + n <= room
                            fills.append((not fits, n * unit[k], n, k))
                        full, extra, n, k = min(fills, key=lambda o: (o[0], o[1]))
                        trial[k] += n
                        cost += extra + (1e12 if full else 0.0)
                    if cost < best_cost - 1e-9:
                        best_cost, ints = cost, trial
                for k in ks:
                    out[x[(i, j, k, t)]] = ints[k]
                    used[(j, k)][t] += ints[k] * dep[k].gpus_per_instance
                prev = ints
        for (j, k), v in R.items():
            if scope is None or v in scope:
                out[v] = _best_reservation(sc, j, k, used[(j, k)], v.upBound, math.ceil(lp_value(v) - 1e-6))
        return out

    if decompose:
        info = solve_components(prob, options, rounder=rounder, min_columns=MIN_PIECE_COLUMNS)
    else:
        info = solve(prob, options, rounder=rounder)
    report(0.9, f"solver: {info.status}")
    result = PlanResult(
        status=info.status,
        solver=info.solver,
        solve_time_s=info.solve_time_s,
        build_time_s=build_time,
        gap=info.gap_rel,
        detail=info.detail,
        hours=H,
        size=size,
        demand_source={f"{i}@{j}": v for (i, j), v in sc.demand_source.items()},
    )
    result.static_peak = static_peak(sc)
    if not info.has_solution:
        result.diagnosis = [
            f"The solver stopped without a plan ({info.status}: {info.detail}). "
            f"Try a longer time limit (now {sc.time_limit_s:g} s) or a larger gap (now {sc.gap_rel:g})."
        ]
        return result

    val = lambda v: float(v.varValue or 0.0)  # noqa: E731
    xv = {key: int(round(val(v))) for key, v in x.items()}
    for i, j, k in keys3:
        prev = sc.initial.get((i, j, k), 0)
        for t in T:
            n = xv[(i, j, k, t)]
            starts = max(0, n - prev)
            prev = n
            if n or starts:
                result.instances.append(
                    {"hour": t, "model": i, "region": j, "gpu": k, "instances": n, "starts": starts}
                )

    cash = {"reserved": 0.0, "on_demand": 0.0, "spot": 0.0, "start_fees": 0.0}
    gpu_hours = {"reserved": 0.0, "on_demand": 0.0, "spot": 0.0, "reserved_idle": 0.0}
    for (j, k), v in R.items():
        g = int(round(val(v)))
        if g:
            result.reserved_gpus.append({"region": j, "gpu": k, "gpus": g})
        cash["reserved"] += g * H * sc.gpus[k].price_per_gpu_hour["reserved"]
    for j, k in pools:
        users = [(i, jj, kk) for (i, jj, kk) in keys3 if jj == j and kk == k]
        rv = int(round(val(R[(j, k)]))) if (j, k) in R else 0
        for t in T:
            used = sum(xv[key + (t,)] * sc.deployments[(key[0], k)].gpus_per_instance for key in users)
            spot = val(S[(j, k, t)]) if (j, k, t) in S else 0.0
            # Report the cheapest split of what is used (the solver may leave ties anywhere).
            from_reserved = min(used, rv)
            from_spot = min(max(used - from_reserved, 0), round(spot))
            from_od = max(used - from_reserved - from_spot, 0)
            gpu_hours["reserved"] += from_reserved
            gpu_hours["reserved_idle"] += rv - from_reserved
            gpu_hours["spot"] += from_spot
            gpu_hours["on_demand"] += from_od
            prices = sc.gpus[k].price_per_gpu_hour
            cash["spot"] += from_spot * prices.get("spot", 0.0)
            cash["on_demand"] += from_od * prices.get("on_demand", 0.0)
            result.supply.append(
                {
                    "hour": t,
                    "region": j,
                    "gpu": k,
                    "used": used,
                    "reserved": rv,
                    "on_demand": from_od,
                    "spot": from_spot,
                }
            )
    n_starts = sum(row["starts"] for row in result.instances)
    cash["start_fees"] = sc.start_fee * n_starts
    idle_start_cost = 0.0
    for row in result.instances:
        d = sc.deployments[(row["model"], row["gpu"])]
        price = min(sc.gpus[d.gpu].price_per_gpu_hour.values())
        idle_start_cost += row["starts"] * d.gpus_per_instance * price * min(1.0, d.startup_s / 3600.0)
    total = sum(cash.values())
    spot_premium = sum(
        row["spot"] * (_spot_price(sc, row["gpu"]) - sc.gpus[row["gpu"]].price_per_gpu_hour["spot"])
        for row in result.supply
        if row["spot"]
    )
    result.cost = {
        **{k: round(v, 4) for k, v in cash.items()},
        "total": round(total, 4),
        "risk_adjusted_total": round(total + spot_premium, 4),
        "idle_during_startup_approx": round(idle_start_cost, 4),  # part of the above, not added
        "starts": n_starts,
        "objective": info.objective,
    }
    result.gpu_hours = {k: round(v, 4) for k, v in gpu_hours.items()}

    shortv = {key: val(v) for key, v in short.items()}
    for i, j in sorted(endpoints):
        point = sc.demand_point.get((i, j), [0.0] * H)
        target = sc.demand.get((i, j), [0.0] * H)
        for t in T:
            cap = 0.0
            for k in gpus_of[i]:
                d = sc.deployments[(i, k)]
                n = xv[(i, j, k, t)]
                prev = xv[(i, j, k, t - 1)] if t > 0 else sc.initial.get((i, j, k), 0)
                cap += d.theta_tps * (n - min(1.0, d.startup_s / 3600.0) * max(0, n - prev))
            rin = sum(val(flow[(i, a, j, t)]) for a in into[j] if (i, a, j, t) in flow)
            rout = sum(val(flow[(i, j, b, t)]) for b in out_of[j] if (i, j, b, t) in flow)
            result.coverage.append(
                {
                    "hour": t,
                    "model": i,
                    "region": j,
                    "forecast": round(point[t], 4),
                    "target": round(target[t], 4),
                    "capacity": round(cap, 4),
                    "rerouted_in": round(rin, 4),
                    "rerouted_out": round(rout, 4),
                    "shortfall": round(shortv.get((i, j, t), 0.0), 4),
                }
            )
    result.shortfalls, result.diagnosis = diagnose(sc, shortv, {k: val(v) for k, v in min_short.items()}, xv, result)
    report(1.0, "done")
    return result


def static_peak(sc: Scenario) -> dict:
    """Provision every endpoint for its peak, all horizon long, on the cheapest on-demand GPU type."""
    total = 0.0
    rows = []
    for (i, j), series in sorted(sc.demand.items()):
        peak = max(series, default=0.0)
        lo = sc.min_instances.get((i, j), 0)
        best = None
        for k in [k for (m, k) in sc.deployments if m == i]:
            d = sc.deployments[(i, k)]
            prices = sc.gpus[k].price_per_gpu_hour
            price = prices.get("on_demand", prices.get("reserved"))
            n = max(lo, math.ceil(peak / d.theta_tps - 1e-9))
            cost = n * d.gpus_per_instance * price * sc.hours
            if best is None or cost < best[0]:
                best = (cost, k, n)
        if best is not None:
            total += best[0]
            rows.append({"model": i, "region": j, "gpu": best[1], "instances": best[2], "cost": round(best[0], 4)})
    return {
        "total": round(total, 4),
        "endpoints": rows,
        "note": "constant fleet sized for each endpoint's peak target, on-demand prices, no quotas",
    }


def _hours_text(hours: list[int]) -> str:
    runs, start = [], None
    for n, h in enumerate(hours):
        if start is None:
            start = h
        if n + 1 == len(hours) or hours[n + 1] != h + 1:
            runs.append(f"{start}" if start == h else f"{start}-{h}")
            start = None
    return ("hour " if len(hours) == 1 else "hours ") + ", ".join(runs)


def diagnose(sc: Scenario, short: dict, min_short: dict, xv: dict, result: PlanResult) -> tuple[list, list]:
    """Uncovered demand and unmet floors, in words, with the limit that stood in the way."""
    rows, words = [], []
    by_endpoint: dict[tuple[str, str], list[int]] = {}
    for (i, j, t), v in short.items():
        if v > 1e-3:  # below 0.001 TPS is solver tolerance
            by_endpoint.setdefault((i, j), []).append(t)
    used = {}
    for row in result.supply:
        used[(row["hour"], row["region"], row["gpu"])] = row["used"]
    for (i, j), hours in sorted(by_endpoint.items()):
        hours.sort()
        vals = [short[(i, j, t)] for t in hours]
        worst_t = hours[max(range(len(vals)), key=vals.__getitem__)]
        target = sc.demand[(i, j)]
        tps_hours = sum(vals)
        share = tps_hours / max(sum(target), 1e-9)
        rows.append(
            {
                "model": i,
                "region": j,
                "hours": hours,
                "max_tps": round(max(vals), 4),
                "tps_hours": round(tps_hours, 4),
                "share": round(share, 6),
                "worst_hour": worst_t,
            }
        )
        level = f"the p{sc.risk_quantile * 100:g} forecast" if sc.risk_quantile is not None else "the forecast"
        sentence = (
            f"{i} in {j}: up to {max(vals):,.1f} TPS of {level} ({target[worst_t]:,.1f} TPS at hour {worst_t}) "
            f"could not be served in {_hours_text(hours)}; {share:.1%} of its TPS-hours over the horizon are uncovered."
        )
        causes = []
        gpus = [k for (m, k) in sc.deployments if m == i]
        for k in gpus:
            quota = sc.quotas_gpus.get((j, k))
            if quota is not None and used.get((worst_t, j, k), 0) + sc.deployments[(i, k)].gpus_per_instance > quota:
                causes.append(f"the {k} quota in {j} ({quota} GPUs) is used up")
            prices = sc.gpus[k].price_per_gpu_hour
            if "on_demand" not in prices and "reserved" not in prices and sc.spot_available_gpus.get((j, k), 0) == 0:
                causes.append(f"no {k} capacity can be bought in {j} (no on-demand or reserved price, no spot)")
            elif quota == 0:
                causes.append(f"the {k} quota in {j} is 0")
        if (i, j) in sc.max_instances:
            total = sum(xv.get((i, j, k, worst_t), 0) for k in gpus)
            if total >= sc.max_instances[(i, j)]:
                causes.append(f"its max_instances limit ({sc.max_instances[(i, j)]}) is reached")
        if any(min(1.0, sc.deployments[(i, k)].startup_s / 3600.0) >= 1.0 for k in gpus) and 0 in hours:
            causes.append("instances started in the first hour are still loading")
        if not sc.rerouting:
            causes.append("rerouting to other regions is off")
        elif not [b for a, b in sc.reroute_pairs() if a == j]:
            causes.append(f"no region is within the {sc.max_latency_ms:g} ms latency cap of {j}")
        if causes:
            sentence += " Limits in the way: " + "; ".join(causes) + "."
        sentence += " Raise a quota, allow another GPU type or region, or lower the risk level."
        words.append(sentence)
    floors: dict[tuple[str, str], list[int]] = {}
    for (i, j, t), v in min_short.items():
        if v > 1e-3:
            floors.setdefault((i, j), []).append(t)
    for (i, j), hours in sorted(floors.items()):
        words.append(
            f"{i} in {j}: the floor of {sc.min_instances[(i, j)]} instances could not be kept in "
            f"{_hours_text(sorted(hours))} (quota too small for it)."
        )
    return rows, words
