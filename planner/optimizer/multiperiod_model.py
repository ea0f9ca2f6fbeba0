"""The MILP of the multi-period plan (the formulation is in ``multiperiod``'s docstring), built step by step.

``build_model`` runs the steps in a fixed order (variables, then each constraint family, then the
objective); the order decides the variable and row numbering the solver sees, so keep it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pulp

from planner.optimizer.scenario import Scenario

FLOW_COST = 1e-3  # $ per rerouted TPS-hour: a tie-break (1e-6 made the LP badly scaled)


def spot_price(sc: Scenario, gpu: str) -> float | None:
    """The spot price as the objective sees it: divided by (1 - risk discount); None when not offered."""
    p = sc.gpus[gpu].price_per_gpu_hour.get("spot")
    return None if p is None else p / (1.0 - sc.spot_risk_discount)


def auto_penalty(sc: Scenario) -> float:
    """Per uncovered TPS-hour: 100 instance-hours of the dearest deployment. A linear penalty makes a
    small shortfall cheap next to a whole instance; at this level even 0.01 TPS costs an instance-hour,
    so slack is used only where no instance can be added."""
    worst = 0.0
    for d in sc.deployments.values():
        worst = max(worst, max(sc.gpus[d.gpu].price_per_gpu_hour.values()) * d.gpus_per_instance)
    return 100.0 * max(worst, 1e-6)


@dataclass
class PlanModel:
    """The problem, its variables keyed by index tuple, and the index sets the steps share."""

    sc: Scenario
    prob: pulp.LpProblem
    T: range
    endpoints: set[tuple[str, str]]  # (model, region) pairs that need variables
    gpus_of: dict[str, list[str]]  # model -> GPU types it has a deployment on
    out_of: dict[str, list[str]]  # region -> regions it may reroute to
    into: dict[str, list[str]]  # region -> regions that may reroute to it
    keys3: list[tuple[str, str, str]] = field(default_factory=list)  # (model, region, gpu) with instance variables
    pools: list[tuple[str, str]] = field(default_factory=list)  # (region, gpu) pools any endpoint uses
    x: dict[tuple, pulp.LpVariable] = field(default_factory=dict)  # instances [i, j, k, t]
    s: dict[tuple, pulp.LpVariable] = field(default_factory=dict)  # starts [i, j, k, t]
    R: dict[tuple, pulp.LpVariable] = field(default_factory=dict)  # reserved GPUs [j, k]
    OD: dict[tuple, pulp.LpVariable] = field(default_factory=dict)  # on-demand GPUs [j, k, t]
    S: dict[tuple, pulp.LpVariable] = field(default_factory=dict)  # spot GPUs [j, k, t]
    flow: dict[tuple, pulp.LpVariable] = field(default_factory=dict)  # rerouted TPS [i, from, to, t]
    short: dict[tuple, pulp.LpVariable] = field(default_factory=dict)  # uncovered TPS [i, j, t]
    min_short: dict[tuple, pulp.LpVariable] = field(default_factory=dict)  # missing floor instances [i, j, t]
    n_int: int = 0

    @property
    def H(self) -> int:
        return self.sc.hours


def build_model(sc: Scenario, penalty: float, *, mir_cuts: bool, report) -> PlanModel:
    m = _index_sets(sc)
    peak_reach = _peak_reach(m)
    _add_instance_variables(m, peak_reach)
    report(0.1, "variables built")
    _add_supply_variables(m)
    _add_start_rows(m)
    _add_flow_variables(m)
    _add_coverage_rows(m, mir_cuts)
    report(0.3, "coverage built")
    _add_supply_rows(m)
    _add_instance_limits(m)
    _set_objective(m, penalty)
    return m


def _index_sets(sc: Scenario) -> PlanModel:
    """Which (model, region) endpoints need variables: demand, a floor, an initial fleet, or reroute inflow."""
    pairs = sc.reroute_pairs()
    out_of: dict[str, list[str]] = {j: [b for a, b in pairs if a == j] for j in sc.regions}
    into: dict[str, list[str]] = {j: [a for a, b in pairs if b == j] for j in sc.regions}
    has_demand = {key for key, series in sc.demand.items() if max(series, default=0.0) > 0}
    endpoints: set[tuple[str, str]] = set(has_demand) | set(sc.min_instances) | {(i, j) for i, j, _ in sc.initial}
    for i, j in list(has_demand):
        for b in out_of[j] if i not in sc.pool_of else ():  # a disaggregated endpoint's pools stay in their region
            endpoints.add((i, b))
    gpus_of = {i: [k for (m, k) in sc.deployments if m == i] for i in sc.models}
    prob = pulp.LpProblem("capacity_plan", pulp.LpMinimize)
    return PlanModel(sc, prob, range(sc.hours), endpoints, gpus_of, out_of, into)


def _peak_reach(m: PlanModel) -> dict[tuple[str, str], float]:
    """Per endpoint, the highest hourly demand of its own region plus every region that may reroute to it."""
    sc, H = m.sc, m.H
    peak_reach: dict[tuple[str, str], float] = {}
    for i, j in m.endpoints:
        sources = [j] + m.into[j]
        peak_reach[(i, j)] = max((sum(sc.demand.get((i, a), [0.0] * H)[t] for a in sources) for t in m.T), default=0.0)
    return peak_reach


def _add_instance_variables(m: PlanModel, peak_reach: dict[tuple[str, str], float]) -> None:
    """Integer instances x and continuous starts s per (model, region, GPU type, hour), bounded by the peak."""
    sc = m.sc
    for i, j in sorted(m.endpoints):
        for k in m.gpus_of[i]:
            d = sc.deployments[(i, k)]
            u = min(1.0, d.startup_s / 3600.0)
            ub = math.ceil(peak_reach[(i, j)] / (d.theta_tps * max(1.0 - u, 0.05)))
            ub += sc.min_instances.get((i, j), 0) + sc.initial.get((i, j, k), 0)
            if (j, k) in sc.quotas_gpus:
                ub = min(ub, sc.quotas_gpus[(j, k)] // d.gpus_per_instance)
            if (i, j) in sc.max_instances:
                ub = min(ub, sc.max_instances[(i, j)])
            ub = max(ub, 0)
            m.keys3.append((i, j, k))
            for t in m.T:
                m.x[(i, j, k, t)] = pulp.LpVariable(f"x_{len(m.x)}", lowBound=0, upBound=ub, cat=pulp.LpInteger)
                m.s[(i, j, k, t)] = pulp.LpVariable(f"s_{len(m.s)}", lowBound=0, upBound=ub)
                m.n_int += 1


def _add_supply_variables(m: PlanModel) -> None:
    """Reserved (integer, whole horizon), on-demand and spot GPUs per (region, GPU type) pool any endpoint uses."""
    sc = m.sc
    m.pools = sorted({(j, k) for (_i, j, k) in m.keys3})
    for j, k in m.pools:
        prices = sc.gpus[k].price_per_gpu_hour
        quota = sc.quotas_gpus.get((j, k))
        if "reserved" in prices:
            m.R[(j, k)] = pulp.LpVariable(f"R_{len(m.R)}", lowBound=0, upBound=quota, cat=pulp.LpInteger)
            m.n_int += 1
        for t in m.T:
            if "on_demand" in prices:
                m.OD[(j, k, t)] = pulp.LpVariable(f"O_{len(m.OD)}", lowBound=0, upBound=quota)
            if "spot" in prices and sc.spot_available_gpus.get((j, k), 0) > 0:
                cap = sc.spot_available_gpus[(j, k)]
                m.S[(j, k, t)] = pulp.LpVariable(
                    f"S_{len(m.S)}", lowBound=0, upBound=min(cap, quota) if quota is not None else cap
                )


def _add_start_rows(m: PlanModel) -> None:
    """s[t] >= x[t] - x[t-1], with x[-1] the initial fleet."""
    prob, x, s = m.prob, m.x, m.s
    for i, j, k in m.keys3:
        prev0 = m.sc.initial.get((i, j, k), 0)
        for t in m.T:
            if t > 0:
                prob += s[(i, j, k, t)] - x[(i, j, k, t)] + x[(i, j, k, t - 1)] >= 0
            else:
                prob += s[(i, j, k, t)] - x[(i, j, k, t)] >= -prev0


def _add_flow_variables(m: PlanModel) -> None:
    """A rerouting flow for every hour with demand, to every reachable region that is an endpoint."""
    for i, j in sorted(m.endpoints):
        dem = m.sc.demand.get((i, j), [0.0] * m.H)
        for t in m.T:
            if dem[t] > 0 and i not in m.sc.pool_of:  # pools are not rerouted (Scenario.pool_of)
                for b in m.out_of[j]:
                    if (i, b) in m.endpoints:
                        m.flow[(i, j, b, t)] = pulp.LpVariable(f"f_{len(m.flow)}", lowBound=0)


def _add_coverage_rows(m: PlanModel, mir_cuts: bool) -> None:
    """Capacity net of start-up losses, plus rerouting and the shortfall slack, covers the demand."""
    sc, prob, x, s, flow = m.sc, m.prob, m.x, m.s, m.flow
    for i, j in sorted(m.endpoints):
        dem = sc.demand.get((i, j), [0.0] * m.H)
        for t in m.T:
            terms = []
            for k in m.gpus_of[i]:
                d = sc.deployments[(i, k)]
                u = min(1.0, d.startup_s / 3600.0)
                terms.append((x[(i, j, k, t)], d.theta_tps))
                if u > 0:
                    terms.append((s[(i, j, k, t)], -d.theta_tps * u))
            for a in m.into[j]:
                if (i, a, j, t) in flow:
                    terms.append((flow[(i, a, j, t)], -1.0))  # serving someone else's demand uses capacity
            outs = [flow[(i, j, b, t)] for b in m.out_of[j] if (i, j, b, t) in flow]
            for f in outs:
                terms.append((f, 1.0))  # demand sent away need not be served here
            if dem[t] > 0:
                m.short[(i, j, t)] = pulp.LpVariable(f"short_{len(m.short)}", lowBound=0, upBound=dem[t])
                terms.append((m.short[(i, j, t)], 1.0))
                prob += pulp.LpAffineExpression(terms) >= dem[t]
                if outs:
                    prob += pulp.lpSum(outs) <= (1.0 - sc.min_local_share) * dem[t]
                if mir_cuts:
                    _add_mir_cuts(
                        prob,
                        [(x[(i, j, k, t)], sc.deployments[(i, k)].theta_tps) for k in m.gpus_of[i]],
                        [m.short[(i, j, t)], *outs],
                        dem[t],
                    )
            elif len(terms) > 0 and m.into[j]:
                prob += pulp.LpAffineExpression(terms) >= 0


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


def _add_supply_rows(m: PlanModel) -> None:
    """GPUs in use per pool and hour <= reserved + on demand + spot (and their sum <= the quota)."""
    sc, prob = m.sc, m.prob
    for j, k in m.pools:
        users = [(i, j, k) for (i, jj, kk) in m.keys3 if jj == j and kk == k]
        quota = sc.quotas_gpus.get((j, k))
        for t in m.T:
            terms = [(m.x[key + (t,)], float(sc.deployments[(key[0], k)].gpus_per_instance)) for key in users]
            supply = []
            if (j, k) in m.R:
                supply.append(m.R[(j, k)])
            if (j, k, t) in m.OD:
                supply.append(m.OD[(j, k, t)])
            if (j, k, t) in m.S:
                supply.append(m.S[(j, k, t)])
            terms += [(v, -1.0) for v in supply]
            prob += pulp.LpAffineExpression(terms) <= 0
            if quota is not None and len(supply) > 1:
                prob += pulp.lpSum(supply) <= quota


def _add_instance_limits(m: PlanModel) -> None:
    """Min (softened by a penalised slack) and max instances per endpoint and hour."""
    sc, prob, x = m.sc, m.prob, m.x
    for (i, j), lo in sc.min_instances.items():
        if lo <= 0 or (i, j) not in m.endpoints:
            continue
        for t in m.T:
            m.min_short[(i, j, t)] = pulp.LpVariable(f"mshort_{len(m.min_short)}", lowBound=0, upBound=lo)
            prob += pulp.lpSum(x[(i, j, k, t)] for k in m.gpus_of[i]) + m.min_short[(i, j, t)] >= lo
    for (i, j), hi in sc.max_instances.items():
        if (i, j) not in m.endpoints:
            continue
        for t in m.T:
            prob += pulp.lpSum(x[(i, j, k, t)] for k in m.gpus_of[i]) <= hi


def _set_objective(m: PlanModel, penalty: float) -> None:
    sc = m.sc
    obj = []
    for (_j, k), v in m.R.items():
        obj.append((v, m.H * sc.gpus[k].price_per_gpu_hour["reserved"]))
    for (_j, k, _t), v in m.OD.items():
        obj.append((v, sc.gpus[k].price_per_gpu_hour["on_demand"]))
    for (_j, k, _t), v in m.S.items():
        obj.append((v, spot_price(sc, k)))
    # Each start costs start_fee plus a tie-break of 1 % of an instance-hour at its cheapest price, so
    # that equally cheap fleets do not swap instances between GPU types from hour to hour.
    for (i, _j, k, _t), v in m.s.items():
        d = sc.deployments[(i, k)]
        tie = 0.01 * d.gpus_per_instance * min(sc.gpus[k].price_per_gpu_hour.values())
        obj.append((v, sc.start_fee + tie))
    obj += [(v, penalty) for v in m.short.values()]
    obj += [(v, penalty) for v in m.min_short.values()]
    obj += [(v, FLOW_COST) for v in m.flow.values()]  # no gratuitous rerouting
    m.prob += pulp.LpAffineExpression(obj)
