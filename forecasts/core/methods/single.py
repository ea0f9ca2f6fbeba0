"""The single methods by name: every method that is not built from other methods.

The combined methods (combined.py) take their members and bases from here; the full registry
(``METHODS``, ``make_method`` in the package) adds the combined ones on top.
"""

from __future__ import annotations

from forecasts.core.methods.arima import Arima, ArimaFourier, MstlArima
from forecasts.core.methods.base import Method
from forecasts.core.methods.empirical import MovingAverage, Naive, SeasonalNaive
from forecasts.core.methods.holt_winters import HoltWinters

SINGLE_METHODS: dict[str, tuple[type, dict]] = {
    "naive": (Naive, {}),
    "seasonal_naive_daily": (SeasonalNaive, {"season": "daily"}),
    "seasonal_naive_weekly": (SeasonalNaive, {"season": "weekly"}),
    "moving_average": (MovingAverage, {}),
    "arima": (Arima, {}),
    "arima_fourier": (ArimaFourier, {}),
    "mstl_arima": (MstlArima, {}),
    "holt_winters": (HoltWinters, {}),
}


def make_single(name: str, resolution_s: int, *, role: str = "method", **params) -> Method:
    """A single method by name; ``role`` names what it is for in the error (e.g. "ensemble member")."""
    try:
        cls, defaults = SINGLE_METHODS[name]
    except KeyError:
        raise ValueError(f"unknown forecasting {role} {name!r}; it must be a single method, one of "
                         f"{', '.join(SINGLE_METHODS)}") from None
    return cls(resolution_s, **{**defaults, **params})
