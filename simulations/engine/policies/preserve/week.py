"""A SYNTHETIC week of LMaaS traffic calibrated to PreServe's section 3.1 statistics (the Azure 2024 week traces
the paper replays are not available offline), and the paper's RQ2 two-day replay compressed in time.

Rate per 10-minute bin: ``day_peak[d] x (f + (1 - f) x ((1 + cos(2 pi (h - 14) / 24)) / 2) ** k)``: a diurnal bump
peaking at 14:00, weekday peaks varying day to day (highest / lowest weekday peak = 1.35: the paper's "+35 %"),
weekend peaks lower. ``f`` and ``k`` are solved so that, over the week at the paper's 30-minute aggregation,
peak / average = 3.3 and peak / minimum = 35.6 (Azure-code prompt TPS). Lengths: ShareGPT-like log-normals from
the paper's quantiles (prompt P5/P50/P95 7/52/911, response 5/87/632), at most 4,096 tokens.

RQ2: days 1-2 (0-based) train the forecasters (their per-window tokens/s are the ``history``), days 3-4 are
replayed compressed ``compression`` times (24: two days in two hours, as the paper), with the rate scaled so the
replay's peak 30-minute rate is ``peak_rps``.
"""

from __future__ import annotations

import math

import numpy as np

DAY_PEAKS = (1.0, 1.2, 0.889, 1.1, 1.04, 0.55, 0.45)  # Mon..Sun; weekday max/min = 1.2/0.889 = 1.35
BIN_S = 600.0
PEAK_OVER_AVG = 3.3
PEAK_OVER_MIN = 35.6


def _shape(h: np.ndarray, f: float, k: float) -> np.ndarray:
    return f + (1 - f) * ((1 + np.cos(2 * np.pi * (h - 14.0) / 24.0)) / 2) ** k


def week_rates(f: float, k: float) -> np.ndarray:
    """Relative rate per 10-minute bin over 7 days (1,008 bins)."""
    h = (np.arange(144) + 0.5) * BIN_S / 3600.0
    return np.concatenate([p * _shape(h, f, k) for p in DAY_PEAKS])


def stats(rates: np.ndarray) -> tuple[float, float]:
    r30 = rates.reshape(-1, 3).mean(axis=1)
    return float(r30.max() / r30.mean()), float(r30.max() / r30.min())


def calibrate() -> tuple[float, float]:
    """(f, k) giving peak/avg 3.3 and peak/min 35.6 at 30-minute aggregation (alternating bisections)."""
    f, k = 0.05, 4.0
    for _ in range(60):
        lo, hi = 1e-4, 0.5
        for _ in range(60):  # f from peak/min
            mid = (lo + hi) / 2
            if stats(week_rates(mid, k))[1] > PEAK_OVER_MIN:
                lo = mid
            else:
                hi = mid
        f = (lo + hi) / 2
        lo, hi = 0.1, 60.0
        for _ in range(60):  # k from peak/avg (a sharper bump raises it)
            mid = (lo + hi) / 2
            if stats(week_rates(f, mid))[0] < PEAK_OVER_AVG:
                lo = mid
            else:
                hi = mid
        k = (lo + hi) / 2
    return f, k


def lognormal_from_quantiles(p5: float, p50: float, p95: float) -> tuple[float, float]:
    """(mu, sigma) of the log-normal the workload generator fits to these percentiles (least squares in log
    space, simulations/engine/workload/generator/lengths.py), so the replay has the RQ3 fixture's length mix."""
    from simulations.engine.workload.generator.lengths import fit_quantiles

    fit = fit_quantiles([(0.05, p5), (0.5, p50), (0.95, p95)])
    return math.log(fit.median), fit.sigma


PROMPT = lognormal_from_quantiles(7, 52, 911)
RESPONSE = lognormal_from_quantiles(5, 87, 632)


def replay(peak_rps: float, compression: float = 24.0, seed: int = 0, days=(3, 4)):
    """The compressed replay: dict of numpy arrays ``arrival_s``, ``input_tokens``, ``output_tokens`` (simulated
    seconds), the per-window history of the training days (tokens/s per 10-minute trace bin, at the replay's
    scale and compression), and the calibration."""
    f, k = calibrate()
    rates = week_rates(f, k)
    rng = np.random.default_rng(seed)
    sel = np.concatenate([rates[d * 144:(d + 1) * 144] for d in range(days[0] - 1, days[1])])
    scale = peak_rps / sel.reshape(-1, 3).mean(axis=1).max()
    win = BIN_S / compression
    arr, inp, out = [], [], []
    for b, r in enumerate(sel):
        n = rng.poisson(r * scale * win)
        arr.append(b * win + np.sort(rng.random(n)) * win)
        inp.append(np.clip(np.rint(rng.lognormal(*PROMPT, n)), 1, 4096))
        out.append(np.clip(np.rint(rng.lognormal(*RESPONSE, n)), 1, 4096))
    mean_in = math.exp(PROMPT[0] + PROMPT[1] ** 2 / 2)
    mean_out = math.exp(RESPONSE[0] + RESPONSE[1] ** 2 / 2)
    train = np.concatenate([rates[d * 144:(d + 1) * 144] for d in (days[0] - 3, days[0] - 2)])
    history = {"p": list(np.round(train * scale * mean_in, 3)), "d": list(np.round(train * scale * mean_out, 3))}
    p30, m30 = stats(rates)
    return {"arrival_s": np.concatenate(arr), "input_tokens": np.concatenate(inp).astype(np.int64),
            "output_tokens": np.concatenate(out).astype(np.int64), "history": history, "window_s": win,
            "calibration": {"f": f, "k": k, "peak_over_avg": p30, "peak_over_min": m30,
                            "weekday_peak_spread": max(DAY_PEAKS[:5]) / min(DAY_PEAKS[:5]), "scale_rps": scale}}
