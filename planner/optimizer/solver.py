"""Running a PuLP model with an explicit solver, time limit and gap, and reading back an honest status.

HiGHS (through PuLP's in-process ``HiGHS`` API, i.e. highspy) is the default; CBC (``PULP_CBC_CMD``) is
the alternative. PuLP maps HiGHS's "time limit reached" to ``LpStatusOptimal`` with
``sol_status = LpSolutionIntegerFeasible``: we never call that "optimal". Our status is one of

- ``optimal``     proven optimal, or stopped because the relative gap fell under ``gap_rel``
- ``time_limit``  stopped by the time limit with a feasible incumbent (its gap is reported)
- ``infeasible``  the solver proved there is no solution
- ``no_solution`` stopped (time limit or error) before any feasible solution was found
- ``error``       anything else (unbounded, solver failure)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import pulp

OPTIMAL = "optimal"
TIME_LIMIT = "time_limit"
INFEASIBLE = "infeasible"
NO_SOLUTION = "no_solution"
ERROR = "error"
HAS_SOLUTION = (OPTIMAL, TIME_LIMIT)

SOLVERS = ("highs", "cbc")


@dataclass(frozen=True)
class SolverOptions:
    """Which solver, and when to stop. Every solve has both a time limit and a gap."""

    solver: str = "highs"  # "highs" (highspy, default) or "cbc"
    time_limit_s: float = 30.0
    gap_rel: float = 1e-4  # stop when (incumbent - bound) / |incumbent| <= gap_rel
    threads: int | None = 1  # the machine is shared; HiGHS's MIP is mostly serial anyway
    msg: bool = False
    # HiGHS 1.11's feasibility-jump heuristic costs ~20 ms per solve even on a 5-variable model, and the
    # hourly ILP solves hundreds of small blocks; it did not help on the large plans either (measured).
    feasibility_jump: bool = False
    # Start the MIP from the LP relaxation with every integer rounded up (HiGHS only). Our models are
    # covering problems, so rounding up is usually feasible and HiGHS's "repair LP" re-solves the
    # continuous variables around it; the MIP then starts with an incumbent and a root bound.
    round_up_start: bool = True
    # HiGHS method for that LP relaxation: "choose" (dual simplex here), "ipm" or "simplex". Measured: plans
    # with rerouting flows solve 4x faster with ipm, plans without 4x faster with simplex.
    start_lp_method: str = "choose"

    def __post_init__(self) -> None:
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}")
        if not (self.time_limit_s > 0 and math.isfinite(self.time_limit_s)):
            raise ValueError(f"time_limit_s must be a positive finite number, got {self.time_limit_s!r}")
        if not (0 <= self.gap_rel < 1):
            raise ValueError(f"gap_rel must be in [0, 1), got {self.gap_rel!r}")


@dataclass(frozen=True)
class SolveInfo:
    status: str  # one of the constants above
    solver: str
    objective: float | None
    best_bound: float | None
    gap_rel: float | None  # relative MIP gap at the end (0 when proven optimal), None when unknown
    solve_time_s: float  # wall time of the solver call (model hand-over included)
    detail: str  # the solver's own words for its status

    @property
    def has_solution(self) -> bool:
        return self.status in HAS_SOLUTION


def solve(problem: pulp.LpProblem, options: SolverOptions, rounder=None) -> SolveInfo:
    """Solve ``problem`` in place and return what happened. Never raises for an unsolvable model.

    ``rounder`` (HiGHS with ``round_up_start`` only): ``fn(lp_value) -> {variable: integer value}``, a
    model-specific rounding of the LP relaxation (``lp_value(var)`` reads it); integer variables it
    leaves out are rounded up.
    """
    if options.solver == "highs":
        return _solve_highs(problem, options, rounder)
    return _solve_cbc(problem, options)


def _solve_highs(problem: pulp.LpProblem, options: SolverOptions, rounder=None) -> SolveInfo:
    kwargs: dict = {"msg": options.msg, "timeLimit": options.time_limit_s, "gapRel": options.gap_rel}
    if options.threads:
        kwargs["threads"] = options.threads
    if not options.feasibility_jump:
        kwargs["mip_heuristic_run_feasibility_jump"] = False
    solver = _HiGHSWithOffset(**kwargs)
    solver.round_up_start = options.round_up_start
    solver.start_lp_method = options.start_lp_method
    solver.rounder = rounder
    started = time.perf_counter()
    try:
        problem.solve(solver)
    except pulp.PulpSolverError as exc:
        return SolveInfo(ERROR, "highs", None, None, None, time.perf_counter() - started, str(exc))
    elapsed = time.perf_counter() - started
    is_mip = any(v.cat == pulp.LpInteger for v in problem.variables())
    return read_highs(problem.solverModel, options, is_mip, elapsed, solver.start)


def read_highs(h, options: SolverOptions, is_mip: bool, elapsed: float, start: RoundUpResult | None) -> SolveInfo:
    """Our status, objective, bound and gap from a HiGHS object after its run (PuLP or direct path)."""
    import highspy

    if start is not None and start.shortcut_bound is not None:
        objective = h.getObjectiveValue()
        if start.within_gap:
            status, detail = OPTIMAL, "LP relaxation rounded up, within the gap of the LP bound"
        else:
            status, detail = TIME_LIMIT, "LP relaxation rounded up; the time limit left no time for branch and bound"
        gap = _gap(objective, start.shortcut_bound)
        return SolveInfo(status, "highs", objective, start.shortcut_bound, gap, elapsed, detail)
    lp_bound = start.lp_bound if start is not None else None
    model_status = h.getModelStatus()
    detail = h.modelStatusToString(model_status)
    info = h.getInfo()
    S = highspy.HighsModelStatus
    has_primal = info.primal_solution_status == 2  # kSolutionStatusFeasible
    objective = h.getObjectiveValue() if has_primal else None
    bound = info.mip_dual_bound if is_mip else objective
    if is_mip and lp_bound is not None and (bound is None or not math.isfinite(bound) or bound < lp_bound):
        bound = lp_bound  # the MIP stopped before its own bound caught up with the LP relaxation
    gap = _gap(objective, bound) if is_mip else (0.0 if objective is not None else None)
    if model_status == S.kOptimal:
        status = OPTIMAL
        gap = gap if gap is not None else 0.0
    elif model_status in (S.kInfeasible, S.kUnboundedOrInfeasible):
        status = INFEASIBLE
    elif model_status in (S.kTimeLimit, S.kIterationLimit, S.kInterrupt, S.kSolutionLimit):
        status = TIME_LIMIT if has_primal else NO_SOLUTION
        if status == TIME_LIMIT and gap is not None and gap <= options.gap_rel:
            status = OPTIMAL  # the gap target was met exactly as the clock ran out
    else:
        status = ERROR
    return SolveInfo(status, "highs", objective, bound, gap, elapsed, detail)


SMALL_MIP = 50  # integer columns up to which the rounding start skips its fixed-integer LP


@dataclass
class RoundUpResult:
    """What the rounding start did. ``shortcut_bound`` set: the model holds the final answer (fixed LP)."""

    lp_bound: float | None = None  # the LP relaxation's value: a valid bound when the MIP reports none
    shortcut_bound: float | None = None
    within_gap: bool = True


def round_up_start(h, limit: float, gap_target: float, method: str = "choose", rounder=None) -> RoundUpResult:
    """Solve the LP relaxation of the model in ``h``, round its integers up (or by ``rounder``:
    ``fn(values) -> {column index: integer}``) and either keep that solution (``shortcut_bound`` set) or
    leave the MIP in ``h`` ready to run with it as the starting incumbent and the time limit reduced."""
    import highspy
    import numpy as np

    result = RoundUpResult()
    model = h.getLp()
    kinds = list(model.integrality_)
    idx = np.array([n for n, kind in enumerate(kinds) if kind == highspy.HighsVarType.kInteger], dtype=np.int32)
    if idx.size == 0:
        return result
    started = time.perf_counter()
    n = idx.size
    h.changeColsIntegrality(n, idx, np.full(n, highspy.HighsVarType.kContinuous))
    h.setOptionValue("solver", method)
    h.run()
    h.setOptionValue("solver", "choose")
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        h.changeColsIntegrality(n, idx, np.full(n, highspy.HighsVarType.kInteger))
        h.setOptionValue("time_limit", max(0.01, limit - (time.perf_counter() - started)))
        return result
    bound = h.getObjectiveValue()
    result.lp_bound = bound
    values = np.array(h.getSolution().col_value, dtype=float)
    lower, upper = np.array(model.col_lower_)[idx], np.array(model.col_upper_)[idx]
    rounded = np.ceil(values[idx] - 1e-6)
    if rounder is not None:
        position = {int(col): n for n, col in enumerate(idx)}
        for col, value in rounder(values).items():
            if col in position:
                rounded[position[col]] = value
    rounded = np.clip(rounded, lower, upper)
    if n <= SMALL_MIP:
        # A tiny model: branch and bound is cheap, and HiGHS repairs the continuous columns of a start
        # itself; skip the fixed LP.
        h.changeColsIntegrality(n, idx, np.full(n, highspy.HighsVarType.kInteger))
        h.setOptionValue("time_limit", max(0.01, limit - (time.perf_counter() - started)))
        values[idx] = rounded
        start = highspy.HighsSolution()
        start.col_value = list(values)
        h.setSolution(start)
        return result
    h.changeColsBounds(n, idx, rounded, rounded)
    h.run()
    fixed_ok = h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    if fixed_ok:
        incumbent = h.getObjectiveValue()
        if abs(incumbent - bound) <= gap_target * max(abs(incumbent), 1e-9):
            result.shortcut_bound = bound  # keep this solution; the model stays the fixed LP
            return result
        if limit - (time.perf_counter() - started) < max(1.0, 0.1 * limit):
            # no time left for branch and bound: keep the rounded solution, say so (status time_limit)
            result.shortcut_bound = bound
            result.within_gap = False
            return result
        values = np.array(h.getSolution().col_value, dtype=float)
    h.changeColsBounds(n, idx, lower, upper)
    h.changeColsIntegrality(n, idx, np.full(n, highspy.HighsVarType.kInteger))
    h.setOptionValue("time_limit", max(0.01, limit - (time.perf_counter() - started)))
    if fixed_ok:
        start = highspy.HighsSolution()
        start.col_value = list(values)
        h.setSolution(start)
    return result


class _HiGHSWithOffset(pulp.HiGHS):
    """PuLP's HiGHS API with two additions.

    - PuLP drops the objective's constant; we hand it to HiGHS so its relative gap is measured against
      the whole objective (models use the constant to make gaps meaningful).
    - ``round_up_start``: solve the LP relaxation, round every integer column up (our models are covering
      problems, so that is usually feasible) and re-solve the continuous columns with the integers fixed.
      If that solution is within ``mip_rel_gap`` of the LP bound it is returned as is (proven within the
      gap, no branch and bound); otherwise it is handed to the MIP as its starting incumbent.
    """

    round_up_start = False
    start_lp_method = "choose"
    rounder = None
    start: RoundUpResult | None = None

    def callSolver(self, lp):
        h = lp.solverModel
        if lp.objective is not None and lp.objective.constant:
            h.changeObjectiveOffset(float(lp.objective.constant))
        self.start = None
        if self.round_up_start:
            limit = float(self.timeLimit) if self.timeLimit else math.inf
            gap_target = float(self.gapRel) if self.gapRel is not None else 1e-4
            rounder = None
            if self.rounder is not None:
                pulp_rounder = self.rounder

                def rounder(values):
                    chosen = pulp_rounder(lambda var: float(values[var.index]))
                    return {var.index: value for var, value in chosen.items()}

            self.start = round_up_start(h, limit, gap_target, self.start_lp_method, rounder)
            if self.start.shortcut_bound is not None:
                return
        super().callSolver(lp)


@dataclass
class ArrayModel:
    """A minimisation MIP as arrays, for handing to HiGHS without PuLP (the fast path).

    Columns: ``cost``, ``lower``, ``upper``, ``integer`` (bool); objective constant ``offset``.
    Rows in CSR form: row r is ``row_lower[r] <= sum value[p] * x[index[p]] <= row_upper[r]`` for p in
    ``start[r]:start[r+1]``. Use ``math.inf`` / ``-math.inf`` for absent bounds.
    """

    cost: list[float]
    lower: list[float]
    upper: list[float]
    integer: list[bool]
    row_lower: list[float]
    row_upper: list[float]
    start: list[int]
    index: list[int]
    value: list[float]
    offset: float = 0.0


def solve_arrays(model: ArrayModel, options: SolverOptions, highs=None) -> tuple[SolveInfo, list[float] | None]:
    """Solve ``model`` with highspy directly: same options, rounding start and status rules as
    ``solve(problem, options)`` with HiGHS, without PuLP's per-variable model building. Returns the
    status and the column values (None without a solution). ``highs``: a ``highspy.Highs`` to reuse
    (its model is replaced), saving the set-up of a new one per call when solving many small blocks."""
    import highspy

    started = time.perf_counter()
    if not model.cost:  # no column: HiGHS answers "Empty"; the rows (0 >= need, ...) decide alone
        ok = all(lo <= 0.0 <= up for lo, up in zip(model.row_lower, model.row_upper, strict=True))
        status, detail = (OPTIMAL, "no variable; every row holds") if ok else (INFEASIBLE, "no variable; a row fails")
        objective = float(model.offset) if ok else None
        return SolveInfo(status, "highs", objective, objective, 0.0 if ok else None, time.perf_counter() - started,
                         detail), ([] if ok else None)
    inf = highspy.kHighsInf

    def finite(values):
        return [inf if v == math.inf else (-inf if v == -math.inf else float(v)) for v in values]

    lp = highspy.HighsLp()
    lp.num_col_ = len(model.cost)
    lp.num_row_ = len(model.row_lower)
    lp.col_cost_ = [float(c) for c in model.cost]
    lp.col_lower_ = finite(model.lower)
    lp.col_upper_ = finite(model.upper)
    lp.row_lower_ = finite(model.row_lower)
    lp.row_upper_ = finite(model.row_upper)
    lp.offset_ = float(model.offset)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = lp.num_col_
    lp.a_matrix_.num_row_ = lp.num_row_
    lp.a_matrix_.start_ = list(model.start)
    lp.a_matrix_.index_ = list(model.index)
    lp.a_matrix_.value_ = [float(v) for v in model.value]
    is_mip = any(model.integer)
    if is_mip:
        lp.integrality_ = [
            highspy.HighsVarType.kInteger if flag else highspy.HighsVarType.kContinuous for flag in model.integer
        ]
    h = highspy.Highs() if highs is None else highs
    h.setOptionValue("output_flag", bool(options.msg))
    h.setOptionValue("mip_rel_gap", float(options.gap_rel))
    h.setOptionValue("time_limit", float(options.time_limit_s))
    if options.threads:
        h.setOptionValue("threads", int(options.threads))
    if not options.feasibility_jump:
        h.setOptionValue("mip_heuristic_run_feasibility_jump", False)
    if h.passModel(lp) != highspy.HighsStatus.kOk:
        return SolveInfo(
            ERROR, "highs", None, None, None, time.perf_counter() - started, "HiGHS rejected the model"
        ), None
    start = None
    if options.round_up_start and is_mip:
        start = round_up_start(h, float(options.time_limit_s), float(options.gap_rel), options.start_lp_method)
    if start is None or start.shortcut_bound is None:
        h.run()
    info = read_highs(h, options, is_mip, time.perf_counter() - started, start)
    values = list(h.getSolution().col_value) if info.has_solution else None
    return info, values


def _pieces(problem: pulp.LpProblem, min_columns: int):
    """The independent pieces of ``problem``: (pieces, their variables, their constraints, the column count), or
    None when there is one piece (or none) to split. Columns are joined when a constraint holds both; pieces with
    fewer than ``min_columns`` columns are bundled together."""
    import numpy as np
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    variables = problem.variables()
    position = {id(var): n for n, var in enumerate(variables)}
    heads: list[int] = []
    tails: list[int] = []
    constraints = list(problem.constraints.items())
    for _name, constraint in constraints:
        cols = [position[id(var)] for var in constraint.keys()]
        if len(cols) > 1:
            heads.extend(cols[:1] * (len(cols) - 1))
            tails.extend(cols[1:])
    n = len(variables)
    graph = coo_matrix((np.ones(len(heads), dtype=np.int8), (heads, tails)), shape=(n, n))
    count, label = connected_components(graph, directed=False)
    sizes = np.bincount(label, minlength=count)
    small = sizes < min_columns
    piece_of = np.where(small[label], count, label)  # every small component goes to bundle ``count``
    pieces = [int(c) for c in np.unique(piece_of)]
    if len(pieces) <= 1:
        return None

    members: dict[int, list] = {c: [] for c in pieces}
    for var, piece in zip(variables, piece_of, strict=True):
        members[int(piece)].append(var)
    rows: dict[int, list] = {c: [] for c in pieces}
    for name, constraint in constraints:
        first = next(iter(constraint.keys()), None)
        piece = int(piece_of[position[id(first)]]) if first is not None else pieces[0]
        rows[piece].append((name, constraint))
    return pieces, members, rows, n


def solve_components(
    problem: pulp.LpProblem, options: SolverOptions, rounder=None, min_columns: int = 200
) -> SolveInfo:
    """Solve ``problem`` as its independent pieces: exact, because pieces share no constraint.

    Columns are joined when a constraint holds both (scipy's connected components on the constraint
    graph); pieces with fewer than ``min_columns`` columns are bundled together. Each piece is a PuLP
    model of its own, solved by ``solve`` with ``gap_rel`` and a share of the remaining time proportional
    to its number of columns (time a piece leaves unused goes to the next ones); values land on the
    shared variables. The result adds objectives and bounds: if every piece is within ``gap_rel`` of its
    bound, so is the sum. ``rounder(lp_value, scope)`` gets the set of variables of the piece.
    One piece (or none to split): plain ``solve``.
    """
    started = time.perf_counter()
    split = _pieces(problem, min_columns)
    if split is None:
        return solve(problem, options, rounder=None if rounder is None else (lambda lp_value: rounder(lp_value, None)))
    pieces, members, rows, n = split
    objective = problem.objective if problem.objective is not None else pulp.LpAffineExpression()
    columns_left = n
    deadline = started + options.time_limit_s
    total = bound = 0.0
    bound_known = True
    statuses: list[str] = []
    details: set[str] = set()
    for number, piece in enumerate(pieces):
        scope = set(members[piece])
        sub = pulp.LpProblem(f"{problem.name}_{number}", problem.sense)
        terms = [(var, coef) for var, coef in objective.items() if var in scope]
        sub += pulp.LpAffineExpression(terms, constant=objective.constant if number == 0 else 0.0)
        for name, constraint in rows[piece]:
            sub.constraints[name] = constraint
        for var in members[piece]:
            sub.addVariable(var)
        share = len(scope) / max(columns_left, 1)
        columns_left -= len(scope)
        remaining = deadline - time.perf_counter()
        limit = max(0.05, remaining * share)
        piece_rounder = None if rounder is None else (lambda lp_value, scope=scope: rounder(lp_value, scope))
        info = solve(sub, _replace(options, time_limit_s=limit), rounder=piece_rounder)
        statuses.append(info.status)
        details.add(info.detail)
        if not info.has_solution:
            return SolveInfo(
                info.status,
                info.solver,
                None,
                None,
                None,
                time.perf_counter() - started,
                f"{info.detail} (piece {number + 1} of {len(pieces)})",
            )
        total += info.objective
        if info.best_bound is not None:
            bound += info.best_bound
        elif info.status == OPTIMAL:
            bound += info.objective
        else:
            bound_known = False  # e.g. CBC stopped by its clock: no bound, so no gap for the whole
    elapsed = time.perf_counter() - started
    gap = _gap(total, bound) if bound_known else None
    severity = {OPTIMAL: 0, TIME_LIMIT: 1}
    status = max(statuses, key=lambda st: severity.get(st, 2))
    if status == TIME_LIMIT and gap is not None and gap <= options.gap_rel:
        status = OPTIMAL  # every piece within reach of its bound adds up to the whole within gap_rel
    if status == OPTIMAL and gap is None:
        gap = 0.0
    detail = "; ".join(sorted(details)) + f" ({len(pieces)} independent pieces)"
    return SolveInfo(status, options.solver, total, bound if bound_known else None, gap, elapsed, detail)


def _replace(options: SolverOptions, **changes) -> SolverOptions:
    from dataclasses import replace

    return replace(options, **changes)


def _solve_cbc(problem: pulp.LpProblem, options: SolverOptions) -> SolveInfo:
    kwargs: dict = {"msg": options.msg, "timeLimit": options.time_limit_s, "gapRel": options.gap_rel}
    if options.threads:
        kwargs["threads"] = options.threads
    solver = pulp.PULP_CBC_CMD(**kwargs)
    started = time.perf_counter()
    try:
        problem.solve(solver)
    except pulp.PulpSolverError as exc:
        return SolveInfo(ERROR, "cbc", None, None, None, time.perf_counter() - started, str(exc))
    elapsed = time.perf_counter() - started
    st, sol = problem.status, problem.sol_status
    detail = f"{pulp.LpStatus.get(st, st)} / solution status {pulp.LpSolution.get(sol, sol)}"
    objective = (
        pulp.value(problem.objective) if sol in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible) else None
    )
    if st == pulp.LpStatusOptimal and sol == pulp.LpSolutionOptimal:
        status = OPTIMAL
    elif st == pulp.LpStatusOptimal and sol == pulp.LpSolutionIntegerFeasible:
        status = TIME_LIMIT  # CBC's command line does not report its final bound through PuLP
    elif st == pulp.LpStatusInfeasible:
        status = INFEASIBLE
    elif st == pulp.LpStatusNotSolved:
        status = NO_SOLUTION
    else:
        status = ERROR
    gap = 0.0 if status == OPTIMAL else None
    bound = objective if status == OPTIMAL else None
    return SolveInfo(status, "cbc", objective, bound, gap, elapsed, detail)


def _gap(objective: float | None, bound: float | None) -> float | None:
    if objective is None or bound is None or not math.isfinite(bound):
        return None
    diff = abs(objective - bound)
    if diff <= 1e-9:
        return 0.0
    return diff / max(abs(objective), 1e-9)
