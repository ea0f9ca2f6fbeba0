"""Arrival times for the stream kinds: renewal processes (Poisson = exponential gaps, Gamma gaps with a
target coefficient of variation) and a batch dump."""

from __future__ import annotations

import math

import numpy as np


def renewal(rng: np.random.Generator, *, rate: float, cv: float | None, start_s: float,
            duration_s: float | None, requests: int | None) -> np.ndarray:
    """Arrival times of a renewal process with mean gap 1/rate, first arrival at ``start_s``.

    ``cv=None`` draws exponential gaps (Poisson); otherwise Gamma(shape 1/cv^2, scale cv^2/rate), whose mean is
    1/rate and whose coefficient of variation is cv. Bounded by ``requests`` or by ``duration_s`` (arrivals in
    [start_s, start_s + duration_s)).
    """
    def gaps(n: int) -> np.ndarray:
        if cv is None:
            return rng.exponential(1.0 / rate, size=n)
        shape = 1.0 / (cv * cv)
        return rng.gamma(shape, 1.0 / (rate * shape), size=n)

    if requests is not None:
        g = gaps(requests - 1)
        return start_s + np.concatenate([[0.0], np.cumsum(g)])
    assert duration_s is not None
    expected = rate * duration_s
    chunk = int(expected + 6 * math.sqrt(expected) * max(cv or 1.0, 1.0) + 16)
    times = [np.zeros(1)]
    end = 0.0
    while end < duration_s:
        t = end + np.cumsum(gaps(chunk))
        times.append(t)
        end = float(t[-1])
    out = np.concatenate(times)
    return start_s + out[out < duration_s]


def batch(requests: int, at_s: float) -> np.ndarray:
    return np.full(requests, float(at_s))
