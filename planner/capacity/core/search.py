"""Bisection on the monotone dimensions, never simulating the same (fleet, seed) twice. Django-free.

``min_counts`` finds, for every (region, model) group at once, the fewest instances whose replays meet the
SLOs on at least the required share of seeds: each round probes one fleet (every unresolved group at its next
count, resolved groups at their answer), so one simulation per seed advances every group. A group starts at its
estimate and gallops from it (+-1, +-2, +-4 ...) until a miss and a pass bracket its answer, then bisects: a good
start resolves in two fleets. The
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

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from planner.capacity.core.probe import fleet_key


class Pending(Exception):  # noqa: N818  (a control-flow signal, not an error)
    """The search needs probes nobody has run yet: ``missing`` = [(key, seed), ...]. ``spare``: those it will
    probably ask for next (``min_counts``: the next fleet if every open group misses), for a worker that would
    otherwise idle; a wrong guess costs that worker's time, never the answer."""

    def __init__(self, missing: list[tuple[str, int]]) -> None:
        super().__init__(f"{len(missing)} probes to run")
        self.missing = missing
        self.spare: list[tuple[str, int]] = []


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


@dataclass
class _Bracket:
    """One group's knowledge: ``lo`` the highest count known to miss (lower - 1: none yet), ``hi`` the lowest known
    to meet, ``misses`` and ``passes`` how many probes missed and met, ``hopeless`` whether its last miss was one no
    count fixes (by the ``hopeless`` hint on too many seeds, or a stall: ``stalled``)."""

    lo: int
    hi: int | None = None
    misses: int = 0
    passes: int = 0
    hopeless: bool = False
    gap: float | None = None  # the mean shortfall from the targets at ``lo`` (``shortfall``), None if unknown


STALL_GROWTH = 1.5  # a stall: the count grew by at least this factor between two misses ...
STALL_CLOSED = 0.25  # ... and closed less than this share of the gap to the targets ...
STALL_MOSTLY_MET = 0.5  # ... while at least this share of the worst tier's requests met their SLO (not overloaded)


def next_count(b: _Bracket, *, lower: int, upper: int, start: int | None) -> int:
    """The count to probe next: the start first; then galloping from it, +1, +2, +4 ... above the highest miss
    while nothing has met (straight to the ceiling when the last miss was hopeless), -1, -2, -4 ... below the lowest
    pass while nothing has missed; bisection once a miss and a pass bracket the answer. Only which counts are probed
    depends on this; the answer is the bracket's, whatever the order."""
    if start is not None:
        return min(upper, max(lower, start))
    if b.hi is None:
        return upper if b.hopeless else min(upper, b.lo + 2 ** (b.misses - 1))
    if b.lo < lower:
        return max(lower, b.hi - 2 ** (b.passes - 1))
    return (b.lo + b.hi) // 2


def _never(outcome: dict, group: str) -> bool:
    return False


def _unknown(outcome: dict, group: str) -> None:
    return None


def stalled(before: tuple[int, float | None], after: tuple[int, float | None], attained: float | None) -> bool:
    """Two misses of a group, (count, mean shortfall) ``before`` and ``after``: more instances (``STALL_GROWTH`` x)
    closed less than ``STALL_CLOSED`` of the gap to the targets although most requests of the worst tier already
    met their SLO (``attained``). What still misses does not depend on the count (a policy's own delays, prompts
    too long for the TTFT target): the next probe goes to the ceiling. An overloaded group (most requests missing)
    also gains little from its first extra instances, so it keeps galloping."""
    (n0, gap0), (n1, gap1) = before, after
    if gap0 is None or gap1 is None or attained is None or gap0 <= 0 or n1 < STALL_GROWTH * n0:
        return False
    return attained >= STALL_MOSTLY_MET and gap0 - gap1 < STALL_CLOSED * gap0


