"""Turn a normalised trace (one row per request) into regular time series.

Django-free. Input: a DataFrame with the contract columns ``arrival_s``, ``input_tokens``,
``output_tokens`` and the grouping columns (``region``, ``model``, ``tier``). Output: for each group,
a DataFrame indexed by bin number (bin ``i`` covers ``[i*res, (i+1)*res)`` seconds from the trace
start) with the columns ``input_tps``, ``output_tps`` and ``rps`` (tokens or requests per second,
averaged over the bin). Empty bins are zeros, so every series of a trace has the same length.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

METRICS = ("input_tps", "output_tps", "rps")
GROUP_COLUMNS = ("region", "model", "tier")
RESOLUTIONS_S = (60, 300, 900, 3600)
DEFAULTS = {"region": "region-1", "model": "default", "tier": "IW-F"}

_RESOLUTION_NAMES = {"1min": 60, "5min": 300, "15min": 900, "60min": 3600, "1h": 3600}


def parse_resolution(value) -> int:
    """'5min', '1h', '300', 300 -> seconds. Only 1, 5, 15 and 60 minutes are supported."""
    if isinstance(value, (int, np.integer)) or (isinstance(value, str) and value.isdigit()):
        seconds = int(value)
    elif isinstance(value, str) and value.strip().lower() in _RESOLUTION_NAMES:
        seconds = _RESOLUTION_NAMES[value.strip().lower()]
    else:
        raise ValueError(f"unknown resolution {value!r}; use one of 1min, 5min, 15min, 60min")
    if seconds not in RESOLUTIONS_S:
        raise ValueError(f"resolution {seconds} s is not supported; use 60, 300, 900 or 3600 s")
    return seconds


def parse_duration(value) -> int:
    """'1h', '30min', '2d', '3600' -> seconds."""
    if isinstance(value, (int, np.integer)):
        return int(value)
    text = str(value).strip().lower()
    for suffix, factor in (("min", 60), ("h", 3600), ("d", 86400), ("s", 1)):
        if text.endswith(suffix):
            number = text[: -len(suffix)]
            try:
                seconds = float(number) * factor
            except ValueError:
                break
            if seconds <= 0:
                break
            return int(round(seconds))
    if text.isdigit() and int(text) > 0:
        return int(text)
    raise ValueError(f"cannot read duration {value!r}; write e.g. 1h, 30min, 2d or seconds")


@dataclass(frozen=True)
class SeriesKey:
    group: tuple[tuple[str, str], ...]  # (("region", "r1"), ("model", "m"), ...)
    metric: str

    @property
    def label(self) -> str:
        parts = [value for _, value in self.group] or ["all"]
        return "/".join(parts) + f" {self.metric}"

    def as_dict(self) -> dict:
        return {"group": dict(self.group), "metric": self.metric, "label": self.label}


def build_series(
    df: pd.DataFrame,
    resolution_s: int,
    group_by: tuple[str, ...] | list[str] = GROUP_COLUMNS,
    metrics: tuple[str, ...] | list[str] = METRICS,
    duration_s: float | None = None,
) -> dict[tuple[str, ...], pd.DataFrame]:
    """Per group, a DataFrame (index = bin number) of the requested metrics.

    ``duration_s`` fixes the number of bins (default: up to the last arrival); a trailing partial
    bin is dropped because its rate would be biased low.
    """
    group_by = tuple(group_by)
    for column in group_by:
        if column not in GROUP_COLUMNS:
            raise ValueError(f"cannot group by {column!r}; choose from {', '.join(GROUP_COLUMNS)}")
    for metric in metrics:
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; choose from {', '.join(METRICS)}")
    if "arrival_s" not in df.columns:
        raise ValueError("the trace has no arrival_s column")
    arrival = df["arrival_s"].to_numpy(dtype=float)
    if duration_s is None:
        duration_s = float(arrival.max()) if len(arrival) else 0.0
        n_bins = int(np.floor(duration_s / resolution_s)) or 1
    else:
        n_bins = max(1, int(np.floor(duration_s / resolution_s)))
    bins = np.floor(arrival / resolution_s).astype(np.int64)
    keep = (bins >= 0) & (bins < n_bins)
    bins = bins[keep]
    # one integer code per group (mixed radix over the grouping columns), then one bincount per metric
    combined = np.zeros(len(bins), dtype=np.int64)
    labels: list[np.ndarray] = []
    for column in group_by:
        if column in df.columns:
            col = df[column]
            if isinstance(col.dtype, pd.CategoricalDtype):
                codes, uniques = col.cat.codes.to_numpy(), col.cat.categories.astype(str).to_numpy()
            else:
                codes, uniques = pd.factorize(col.astype(str), sort=True)
                uniques = np.asarray(uniques, dtype=str)
            codes = np.asarray(codes, dtype=np.int64)[keep]
            if (codes < 0).any():  # missing values take the contract default
                uniques = np.append(uniques, DEFAULTS[column])
                codes = np.where(codes < 0, len(uniques) - 1, codes)
        else:
            codes, uniques = np.zeros(len(bins), dtype=np.int64), np.asarray([DEFAULTS[column]])
        combined = combined * len(uniques) + codes
        labels.append(uniques)
    present, inverse = np.unique(combined, return_inverse=True)
    cell = inverse.astype(np.int64) * n_bins + bins
    size = len(present) * n_bins
    weights = {
        "input_tps": df["input_tokens"].to_numpy(dtype=float)[keep] if "input_tokens" in df else None,
        "output_tps": df["output_tokens"].to_numpy(dtype=float)[keep] if "output_tokens" in df else None,
        "rps": None,
    }
    sums = {}
    for metric in metrics:
        w = weights[metric]
        if metric != "rps" and w is None:
            counts = np.zeros(size)
        else:
            counts = np.bincount(cell, weights=w, minlength=size)
        sums[metric] = counts.reshape(len(present), n_bins) / float(resolution_s)
    index = pd.RangeIndex(n_bins, name="bin")
    out: dict[tuple[str, ...], pd.DataFrame] = {}
    for g, code in enumerate(present):
        key = []
        for uniques in reversed(labels):
            code, digit = divmod(int(code), len(uniques))
            key.append(str(uniques[digit]))
        out[tuple(reversed(key))] = pd.DataFrame({m: sums[m][g] for m in metrics}, index=index)
    return dict(sorted(out.items()))


def series_items(series: dict[tuple[str, ...], pd.DataFrame], group_by, metrics):
    """Flatten ``build_series`` output into (SeriesKey, numpy array) pairs."""
    for key, frame in series.items():
        for metric in metrics:
            yield SeriesKey(tuple(zip(group_by, key, strict=False)), metric), frame[metric].to_numpy(dtype=float)
