"""Streaming statistics of latencies: ``LogHistogram`` (fixed geometric bins, mergeable) and ``Stat`` (exact count,
sum and max plus a histogram). A reported percentile is within ``REL_ERR`` (0.5 %) relative of the exact
nearest-rank percentile for values in [``LO``, ``HI``] (see stream.py, "Percentiles").
"""

from __future__ import annotations

import math

import numpy as np

REL_ERR = 0.005
LO, HI = 1e-4, 1e6
RATIO = (1 + REL_ERR) / (1 - REL_ERR)  # bin [a, a*RATIO]: the harmonic mid-point is within REL_ERR of any value
NBINS = int(math.ceil(math.log(HI / LO) / math.log(RATIO)))
PCTS = (50, 90, 95, 99)


class LogHistogram:
    """Counts in fixed geometric bins over [LO, HI] plus an under- and an overflow bin; mergeable (add counts)."""

    def __init__(self) -> None:
        self.counts = np.zeros(NBINS + 2, dtype=np.int64)  # [0]: < LO, [1..NBINS]: bins, [NBINS+1]: >= HI

    def add(self, x: np.ndarray) -> None:
        x = np.asarray(x, dtype=np.float64)
        x = x[~np.isnan(x)]
        if not x.size:
            return
        idx = np.zeros(x.size, dtype=np.int64)
        ok = x >= LO
        idx[ok] = np.minimum(np.floor(np.log(x[ok] / LO) / math.log(RATIO)).astype(np.int64), NBINS) + 1
        # floating rounding at a bin edge: move into the bin that really holds the value
        lo_edge = LO * RATIO ** (idx[ok] - 1)
        fix = x[ok] < lo_edge
        sub = np.flatnonzero(ok)
        idx[sub[fix]] -= 1
        self.counts += np.bincount(idx, minlength=NBINS + 2)

    def merge(self, other: LogHistogram) -> None:
        self.counts += other.counts

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    def percentile(self, p: float) -> float | None:
        n = self.n
        if not n:
            return None
        k = max(1, int(math.ceil(p / 100.0 * n)))  # nearest rank (1-based), as method="inverted_cdf"
        b = int(np.searchsorted(np.cumsum(self.counts), k))
        if b == 0:
            return 0.0
        if b > NBINS:
            return HI
        a = LO * RATIO ** (b - 1)
        return 2 * a * (a * RATIO) / (a + a * RATIO)  # harmonic mid-point of [a, a*RATIO]


class Stat:
    """Exact count, sum and max, plus a LogHistogram, of one latency."""

    def __init__(self) -> None:
        self.n = 0
        self.total = 0.0
        self.max = 0.0
        self.hist = LogHistogram()

    def add(self, x: np.ndarray) -> None:
        if x.size:
            self.n += int(x.size)
            self.total += float(x.sum())
            self.max = max(self.max, float(x.max()))
            self.hist.add(x)

    def to_dict(self) -> dict:
        out = {f"p{p}": self.hist.percentile(p) for p in PCTS}
        out["mean"] = self.total / self.n if self.n else None
        out["max"] = self.max if self.n else None
        return out