def min_counts(evaluate: Callable[[str, Sequence[int]], list[dict]], seeds: Sequence[int], *,
               lower: Mapping[str, int], upper: Mapping[str, int], start: Mapping[str, int] | None = None,
               group_ok: Callable[[dict, str], bool], probability: float, max_fixups: int = 3,
               after: Mapping[str, str] | None = None,
               hopeless: Callable[[dict, str], bool] = _never, early_miss: bool = False,
               shortfall: Callable[[dict, str], tuple[float, float] | None] = _unknown) -> dict:
    """Fewest instances per group meeting ``group_ok`` on at least ``probability`` of ``seeds``.

    Each group starts at ``start`` (default its lower bound) and gallops from it (``next_count``) until a miss at
    n - 1 and a pass at n bracket its answer (or a pass at its lower bound; a miss at its upper bound makes it
    infeasible). ``hopeless(outcome, g)``: a hint that group g misses on that seed at any count (its prompts too
    long to prefill within the TTFT target, probe.unfixable_counts); a group that misses with the hint true on too
    many seeds to meet is probed at its upper bound next. A wrong hint costs probes, never the answer.
    ``shortfall(outcome, g)``: (gap to the targets, worst tier's attainment) or None: a ``stalled`` group, too.

    ``early_miss``: a searched fleet is replayed on its first ``allowed + 1`` seeds first (``allowed``: the seeds
    a group may miss on and still meet the probability); if every open group misses on all of them, each of them
    misses at that fleet whatever the other seeds say, and those are not run. A fleet where some group is at its
    start (as likely to meet as not) and the joint answer's replay always run every seed at once.

    ``after[g] = h``: group g is searched once h is resolved, probed at its upper bound until then (a decode pool
    after its prefill pool: a prefill pool that lets few requests through says nothing about the decode pool).

    Returns {"counts": {g: n}, "feasible": {g: bool}, "verified": bool, "fleet": key of the answer,
    "rounds": [{"fleet", "passed": {g: share}}], "best_share": {g: share at the upper bound}}.
    A group that misses even at its upper bound is infeasible; its count is the upper bound.
    """
    groups = sorted(lower)
    brackets = {g: _Bracket(lo=int(lower[g]) - 1) for g in groups}
    infeasible: set[str] = set()
    best_share: dict[str, float] = {}
    rounds: list[dict] = []
    fresh = set(groups)  # not probed in its own search yet: starts at ``start``
    after = dict(after or {})
    allowed = len(seeds) - max(1, math.ceil(probability * len(seeds) - 1e-9))  # seeds that may miss

    def resolved(g: str) -> bool:
        b = brackets[g]
        return g in infeasible or (b.hi is not None and b.hi - b.lo <= 1)

    def shares(fleet: dict[str, int], open_groups: list[str] | None = None) -> tuple[dict[str, float], list[dict]]:
        outcomes = None
        if open_groups and allowed + 1 < len(seeds):
            try:
                head = evaluate(fleet_key(fleet), seeds[:allowed + 1])
            except Pending as p:  # a climb's probes usually miss: the next fleet's head is worth an idle worker
                nxt = fleet_key(_if_missed(fleet, open_groups, brackets, lower, upper))
                p.spare = [(nxt, int(s)) for s in seeds[:allowed + 1]]
                raise
            if all(not any(group_ok(o, g) for o in head) for g in open_groups):
                outcomes = head  # every open group misses on more seeds than it may
        if outcomes is None:
            outcomes = evaluate(fleet_key(fleet), seeds)
        passed = {g: share_meeting(outcomes, lambda o, g=g: group_ok(o, g)) for g in groups}
        rounds.append({"fleet": fleet_key(fleet), "passed": passed, "seeds": len(outcomes)})
        return passed, outcomes

    while True:
        waiting = {g for g in groups if g in after and not resolved(after[g])}
        probe = {g: int(upper[g]) if g in infeasible or g in waiting else int(brackets[g].hi) if resolved(g) else
                 next_count(brackets[g], lower=int(lower[g]), upper=int(upper[g]),
                            start=int((start or {}).get(g, lower[g])) if g in fresh else None) for g in groups}
        open_groups = [g for g in groups if not resolved(g) and g not in waiting]
        starting, fresh = fresh & set(open_groups), fresh - set(open_groups)
        if not open_groups:
            break
        passed, outcomes = shares(probe, open_groups if early_miss and not starting else None)
        for g in open_groups:
            b = brackets[g]
            if passed[g] >= probability:
                b.hi, b.passes = probe[g], b.passes + 1
            else:
                _missed(b, probe[g], outcomes, g, shortfall, hopeless, allowed)
                if probe[g] >= int(upper[g]):
                    infeasible.add(g)
                    best_share[g] = passed[g]
    answer = {g: (int(upper[g]) if g in infeasible else int(brackets[g].hi)) for g in groups}
    verified = _replay_answer(shares, answer, groups, upper, infeasible, best_share, probability, max_fixups)
    return {"counts": answer, "feasible": {g: g not in infeasible for g in groups}, "verified": verified,
            "fleet": fleet_key(answer), "rounds": rounds, "best_share": best_share}


def _if_missed(fleet: dict[str, int], open_groups: list[str], brackets: Mapping[str, _Bracket],
               lower: Mapping[str, int], upper: Mapping[str, int]) -> dict[str, int]:
    """The fleet the next round probes if every open group misses on ``fleet`` (the hints unknown)."""
    nxt = dict(fleet)
    for g in open_groups:
        b = brackets[g]
        if b.hi is not None and b.hi - fleet[g] <= 1:
            nxt[g] = b.hi  # resolved by that miss
        elif fleet[g] < int(upper[g]):
            nxt[g] = next_count(_Bracket(lo=fleet[g], hi=b.hi, misses=b.misses + 1, passes=b.passes),
                                lower=int(lower[g]), upper=int(upper[g]), start=None)
    return nxt


def _missed(b: _Bracket, count: int, outcomes: Sequence[dict], g: str, shortfall, hopeless, allowed: int) -> None:
    """Record a miss of group g at ``count``: the bracket's lower end, and whether the next probe goes to the
    ceiling (a stall, or the hopeless hint on more seeds than may miss)."""
    pairs = [shortfall(o, g) for o in outcomes]
    gap, attained = (None, None) if not pairs or any(p is None for p in pairs) else (
        sum(p[0] for p in pairs) / len(pairs), sum(p[1] for p in pairs) / len(pairs))
    stall = b.misses > 0 and stalled((b.lo, b.gap), (count, gap), attained)
    b.lo, b.misses, b.gap = count, b.misses + 1, gap
    b.hopeless = stall or sum(1 for o in outcomes if hopeless(o, g)) > allowed


def _replay_answer(shares, answer: dict, groups: list[str], upper: Mapping[str, int], infeasible: set[str],
                   best_share: dict, probability: float, max_fixups: int) -> bool:
    """The joint fleet, replayed as a whole; a group that then misses is raised by one, up to ``max_fixups``
    times (in place on ``answer``, ``infeasible``, ``best_share``). True when the fleet meets every feasible group."""
    for _ in range(max_fixups + 1):
        passed, _ = shares(answer)
        short = [g for g in groups if g not in infeasible and passed[g] < probability]
        for g in infeasible:
            best_share[g] = passed[g]
        if not short:
            return True
        raised = False
        for g in short:
            if answer[g] < int(upper[g]):
                answer[g] += 1
                raised = True
            else:
                infeasible.add(g)
                best_share[g] = passed[g]
        if not raised:
            return False
    return False


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
