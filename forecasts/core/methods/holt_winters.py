"""Additive Holt-Winters with damped trend and a daily season."""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from forecasts.core.methods.base import DAY_S, InsufficientHistory, Method, quiet_warnings


class HoltWinters(Method):
    """Additive Holt-Winters with damped trend and a daily season (ETS(A,Ad,A)).

    Parameters are estimated by statsmodels on the last ``fit_window_s``; ``update`` runs the
    smoothing recursions on the new observations with those parameters (no re-estimation).
    Scheduled refits keep the state and re-estimate only every ``reestimate_every`` refits
    (default 7: weekly with daily refits).
    Intervals: the ETS(A,Ad,A) analytic variance, sigma^2 * (1 + sum_{j<h} c_j^2) with
    c_j = alpha * (1 + beta * phi_j) + gamma * [j is a multiple of m], phi_j = phi + ... + phi^j
    (statsmodels' smoothing_trend beta is the "starred" weight: the ETS beta is alpha * beta).
    """

    name = "holt_winters"

    def __init__(
        self, resolution_s: int, fit_window_s: int = 3 * DAY_S, damped: bool = True, reestimate_every: int = 7, **params
    ):
        super().__init__(resolution_s, **params)
        self.fit_window = fit_window_s // self.resolution_s
        self.damped = damped
        self.m = self.day
        self.reestimate_every = max(1, int(reestimate_every))

    def fit(self, y, start, warm=None):
        from statsmodels.tsa.holtwinters import ExponentialSmoothing

        y = np.asarray(y, dtype=float)
        end = start + len(y)
        if warm is not None and warm.end == end and warm.fits_since_estimation + 1 < self.reestimate_every:
            # a scheduled refit between weekly re-estimations: the recursions have already absorbed
            # every bin, so keep the state and the parameters (re-estimating costs ~0.4-1 s per series)
            self.__dict__.update({k: v for k, v in warm.__dict__.items() if k != "seas"})
            self.seas = warm.seas.copy()
            self.fits_since_estimation = warm.fits_since_estimation + 1
            return
        self.fits_since_estimation = 0
        y = y[-self.fit_window :]
        if len(y) < 2 * self.m + 1:
            raise InsufficientHistory(f"{self.name} needs more than two days of history")
        ctx = quiet_warnings()
        try:
            res = ExponentialSmoothing(
                y,
                trend="add",
                damped_trend=self.damped,
                seasonal="add",
                seasonal_periods=self.m,
                initialization_method="heuristic",
            ).fit()
        finally:
            ctx.__exit__(None, None, None)
        p = res.params
        self.alpha = float(p["smoothing_level"])
        self.beta = float(p["smoothing_trend"])
        self.gamma = float(p["smoothing_seasonal"])
        self.phi = float(p["damping_trend"]) if self.damped else 1.0
        self.level = float(res.level[-1])
        self.trend = float(res.trend[-1])
        self.seas = np.asarray(res.season[-self.m :], dtype=float).copy()  # s_{n-m+1} .. s_n
        self.ptr = 0  # index in self.seas of the oldest seasonal state (used next)
        # residual variance as R's forecast::ets: SSE / (n - number of parameters), counting the
        # initial states (level, trend, m - 1 seasons) since they were read off the data
        n_params = (4 if self.damped else 3) + 2 + (self.m - 1)
        dof = len(y) - n_params if len(y) > 2 * n_params else len(y)
        self.sigma2 = float(res.sse) / dof
        self.end = end

    def update(self, y_new):
        a, b, g, phi = self.alpha, self.beta, self.gamma, self.phi
        level, trend, seas, ptr, m = self.level, self.trend, self.seas, self.ptr, self.m
        for value in np.asarray(y_new, dtype=float):
            s_old = seas[ptr]
            prev_level, prev_trend = level, trend
            level = a * (value - s_old) + (1 - a) * (prev_level + phi * prev_trend)
            trend = b * (level - prev_level) + (1 - b) * phi * prev_trend
            seas[ptr] = g * (value - prev_level - phi * prev_trend) + (1 - g) * s_old
            ptr = (ptr + 1) % m
        self.level, self.trend, self.ptr = level, trend, ptr
        self.end += len(y_new)

    def predict(self, h, level):
        j = np.arange(1, h + 1)
        if self.phi == 1.0:
            phi_j = j.astype(float)
        else:
            phi_j = np.cumsum(self.phi**j)
        seasonal = self.seas[(self.ptr + j - 1) % self.m]
        mean = self.level + phi_j * self.trend + seasonal
        c = self.alpha * (1 + self.beta * phi_j) + self.gamma * ((j % self.m) == 0)
        var = self.sigma2 * (1 + np.concatenate([[0.0], np.cumsum(c[:-1] ** 2)]))
        z = norm.ppf(0.5 + level / 2.0)
        half = z * np.sqrt(var)
        return mean, mean - half, mean + half

    def describe(self):
        return {"method": self.name, "alpha": self.alpha, "beta": self.beta, "gamma": self.gamma, "phi": self.phi}
