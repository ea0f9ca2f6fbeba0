"""M/M/R queues with Erlang-C waiting time (paper Eqs. 1-2; spec section 6.2). Django-free."""

from __future__ import annotations

import math


def erlang_c(c: int, a: float) -> float:
    """Probability that an arrival waits in an M/M/c queue with offered load ``a = lambda / mu`` Erlangs.

    Eq. (2), computed through the numerically stable Erlang-B recursion; 1.0 when unstable (a >= c)."""
    if c < 1:
        raise ValueError("c must be >= 1")
    if a < 0 or not math.isfinite(a):
        raise ValueError("offered load must be finite and >= 0")
    if a >= c:
        return 1.0
    if a == 0:
        return 0.0
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    rho = a / c
    return b / (1.0 - rho * (1.0 - b))


def erlang_c_direct(c: int, a: float) -> float:
    """Eq. (2) exactly as printed (sums of powers and factorials); for cross-checking small cases."""
    if a >= c:
        return 1.0
    rho = a / c
    top = a**c / (math.factorial(c) * (1.0 - rho))
    return top / (sum(a**k / math.factorial(k) for k in range(c)) + top)


def wait_time(lam: float, c: int, mu: float) -> float:
    """Eq. (1): expected wait ``C(c, rho) / (c mu - lambda)``; ``inf`` when ``lambda >= c mu``."""
    if lam <= 0:
        return 0.0
    if lam >= c * mu:
        return math.inf
    return erlang_c(c, lam / mu) / (c * mu - lam)


def min_stable_servers(lam: float, mu: float) -> int:
    """Smallest c with lambda < c mu (spec A3: floor(lambda/mu) + 1, never the unstable ceil on integers)."""
    if lam <= 0:
        return 1
    return max(1, math.floor(lam / mu) + 1)
