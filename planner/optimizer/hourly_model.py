"""The hourly ILP of one block (planner/optimizer/hourly.py) described once, and its two backends.

``describe(...)`` states the variables, rows, bounds and objective once, as a ``Description``: named columns and
named rows in CSR form (an ``ArrayModel`` plus names). The array backend hands ``description.model`` to highspy
as it is (``solver.solve_arrays``); the PuLP backend (``to_pulp``) turns the same columns and rows into an
``LpProblem`` (the reference path, and the only one with CBC). Nothing else states the model, so the two cannot
drift apart; ``planner/optimizer/tests/test_hourly_backends.py`` solves random instances both ways.

Columns, per key (model i, region j, GPU type k) of the block: ``d_a_b_c`` = delta (integer, in
[-n, the most the peaks can use]) and ``p_a_b_c`` >= max(0, delta) (row ``plus_a_b_c``); with a shortfall penalty,
``lshort_a_b`` (regional) and ``gshort_a`` (global) slacks. Rows: ``local_a_b`` (regional coverage), ``global_a``,
``min_a_b`` / ``max_a_b`` (instances per endpoint), ``quota_b_c`` (GPUs per region and type).

The two-pool form (prefill/decode disaggregated endpoints, ``HourlyInputs.decode_rho``): the decode pools get
columns, rows and slacks of the same form with a ``dec`` prefix (``decd_a_b_c``, ``decp_a_b_c``, ``declocal_a_b``,
``decglobal_a``, ...) over ``decode_theta`` and the output-token peaks; the delta columns above are then the
prefill pools'. Both pools count in ``min`` / ``max`` / ``quota`` rows and the objective, at their GPU type's alpha.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from planner.optimizer.solver import ArrayModel

if TYPE_CHECKING:
    from planner.optimizer.hourly import HourlyInputs

Key3 = tuple[str, str, str]
Key2 = tuple[str, str]
INF = math.inf


@dataclass
class Description:
    """Named columns and rows of one block's ILP; ``model`` is the array form both backends read."""

    model: ArrayModel
    col_names: list[str]
    row_names: list[str]
    delta: dict[Key3, int] = field(default_factory=dict)  # column of delta per key
    decode_delta: dict[Key3, int] = field(default_factory=dict)  # column of a decode pool's delta per key
    short: dict[str, int] = field(default_factory=dict)  # column of each shortfall slack ("model@region", "model")


class _Builder:
    def __init__(self) -> None:
        self.model = ArrayModel([], [], [], [], [], [], [0], [], [])
        self.col_names: list[str] = []
        self.row_names: list[str] = []

    def column(self, name: str, lo: float, up: float, is_int: bool) -> int:
        m = self.model
        m.cost.append(0.0)
        m.lower.append(lo)
        m.upper.append(up)
        m.integer.append(is_int)
        self.col_names.append(name)
        return len(m.cost) - 1

    def row(self, name: str, cols: list[int], coefs: list[float], lo: float, up: float) -> None:
        m = self.model
        m.index.extend(cols)
        m.value.extend(coefs)
        m.start.append(len(m.index))
        m.row_lower.append(lo)
        m.row_upper.append(up)
        self.row_names.append(name)


def sigma_of(inputs: HourlyInputs, model: str, gpu: str) -> float:
    """sigma[i,k] = alpha[k] x the average start-up time (hours) unless ``inputs.sigma`` gives it."""
    if inputs.sigma is not None and (model, gpu) in inputs.sigma:
        return float(inputs.sigma[(model, gpu)])
    return float(inputs.alpha[gpu]) * float(inputs.startup_s.get((model, gpu), 0.0)) / 3600.0


@dataclass(frozen=True)
class PoolDemand:
    """The decode pools of the disaggregated endpoints: instances now, output-TPS peaks (regional, global)."""

    n_of: Mapping[Key3, int]
    local_peak: Mapping[Key2, float]
    global_peak: Mapping[str, float]


@dataclass(frozen=True)
class _Block:
    inputs: HourlyInputs
    models: list[str]
    regions: list[str]
    gpus: list[str]
    n_of: Mapping[Key3, int]
    local_peak: Mapping[Key2, float]
    global_peak: Mapping[str, float]
    tag: str = ""  # "" = the (prefill or aggregated) instances, "dec" = the decode pools

    def theta(self, i: str, k: str) -> float:
        table = self.inputs.decode_theta if self.tag else self.inputs.theta
        return float(table.get((i, k), 0.0))

    def label(self, base: str) -> str:
        return f"{base}:decode" if self.tag else base


