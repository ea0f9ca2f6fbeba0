"""Instance request schedulers (SageServe 6.5): the order in which waiting requests are admitted.

Static orders give each request one float key at enqueue time (smaller = earlier); the instance keeps
its waiting queue as a heap on that key. Priority-1 requests (NIW not yet escalated) always come after
priority 0. DPA's order depends on the current time, so it re-sorts the (usually short) queue.
"""

from __future__ import annotations

from simulations.engine.policies.registry import PolicyKind, register

PRIO_SHIFT = 1e13  # keys are < 1e13 s; priority-1 requests sort after every priority-0 one
TIER_SHIFT = 1e11


class Scheduler:
    dynamic = False

    def __init__(self, params: dict, ttft_slo: list[float]) -> None:
        self.params = params
        self.ttft_slo = ttft_slo  # per tier index

    def key(self, arrival: float, tier: int, prio: int) -> float:
        raise NotImplementedError

    def order(self, entries: list, now: float, sim) -> list:  # only for dynamic schedulers
        return sorted(entries)


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

    def __init__(self, params, ttft_slo):
        super().__init__(params, ttft_slo)
        self.tau_n = float(params.get("tau_n", 5.0))
        self.tau_p = float(params.get("tau_p", 0.5))

    def key(self, arrival, tier, prio):
        return prio * PRIO_SHIFT + arrival + self.ttft_slo[tier]  # = absolute deadline

    def order(self, entries, now, sim):
        tiers = sim.req_tier
        tau_n, tau_p = self.tau_n, self.tau_p

        def rank(entry):
            key, seq, rid = entry
            prio = 1 if key >= PRIO_SHIFT else 0
            d = (key - prio * PRIO_SHIFT) - now
            t = tiers[rid]
            if d < -tau_n:
                bucket = 0
            elif d < 0:
                bucket = 5
            elif d <= tau_p:
                bucket = 1 if t == 0 else 2
            else:
                bucket = 3 if t == 0 else 4
            return (prio, bucket, d, seq)

        return sorted(entries, key=rank)
