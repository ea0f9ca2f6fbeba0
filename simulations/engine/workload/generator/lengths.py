"""Token lengths for the stream kinds: log-normal (given, fitted to published percentiles, or fitted to a
trace), fixed, or (input, output) pairs resampled from a trace."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

import numpy as np

from simulations.engine.workload.generator.errors import GeneratorError
from simulations.engine.workload.generator.spec import Empirical, LengthDist, Lengths, quantile_points

DEFAULT_INPUT = {"lognormal": {"median": 1000.0, "sigma": 1.0}}
DEFAULT_OUTPUT = {"lognormal": {"median": 200.0, "sigma": 0.9}}


@dataclass(frozen=True)
class LogNormalFit:
    """ln X ~ N(ln median, sigma^2); ``achieved`` = the fitted distribution's value at each target percentile."""

    median: float
    sigma: float
    targets: tuple[tuple[float, float], ...] = ()
    achieved: tuple[float, ...] = ()


def fit_quantiles(points: list[tuple[float, float]]) -> LogNormalFit:
    """Least squares in log space: ln q_i = ln median + sigma * z_i, z_i the standard normal quantile of p_i.

    Exact when the published percentiles are log-normal; otherwise the best compromise, and ``achieved`` says
    how far each percentile is off (ShareGPT-like prompts 7 / 52 / 911 are skewed: a single log-normal cannot
    hit all three).
    """
    p = np.array([pt[0] for pt in points])
    q = np.log(np.array([pt[1] for pt in points]))
    z = np.array([NormalDist().inv_cdf(float(x)) for x in p])
    a = np.column_stack([np.ones_like(z), z])
    (mu, sigma), *_ = np.linalg.lstsq(a, q, rcond=None)
    sigma = max(float(sigma), 0.0)
    achieved = tuple(float(np.exp(mu + sigma * zi)) for zi in z)
    return LogNormalFit(float(np.exp(mu)), sigma, tuple(points), achieved)


def fit_sample(values: np.ndarray) -> LogNormalFit:
    """Maximum-likelihood log-normal of a trace's lengths (values <= 0 are left out)."""
    x = np.log(values[values > 0].astype(np.float64))
    if x.size < 2:
        raise GeneratorError("too few positive lengths to fit a log-normal", where="lengths.empirical",
                             hint="fit needs a trace with at least two requests")
    return LogNormalFit(float(np.exp(x.mean())), float(x.std()))


def _draw(dist: LengthDist, n: int, rng: np.random.Generator) -> np.ndarray:
    if dist.fixed is not None:
        values = np.full(n, float(dist.fixed))
    else:
        if dist.lognormal is not None:
            median, sigma = dist.lognormal.median, dist.lognormal.sigma
        else:
            fit = fit_quantiles(quantile_points(dist.quantiles or {}))
            median, sigma = fit.median, fit.sigma
        values = median * np.exp(sigma * rng.standard_normal(n))
    return np.clip(np.round(values), dist.min, dist.max).astype(np.int32)


def read_pairs(source: Empirical, where: str) -> tuple[np.ndarray, np.ndarray]:
    if source.input is not None and source.output is not None:
        return np.asarray(source.input, dtype=np.int32), np.asarray(source.output, dtype=np.int32)
    if source.path is None:
        raise GeneratorError("a stored trace must be resolved to its file before generating", where=where,
                             hint="the web layer does this; from the CLI give a path")
    from simulations.engine.workload.generator.sageserve import read_lengths

    if not Path(source.path).exists():
        raise GeneratorError(f"{source.path} does not exist", where=where, hint="point at a normalised trace")
    frame = read_lengths(source.path)
    if not len(frame):
        raise GeneratorError("the trace is empty", where=where, hint="use a trace with requests")
    return frame["input_tokens"].to_numpy(np.int32), frame["output_tokens"].to_numpy(np.int32)


def sample(lengths: Lengths, n: int, rng: np.random.Generator, where: str = "lengths") -> tuple[np.ndarray, np.ndarray]:
    """``n`` (input, output) lengths drawn with ``rng``."""
    if lengths.empirical is not None:
        inp, out = read_pairs(lengths.empirical, f"{where}.empirical")
        if lengths.empirical.fit:
            fi, fo = fit_sample(inp), fit_sample(out)
            cap_i, cap_o = int(inp.max()), int(out.max())
            return (
                _draw(LengthDist(lognormal={"median": fi.median, "sigma": min(fi.sigma, 5.0)}, max=max(cap_i, 1)), n, rng),
                _draw(LengthDist(lognormal={"median": fo.median, "sigma": min(fo.sigma, 5.0)}, max=max(cap_o, 1)), n, rng),
            )
        idx = rng.integers(0, len(inp), size=n)
        return inp[idx], out[idx]
    dist_in = lengths.input or LengthDist.model_validate(DEFAULT_INPUT)
    dist_out = lengths.output or LengthDist.model_validate(DEFAULT_OUTPUT)
    return _draw(dist_in, n, rng), _draw(dist_out, n, rng)
