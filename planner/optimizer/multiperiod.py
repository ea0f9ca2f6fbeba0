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

import functools
import itertools
import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from planner.optimizer.multiperiod_model import FLOW_COST, PlanModel, auto_penalty, build_model
from planner.optimizer.multiperiod_model import spot_price as _spot_price
from planner.optimizer.scenario import Scenario
from planner.optimizer.solver import SolverOptions, solve, solve_components

__all__ = ["FLOW_COST", "MIN_PIECE_COLUMNS", "PlanResult", "auto_penalty", "diagnose", "solve_plan", "static_peak"]


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


MIN_PIECE_COLUMNS = 200  # smaller independent pieces are solved together (one solver call each costs ms)


def solve_plan(sc: Scenario, progress=None, *, mir_cuts: bool = True, decompose: bool = True) -> PlanResult:
    """Build and solve the plan. ``progress`` is an optional plain ``fn(fraction, message)``.

    ``decompose``: solve the model's independent pieces separately (exact; without rerouting every
    region is one, since pools, quotas and coverage never cross regions). False: one model.
    """
    report = progress or (lambda fraction, message="": None)
    started = time.perf_counter()
    penalty = sc.shortfall_penalty if sc.shortfall_penalty is not None else auto_penalty(sc)
    m = build_model(sc, penalty, mir_cuts=mir_cuts, report=report)
    build_time = time.perf_counter() - started
    prob = m.prob
    size = {"variables": len(prob.variables()), "integer_variables": m.n_int, "constraints": len(prob.constraints)}
    report(0.4, f"solving {size['variables']} variables, {size['constraints']} constraints")

    options = SolverOptions(
        solver=sc.solver,
        time_limit_s=sc.time_limit_s,
        gap_rel=sc.gap_rel,
        start_lp_method="ipm" if m.flow else "choose",
    )
    rounder = functools.partial(_round_plan, m)
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
        hours=sc.hours,
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
    _read_plan(m, result, info.objective)
    name_pools(result, sc)
    report(1.0, "done")
    return result


def _label(sc: Scenario, key: str) -> str:
    """A model key in words: the model, with its pool when the endpoint is disaggregated."""
    model, pool = sc.pool_of.get(key, (key, "all"))
    return model if pool == "all" else f"{model} ({pool} pool)"


def name_pools(result: PlanResult, sc: Scenario) -> None:
    """Rows of a disaggregated endpoint's pools name the model and the pool ("prefill" / "decode") apart (an
    aggregated endpoint's rows have no ``pool``)."""
    if not sc.pool_of:
        return
    rows = [*result.instances, *result.coverage, *result.shortfalls, *(result.static_peak.get("endpoints") or [])]
    for row in rows:
        if row.get("model") in sc.pool_of:
            row["model"], row["pool"] = sc.pool_of[row["model"]]


def _round_plan(m: PlanModel, lp_value, scope=None) -> dict:
    """Per endpoint, hour by hour: floor every GPU type, then cover what the LP's capacity (start-up
    losses included) still lacks with the fewest instances of the single cheapest type. Rounding every
    type up instead adds one instance per type in use (~30 % on mixed fleets). Reserved GPUs round up."""
    sc, x = m.sc, m.x
    out = {}
    used = {pool: [0] * m.H for pool in m.pools}  # GPUs in use per pool and hour after rounding
    for i, j in m.endpoints:
        ks = m.gpus_of[i]
        if scope is not None and (not ks or x[(i, j, ks[0], 0)] not in scope):
            continue  # another piece's endpoint (its LP values are not in this solve)
        dep = {k: sc.deployments[(i, k)] for k in ks}
        loss = {k: min(1.0, dep[k].startup_s / 3600.0) for k in ks}
        prev = {k: sc.initial.get((i, j, k), 0) for k in ks}
        unit = {k: dep[k].gpus_per_instance * min(sc.gpus[k].price_per_gpu_hour.values()) for k in ks}
        for t in m.T:
            vals = {k: lp_value(x[(i, j, k, t)]) for k in ks}
            starts = {k: lp_value(m.s[(i, j, k, t)]) for k in ks}
            need = sum(dep[k].theta_tps * (vals[k] - loss[k] * starts[k]) for k in ks)
            room = {k: x[(i, j, k, t)].upBound for k in ks}
            ints = _cheapest_rounding(ks, dep, loss, prev, unit, vals, need, room)
            for k in ks:
                out[x[(i, j, k, t)]] = ints[k]
                used[(j, k)][t] += ints[k] * dep[k].gpus_per_instance
            prev = ints
    for (j, k), v in m.R.items():
        if scope is None or v in scope:
            out[v] = _best_reservation(sc, j, k, used[(j, k)], v.upBound, math.ceil(lp_value(v) - 1e-6))
    return out


