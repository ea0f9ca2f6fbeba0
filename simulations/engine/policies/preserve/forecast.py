"""Tier-1 window forecasts of prompt (P) and decode (D) tokens per second, two windows ahead (paper 4.1, Alg. 2).

The paper trains an mLSTM daily; no such model is built here. Two kinds of forecaster:

- ``oracle-noise`` (labelled an oracle everywhere): the true P and D of the window from the workload, times
  (1 + e) with e of random sign and |e| ~ Exponential(mean APE) capped at the max APE, calibrated to PreServe's
  Table 1 on Azure-code (mean APE 7.74 % prompt / 8.45 % response, max 26.25 % / 30.30 %). Stands for a forecaster
  as good as the paper's, without its model.
- any method of ``forecasts.core`` (``seasonal_naive_daily``, ``holt_winters``, ``arima_fourier``, ...): our own
  forecasters, fitted on the history given in ``history`` (per-window tokens/s of the training days, as the paper
  trains on the first two days) and updated with each finished window's observed totals (never refitted inside
  a run; the paper retrains daily).

A forecaster sees windows of ``window_s`` simulated seconds; ``series_resolution_s`` is the length the series'
bins stand for in trace time (a compressed replay: 600 s of trace per 25 s simulated), which sets the daily
season of the ``forecasts.core`` methods.
"""

from __future__ import annotations

import numpy as np

TABLE1_CODE = {"ape_p": 0.0774, "ape_d": 0.0845, "max_ape_p": 0.2625, "max_ape_d": 0.3030}


def window_totals(arrival_s, input_tokens, output_tokens, window_s: float, n_windows: int) -> tuple:
    """Per-window prompt and decode tokens per second of the requests arriving in each window."""
    idx = np.floor(np.asarray(arrival_s) / window_s).astype(np.int64)
    keep = (idx >= 0) & (idx < n_windows)
    p = np.bincount(idx[keep], weights=np.asarray(input_tokens, float)[keep], minlength=n_windows) / window_s
    d = np.bincount(idx[keep], weights=np.asarray(output_tokens, float)[keep], minlength=n_windows) / window_s
    return p, d


class OracleNoise:
    label = "oracle + noise (Table 1, Azure-code errors): an oracle stand-in for the paper's mLSTM"

    def __init__(self, params: dict, rng: np.random.Generator) -> None:
        self.cal = {k: float(params.get(k, v)) for k, v in TABLE1_CODE.items()}
        self.rng = rng
        self.true_p = self.true_d = None

    def prepare(self, workload, window_s: float, select=None) -> None:
        """The true per-window P and D of the workload (of the requests ``select`` picks, if given: one
        endpoint's origin traffic in the per-endpoint mode)."""
        arr, inp, out = workload.arrival_s, workload.input_tokens, workload.output_tokens
        n = int(np.ceil((float(arr.max()) if len(workload) else 0.0) / window_s)) + 3
        if select is not None:
            arr, inp, out = np.asarray(arr)[select], np.asarray(inp)[select], np.asarray(out)[select]
        self.true_p, self.true_d = window_totals(arr, inp, out, window_s, n)

    def _noisy(self, value: float, ape: float, cap: float) -> float:
        e = min(self.rng.exponential(ape), cap) if ape > 0 else 0.0
        return max(0.0, value * (1.0 + (e if self.rng.random() < 0.5 else -e)))

    def observe(self, window: int, p: float, d: float) -> None:
        pass

    def forecast(self, window: int) -> tuple[float, float]:
        """(P, D) tokens/s forecast for ``window``."""
        if window >= len(self.true_p):
            return 0.0, 0.0
        return (self._noisy(self.true_p[window], self.cal["ape_p"], self.cal["max_ape_p"]),
                self._noisy(self.true_d[window], self.cal["ape_d"], self.cal["max_ape_d"]))


class SeriesForecaster:
    """A ``forecasts.core`` method per series (P and D), fitted on ``history`` and updated window by window."""

    def __init__(self, method: str, params: dict) -> None:
        from forecasts.core.methods import make_method

        self.label = f"{method} (forecasts.core) on {len(params.get('history', {}).get('p', []))} history windows"
        res = int(params.get("series_resolution_s", params.get("window_s", 600)))
        hist = params.get("history") or {}
        self.models = {}
        self.history = {}
        self.last = {}
        for key in ("p", "d"):
            y = np.asarray(hist.get(key) or [], dtype=float)
            if len(y) < 2:
                raise ValueError(f"forecaster {method!r} needs params.history.{key} (tokens/s per window, "
                                 f"the training days)")
            self.models[key] = make_method(method, res)
            self.history[key] = y
            self.last[key] = float(y[-1])
        self.fitted = False  # fitted on first use: constructing it (e.g. to check a scenario's knobs) fits nothing
        self.seen = 0
        self.cache: dict = {}

    def _fit(self) -> None:
        if not self.fitted:
            for key, m in self.models.items():
                m.fit(self.history[key], 0)
            self.fitted = True

    def prepare(self, workload, window_s: float) -> None:
        self._fit()

    def observe(self, window: int, p: float, d: float) -> None:
        self._fit()
        for key, v in (("p", p), ("d", d)):
            self.models[key].update(np.array([v]))
        self.seen = window + 1
        self.cache.clear()

    def forecast(self, window: int) -> tuple[float, float]:
        self._fit()
        h = max(1, window - self.seen + 1)
        if h not in self.cache:
            out = []
            for key in ("p", "d"):
                mean, _, _ = self.models[key].predict(h, 0.8)
                out.append(max(0.0, float(np.asarray(mean)[h - 1])))
            self.cache[h] = tuple(out)
        return self.cache[h]


def make_forecaster(name: str, params: dict, rng):
    if name == "oracle-noise":
        return OracleNoise(params, rng)
    return SeriesForecaster(name, params)
