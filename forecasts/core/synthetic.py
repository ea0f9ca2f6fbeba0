"""Series and traces with known structure, for tests, benchmarks and demos (seeded, Django-free)."""

from __future__ import annotations

import numpy as np
import pandas as pd

DAY_S = 86400


def diurnal_profile(hours: np.ndarray) -> np.ndarray:
    """A working-hours day shape in [0.25, 1]: low at night, a morning ramp, a midday plateau."""
    h = np.mod(hours, 24.0)
    bump = np.exp(-0.5 * ((h - 13.0) / 3.5) ** 2)
    return 0.25 + 0.75 * bump


def sageserve_like(
    days: int = 7,
    resolution_s: int = 60,
    base: float = 20000.0,
    weekend_factor: float = 0.45,
    noise: float = 0.04,
    seed: int = 0,
) -> np.ndarray:
    """Input TPS of an IW tier: diurnal, weekends quieter (day 5 and 6), multiplicative noise.

    Mirrors SageServe's characterisation (diurnal periodicity, weekends quiescing; §3, Fig. 3).
    """
    rng = np.random.default_rng(seed)
    n = days * DAY_S // resolution_s
    t_s = np.arange(n) * resolution_s
    day_index = t_s // DAY_S
    weekend = np.isin(day_index % 7, (5, 6))
    level = base * diurnal_profile(t_s / 3600.0) * np.where(weekend, weekend_factor, 1.0)
    return level * (1.0 + noise * rng.standard_normal(n))


def sinusoid(
    n: int, period: int, mean: float = 1000.0, amplitude: float = 400.0, noise: float = 40.0, seed: int = 0
) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return mean + amplitude * np.sin(2 * np.pi * t / period) + noise * rng.standard_normal(n)


def random_walk(n: int, start: float = 1000.0, step: float = 10.0, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return start + np.cumsum(step * rng.standard_normal(n))


def with_step(y: np.ndarray, at: int, factor: float) -> np.ndarray:
    out = y.copy()
    out[at:] *= factor
    return out


def with_burst(y: np.ndarray, at: int, length: int, factor: float) -> np.ndarray:
    out = y.copy()
    out[at : at + length] *= factor
    return out


def with_holiday(y: np.ndarray, day: int, bins_per_day: int, factor: float = 0.3) -> np.ndarray:
    out = y.copy()
    out[day * bins_per_day : (day + 1) * bins_per_day] *= factor
    return out


def synthetic_trace(
    days: float = 2.0,
    regions=("region-1", "region-2"),
    models=("llama2-70b",),
    tiers=("IW-F", "NIW"),
    peak_rps: float = 2.0,
    seed: int = 0,
) -> pd.DataFrame:
    """A normalised trace (contract columns) with diurnal IW arrivals and flat NIW arrivals."""
    rng = np.random.default_rng(seed)
    duration = days * DAY_S
    frames = []
    for region in regions:
        for model in models:
            for tier in tiers:
                # thinning of a homogeneous Poisson process at peak_rps
                n = rng.poisson(peak_rps * duration)
                t = np.sort(rng.uniform(0, duration, n))
                keep_p = 0.5 * np.ones(n) if tier == "NIW" else diurnal_profile(t / 3600.0)
                t = t[rng.uniform(size=n) < keep_p]
                frames.append(
                    pd.DataFrame(
                        {
                            "arrival_s": t,
                            "input_tokens": rng.integers(100, 2000, len(t)).astype(np.int32),
                            "output_tokens": rng.integers(10, 500, len(t)).astype(np.int32),
                            "region": region,
                            "model": model,
                            "tier": tier,
                        }
                    )
                )
    df = pd.concat(frames, ignore_index=True).sort_values("arrival_s", kind="stable").reset_index(drop=True)
    df["arrival_s"] -= df["arrival_s"].iloc[0]
    return df
