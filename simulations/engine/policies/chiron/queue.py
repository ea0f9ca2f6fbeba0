"""Chiron's global queue of batch requests, its request groups and the waiting-time estimator (sec. 5.3).

**One queue per endpoint** (``EndpointBatch``). The paper speaks of "a global queue" (sec. 3) and does not say how
its mixed-model configuration (8B and 70B, sec. 6) shares it; but an instance is a serving system and the model it
serves (definition 2.2), so a request can only run on its own model's instances. Batch requests therefore wait in
the queue of their endpoint (their region and model), are filled into that endpoint's instances only, and Alg. 2
sizes each endpoint from its own queue, with the output-length statistics and the batch throughput it reads
measured on that endpoint's instances.

**Groups.** Queued batch requests are grouped by their TTFT SLO with one-dimensional k-means (Lloyd's
algorithm, ``k`` = min(``k_groups`` (3), number of distinct SLOs), centres started at SLO quantiles); a request
joins the group whose centre is nearest its SLO. Groups are served tightest centre first, FCFS within a group.
Groups are re-formed when a request with an SLO not seen before arrives (with one batch SLO class, as in the
paper's experiments, there is one group).

**Estimator** (QLM, eq. 1 and the CLT): the wait of the request at position q is
W_q ~ Normal((q - 1) mu_o / Theta_tok, (q - 1) sigma_o^2 / Theta_tok^2), mu_o and sigma_o the mean and standard
deviation of the output lengths of requests completed so far (Welford), Theta_tok the batch token throughput.

**Requests' SLOs** (``RequestSLOs``): every request's tier and TTFT / ITL SLO, read from the policy view once and
kept in arrays by request id for the hooks that read them again (dispatch, completion, eviction).
"""

from __future__ import annotations

import bisect
import math
from collections import deque

import cython
import numpy as np

# the paper's SLOs (s) by tier index (config.TIERS: IW-F, IW-N, NIW) for a request without its own or its tier's
DEFAULT_TTFT = (10.0, 10.0, 3600.0)
DEFAULT_ITL = (0.2, 0.2, 2.0)


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


class RequestSLOs:
    """Tier, TTFT SLO and ITL SLO of every request seen, by request id (ids are dense, in arrival order): arrays
    that double when an id passes their end, so a hook reads them without a dictionary lookup or a tuple."""

    def __init__(self, n: int = 4096) -> None:
        self.tier = np.full(n, -1, np.int8)  # -1: not read yet
        self.ttft = np.zeros(n)
        self.itl = np.zeros(n)

    def _grow(self, rid) -> None:
        extra = max(self.tier.shape[0], rid + 1 - self.tier.shape[0])
        self.tier = np.concatenate([self.tier, np.full(extra, -1, np.int8)])
        self.ttft = np.concatenate([self.ttft, np.zeros(extra)])
        self.itl = np.concatenate([self.itl, np.zeros(extra)])

    @cython.locals(tier=cython.int)
    def read(self, sim, rid) -> int:
        """The tier of request ``rid``; on first use its SLOs are read from the view (its own, else its tier's, else
        the paper's)."""
        if rid >= self.tier.shape[0]:
            self._grow(rid)
        tier = self.tier[rid]
        if tier < 0:
            tier = sim.tier_of(rid)
            ttft, itl = sim.request_slo(rid)
            self.ttft[rid] = float(DEFAULT_TTFT[tier] if ttft is None else ttft)
            self.itl[rid] = float(DEFAULT_ITL[tier] if itl is None else itl)
            self.tier[rid] = tier
        return int(tier)

    def ttft_of(self, rid) -> float:
        """TTFT SLO (s) of a request already ``read``."""
        return float(self.ttft[rid])

    def itl_of(self, rid) -> float:
        """ITL SLO (s) of a request already ``read``."""
        return float(self.itl[rid])


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


class EndpointBatch:
    """The batch side of one endpoint: its global queue and what Alg. 2 reads for it, all measured on the
    endpoint's instances: the output lengths of the requests they completed (mu_o, sigma_o), the batch output
    tokens behind Theta (completed or generated, by time), the first time a batch request was dispatched to one
    of them, and the measured saturated throughput of one of its batch instances (``r_new``, 0 = not yet)."""

    def __init__(self, k_groups: int = 3) -> None:
        self.queue = GlobalQueue(k_groups)
        self.out_stats = OutputStats()
        self.done_tok: deque = deque()  # (t, output tokens) of batch requests completed in the last window
        self.gen_tok: deque = deque()  # (t, batch output tokens generated) per closed local window
        self.first_batch_t = None  # first time a batch request left the queue for one of the endpoint's instances
        self.r_new = 0.0
