"""Characterise a normalised trace in one streaming pass (bounded memory).

Per (region, model, tier) group and overall: request count and share, RPS and input/output TPS
series at 1 min and 15 min, token percentiles (from a histogram exact below 1,024 tokens and within
2 % above), inter-arrival coefficient of variation, and peak-to-mean ratio of the binned RPS.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from planner.catalogue.context import ContextCounter
from planner.ingest.normalised import iter_trace, trace_rows, use_returning_memory_pool

INTERVALS_S = (60, 900)
PERCENTILES = (50, 90, 95, 99)
ALL = "all"


def _token_edges() -> np.ndarray:
    exact = np.arange(0, 1024, dtype=np.int64)
    geometric = np.unique(np.floor(1024 * 1.02 ** np.arange(0, 760)).astype(np.int64))
    geometric = geometric[geometric < 2**31]
    return np.concatenate([exact, geometric])


TOKEN_EDGES = _token_edges()


@dataclass
class _Acc:
    """Accumulators for one group."""

    requests: int = 0
    input_sum: int = 0
    output_sum: int = 0
    input_max: int = 0
    output_max: int = 0
    input_hist: np.ndarray = field(default_factory=lambda: np.zeros(len(TOKEN_EDGES), np.int64))
    output_hist: np.ndarray = field(default_factory=lambda: np.zeros(len(TOKEN_EDGES), np.int64))
    bins: dict = field(default_factory=lambda: {w: [np.zeros(0), np.zeros(0), np.zeros(0)] for w in INTERVALS_S})
    last_arrival: float | None = None
    gaps_n: int = 0
    gaps_sum: float = 0.0
    gaps_sumsq: float = 0.0

    def add(self, arrival: np.ndarray, inp: np.ndarray, out: np.ndarray) -> None:
        n = len(arrival)
        if n == 0:
            return
        self.requests += n
        self.input_sum += int(inp.sum(dtype=np.int64))
        self.output_sum += int(out.sum(dtype=np.int64))
        self.input_max = max(self.input_max, int(inp.max()))
        self.output_max = max(self.output_max, int(out.max()))
        self.input_hist += np.bincount(np.searchsorted(TOKEN_EDGES, inp, side="right") - 1, minlength=len(TOKEN_EDGES))
        self.output_hist += np.bincount(np.searchsorted(TOKEN_EDGES, out, side="right") - 1, minlength=len(TOKEN_EDGES))
        for width, series in self.bins.items():
            idx = (arrival // width).astype(np.int64)
            size = int(idx[-1]) + 1
            for k, weights in enumerate((None, inp, out)):
                counts = np.bincount(idx, weights=weights, minlength=size).astype(np.float64)
                cur = series[k]
                if len(cur) < size:
                    cur = np.concatenate([cur, np.zeros(size - len(cur))])
                cur[:size] += counts
                series[k] = cur
        prev = arrival[0] if self.last_arrival is None else self.last_arrival
        gaps = np.diff(arrival, prepend=prev)
        if self.last_arrival is None:
            gaps = gaps[1:]
        self.gaps_n += len(gaps)
        self.gaps_sum += float(gaps.sum())
        self.gaps_sumsq += float(np.square(gaps).sum())
        self.last_arrival = float(arrival[-1])


def _percentiles(hist: np.ndarray, n: int) -> dict:
    if n == 0:
        return {f"p{q}": None for q in PERCENTILES}
    cum = np.cumsum(hist)
    out = {}
    for q in PERCENTILES:
        i = int(np.searchsorted(cum, q / 100 * n, side="left"))
        out[f"p{q}"] = int(TOKEN_EDGES[min(i, len(TOKEN_EDGES) - 1)])
    return out


def _cdf(hist: np.ndarray, n: int, max_points: int = 300) -> dict:
    if n == 0:
        return {"x": [], "p": []}
    nz = np.flatnonzero(hist)
    x = TOKEN_EDGES[nz]
    p = np.cumsum(hist[nz]) / n
    if len(x) > max_points:
        keep = np.unique(np.linspace(0, len(x) - 1, max_points).round().astype(int))
        x, p = x[keep], p[keep]
    return {"x": x.tolist(), "p": np.round(p, 6).tolist()}


def _summary(acc: _Acc, span_s: float) -> dict:
    n = acc.requests
    mean_gap = acc.gaps_sum / acc.gaps_n if acc.gaps_n else None
    cv = None
    if acc.gaps_n >= 2 and mean_gap and mean_gap > 0:
        var = max(acc.gaps_sumsq / acc.gaps_n - mean_gap**2, 0.0)
        cv = float(np.sqrt(var) / mean_gap)
    peak = {}
    for width, series in acc.bins.items():
        nbins = max(1, int(np.ceil(span_s / width))) if span_s > 0 else 1
        counts = np.zeros(nbins)
        counts[: min(nbins, len(series[0]))] = series[0][:nbins]
        # A request exactly at the span's end falls into one extra bin: fold it back.
        if len(series[0]) > nbins:
            counts[-1] += series[0][nbins:].sum()
        mean = counts.mean()
        peak[f"{width}s"] = float(counts.max() / mean) if mean > 0 else None
    return {
        "requests": n,
        "rps_mean": n / span_s if span_s > 0 else None,
        "input_tokens": {
            "total": acc.input_sum,
            "mean": acc.input_sum / n if n else None,
            "max": acc.input_max,
            **_percentiles(acc.input_hist, n),
        },
        "output_tokens": {
            "total": acc.output_sum,
            "mean": acc.output_sum / n if n else None,
            "max": acc.output_max,
            **_percentiles(acc.output_hist, n),
        },
        "interarrival_mean_s": mean_gap,
        "interarrival_cv": cv,
        "peak_to_mean": peak,
    }


def _group_codes(frame: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """Integer group per row and the "region|model|tier" key of each (no per-row strings)."""
    parts = []
    for name in ("region", "model", "tier"):
        cat = frame[name].astype("category")
        parts.append((cat.cat.codes.to_numpy(np.int64), [str(c) for c in cat.cat.categories]))
    (rc, rn), (mc, mn), (tc, tn) = parts
    combined = (rc * len(mn) + mc) * len(tn) + tc
    codes, uniq = pd.factorize(combined, sort=False)
    keys = []
    for value in uniq:
        r, rest = divmod(int(value), len(mn) * len(tn))
        m, t = divmod(rest, len(tn))
        keys.append(f"{rn[r]}|{mn[m]}|{tn[t]}")
    return codes, keys


def characterise(
    path: str | Path,
    *,
    progress: Callable[[float, str], None] | None = None,
    batch_rows: int = 1_000_000,
    context_limits: dict[str, int] | None = None,
) -> dict:
    """Return {"summary": {...}, "series": {...}, "cdf": {...}} for a normalised trace. ``context_limits``
    ({catalogue model: max_model_len}) adds ``summary["context_limits"]``: how many requests exceed each."""
    over = ContextCounter(context_limits)
    use_returning_memory_pool()
    total = trace_rows(path)
    accs: dict[str, _Acc] = {ALL: _Acc()}
    span = 0.0
    done = 0
    cols = ["arrival_s", "input_tokens", "output_tokens", "region", "model", "tier"]
    for frame in iter_trace(path, cols, batch_rows=batch_rows):
        if not len(frame):
            continue
        arrival = frame["arrival_s"].to_numpy(dtype=np.float64)
        inp = frame["input_tokens"].to_numpy(dtype=np.int64)
        out = frame["output_tokens"].to_numpy(dtype=np.int64)
        span = float(arrival[-1])
        accs[ALL].add(arrival, inp, out)
        over.add(inp, out)
        codes, uniques = _group_codes(frame)
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
        for g, key in enumerate(uniques):
            rows = order[bounds[g] : bounds[g + 1]]
            accs.setdefault(key, _Acc()).add(arrival[rows], inp[rows], out[rows])
        done += len(frame)
        if progress:
            progress(done / max(total, 1), f"characterised {done:,} of {total:,} requests")

    n_all = accs[ALL].requests
    summary = {
        "requests": n_all,
        "span_s": span,
        **{k: v for k, v in _summary(accs[ALL], span).items() if k != "requests"},
        "groups": [],
        "context_limits": over.summary(),
    }
    series: dict = {}
    cdf: dict = {}
    for width in INTERVALS_S:
        nbins = max(1, int(np.ceil(span / width))) if span > 0 else 1
        out = {"t_s": (np.arange(nbins) * width).tolist(), "groups": {}}
        for key, acc in accs.items():
            arrays = []
            for k in range(3):
                values = np.zeros(nbins)
                src = acc.bins[width][k]
                values[: min(nbins, len(src))] = src[:nbins]
                if len(src) > nbins:
                    values[-1] += src[nbins:].sum()
                arrays.append(np.round(values / width, 9).tolist())
            out["groups"][key] = {"rps": arrays[0], "input_tps": arrays[1], "output_tps": arrays[2]}
        series[str(width)] = out
    for key, acc in sorted(accs.items()):
        cdf[key] = {"input": _cdf(acc.input_hist, acc.requests), "output": _cdf(acc.output_hist, acc.requests)}
        if key == ALL:
            continue
        region, model, tier = key.split("|")
        summary["groups"].append(
            {
                "key": key,
                "region": region,
                "model": model,
                "tier": tier,
                "share": acc.requests / n_all if n_all else 0.0,
                **_summary(acc, span),
            }
        )
    summary["groups"].sort(key=lambda g: -g["requests"])
    return {"summary": summary, "series": series, "cdf": cdf}
