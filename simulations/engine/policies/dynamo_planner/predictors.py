"""The load predictors of NVIDIA Dynamo's SLA planner: constant, ARIMA, Kalman. Pure (numpy, statsmodels).

Read from ai-dynamo/dynamo ``components/src/dynamo/planner/utils/load_predictor.py`` (``BasePredictor``: a NaN
observation counts as 0; ``ConstantPredictor``: the last value; ``ARIMAPredictor``: the last ``window_size`` = 100
points, the last value until ``minimum_data_points`` = 5; ``KalmanPredictor``: a local linear trend, state [level,
trend], F = [[1, 1], [0, 1]], H = [1, 0], P0 = 1000 I, R = kalman_r, Q = diag(kalman_q_level, kalman_q_trend),
initialised at the first observation, one predict + update per observation, the one-step forecast cached until the
next observation) and ``components/src/dynamo/planner/defaults.py`` ``SLAPlannerDefaults`` lines 78-84
(load_predictor "arima", kalman_q_level 1.0, kalman_q_trend 0.1, kalman_r 10.0, kalman_min_points 5).

Dynamo's ARIMA is pmdarima's ``auto_arima`` (order chosen by AIC every interval); ours fits statsmodels' ARIMA of a
fixed ``order`` (default (1, 1, 1)) and falls back to the last value when a fit fails: order selection is not
modelled (stated in docs/autoscalers.md).
"""

from __future__ import annotations

import math
import warnings

import numpy as np


class ConstantPredictor:
    def __init__(self) -> None:
        self.data: list[float] = []

    def add(self, value: float) -> None:
        self.data.append(0.0 if math.isnan(value) else float(value))

    def last(self) -> float:
        return self.data[-1] if self.data else 0.0

    def predict(self) -> float:
        return self.last()


class ARIMAPredictor(ConstantPredictor):
    def __init__(self, window_size: int = 100, min_points: int = 5, order: tuple = (1, 1, 1)) -> None:
        super().__init__()
        self.window_size = int(window_size)
        self.min_points = int(min_points)
        self.order = tuple(order)

    def add(self, value: float) -> None:
        super().add(value)
        if len(self.data) > self.window_size:
            self.data = self.data[-self.window_size:]

    def predict(self) -> float:
        if len(self.data) < self.min_points:
            return self.last()
        if np.ptp(self.data) == 0:
            return self.last()
        from statsmodels.tsa.arima.model import ARIMA

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = ARIMA(np.asarray(self.data, dtype=float), order=self.order).fit()
                value = float(fit.forecast(1)[0])
        except (ValueError, np.linalg.LinAlgError):
            return self.last()
        return value if math.isfinite(value) else self.last()


class KalmanPredictor(ConstantPredictor):
    def __init__(self, q_level: float = 1.0, q_trend: float = 0.1, r: float = 10.0, min_points: int = 5) -> None:
        super().__init__()
        self.min_points = int(min_points)
        self.F = np.array([[1.0, 1.0], [0.0, 1.0]])
        self.H = np.array([1.0, 0.0])
        self.Q = np.diag([max(1e-12, q_level), max(1e-12, q_trend)])
        self.R = max(1e-9, float(r))
        self.x = np.zeros(2)
        self.P = np.eye(2) * 1000.0
        self.initialised = False
        self.cached: float | None = None

    def _predict_state(self) -> None:
        self.x = self.F @ self.x
        self.P = self.F @ self.P @ self.F.T + self.Q

    def add(self, value: float) -> None:
        super().add(value)
        z = self.data[-1]
        if not self.initialised:
            self.x = np.array([z, 0.0])
            self.initialised = True
        else:
            if self.cached is None:
                self._predict_state()
            y = z - float(self.x[0])  # H x with H = [1, 0]
            s = float(self.P[0, 0]) + self.R  # H P H^T + R
            k = self.P[:, 0] / s  # P H^T / S
            self.x = self.x + k * y
            self.P = (np.eye(2) - np.outer(k, self.H)) @ self.P
        self.cached = None

    def predict(self) -> float:
        if not self.initialised:
            return self.last()
        if self.cached is None:
            self._predict_state()
            self.cached = float(self.x[0])
        return self.cached


def make_predictor(name: str, params: dict | None = None):
    p = params or {}
    if name == "constant":
        return ConstantPredictor()
    if name == "arima":
        return ARIMAPredictor(int(p.get("arima_window", 100)), int(p.get("min_points", 5)),
                              tuple(p.get("arima_order", (1, 1, 1))))
    if name == "kalman":
        return KalmanPredictor(float(p.get("kalman_q_level", 1.0)), float(p.get("kalman_q_trend", 0.1)),
                               float(p.get("kalman_r", 10.0)), int(p.get("kalman_min_points", 5)))
    raise ValueError(f"unknown load predictor {name!r}; use constant, arima or kalman")
