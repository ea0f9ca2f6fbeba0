"""The result object every forecaster returns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Forecast:
    """A forecast of ``len(mean)`` bins starting at bin ``start`` (bins of ``resolution_s`` seconds).

    ``lower``/``upper`` bound a central prediction interval of probability ``level`` for each bin.
    ``peak`` is the maximum of the point forecast over the peak window (default the next hour);
    ``peak_upper`` is the maximum of the per-bin upper bounds over the same window. It is a
    per-bin quantile, not a quantile of the maximum (which would be higher), so read it as "the
    busiest bin's upper bound" -- backtests report how often the real peak stays below it.
    """

    mean: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float
    start: int
    resolution_s: int
    peak: float
    peak_upper: float
    method: str = ""

    @property
    def steps(self) -> int:
        return len(self.mean)

    def as_dict(self, digits: int = 6) -> dict:
        def rounded(values):
            return [float(f"{v:.{digits}g}") for v in np.asarray(values, dtype=float)]

        return {
            "method": self.method,
            "start": int(self.start),
            "resolution_s": int(self.resolution_s),
            "level": float(self.level),
            "mean": rounded(self.mean),
            "lower": rounded(self.lower),
            "upper": rounded(self.upper),
            "peak": float(self.peak),
            "peak_upper": float(self.peak_upper),
        }


def make_forecast(
    mean, lower, upper, *, level, start, resolution_s, peak_window_steps, method="", nonnegative=True
) -> Forecast:
    mean = np.asarray(mean, dtype=float)
    lower = np.asarray(lower, dtype=float)
    upper = np.asarray(upper, dtype=float)
    if nonnegative:  # rates are never negative
        mean = np.maximum(mean, 0.0)
        lower = np.maximum(lower, 0.0)
        upper = np.maximum(upper, 0.0)
    lower = np.minimum(lower, mean)
    upper = np.maximum(upper, mean)
    window = max(1, min(int(peak_window_steps), len(mean)))
    return Forecast(
        mean=mean,
        lower=lower,
        upper=upper,
        level=level,
        start=int(start),
        resolution_s=int(resolution_s),
        peak=float(mean[:window].max()) if len(mean) else float("nan"),
        peak_upper=float(upper[:window].max()) if len(mean) else float("nan"),
        method=method,
    )
