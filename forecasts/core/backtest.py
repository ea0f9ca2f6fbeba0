"""Rolling-origin backtests, error metrics, leaderboards and automatic method choice.

The backtest drives the same ``IncrementalForecaster`` the simulator uses: fit on the first
``initial`` bins, then at every origin forecast ``horizon`` bins, reveal the next ``every`` bins with
``update`` (refitting daily), and so on. Forecasts at an origin depend only on bins before it.

Metrics (over every origin x lead cell unless stated):
- mape: mean |e| / actual over cells whose actual > 0, in %
- smape: mean 2|e| / (|actual| + |forecast|), in % (cells where both are 0 count as 0)
- wmape: sum |e| / sum actual, in %
- mase: MAE / in-sample MAE of the one-step naive forecast on the initial fit window (Hyndman)
- rel_mae: MAE / MAE of the naive forecast (last value, held flat) from the same origins: < 1 beats
  "tomorrow = now"; a random walk gives ~1 for any honest method
- coverage: share of actuals inside [lower, upper] (compare with the nominal level)
- peak_error: mean |forecast peak - actual peak| / actual peak over the peak window, in %
- peak_bias: mean signed version (negative = under-provisioning)
- peak_upper_coverage: share of origins whose actual peak <= forecast peak_upper
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from forecasts.core.incremental import IncrementalForecaster
from forecasts.core.methods import METHODS, InsufficientHistory

METRIC_NAMES = (
    "mape",
    "smape",
    "wmape",
    "mase",
    "rel_mae",
    "coverage",
    "peak_error",
    "peak_bias",
    "peak_upper_coverage",
)
LOWER_IS_BETTER = {"mape", "smape", "wmape", "mase", "rel_mae", "peak_error"}
DEFAULT_CANDIDATES = (
    "naive",
    "seasonal_naive_daily",
    "seasonal_naive_weekly",
    "moving_average",
    "arima",
    "arima_fourier",
    "mstl_arima",
    "holt_winters",
    "ensemble",
)


@dataclass
class BacktestResult:
    method: str
    used_methods: list[str]
    origins: np.ndarray  # absolute bin of each origin
    actual: np.ndarray  # origins x horizon
    mean: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    peak: np.ndarray
    peak_upper: np.ndarray
    actual_peak: np.ndarray
    naive: np.ndarray  # origins x horizon, last value held flat
    scale: float  # in-sample one-step naive MAE
    every: int
    level: float
    seconds: float
    metrics: dict = field(default_factory=dict)

    def per_origin_wmape(self) -> np.ndarray:
        err = np.abs(self.mean - self.actual).sum(axis=1)
        denom = np.abs(self.actual).sum(axis=1)
        return np.where(denom > 0, 100.0 * err / np.where(denom > 0, denom, 1), np.nan)

    def mae_by_lead(self) -> np.ndarray:
        return np.abs(self.mean - self.actual).mean(axis=0)

    def stitched(self) -> dict:
        """For each origin, the first ``every`` leads: a continuous actual-vs-forecast path."""
        k = min(self.every, self.actual.shape[1])
        bins = (self.origins[:, None] + np.arange(k)[None, :]).ravel()
        return {
            "bin": bins,
            "actual": self.actual[:, :k].ravel(),
            "mean": self.mean[:, :k].ravel(),
            "lower": self.lower[:, :k].ravel(),
            "upper": self.upper[:, :k].ravel(),
        }


def compute_metrics(actual, mean, lower, upper, naive, scale, peak, peak_upper, actual_peak) -> dict:
    actual = np.asarray(actual, dtype=float)
    err = mean - actual
    abs_err = np.abs(err)
    positive = actual > 0
    out = {}
    out["mape"] = float(100 * np.mean(abs_err[positive] / actual[positive])) if positive.any() else math.nan
    denom = np.abs(actual) + np.abs(mean)
    out["smape"] = float(100 * np.mean(np.where(denom > 0, 2 * abs_err / np.where(denom > 0, denom, 1), 0.0)))
    total = np.abs(actual).sum()
    out["wmape"] = float(100 * abs_err.sum() / total) if total > 0 else math.nan
    mae = float(abs_err.mean())
    out["mase"] = mae / scale if scale > 0 else math.nan
    naive_mae = float(np.abs(naive - actual).mean())
    out["rel_mae"] = mae / naive_mae if naive_mae > 0 else math.nan
    out["coverage"] = float(np.mean((actual >= lower) & (actual <= upper)))
    ok = actual_peak > 0
    if ok.any():
        rel = (peak[ok] - actual_peak[ok]) / actual_peak[ok]
        out["peak_error"] = float(100 * np.mean(np.abs(rel)))
        out["peak_bias"] = float(100 * np.mean(rel))
    else:
        out["peak_error"] = out["peak_bias"] = math.nan
    out["peak_upper_coverage"] = float(np.mean(actual_peak <= peak_upper))
    out["mae"] = mae
    return out


def backtest(
    y,
    method: str,
    resolution_s: int,
    *,
    horizon: int,
    initial: int,
    every: int | None = None,
    start: int = 0,
    level: float = 0.9,
    refit_every_s: int | None = 86400,
    peak_window_s: int = 3600,
    **params,
) -> BacktestResult:
    """Rolling-origin backtest of one method on one series (bins ``start`` .. ``start+len(y)-1``)."""
    y = np.asarray(y, dtype=float)
    n = len(y)
    every = int(every or horizon)
    if initial < 2 or initial + horizon > n:
        raise InsufficientHistory(f"backtest needs initial ({initial}) + horizon ({horizon}) <= series length ({n})")
    t0 = time.perf_counter()
    forecaster = IncrementalForecaster(
        method, resolution_s, level=level, refit_every_s=refit_every_s, peak_window_s=peak_window_s, **params
    )
    forecaster.fit(y[:initial], start=start)
    window = forecaster.peak_window
    rows = {k: [] for k in ("origin", "mean", "lower", "upper", "peak", "peak_upper")}
    used = []
    t = initial
    while t + horizon <= n:
        fc = forecaster.forecast(horizon)
        rows["origin"].append(start + t)
        rows["mean"].append(fc.mean)
        rows["lower"].append(fc.lower)
        rows["upper"].append(fc.upper)
        rows["peak"].append(fc.peak)
        rows["peak_upper"].append(fc.peak_upper)
        used.append(forecaster.used_method)
        nxt = min(t + every, n)
        forecaster.update(y[t:nxt])
        t = nxt
    origins = np.asarray(rows["origin"]) - start
    idx = origins[:, None] + np.arange(horizon)[None, :]
    actual = y[idx]
    naive = np.repeat(y[origins - 1][:, None], horizon, axis=1)
    train = y[:initial]
    scale = float(np.mean(np.abs(np.diff(train)))) if initial > 1 else math.nan
    actual_peak = actual[:, : min(window, horizon)].max(axis=1)
    result = BacktestResult(
        method=method,
        used_methods=used,
        origins=origins + start,
        actual=actual,
        mean=np.vstack(rows["mean"]),
        lower=np.vstack(rows["lower"]),
        upper=np.vstack(rows["upper"]),
        peak=np.asarray(rows["peak"]),
        peak_upper=np.asarray(rows["peak_upper"]),
        actual_peak=actual_peak,
        naive=naive,
        scale=scale,
        every=every,
        level=level,
        seconds=time.perf_counter() - t0,
    )
    result.metrics = compute_metrics(
        actual, result.mean, result.lower, result.upper, naive, scale, result.peak, result.peak_upper, actual_peak
    )
    return result


def default_initial(n: int, resolution_s: int, horizon: int, backtest_s: int = 2 * 86400) -> int:
    """Hold out the last ``backtest_s`` (at most half the series) for the backtest."""
    hold = min(backtest_s // resolution_s, n // 2)
    return max(2, n - max(hold, horizon))


def leaderboard(
    y,
    resolution_s: int,
    *,
    horizon: int,
    initial: int | None = None,
    every: int | None = None,
    candidates=DEFAULT_CANDIDATES,
    metric: str = "wmape",
    level: float = 0.9,
    start: int = 0,
    progress=None,
) -> tuple[list[dict], dict[str, BacktestResult]]:
    """Backtest every candidate; rows sorted best first by ``metric`` (skipped methods last)."""
    if metric not in METRIC_NAMES or metric not in LOWER_IS_BETTER:
        raise ValueError(f"rank metric must be one of {', '.join(sorted(LOWER_IS_BETTER))}")
    for name in candidates:
        if name not in METHODS:
            raise ValueError(f"unknown forecasting method {name!r}; choose from {', '.join(METHODS)}")
    y = np.asarray(y, dtype=float)
    if initial is None:
        initial = default_initial(len(y), resolution_s, horizon)
    rows, results = [], {}
    for i, name in enumerate(candidates):
        if progress:
            progress(i / len(candidates), f"backtesting {name}")
        try:
            res = backtest(
                y, name, resolution_s, horizon=horizon, initial=initial, every=every, level=level, start=start
            )
        except InsufficientHistory as exc:
            rows.append({"method": name, "skipped": str(exc)})
            continue
        if res.used_methods and res.used_methods[0] != name:  # could not fit the initial window
            rows.append({"method": name, "skipped": f"cannot fit the first {initial} bins of history"})
            continue
        results[name] = res
        rows.append(
            {
                "method": name,
                **res.metrics,
                "origins": len(res.origins),
                "seconds": res.seconds,
                "fallback_origins": sum(u != name for u in res.used_methods),
            }
        )
    scored = [r for r in rows if "skipped" not in r and math.isfinite(r.get(metric, math.nan))]
    scored.sort(key=lambda r: (r[metric], r.get("peak_error", math.inf)))
    for rank, r in enumerate(scored, 1):
        r["rank"] = rank
    return scored + [r for r in rows if r not in scored], results


def best_method(rows: list[dict]) -> str | None:
    ranked = [r for r in rows if r.get("rank") == 1]
    return ranked[0]["method"] if ranked else None
