"""The forecaster a simulator calls every simulated hour.

    f = IncrementalForecaster("arima_fourier", resolution_s=300)
    f.fit(history)                 # values of the bins before the first decision time
    fc = f.forecast(12)            # Forecast(mean, lower, upper, peak, peak_upper) for the next hour
    f.update(last_hour_values)     # the 12 bins just observed; no refit (state is extended)
    fc = f.forecast(12)
    ...                            # a full refit happens by itself every refit_every_s (default daily)

It only ever sees what it has been given, and always forecasts the bins right after the last one
given, so a caller that feeds it bins before the decision time cannot leak the future.
If the chosen method cannot fit the history yet (e.g. Holt-Winters on one day), it falls back to
``fallback`` (a moving average, or the last value when even that is too short) and retries the real
method every hour (one peak window) until it fits; ``fallback_reason`` says why.
"""

from __future__ import annotations

import numpy as np

from forecasts.core.methods import WEEK_S, InsufficientHistory, make_method
from forecasts.core.result import Forecast, make_forecast


class IncrementalForecaster:
    def __init__(
        self,
        method: str = "arima_fourier",
        resolution_s: int = 300,
        *,
        level: float = 0.9,
        refit_every_s: int | None = 86400,
        history_s: int = 3 * WEEK_S,
        peak_window_s: int = 3600,
        fallback: str = "moving_average",
        nonnegative: bool = True,
        **params,
    ):
        if not 0 < level < 1:
            raise ValueError("level must be between 0 and 1, e.g. 0.9")
        self.method_name = method
        self.resolution_s = int(resolution_s)
        self.level = float(level)
        self.refit_every = None if not refit_every_s else max(1, int(refit_every_s) // self.resolution_s)
        self.history_bins = max(1, int(history_s) // self.resolution_s)
        self.peak_window = max(1, int(round(peak_window_s / self.resolution_s)))
        self.fallback = fallback
        self.nonnegative = nonnegative
        self.params = params
        make_method(method, self.resolution_s, **params)  # validate name and parameters now
        self.n_fits = 0
        self.n_updates = 0
        self.fallback_reason = ""

    # ------------------------------------------------------------------ public API
    def fit(self, values, start: int = 0) -> IncrementalForecaster:
        """Fit on ``values`` (bins ``start`` .. ``start+len-1``); later calls continue from there."""
        values = np.asarray(values, dtype=float)
        if values.ndim != 1 or len(values) == 0:
            raise ValueError("fit needs a non-empty 1-D array of bin values")
        if not np.all(np.isfinite(values)):
            raise ValueError("fit values contain NaN or infinity; fill empty bins with 0 first")
        self.history = values[-self.history_bins :].copy()
        self.end = int(start) + len(values)
        self._refit()
        return self

    def update(self, values) -> None:
        """Append the next observed bins (in order). Refits only when the schedule says so."""
        values = np.atleast_1d(np.asarray(values, dtype=float))
        if len(values) == 0:
            return
        if not np.all(np.isfinite(values)):
            raise ValueError("update values contain NaN or infinity")
        self.history = np.concatenate([self.history, values])[-self.history_bins :]
        self.end += len(values)
        self.n_updates += 1
        self.model.update(values)  # cheap; a warm refit below may reuse this state
        since = self.end - self.fitted_end
        if self.refit_every and since >= self.refit_every:
            self._refit()
        elif self.fallback_reason and since >= self.peak_window:
            self._refit()  # on the fallback: try the real method again every hour as history grows

    def forecast(self, steps: int | None = None) -> Forecast:
        """The next ``steps`` bins (default: one peak window, i.e. the next hour)."""
        steps = int(steps or self.peak_window)
        if steps < 1:
            raise ValueError("steps must be at least 1")
        mean, lower, upper = self.model.predict(steps, self.level)
        return make_forecast(
            mean,
            lower,
            upper,
            level=self.level,
            start=self.end,
            resolution_s=self.resolution_s,
            peak_window_steps=self.peak_window,
            method=self.used_method,
            nonnegative=self.nonnegative,
        )

    def describe(self) -> dict:
        out = dict(self.model.describe())
        out.update(requested=self.method_name, used=self.used_method, fits=self.n_fits, updates=self.n_updates)
        if self.fallback_reason:
            out["fallback_reason"] = self.fallback_reason
        return out

    # ------------------------------------------------------------------ internals
    def _refit(self) -> None:
        start = self.end - len(self.history)
        model = make_method(self.method_name, self.resolution_s, **self.params)
        try:
            if np.ptp(self.history) == 0 and self.method_name not in ("naive", "moving_average"):
                raise InsufficientHistory("the series is constant")
            previous = getattr(self, "model", None)
            warm = previous if previous is not None and self.used_method == self.method_name else None
            model.fit(self.history, start, warm=warm)
            self.used_method, self.fallback_reason = self.method_name, ""
        except Exception as exc:  # noqa: BLE001 - a simulation must not die on one series' fit
            if not isinstance(exc, (InsufficientHistory, np.linalg.LinAlgError, ValueError)):
                exc = RuntimeError(f"{type(exc).__name__}: {exc}")
            model = make_method(self.fallback, self.resolution_s)
            try:
                model.fit(self.history, start)
            except InsufficientHistory:
                model = make_method("naive", self.resolution_s)
                model.fit(np.concatenate([np.repeat(self.history[:1], 3), self.history]), start - 3)
            self.used_method, self.fallback_reason = model.name, f"{self.method_name}: {exc}"
        self.model = model
        self.fitted_end = self.end
        self.n_fits += 1
