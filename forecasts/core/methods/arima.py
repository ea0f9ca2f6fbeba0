"""The ARIMA family: order selection, a numpy Kalman step, ARIMA, ARIMA with Fourier terms, MSTL + ARIMA."""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import norm

from forecasts.core.methods.base import DAY_S, WEEK_S, InsufficientHistory, Method, quiet_warnings

ORDER_GRID_PQ = [(p, q) for p in range(3) for q in range(3)]


def _estimate_arima(y: np.ndarray, order: tuple[int, int, int]):
    """(model, params) for a zero-mean ARIMA; Hannan-Rissanen when there is an ARMA part.

    Raises ValueError when the estimate is non-stationary or non-invertible (the caller skips it).
    """
    from statsmodels.tsa.arima.model import ARIMA

    model = ARIMA(y, order=order, trend="n")
    if order[0] == 0 and order[2] == 0:
        params = model.fit(return_params=True)  # only the innovation variance: closed form in effect
    else:
        params = model.fit(method="hannan_rissanen", return_params=True)
    return model, np.asarray(params, dtype=float)


def _aic(model, params) -> float:
    return float(-2.0 * model.loglike(params) + 2.0 * len(params))


def choose_d(y: np.ndarray) -> int:
    """KPSS level-stationarity test at 5 % (the auto_arima rule): 1 if it rejects, else 0."""
    from statsmodels.tsa.stattools import kpss

    if np.std(y) == 0:
        return 0
    ctx = quiet_warnings()
    try:
        _, p_value, *_ = kpss(y, regression="c", nlags="auto")
    except Exception:
        return 0
    finally:
        ctx.__exit__(None, None, None)
    return 1 if p_value < 0.05 else 0


def select_arima_order(y: np.ndarray, grid=ORDER_GRID_PQ) -> tuple[tuple[int, int, int], list[dict]]:
    """d by KPSS, then (p, q) in the grid by AIC; returns the best order and the AIC table (best first).

    ``y`` should already be demeaned when d = 0 (the models have no constant).
    """
    d = choose_d(y)
    y = y - y.mean() if d == 0 else y
    table = []
    ctx = quiet_warnings()
    try:
        for p, q in grid:
            order = (p, d, q)
            try:
                aic = _aic(*_estimate_arima(y, order))
            except Exception:  # a non-stationary or non-invertible candidate is skipped
                continue
            if math.isfinite(aic):
                table.append({"order": list(order), "aic": aic})
    finally:
        ctx.__exit__(None, None, None)
    table.sort(key=lambda row: row["aic"])
    if not table:
        table = [{"order": [0, 1, 0], "aic": math.nan}]
    return tuple(table[0]["order"]), table


