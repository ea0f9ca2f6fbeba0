"""Bisection on the monotone dimensions, never simulating the same (fleet, seed) twice. Django-free.

``min_counts`` finds, for every (region, model) group at once, the fewest instances whose replays meet the
SLOs on at least the required share of seeds: each round probes one fleet (every unresolved group at its
bisection midpoint, resolved groups at their answer), so one simulation per seed advances every group. The
groups interact only through cross-region spill-over; the joint answer is replayed at the end and any group
that then misses is raised by one, up to ``max_fixups`` times.

``max_rate`` finds the largest request rate a deployment sustains within the SLOs (goodput): doubling until a
rate fails, then bisection to a relative tolerance.

Both take an ``evaluate`` callable. A synchronous caller passes ``MemoEvaluator`` (runs what it has not seen);
the workers' driver passes one that raises ``Pending`` with the probes it lacks, runs them as child jobs and
replays the search from the start with the grown memo (the search is deterministic, so a replay takes the
same path and stops one step further).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from planner.capacity.core.probe import fleet_key


class Pending(Exception):  # noqa: N818  (a control-flow signal, not an error)
    """The search needs probes nobody has run yet: ``missing`` = [(key, seed), ...]."""

    def __init__(self, missing: list[tuple[str, int]]) -> None:
        super().__init__(f"{len(missing)} probes to run")
        self.missing = missing


@dataclass
class MemoEvaluator:
    """``evaluate(key, seeds)`` -> outcomes; ``run(key, seed)`` is called once per (key, seed), ever.

    With ``run=None`` it raises ``Pending`` for whatever is not in ``known`` (the workers' replay)."""

    run: Callable[[str, int], dict] | None = None
    known: dict[tuple[str, int], dict] = field(default_factory=dict)
    calls: int = 0

    def __call__(self, key: str, seeds: Sequence[int]) -> list[dict]:
        missing = [(key, int(s)) for s in seeds if (key, int(s)) not in self.known]
        if missing and self.run is None:
            raise Pending(missing)
        for k, s in missing:
            self.known[(k, s)] = self.run(k, s)
            self.calls += 1
        return [self.known[(key, int(s))] for s in seeds]


def share_meeting(outcomes: Sequence[dict], ok: Callable[[dict], bool]) -> float:
    return sum(1 for o in outcomes if ok(o)) / len(outcomes) if outcomes else 0.0


def min_counts(evaluate: Callable[[str, Sequence[int]], list[dict]], seeds: Sequence[int], *,
               lower: Mapping[str, int], upper: Mapping[str, int], start: Mapping[str, int] | None = None,
               group_ok: Callable[[dict, str], bool], probability: float, max_fixups: int = 3,
               after: Mapping[str, str] | None = None) -> dict:
    """Fewest instances per group meeting ``group_ok`` on at least ``probability`` of ``seeds``.

    ``after[g] = h``: group g is searched once h is resolved, probed at its upper bound until then (a decode pool
    after its prefill pool: a prefill pool that lets few requests through says nothing about the decode pool).

    Returns {"counts": {g: n}, "feasible": {g: bool}, "verified": bool, "fleet": key of the answer,
    "rounds": [{"fleet", "passed": {g: share}}], "best_share": {g: share at the upper bound}}.
    A group that misses even at its upper bound is infeasible; its count is the upper bound.
    """
    groups = sorted(lower)
    lo = {g: int(lower[g]) - 1 for g in groups}  # highest count known to miss (or below the range)
    hi: dict[str, int | None] = {g: None for g in groups}  # lowest count known to meet
    infeasible: set[str] = set()
    best_share: dict[str, float] = {}
    rounds: list[dict] = []
    fresh = set(groups)  # not probed in its own search yet: starts at ``start``
    after = dict(after or {})

    def resolved(g: str) -> bool:
        return g in infeasible or (hi[g] is not None and hi[g] - lo[g] <= 1)

    def shares(fleet: dict[str, int]) -> dict[str, float]:
        outcomes = evaluate(fleet_key(fleet), seeds)
        passed = {g: share_meeting(outcomes, lambda o, g=g: group_ok(o, g)) for g in groups}
        rounds.append({"fleet": fleet_key(fleet), "passed": passed})
        return passed

    while True:
        probe: dict[str, int] = {}
        waiting = {g for g in groups if g in after and not resolved(after[g])}
        for g in groups:
            if g in infeasible or g in waiting:
                probe[g] = int(upper[g])
            elif hi[g] is not None and hi[g] - lo[g] <= 1:
                probe[g] = hi[g]
            elif hi[g] is None:
                guess = int((start or {}).get(g, lower[g])) if g in fresh else max(lo[g] + 1, 2 * lo[g])
                probe[g] = min(int(upper[g]), max(lo[g] + 1, guess))
            else:
                probe[g] = (lo[g] + hi[g]) // 2
        open_groups = [g for g in groups if not resolved(g) and g not in waiting]
        fresh -= set(open_groups)
        if not open_groups:
            break
        passed = shares(probe)
        for g in open_groups:
            if passed[g] >= probability:
                hi[g] = probe[g]
            else:
                lo[g] = probe[g]
                if probe[g] >= int(upper[g]):
                    infeasible.add(g)
                    best_share[g] = passed[g]
    answer = {g: (int(upper[g]) if g in infeasible else int(hi[g])) for g in groups}
    verified = False
    for _ in range(max_fixups + 1):  # the joint fleet, replayed as a whole
        passed = shares(answer)
        short = [g for g in groups if g not in infeasible and passed[g] < probability]
        for g in infeasible:
            best_share[g] = passed[g]
        if not short:
            verified = True
            break
        raised = False
        for g in short:
            if answer[g] < int(upper[g]):
                answer[g] += 1
                raised = True
            else:
                infeasible.add(g)
                best_share[g] = passed[g]
        if not raised:
            break
    return {"counts": answer, "feasible": {g: g not in infeasible for g in groups}, "verified": verified,
            "fleet": fleet_key(answer), "rounds": rounds, "best_share": best_share}


def max_rate(meets_at: Callable[[float], bool], *, start: float, rel_tol: float = 0.02, max_doublings: int = 12,
             max_halvings: int = 12, max_steps: int = 30) -> dict:
    """Largest rate with ``meets_at(rate)`` true, by doubling / halving to bracket it, then bisection.

    Rates are rounded to 4 significant digits so a replay asks for exactly the same probes.
    Returns {"rate": largest passing rate (0.0 if none), "fail_rate": smallest failing one (None if none),
    "probes": [(rate, passed)]}.
    """
    def r4(x: float) -> float:
        return float(f"{x:.4g}")

    probes: list[tuple[float, bool]] = []

    def test(rate: float) -> bool:
        ok = bool(meets_at(r4(rate)))
        probes.append((r4(rate), ok))
        return ok

    lo, hi = 0.0, None
    rate = r4(start)
    if test(rate):
        lo = rate
        for _ in range(max_doublings):
            rate = r4(rate * 2)
            if not test(rate):
                hi = rate
                break
            lo = rate
        if hi is None:
            return {"rate": lo, "fail_rate": None, "probes": probes}
    else:
        hi = rate
        for _ in range(max_halvings):
            rate = r4(rate / 2)
            if test(rate):
                lo = rate
                break
            hi = rate
        if lo == 0.0:
            return {"rate": 0.0, "fail_rate": hi, "probes": probes}
    for _ in range(max_steps):
        if (hi - lo) / hi <= rel_tol:
            break
        mid = r4((lo + hi) / 2)
        if mid in (lo, hi):
            break
        if test(mid):
            lo = mid
        else:
            hi = mid
    return {"rate": lo, "fail_rate": hi, "probes": probes}
