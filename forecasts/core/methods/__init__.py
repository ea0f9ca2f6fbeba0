"""Forecasting methods (Django-free, statsmodels).

Every method works on a regular series of bins and has the same small interface:

    m = METHODS[name](resolution_s, **params)
    m.fit(y, start)        # y: 1-D float array, start: absolute bin number of y[0]
    m.update(y_new)        # append the next observations; never refits
    m.predict(h, level)    # -> (mean, lower, upper) for the h bins after the last observation

``IncrementalForecaster`` (incremental.py) wraps them with the history buffer, refit schedule and
the Forecast result. Intervals: statsmodels' analytic ones for the ARIMA family and Holt-Winters,
empirical quantiles of past errors at the same lead time for the naive methods.

Modules: ``base`` (the interface, ``InsufficientHistory``), ``empirical`` (moving average, naive, seasonal
naive), ``arima`` (the ARIMA family), ``holt_winters``, ``single`` (the single methods by name),
``combined`` (ensemble, log transform, built from single methods). ``METHODS``, the full registry, and
``make_method`` are here.
"""

from __future__ import annotations

from forecasts.core.methods.arima import (
    ORDER_GRID_PQ,
    Arima,
    ArimaFourier,
    KalmanState,
    MstlArima,
    choose_d,
    select_arima_order,
)
from forecasts.core.methods.base import DAY_S, WEEK_S, InsufficientHistory, Method
from forecasts.core.methods.combined import DEFAULT_ENSEMBLE, Ensemble, LogTransformed
from forecasts.core.methods.empirical import MovingAverage, Naive, SeasonalNaive
from forecasts.core.methods.holt_winters import HoltWinters
from forecasts.core.methods.single import SINGLE_METHODS

__all__ = [
    "DAY_S",
    "DEFAULT_ENSEMBLE",
    "METHODS",
    "ORDER_GRID_PQ",
    "WEEK_S",
    "Arima",
    "ArimaFourier",
    "Ensemble",
    "HoltWinters",
    "InsufficientHistory",
    "KalmanState",
    "LogTransformed",
    "Method",
    "MovingAverage",
    "MstlArima",
    "Naive",
    "SeasonalNaive",
    "choose_d",
    "make_method",
    "select_arima_order",
]

METHODS: dict[str, tuple[type, dict]] = {
    **SINGLE_METHODS,
    "arima_fourier_log": (LogTransformed, {"base": "arima_fourier"}),
    "mstl_arima_log": (LogTransformed, {"base": "mstl_arima"}),
    "ensemble": (Ensemble, {}),
}


def make_method(name: str, resolution_s: int, **params) -> Method:
    try:
        cls, defaults = METHODS[name]
    except KeyError:
        raise ValueError(f"unknown forecasting method {name!r}; choose from {', '.join(METHODS)}") from None
    return cls(resolution_s, **{**defaults, **params})
