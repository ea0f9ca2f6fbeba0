"""The interface every forecasting method implements, and the helpers they share."""

from __future__ import annotations

import warnings

import numpy as np

DAY_S = 86400
WEEK_S = 7 * DAY_S


class InsufficientHistory(ValueError):
    """The series is too short for this method (e.g. a weekly seasonal naive on three days)."""


def quiet_warnings():
    """Enter a warnings-ignoring context; the caller exits it with ``ctx.__exit__(None, None, None)``."""
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("ignore")
    return ctx


class Method:
    name = "base"

    def __init__(self, resolution_s: int, **params):
        if params:
            raise TypeError(f"{self.name}: unknown parameters {sorted(params)}")
        self.resolution_s = int(resolution_s)
        self.day = max(1, DAY_S // self.resolution_s)
        self.week = 7 * self.day
        self.end = 0  # absolute bin number after the last observation

    # subclasses implement these
    def fit(self, y: np.ndarray, start: int, warm=None) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def update(self, y_new: np.ndarray) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def predict(self, h: int, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
        raise NotImplementedError

    def describe(self) -> dict:
        return {"method": self.name}