class KalmanState:
    """The Kalman filter of a time-invariant state-space model, stepped in numpy.

    statsmodels' ``results.extend``/``get_forecast`` rebuild a model each call (~5-10 ms); the
    simulator calls the forecaster 36 x 24 times per simulated day, so the hourly step runs the
    same recursions directly on the fitted system matrices (checked against statsmodels in tests).
    """

    def __init__(self, results):
        ssm = results.model.ssm

        def matrix(name: str, ndim: int) -> np.ndarray:
            arr = np.asarray(ssm[name], dtype=float)  # time-invariant: statsmodels drops the time axis
            if arr.ndim > ndim:
                if arr.shape[-1] != 1:
                    raise ValueError(f"{name} varies over time; KalmanState needs a time-invariant model")
                arr = arr[..., 0]
            return arr

        self.Z = matrix("design", 2)[0].copy()
        self.d = float(matrix("obs_intercept", 1)[0])
        self.H = float(matrix("obs_cov", 2)[0, 0])
        self.T = matrix("transition", 2).copy()
        self.c = matrix("state_intercept", 1).copy()
        R = matrix("selection", 2)
        Q = matrix("state_cov", 2)
        self.RQR = R @ Q @ R.T
        self.a = np.asarray(results.predicted_state)[:, -1].copy()
        self.P = np.asarray(results.predicted_state_cov)[:, :, -1].copy()
        self.steady = False
        self.gain = None
        self._var_cache = None

    def update(self, values: np.ndarray) -> None:
        Z, T, c, RQR, H, d = self.Z, self.T, self.c, self.RQR, self.H, self.d
        a, P = self.a, self.P
        i, n = 0, len(values)
        while i < n and not self.steady:
            PZ = P @ Z
            F = Z @ PZ + H
            K = PZ / F
            a = a + K * (values[i] - d - Z @ a)
            P_new = T @ (P - np.outer(K, PZ)) @ T.T + RQR
            P_new = 0.5 * (P_new + P_new.T)
            # once the predicted covariance stops changing the gain is constant (steady state):
            # from then on only the state moves, a few vector operations per bin
            if np.allclose(P_new, P, rtol=1e-9, atol=1e-12 * max(1.0, float(np.abs(P).max()))):
                self.steady, self.gain = True, T @ K
                self._var_cache = None
            P = P_new
            a = c + T @ a
            i += 1
        if i < n:
            TK, TmTKZ = self.gain, T - np.outer(self.gain, Z)
            for value in values[i:]:
                a = c + TmTKZ @ a + TK * (value - d)
        self.a, self.P = a, P

    def forecast(self, h: int) -> tuple[np.ndarray, np.ndarray]:
        Z, T, c = self.Z, self.T, self.c
        a = self.a
        mean = np.empty(h)
        for j in range(h):
            mean[j] = self.d + Z @ a
            a = c + T @ a
        return mean, self._variances(h)

    def _variances(self, h: int) -> np.ndarray:
        """Forecast error variances; they depend on P only, so they are cached in steady state."""
        if self.steady and self._var_cache is not None and len(self._var_cache) >= h:
            return self._var_cache[:h]
        Z, T, RQR, H = self.Z, self.T, self.RQR, self.H
        P = self.P
        var = np.empty(h)
        for j in range(h):
            var[j] = Z @ P @ Z + H
            P = T @ P @ T.T + RQR
        var = np.maximum(var, 0.0)
        if self.steady:
            self._var_cache = var
        return var


