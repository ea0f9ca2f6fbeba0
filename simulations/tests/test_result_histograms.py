"""The result's latency histograms count exactly as numpy.histogram does on the same clipped values and edges."""

from __future__ import annotations

import numpy as np
import pytest

from simulations.engine.results.metrics import _hist

EDGES = np.logspace(-3, 5, 65)


def _values(case: str) -> np.ndarray:
    rng = np.random.default_rng(7)
    if case == "lognormal":
        return rng.lognormal(0.0, 3.0, 50_000)
    if case == "edges":  # every edge, and the floats just beside it on both sides
        return np.concatenate([EDGES, np.nextafter(EDGES, 0.0), np.nextafter(EDGES, np.inf)])
    if case == "outside":  # clipped onto the first and last edge
        return np.array([0.0, -1.0, 1e-9, 1e-3, 1e5, 1e9, np.inf])
    return np.array([])


@pytest.mark.parametrize("case", ["lognormal", "edges", "outside", "empty"])
def test_counts_are_numpy_histogram_counts(case):
    x = _values(case)
    expected, _ = np.histogram(np.clip(x, 1e-3, 1e5), bins=EDGES)
    got = _hist(x)
    assert got["counts"] == expected.tolist()
    assert got["edges"] == EDGES.tolist()
    assert sum(got["counts"]) == len(x)  # clipped: nothing falls outside
