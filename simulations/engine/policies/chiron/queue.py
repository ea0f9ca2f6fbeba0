"""Chiron's global queue of batch requests, its request groups and the waiting-time estimator (sec. 5.3).

**Groups.** Queued batch requests are grouped by their TTFT SLO with one-dimensional k-means (Lloyd's
algorithm, ``k`` = min(``k_groups`` (3), number of distinct SLOs), centres started at SLO quantiles); a request
joins the group whose centre is nearest its SLO. Groups are served tightest centre first, FCFS within a group.
Groups are re-formed when a request with an SLO not seen before arrives (with one batch SLO class, as in the
paper's experiments, there is one group).

**Estimator** (QLM, eq. 1 and the CLT): the wait of the request at position q is
W_q ~ Normal((q - 1) mu_o / Theta_tok, (q - 1) sigma_o^2 / Theta_tok^2), mu_o and sigma_o the mean and standard
deviation of the output lengths of requests completed so far (Welford), Theta_tok the batch token throughput.
"""

from __future__ import annotations

import bisect
import math
from collections import deque


def kmeans_1d(values: list[float], k: int, iters: int = 50) -> list[float]:
    """Centres of a one-dimensional k-means (Lloyd) over ``values``; k is capped at the distinct values."""
    distinct = sorted(set(values))
    k = max(1, min(k, len(distinct)))
    if k == len(distinct):
        return distinct
    vs = sorted(values)
    centres = [vs[min(len(vs) - 1, int((i + 0.5) * len(vs) / k))] for i in range(k)]
    for _ in range(iters):
        sums = [0.0] * k
        counts = [0] * k
        for v in vs:
            j = min(range(k), key=lambda c: abs(v - centres[c]))
            sums[j] += v
            counts[j] += 1
        new = [sums[j] / counts[j] if counts[j] else centres[j] for j in range(k)]
        if new == centres:
            break
        centres = new
    return sorted(centres)


class OutputStats:
    """Running mean and variance of completed requests' output lengths (Welford)."""

    def __init__(self) -> None:
        self.n = 0
        self.mean = 0.0
        self.m2 = 0.0

    def add(self, x: float) -> None:
        self.n += 1
        d = x - self.mean
        self.mean += d / self.n
        self.m2 += d * (x - self.mean)

    @property
    def std(self) -> float:
        return math.sqrt(self.m2 / (self.n - 1)) if self.n > 1 else 0.0


def estimate_wait(ahead: int, mu: float, sigma: float, theta_tok: float) -> tuple[float, float]:
    """(mean, standard deviation) of the waiting time with ``ahead`` = q - 1 requests ahead (eq. 1 + CLT)."""
    if ahead <= 0:
        return 0.0, 0.0
    if theta_tok <= 0:
        return math.inf, math.inf
    return ahead * mu / theta_tok, math.sqrt(ahead) * sigma / theta_tok


class GlobalQueue:
    """Batch requests waiting for an instance: groups by TTFT SLO (k-means), FCFS within each group."""

    def __init__(self, k_groups: int = 3) -> None:
        self.k = max(1, int(k_groups))
        self.centres: list[float] = []
        self.groups: list[deque] = []  # each: deque of (rid, arrival, slo), FCFS
        self.slos_seen: set[float] = set()
        self.n = 0

    def __len__(self) -> int:
        return self.n

    def _group_of(self, slo: float) -> int:
        i = bisect.bisect_left(self.centres, slo)
        if i == 0:
            return 0
        if i == len(self.centres):
            return i - 1
        return i if self.centres[i] - slo < slo - self.centres[i - 1] else i - 1

    def _regroup(self) -> None:
        items = [x for g in self.groups for x in g]
        self.centres = kmeans_1d(sorted(self.slos_seen), self.k)
        self.groups = [deque() for _ in self.centres]
        for x in sorted(items, key=lambda e: (e[1], e[0])):
            self.groups[self._group_of(x[2])].append(x)

    def push(self, rid: int, arrival: float, slo: float, front: bool = False) -> None:
        if slo not in self.slos_seen:
            self.slos_seen.add(slo)
            if len(self.centres) < self.k or slo < self.centres[0] or slo > self.centres[-1]:
                self._regroup()
        g = self.groups[self._group_of(slo)]
        if front:  # an evicted request goes back to the head of its group (it arrived before those queued)
            g.appendleft((rid, arrival, slo))
        else:
            g.append((rid, arrival, slo))
        self.n += 1

    def pop(self):
        """The next request: the head of the first non-empty group (tightest SLO first)."""
        for g in self.groups:
            if g:
                self.n -= 1
                return g.popleft()
        return None

    def peek(self):
        for g in self.groups:
            if g:
                return g[0]
        return None

    def snapshot(self) -> list[tuple[int, float, float, int]]:
        """Per group: (size, oldest arrival, newest arrival, requests ahead of the group) in service order."""
        out = []
        ahead = 0
        for g in self.groups:
            if g:
                out.append((len(g), g[0][1], g[-1][1], ahead, g[0][2]))
                ahead += len(g)
        return out

    def order(self) -> list[int]:
        return [x[0] for g in self.groups for x in g]