def _delta_columns(b: _Builder, blk: _Block) -> tuple[dict[Key3, int], dict[Key3, int]]:
    """delta and p per key, with the row p - delta >= 0. An explicit upper bound on delta (more than the model's
    global peak needs is never useful) keeps HiGHS's domain propagation effective; a model that cannot run on a
    GPU type may only shrink there."""
    delta: dict[Key3, int] = {}
    plus: dict[Key3, int] = {}
    for a, i in enumerate(blk.models):
        for r, j in enumerate(blk.regions):
            for c, k in enumerate(blk.gpus):
                key = (i, j, k)
                if key not in blk.n_of:
                    continue
                n = blk.n_of[key]
                up = 0
                if blk.theta(i, k) > 0:
                    need = max(blk.global_peak.get(i, 0.0), blk.local_peak.get((i, j), 0.0))
                    up = max(0, math.ceil(need / blk.theta(i, k)) + int(blk.inputs.min_instances.get((i, j), 0)) - n)
                t = blk.tag
                delta[key] = b.column(f"{t}d_{a}_{r}_{c}", -n, up, True)
                plus[key] = b.column(f"{t}p_{a}_{r}_{c}", 0.0, INF, False)
                b.row(f"{t}plus_{a}_{r}_{c}", [plus[key], delta[key]], [1.0, -1.0], 0.0, INF)
    return delta, plus


def _coverage_row(b: _Builder, blk: _Block, delta: dict, keys: list[Key3], need: float,
                  slack: tuple[str, str] | None, row: str, short: dict[str, int]) -> None:
    """sum theta * delta (+ slack) >= need - current capacity. With no placeable GPU type and hard coverage
    this row reads 0 >= need: infeasible, as it should."""
    have = sum(blk.n_of[key] * blk.theta(key[0], key[2]) for key in keys)
    cols = [delta[key] for key in keys]
    coefs = [blk.theta(key[0], key[2]) for key in keys]
    if slack is not None:
        label, col_name = slack
        short[label] = b.column(col_name, 0.0, INF, False)
        cols.append(short[label])
        coefs.append(1.0)
    b.row(row, cols, coefs, need - have, INF)


def _coverage_rows(b: _Builder, blk: _Block, delta: dict, with_global: bool) -> dict[str, int]:
    inputs = blk.inputs
    soft = inputs.shortfall_penalty is not None
    short: dict[str, int] = {}
    t = blk.tag
    for a, i in enumerate(blk.models):
        if inputs.regional_coverage:
            for r, j in enumerate(blk.regions):
                need = inputs.epsilon * blk.local_peak.get((i, j), 0.0)
                if need <= 0:
                    continue
                keys = [(i, j, k) for k in blk.gpus if (i, j, k) in delta and blk.theta(i, k) > 0]
                _coverage_row(b, blk, delta, keys, need, (blk.label(f"{i}@{j}"), f"{t}lshort_{a}_{r}") if soft
                              else None, f"{t}local_{a}_{r}", short)
        if with_global and inputs.global_coverage and blk.global_peak.get(i, 0.0) > 0:
            keys = [key for key in delta if key[0] == i and blk.theta(i, key[2]) > 0]
            _coverage_row(b, blk, delta, keys, blk.global_peak[i], (blk.label(i), f"{t}gshort_{a}") if soft else None,
                          f"{t}global_{a}", short)
    return short


def _limit_rows(b: _Builder, pools: list[tuple[_Block, dict]]) -> None:
    """Min / max instances per endpoint (over GPU types and both pools) and the GPU quota per (region, GPU type)."""
    blk = pools[0][0]
    inputs = blk.inputs
    for r, j in enumerate(blk.regions):
        for a, i in enumerate(blk.models):
            keys = [(p, d, (i, j, k)) for p, d in pools for k in blk.gpus if (i, j, k) in d]
            cols = [d[key] for _p, d, key in keys]
            have = sum(p.n_of[key] for p, _d, key in keys)
            if (i, j) in inputs.min_instances and int(inputs.min_instances[(i, j)]) > 0:
                b.row(f"min_{a}_{r}", cols, [1.0] * len(cols), int(inputs.min_instances[(i, j)]) - have, INF)
            if (i, j) in inputs.max_instances:
                b.row(f"max_{a}_{r}", cols, [1.0] * len(cols), -INF, int(inputs.max_instances[(i, j)]) - have)
        for c, k in enumerate(blk.gpus):
            if (j, k) in inputs.quota_gpus:
                keys = [(p, d, (i, j, k)) for p, d in pools for i in blk.models if (i, j, k) in d]
                gpi = [int(inputs.gpus_per_instance.get((key[0], k), 1)) for _p, _d, key in keys]
                used = sum(g * p.n_of[key] for g, (p, _d, key) in zip(gpi, keys, strict=True))
                b.row(f"quota_{r}_{c}", [d[key] for _p, d, key in keys], [float(g) for g in gpi], -INF,
                      int(inputs.quota_gpus[(j, k)]) - used)


