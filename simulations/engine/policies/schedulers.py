"""Instance request schedulers (SageServe 6.5): the order in which waiting requests are admitted.

Static orders give each request one float key at enqueue time (smaller = earlier); the instance keeps
its waiting queue as a heap on that key. Priority-1 requests (NIW not yet escalated) always come after
priority 0. A *dynamic* scheduler (DPA) orders by the current time too: for it the instance keeps the waiting
list fully sorted by (key, seq) (insertion by bisection), and ``order`` yields the admission order lazily
from that sorted list, so admitting a few requests from a long queue costs a few bisections, not a sort.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import ClassVar

from simulations.engine.policies.params import PolicyParams, knob
from simulations.engine.policies.registry import PolicyKind, register

PRIO_SHIFT = 1e13  # keys are < 1e13 s; priority-1 requests sort after every priority-0 one
TIER_SHIFT = 1e11


class SchedulerParams(PolicyParams):
    # ``strategy.scheduler_params`` is shared by whichever scheduler is chosen: a scheduler ignores the others' knobs
    refuse_unknown: ClassVar[bool] = False


class Scheduler:
    Params: ClassVar[type[PolicyParams]] = SchedulerParams  # the scheduler's knobs (strategy.scheduler_params)
    dynamic = False
    stream_safe = True  # orders waiting entries, keeps no request id (window.py)

    def __init__(self, params: dict, ttft_slo: list[float]) -> None:
        self.params = params
        self.ttft_slo = ttft_slo  # per tier index

    def key(self, arrival: float, tier: int, prio: int) -> float:
        raise NotImplementedError

    def order(self, entries: list, now: float, sim):
        """Only for dynamic schedulers: the admission order (an iterable) of ``entries``, which the instance
        keeps sorted by (key, seq)."""
        return iter(entries)

    def next_change(self, entries: list, now: float) -> float:
        """Only for dynamic schedulers: the earliest time >= now at which ``order`` may differ from its order at
        ``now`` (the fast engine ends decode runs there, so it admits exactly when the reference mode would)."""
        return float("inf")


@register(PolicyKind.SCHEDULER, "fcfs")
class FCFS(Scheduler):
    def key(self, arrival, tier, prio):
        return prio * PRIO_SHIFT + arrival


@register(PolicyKind.SCHEDULER, "edf")
class EDF(Scheduler):
    """Earliest TTFT deadline first; expired deadlines are earliest, so they go first."""

    def key(self, arrival, tier, prio):
        return prio * PRIO_SHIFT + arrival + self.ttft_slo[tier]


@register(PolicyKind.SCHEDULER, "pf")
class PriorityFirst(Scheduler):
    """All IW-F (FCFS), then IW-N (FCFS), then NIW."""

    def key(self, arrival, tier, prio):
        return prio * PRIO_SHIFT + tier * TIER_SHIFT + arrival


@register(PolicyKind.SCHEDULER, "dpa")
class DPA(Scheduler):
    """Deadline and priority aware: severely expired, urgent IW-F, urgent IW-N, non-urgent IW-F,
    non-urgent IW-N, recently expired; deadline order inside a bucket (tau_n, tau_p in seconds)."""

    dynamic = True

    class Params(SchedulerParams):
        tau_n: float = knob(5.0, "a deadline expired more than this long ago is severely expired (s)", ge=0)
        tau_p: float = knob(0.5, "a deadline within this many seconds is urgent (s)", ge=0)

    def __init__(self, params, ttft_slo):
        super().__init__(params, ttft_slo)
        k = self.Params.read(params)
        self.tau_n = k.tau_n
        self.tau_p = k.tau_p

    def key(self, arrival, tier, prio):
        return prio * PRIO_SHIFT + arrival + self.ttft_slo[tier]  # = absolute deadline

    def _boundaries(self, entries, now):
        """Per priority (0, then 1) of the (key, seq)-sorted ``entries``: (lo, i1, i2, i3, hi, shift) with
        d = deadline - now computed as the reference rank does, so boundaries fall identically:
        [lo, i1) d < -tau_n, [i1, i2) -tau_n <= d < 0, [i2, i3) 0 <= d <= tau_p, [i3, hi) d > tau_p."""
        n = len(entries)
        lo = 0
        for prio in (0, 1):
            shift = prio * PRIO_SHIFT
            hi = bisect_left(entries, (shift + PRIO_SHIFT,), lo, n) if prio == 0 else n

            def slack(entry, shift=shift):
                return (entry[0] - shift) - now

            i1 = bisect_left(entries, -self.tau_n, lo, hi, key=slack)
            i2 = bisect_left(entries, 0.0, i1, hi, key=slack)
            i3 = bisect_right(entries, self.tau_p, i2, hi, key=slack)
            yield lo, i1, i2, i3, hi, shift
            lo = hi

    def order(self, entries, now, sim):
        """The six buckets of SageServe 6.5 in order, each by deadline (then arrival order), priority 0 first.

        ``entries`` are sorted by (key, seq), i.e. by (priority, deadline), so within a priority every bucket
        is a contiguous range of deadlines (``_boundaries``): severely expired (d < -tau_n), urgent
        (0 <= d <= tau_p: IW-F, then the rest), non-urgent (IW-F, then the rest), recently expired
        (-tau_n <= d < 0). Yields lazily: admission stops at the first request that does not fit, so usually
        only the head of the first non-empty bucket is looked at."""
        for lo, i1, i2, i3, hi, _shift in self._boundaries(entries, now):
            yield from entries[lo:i1]
            for a, b in ((i2, i3), (i3, hi)):
                for want_iwf in (True, False):
                    for k in range(a, b):
                        e = entries[k]
                        if (sim.tier_of(e[2]) == 0) == want_iwf:
                            yield e
            yield from entries[i1:i2]

    def next_change(self, entries, now):
        """Bucket membership is the only thing that changes with time (inside a bucket the order is by deadline):
        the next entry to become severely expired (d drops below -tau_n, at deadline + tau_n), to expire (below
        0, at its deadline) or to become urgent (d reaches tau_p, at deadline - tau_p): the first entry of each
        range not yet across. Returns that time (the order changes at or just after it), at least ``now``."""
        best = float("inf")
        for _lo, i1, i2, i3, hi, shift in self._boundaries(entries, now):
            for i, offset in ((i1, self.tau_n), (i2, 0.0), (i3, -self.tau_p)):
                if i < hi:
                    t_cross = (entries[i][0] - shift) + offset
                    if t_cross < best:
                        best = t_cross
        return best if best > now else now