def _cheapest_rounding(ks, dep, loss, prev, unit, vals, need, room) -> dict:
    """Every floor / ceil choice of the fractional types (at most 2^5), each topped up with the fewest
    instances of the single type that covers the rest most cheaply; the cheapest choice."""
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
                fits = room[k] is None or trial[k] + n <= room[k]
                fills.append((not fits, n * unit[k], n, k))
            full, extra, n, k = min(fills, key=lambda o: (o[0], o[1]))
            trial[k] += n
            cost += extra + (1e12 if full else 0.0)
        if cost < best_cost - 1e-9:
            best_cost, ints = cost, trial
    return ints


def _value(v) -> float:
    return float(v.varValue or 0.0)


def _read_plan(m: PlanModel, result: PlanResult, objective) -> None:
    """Fill the result from the solved variables: instances, supply and cost, coverage, diagnosis."""
    xv = {key: int(round(_value(v))) for key, v in m.x.items()}
    _read_instances(m, xv, result)
    cash, gpu_hours = _read_supply(m, xv, result)
    _read_cost(m.sc, cash, gpu_hours, objective, result)
    shortv = {key: _value(v) for key, v in m.short.items()}
    _read_coverage(m, xv, shortv, result)
    min_shortv = {k: _value(v) for k, v in m.min_short.items()}
    result.shortfalls, result.diagnosis = diagnose(m.sc, shortv, min_shortv, xv, result)


def _read_instances(m: PlanModel, xv: dict, result: PlanResult) -> None:
    for i, j, k in m.keys3:
        prev = m.sc.initial.get((i, j, k), 0)
        for t in m.T:
            n = xv[(i, j, k, t)]
            starts = max(0, n - prev)
            prev = n
            if n or starts:
                result.instances.append(
                    {"hour": t, "model": i, "region": j, "gpu": k, "instances": n, "starts": starts}
                )


def _read_supply(m: PlanModel, xv: dict, result: PlanResult) -> tuple[dict, dict]:
    """Reserved GPUs and the hourly supply rows; returns cash and GPU-hours by purchase option."""
    sc, H = m.sc, m.H
    cash = {"reserved": 0.0, "on_demand": 0.0, "spot": 0.0, "start_fees": 0.0}
    gpu_hours = {"reserved": 0.0, "on_demand": 0.0, "spot": 0.0, "reserved_idle": 0.0}
    for (j, k), v in m.R.items():
        g = int(round(_value(v)))
        if g:
            result.reserved_gpus.append({"region": j, "gpu": k, "gpus": g})
        cash["reserved"] += g * H * sc.gpus[k].price_per_gpu_hour["reserved"]
    for j, k in m.pools:
        users = [(i, jj, kk) for (i, jj, kk) in m.keys3 if jj == j and kk == k]
        rv = int(round(_value(m.R[(j, k)]))) if (j, k) in m.R else 0
        for t in m.T:
            used = sum(xv[key + (t,)] * sc.deployments[(key[0], k)].gpus_per_instance for key in users)
            spot = _value(m.S[(j, k, t)]) if (j, k, t) in m.S else 0.0
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
    return cash, gpu_hours


def _read_cost(sc: Scenario, cash: dict, gpu_hours: dict, objective, result: PlanResult) -> None:
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
        "objective": objective,
    }
    result.gpu_hours = {k: round(v, 4) for k, v in gpu_hours.items()}


def _read_coverage(m: PlanModel, xv: dict, shortv: dict, result: PlanResult) -> None:
    sc, H, flow = m.sc, m.H, m.flow
    for i, j in sorted(m.endpoints):
        point = sc.demand_point.get((i, j), [0.0] * H)
        target = sc.demand.get((i, j), [0.0] * H)
        for t in m.T:
            cap = 0.0
            for k in m.gpus_of[i]:
                d = sc.deployments[(i, k)]
                n = xv[(i, j, k, t)]
                prev = xv[(i, j, k, t - 1)] if t > 0 else sc.initial.get((i, j, k), 0)
                cap += d.theta_tps * (n - min(1.0, d.startup_s / 3600.0) * max(0, n - prev))
            rin = sum(_value(flow[(i, a, j, t)]) for a in m.into[j] if (i, a, j, t) in flow)
            rout = sum(_value(flow[(i, j, b, t)]) for b in m.out_of[j] if (i, j, b, t) in flow)
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
            f"{_label(sc, i)} in {j}: up to {max(vals):,.1f} TPS of {level} ({target[worst_t]:,.1f} TPS at hour {worst_t}) "
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
            f"{_label(sc, i)} in {j}: the floor of {sc.min_instances[(i, j)]} instances could not be kept in "
            f"{_hours_text(sorted(hours))} (quota too small for it)."
        )
    return rows, words