def _objective(b: _Builder, blk: _Block, delta: dict, plus: dict, short: dict) -> None:  # once per pool kind
    """gamma + mu (+ the shortfall penalty). The constant sum_k alpha_k sum_ij n_ijk turns gamma + mu into the cost of
    the fleet after the change (same argmin): the solver's relative gap is then a share of that cost (on gamma +
    mu alone, which can be zero or negative, a relative gap means nothing); the caller subtracts it again."""
    inputs, cost = blk.inputs, b.model.cost
    for key, col in delta.items():
        alpha = float(inputs.alpha[key[2]])
        if inputs.gamma_mode == "signed":
            cost[col] += alpha
        else:  # alpha on additions only, and a holding cost 1e-6 * alpha so surplus instances are released
            cost[plus[key]] += alpha
            cost[col] += 1e-6 * alpha
        cost[plus[key]] += sigma_of(inputs, key[0], key[2])
    for col in short.values():
        cost[col] += float(inputs.shortfall_penalty)
    if inputs.gamma_mode == "signed":
        b.model.offset += sum(float(inputs.alpha[key[2]]) * blk.n_of[key] for key in delta)


def describe(inputs: HourlyInputs, models: list[str], regions: list[str], n_of: Mapping[Key3, int],
             local_peak: Mapping[Key2, float], global_peak: Mapping[str, float], *, with_global: bool,
             decode: PoolDemand | None = None) -> Description:
    """The ILP restricted to ``models`` x ``regions`` (every GPU type); with ``decode``, the decode pools too."""
    blk = _Block(inputs, list(models), list(regions), list(inputs.gpus), n_of, local_peak, global_peak)
    b = _Builder()
    delta, plus = _delta_columns(b, blk)
    short = _coverage_rows(b, blk, delta, with_global)
    pools = [(blk, delta, plus, short)]
    if decode is not None and decode.n_of:
        dblk = replace(blk, n_of=decode.n_of, local_peak=decode.local_peak, global_peak=decode.global_peak, tag="dec")
        ddelta, dplus = _delta_columns(b, dblk)
        dshort = _coverage_rows(b, dblk, ddelta, with_global)
        pools.append((dblk, ddelta, dplus, dshort))
    _limit_rows(b, [(p, d) for p, d, _plus, _short in pools])
    for p, d, pl, sh in pools:
        _objective(b, p, d, pl, sh)
    short_all = {name: col for *_rest, sh in pools for name, col in sh.items()}
    return Description(b.model, b.col_names, b.row_names, delta=delta, short=short_all,
                       decode_delta=pools[1][1] if len(pools) > 1 else {})


def to_pulp(desc: Description, name: str = "sageserve_hourly"):
    """The description as a PuLP problem: (problem, variables by column)."""
    import pulp

    m = desc.model
    variables = [
        pulp.LpVariable(col, lowBound=None if lo == -INF else lo, upBound=None if up == INF else up,
                        cat=pulp.LpInteger if is_int else pulp.LpContinuous)
        for col, lo, up, is_int in zip(desc.col_names, m.lower, m.upper, m.integer, strict=True)
    ]
    prob = pulp.LpProblem(name, pulp.LpMinimize)
    for r, row_name in enumerate(desc.row_names):
        span = range(m.start[r], m.start[r + 1])
        expr = pulp.LpAffineExpression([(variables[m.index[p]], m.value[p]) for p in span])
        lo, up = m.row_lower[r], m.row_upper[r]
        if lo == up:
            prob += expr == lo, row_name
            continue
        both = lo > -INF and up < INF
        if lo > -INF:
            prob += expr >= lo, f"{row_name}_lo" if both else row_name
        if up < INF:
            prob += expr <= up, f"{row_name}_up" if both else row_name
    prob += pulp.LpAffineExpression(list(zip(variables, m.cost, strict=True)), constant=m.offset)
    return prob, variables
