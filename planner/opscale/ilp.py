"""The exact Stage-1 optimum as an ILP (spec 6.5): min sum P_v R_v over one configuration per operator,
subject to the critical-path latency (longest-path potentials) <= SLO. PuLP on HiGHS (CBC as the
alternative), always with a time limit and an honest status. Django-free.

Each operator's candidates are (r, b, p) with b in the batch grid, p in the parallelism set and r from the
smallest stable count up to the count where one more replica shortens s_v by less than 0.1 % (or
``extra_replicas`` more), so the ILP sees every configuration the greedy can reach.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pulp

from planner.opscale.model import Config, Evaluator
from planner.opscale.scaling import _batches, _parallelisms


@dataclass
class IlpResult:
    status: str  # optimal | time_limit | infeasible | error
    config: Config | None
    cost: int | None
    latency_s: float | None
    solve_time_s: float
    candidates: int
    solver: str

    def to_dict(self) -> dict:
        return {
            "status": self.status,
            "cost": self.cost,
            "latency_s": self.latency_s,
            "solve_time_s": self.solve_time_s,
            "candidates": self.candidates,
            "solver": self.solver,
        }


def candidates(ev: Evaluator, extra_replicas: int = 64) -> dict[str, list[tuple[tuple[int, int, int], float]]]:
    out: dict[str, list] = {}
    for v in ev.ops:
        rows = []
        for p in _parallelisms(ev):
            for b in _batches(ev):
                r0 = ev.min_replicas(v, b, p)
                prev = None
                for r in range(r0, r0 + extra_replicas + 1):
                    s = ev.sojourn(v, r, b, p)[1]
                    rows.append(((r, b, p), s))
                    if prev is not None and prev - s <= 1e-3 * s:
                        break
                    prev = s
        # drop dominated candidates (no cheaper-or-equal one with a smaller-or-equal sojourn)
        rows.sort(key=lambda cs: (cs[0][0] * cs[0][2], cs[1]))
        kept, best_s = [], float("inf")
        for cfg, s in rows:
            if s < best_s:
                kept.append((cfg, s))
                best_s = s
        out[v] = kept
    return out


def solve_ilp(ev: Evaluator, slo_s: float, *, solver: str = "highs", time_limit_s: float = 20.0) -> IlpResult:
    t0 = time.perf_counter()
    cands = candidates(ev)
    n = sum(len(c) for c in cands.values())
    prob = pulp.LpProblem("opscale_stage1", pulp.LpMinimize)
    x = {
        (v, i): pulp.LpVariable(f"x_{j}_{i}", cat="Binary") for j, v in enumerate(ev.ops) for i in range(len(cands[v]))
    }
    t = {v: pulp.LpVariable(f"t_{j}", lowBound=0) for j, v in enumerate(ev.ops)}
    prob += pulp.lpSum(cfg[0] * cfg[2] * x[(v, i)] for v in ev.ops for i, (cfg, _s) in enumerate(cands[v]))
    for v in ev.ops:
        prob += pulp.lpSum(x[(v, i)] for i in range(len(cands[v]))) == 1
        sigma = pulp.lpSum(s * x[(v, i)] for i, (_cfg, s) in enumerate(cands[v]))
        if ev.preds[v]:
            for u in ev.preds[v]:
                prob += t[v] >= t[u] + sigma
        else:
            prob += t[v] >= sigma
        prob += t[v] <= slo_s
    if solver == "cbc":
        cmd = pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit_s)
    else:
        cmd = pulp.HiGHS(msg=False, timeLimit=time_limit_s)
    try:
        prob.solve(cmd)
    except pulp.PulpSolverError as exc:  # pragma: no cover - solver missing
        return IlpResult(f"error: {exc}", None, None, None, time.perf_counter() - t0, n, solver)
    status = pulp.LpStatus[prob.status].lower()
    has_solution = prob.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
    if status == "optimal" and prob.sol_status != pulp.LpSolutionOptimal:
        status = "time_limit"
    if not has_solution:
        return IlpResult(
            "infeasible" if status == "infeasible" else status, None, None, None, time.perf_counter() - t0, n, solver
        )
    config: Config = {}
    for v in ev.ops:
        i = max(range(len(cands[v])), key=lambda i: x[(v, i)].value() or 0.0)
        config[v] = cands[v][i][0]
    return IlpResult(status, config, ev.cost(config), ev.latency(config), time.perf_counter() - t0, n, solver)
