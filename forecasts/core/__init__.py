"""Django-free forecasting core: series building, methods, incremental forecaster, backtests.

Never import Django here: the simulator and the benchmark use this package directly.
"""

from forecasts.core.backtest import BacktestResult, backtest, best_method, compute_metrics, leaderboard
from forecasts.core.incremental import IncrementalForecaster
from forecasts.core.methods import METHODS, InsufficientHistory, make_method
from forecasts.core.result import Forecast
from forecasts.core.series import METRICS, build_series, parse_duration, parse_resolution

__all__ = [
    "BacktestResult",
    "Forecast",
    "IncrementalForecaster",
    "InsufficientHistory",
    "METHODS",
    "METRICS",
    "backtest",
    "best_method",
    "build_series",
    "compute_metrics",
    "leaderboard",
    "make_method",
    "parse_duration",
    "parse_resolution",
]
