"""Methods with empirical intervals (quantiles of past errors at each lead): moving average, naive, seasonal naive."""

from __future__ import annotations

import numpy as np

from forecasts.core.methods.base import InsufficientHistory, Method


def _lead_quantiles(errors: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-lead error quantiles; leads never observed in the history take the last observed lead's."""
    lo = (1.0 - level) / 2.0
    observed = np.isfinite(errors).any(axis=0)
    q_lo, q_hi = np.zeros(errors.shape[1]), np.zeros(errors.shape[1])
    if observed.any():
        cols = np.flatnonzero(observed)
        q_lo[cols] = np.nanquantile(errors[:, cols], lo, axis=0)
        q_hi[cols] = np.nanquantile(errors[:, cols], 1.0 - lo, axis=0)
        last = cols[-1]
        q_lo[last + 1 :], q_hi[last + 1 :] = q_lo[last], q_hi[last]
    return q_lo, q_hi


class MovingAverage(Method):
    """Mean of the last ``window_s`` seconds, flat over the horizon. ``window_s=resolution`` = naive."""

    name = "moving_average"
    MAX_ORIGINS = 1500

    def __init__(self, resolution_s: int, window_s: int = 3600, **params):
        super().__init__(resolution_s, **params)
        self.window = max(1, int(round(window_s / self.resolution_s)))
        self._err_cache: dict[float, tuple[np.ndarray, np.ndarray]] = {}

    def fit(self, y, start, warm=None):
        y = np.asarray(y, dtype=float)
        if len(y) < self.window + 2:
            raise InsufficientHistory(f"{self.name} needs at least {self.window + 2} bins, got {len(y)}")
        self.tail = y[-self.window :].copy()
        self.history = y
        self.end = start + len(y)
        self._err_cache = {}
        self._err_h = 0

    def update(self, y_new):
        y_new = np.asarray(y_new, dtype=float)
        self.tail = np.concatenate([self.tail, y_new])[-self.window :]
        self.end += len(y_new)

    def _errors(self, h: int) -> np.ndarray:
        y = self.history
        n, w = len(y), self.window
        last_origin = n - 1 - 1  # at least one lead observed
        origins = np.arange(w - 1, last_origin + 1)
        if len(origins) > self.MAX_ORIGINS:
            origins = origins[np.linspace(0, len(origins) - 1, self.MAX_ORIGINS).astype(int)]
        csum = np.concatenate([[0.0], np.cumsum(y)])
        ma = (csum[origins + 1] - csum[origins + 1 - w]) / w
        leads = np.arange(1, h + 1)
        idx = origins[:, None] + leads[None, :]
        valid = idx < n
        actual = np.where(valid, y[np.minimum(idx, n - 1)], np.nan)
        return actual - ma[:, None]

    def predict(self, h, level):
        key = level
        if key not in self._err_cache or len(self._err_cache[key][0]) < h:
            self._err_cache[key] = _lead_quantiles(self._errors(max(h, 1)), level)
        q_lo, q_hi = self._err_cache[key]
        q_lo, q_hi = np.nan_to_num(q_lo[:h]), np.nan_to_num(q_hi[:h])
        mean = np.full(h, self.tail.mean())
        return mean, mean + q_lo, mean + q_hi

    def describe(self):
        return {"method": self.name, "window_bins": self.window}


class Naive(MovingAverage):
    name = "naive"

    def __init__(self, resolution_s: int, **params):
        super().__init__(resolution_s, window_s=resolution_s, **params)


class SeasonalNaive(Method):
    """The value one season (day or week) earlier. Intervals: quantiles of the seasonal differences."""

    name = "seasonal_naive"

    def __init__(self, resolution_s: int, season: str = "daily", **params):
        super().__init__(resolution_s, **params)
        if season not in ("daily", "weekly"):
            raise ValueError("season must be 'daily' or 'weekly'")
        self.season = season
        self.m = self.day if season == "daily" else self.week
        self.name = f"seasonal_naive_{season}"

    def fit(self, y, start, warm=None):
        y = np.asarray(y, dtype=float)
        if len(y) < self.m + 1:
            raise InsufficientHistory(
                f"{self.name} needs more than one {self.season} season ({self.m} bins), got {len(y)}"
            )
        self.tail = y[-self.m :].copy()
        self.diffs = y[self.m :] - y[: -self.m]
        self.end = start + len(y)
        self._q: dict[float, tuple[float, float]] = {}

    def update(self, y_new):
        self.tail = np.concatenate([self.tail, np.asarray(y_new, dtype=float)])[-self.m :]
        self.end += len(y_new)

    def predict(self, h, level):
        if level not in self._q:
            lo, hi = _lead_quantiles(self.diffs[:, None], level)
            self._q[level] = (float(lo[0]), float(hi[0]))
        q_lo, q_hi = self._q[level]
        j = np.arange(h)
        mean = self.tail[j % self.m]
        seasons_ahead = np.sqrt(j // self.m + 1)
        return mean, mean + q_lo * seasons_ahead, mean + q_hi * seasons_ahead

    def describe(self):
        return {"method": self.name, "season_bins": self.m}