class Arima(Method):
    """SageServe's load predictor: ARIMA on the series itself, order by AIC.

    d by KPSS and (p, q) in 0..2 by AIC on the last ``select_window_s`` seconds (Hannan-Rissanen
    estimates, exact Kalman log-likelihood); the chosen order is estimated on the last
    ``fit_window_s`` (demeaned when d = 0). Both windows are capped at ``max_fit_bins`` (1,440:
    one day at 1-minute resolution) to bound the fit time. ``update`` runs the Kalman filter over the new bins with
    the fitted parameters (no re-estimation). A scheduled refit re-estimates the parameters and
    re-selects the order every ``reselect_every`` refits (default 7: weekly with daily refits).
    """

    name = "arima"

    def __init__(
        self,
        resolution_s: int,
        select_window_s: int = DAY_S,
        fit_window_s: int = 2 * DAY_S,
        max_fit_bins: int = 1440,
        order: tuple[int, int, int] | None = None,
        reselect_every: int = 7,
        **params,
    ):
        super().__init__(resolution_s, **params)
        self.select_window = max(48, min(select_window_s // self.resolution_s, max_fit_bins))
        self.fit_window = max(48, min(fit_window_s // self.resolution_s, max_fit_bins))
        self.fixed_order = tuple(order) if order else None
        self.reselect_every = max(1, int(reselect_every))

    # subclasses model a seasonal mean and let the ARIMA handle what is left
    def _seasonal(self, start: int, n: int) -> np.ndarray:
        return np.zeros(n)

    def _fit_seasonal(self, y: np.ndarray, start: int) -> None:
        pass

    def fit(self, y, start, warm=None):
        y = np.asarray(y, dtype=float)
        if len(y) < 48:
            raise InsufficientHistory(f"{self.name} needs at least 48 bins, got {len(y)}")
        self._fit_seasonal(y, start)
        resid = y - self._seasonal(start, len(y))
        if self.fixed_order:
            candidates, self.order_table, self.fits_since_selection = [self.fixed_order], [], 0
        elif warm is not None and getattr(warm, "fits_since_selection", self.reselect_every) + 1 < self.reselect_every:
            candidates = [tuple(r["order"]) for r in warm.order_table] or [warm.order]
            self.order_table, self.fits_since_selection = warm.order_table, warm.fits_since_selection + 1
        else:
            _, self.order_table = select_arima_order(resid[-self.select_window :])
            candidates = [tuple(r["order"]) for r in self.order_table]
            self.fits_since_selection = 0
        window = resid[-self.fit_window :]
        results = None
        ctx = quiet_warnings()
        try:
            for order in candidates + [(0, 1, 0)]:  # the best order that estimates on the fit window
                self.mu = float(window.mean()) if order[1] == 0 else 0.0
                try:
                    model, params = _estimate_arima(window - self.mu, order)
                    results = model.filter(params, cov_type="none")
                except Exception:
                    continue
                break
        finally:
            ctx.__exit__(None, None, None)
        if results is None:
            raise InsufficientHistory(f"{self.name}: no ARIMA order could be estimated on this series")
        self.order, self.params, self.aic, self.results = order, params, float(results.aic), results
        self.state = KalmanState(results)
        self.end = start + len(y)

    def update(self, y_new):
        y_new = np.asarray(y_new, dtype=float)
        resid = y_new - self._seasonal(self.end, len(y_new)) - self.mu
        self.state.update(resid)
        self.end += len(y_new)

    def predict(self, h, level):
        mean, var = self.state.forecast(h)
        mean = mean + self.mu + self._seasonal(self.end, h)
        half = norm.ppf(0.5 + level / 2.0) * np.sqrt(var)
        return mean, mean - half, mean + half

    def describe(self):
        return {"method": self.name, "order": list(self.order), "aic": self.aic, "mean": self.mu}


class ArimaFourier(Arima):
    """Dynamic harmonic regression: Fourier terms for the daily (and, with two weeks of history,
    weekly) season fitted by least squares, ARIMA (order by AIC) on what is left.

    Two-step rather than joint MLE so a week of 1-minute data fits in well under a second; the
    interval ignores the uncertainty of the Fourier coefficients (small with thousands of bins).
    """

    name = "arima_fourier"

    def __init__(
        self,
        resolution_s: int,
        daily_terms: int = 8,
        weekly_terms: int = 3,
        weekly: str = "auto",
        history_window_s: int = 3 * WEEK_S,
        **params,
    ):
        super().__init__(resolution_s, **params)
        self.daily_terms = max(0, min(int(daily_terms), self.day // 2 - 1))
        self.weekly_terms = max(0, min(int(weekly_terms), 6))  # 7 would be the first daily harmonic
        self.weekly = weekly
        self.history_window = history_window_s // self.resolution_s

    def _design(self, start: int, n: int) -> np.ndarray:
        a = np.arange(start, start + n, dtype=float)
        cols = [np.ones(n)]
        for k in range(1, self.daily_terms + 1):
            w = 2 * np.pi * k * a / self.day
            cols += [np.sin(w), np.cos(w)]
        if self.use_weekly:
            for k in range(1, self.weekly_terms + 1):
                w = 2 * np.pi * k * a / self.week
                cols += [np.sin(w), np.cos(w)]
        return np.column_stack(cols)

    def _fit_seasonal(self, y, start):
        if self.weekly == "auto":
            self.use_weekly = len(y) >= 2 * self.week and self.weekly_terms > 0
        else:
            self.use_weekly = bool(self.weekly) and self.weekly_terms > 0
        y_fit = y[-self.history_window :]
        fit_start = start + len(y) - len(y_fit)
        X = self._design(fit_start, len(y_fit))
        # normal equations: the columns are near-orthogonal sines, so this is well conditioned and
        # far faster than numpy's SVD-based lstsq (which took ~0.3 s on 2,000 x 17 here)
        try:
            self.beta = np.linalg.solve(X.T @ X, X.T @ y_fit)
        except np.linalg.LinAlgError:
            self.beta, *_ = np.linalg.lstsq(X, y_fit, rcond=None)

    def _seasonal(self, start, n):
        return self._design(start, n) @ self.beta

    def describe(self):
        out = super().describe()
        out.update(daily_terms=self.daily_terms, weekly_terms=self.weekly_terms if self.use_weekly else 0)
        return out


class MstlArima(Arima):
    """MSTL decomposition (daily, and weekly with two weeks of history), ARIMA on trend+remainder.

    STL at 1-minute resolution with a 1440-bin period takes ~9 s for a week, so the decomposition is
    run on block means with at most 288 bins per day (5-minute blocks at 1-minute resolution) and
    the average of the last cycles of each seasonal component is interpolated back to the series' bins.
    """

    name = "mstl_arima"

    def __init__(
        self,
        resolution_s: int,
        max_bins_per_day: int = 288,
        weekly: str = "auto",
        history_window_s: int = 3 * WEEK_S,
        **params,
    ):
        super().__init__(resolution_s, **params)
        self.factor = max(1, math.ceil(self.day / max_bins_per_day))
        self.weekly = weekly
        self.history_window = history_window_s // self.resolution_s

    def _fit_seasonal(self, y, start):
        from statsmodels.tsa.seasonal import MSTL

        f = self.factor
        start = start + len(y) - len(y[-self.history_window :])
        y = y[-self.history_window :]
        offset = (-start) % f  # drop head bins so blocks align with absolute multiples of f
        n_blocks = (len(y) - offset) // f
        day_c = self.day // f
        if self.day % f:
            raise InsufficientHistory(f"{self.name}: {self.day} bins per day do not split into blocks of {f}")
        if n_blocks < 2 * day_c + 1:
            raise InsufficientHistory(f"{self.name} needs more than two days of history")
        blocks = y[offset : offset + n_blocks * f].reshape(n_blocks, f).mean(axis=1)
        first_block = (start + offset) // f
        week_c = 7 * day_c
        use_weekly = (self.weekly == "auto" and n_blocks > 2 * week_c) or self.weekly is True
        periods = (day_c, week_c) if use_weekly else (day_c,)
        ctx = quiet_warnings()
        try:
            res = MSTL(blocks, periods=periods).fit()
        finally:
            ctx.__exit__(None, None, None)
        seasonal = np.asarray(res.seasonal).reshape(n_blocks, -1)
        periods = periods[: seasonal.shape[1]]  # MSTL drops a period longer than half the series
        self.profiles = []
        for col, period in enumerate(periods):
            # average the component's last cycles (up to 7): the last cycle alone still carries the
            # noise of the day it was fitted on, which makes the residual ARIMA's intervals too narrow
            cycles = max(1, min(7, n_blocks // period))
            phase = (first_block + np.arange(n_blocks - cycles * period, n_blocks)) % period
            values = seasonal[n_blocks - cycles * period :, col]
            profile = np.bincount(phase, weights=values, minlength=period) / cycles
            self.profiles.append((period * f, profile))
        self.use_weekly = len(periods) > 1

    def _seasonal(self, start, n):
        a = np.arange(start, start + n, dtype=float)
        f = self.factor
        total = np.zeros(n)
        for period_bins, profile in self.profiles:
            centres = (np.arange(len(profile)) + 0.5) * f - 0.5
            total += np.interp(a % period_bins, centres, profile, period=period_bins)
        return total

    def describe(self):
        out = super().describe()
        out.update(block_bins=self.factor, weekly=self.use_weekly)
        return out
