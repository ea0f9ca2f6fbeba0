"""One series, end to end: backtest the candidates, pick the best, forecast past the end.

Django-free; the forecasts app calls ``analyse_series`` once per series (one job each) and stores
the returned JSON-able dict. ``metrics_at_horizon`` re-scores a stored result for the first ``k``
leads (the page's horizon selector) without re-running anything.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from forecasts.core.backtest import (
    DEFAULT_CANDIDATES,
    LOWER_IS_BETTER,
    compute_metrics,
    default_initial,
    leaderboard,
)
from forecasts.core.incremental import IncrementalForecaster
from forecasts.core.methods import METHODS

REFERENCE = "naive"  # always backtested too, so every table has "tomorrow = now" to beat


@dataclass(frozen=True)
class SeriesOptions:
    resolution_s: int = 300
    method: str = "auto"
    candidates: tuple[str, ...] = DEFAULT_CANDIDATES
    horizon_s: int = 3600
    level: float = 0.9
    backtest_s: int = 2 * 86400
    every_s: int = 3600  # one origin per hour, as the simulator's hourly decisions
    rank_metric: str = "wmape"
    peak_window_s: int = 3600

    def validate(self) -> None:
        if self.method != "auto" and self.method not in METHODS:
            raise ValueError(f"method: unknown {self.method!r}; use auto or one of {', '.join(METHODS)}")
        for name in self.candidates:
            if name not in METHODS:
                raise ValueError(f"candidates: unknown method {name!r}")
        if self.horizon_s < self.resolution_s:
            raise ValueError("horizon: shorter than one bin; make it at least the resolution")
        if not 0.5 <= self.level < 1:
            raise ValueError("level: use a probability between 0.5 and 0.99, e.g. 0.9")
        if self.rank_metric not in LOWER_IS_BETTER:
            raise ValueError(f"rank_metric: use one of {', '.join(sorted(LOWER_IS_BETTER))}")


def _round(values, digits: int = 5):
    arr = np.asarray(values, dtype=float)
    if arr.ndim == 0:
        v = float(arr)
        return None if not math.isfinite(v) else float(f"{v:.{digits}g}")
    return [_round(v, digits) for v in arr]


def analyse_series(y, options: SeriesOptions, progress=None) -> dict:
    """Backtest, choose, forecast. ``progress`` is a plain ``fn(fraction, message)``."""
    options.validate()
    y = np.asarray(y, dtype=float)
    res = options.resolution_s
    horizon = max(1, options.horizon_s // res)
    every = max(1, options.every_s // res)
    n = len(y)
    initial = default_initial(n, res, horizon, options.backtest_s)
    if options.method == "auto":
        candidates = tuple(options.candidates)
    else:
        candidates = tuple(dict.fromkeys([options.method, REFERENCE]))

    def sub_progress(fraction, message):
        if progress:
            progress(0.9 * fraction, message)

    rows, results = ([], {})
    if initial + horizon <= n and initial >= 2:
        rows, results = leaderboard(
            y,
            res,
            horizon=horizon,
            initial=initial,
            every=every,
            candidates=candidates,
            metric=options.rank_metric,
            level=options.level,
            progress=sub_progress,
        )
    best = next((r["method"] for r in rows if r.get("rank") == 1), None)
    if options.method == "auto":
        chosen = best or "moving_average"
    else:
        chosen = options.method
    if progress:
        progress(0.92, f"fitting {chosen} on the whole series")
    forecaster = IncrementalForecaster(chosen, res, level=options.level, peak_window_s=options.peak_window_s)
    forecaster.fit(y)
    future = forecaster.forecast(horizon)
    methods = {}
    for name, result in results.items():
        methods[name] = {
            "origins": [int(o) for o in result.origins],
            "mean": _round(result.mean),
            "lower": _round(result.lower),
            "upper": _round(result.upper),
            "peak": _round(result.peak),
            "peak_upper": _round(result.peak_upper),
            "per_origin_wmape": _round(result.per_origin_wmape()),
            "mae_by_lead": _round(result.mae_by_lead()),
            "used": sorted(set(result.used_methods)),
        }
    return {
        "resolution_s": res,
        "horizon_steps": horizon,
        "every_steps": every,
        "level": options.level,
        "peak_window_steps": forecaster.peak_window,
        "n_bins": n,
        "initial": initial,
        "rank_metric": options.rank_metric,
        "chosen": chosen,
        "used": forecaster.used_method,  # differs from chosen when the history is too short for it
        "best": best,
        "leaderboard": [{k: (_round(v) if isinstance(v, float) else v) for k, v in r.items()} for r in rows],
        "values": _round(y, 6),
        "methods": methods,
        "forecast": future.as_dict(digits=5),
        "model": forecaster.describe(),
    }


def metrics_at_horizon(result: dict, method: str, steps: int) -> dict:
    """Metrics of a stored backtest over the first ``steps`` leads of every origin."""
    data = result["methods"][method]
    y = np.asarray(result["values"], dtype=float)
    origins = np.asarray(data["origins"], dtype=int)
    k = max(1, min(int(steps), result["horizon_steps"]))
    mean = np.asarray(data["mean"], dtype=float)[:, :k]
    lower = np.asarray(data["lower"], dtype=float)[:, :k]
    upper = np.asarray(data["upper"], dtype=float)[:, :k]
    actual = y[origins[:, None] + np.arange(k)[None, :]]
    naive = np.repeat(y[origins - 1][:, None], k, axis=1)
    initial = result["initial"]
    scale = float(np.mean(np.abs(np.diff(y[:initial])))) if initial > 1 else math.nan
    window = min(k, result["peak_window_steps"])
    return compute_metrics(
        actual,
        mean,
        lower,
        upper,
        naive,
        scale,
        mean[:, :window].max(axis=1),
        upper[:, :window].max(axis=1),
        actual[:, :window].max(axis=1),
    )
