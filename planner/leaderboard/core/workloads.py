"""The leaderboard's workloads: one request frame per (trace, seed), and the scenario every strategy runs on.

A bundled trace is read once (``base_frame``: the whole window, time scaled to the rules' load); seed ``s`` redraws
it minute by minute (``redraw``). The synthetic day is drawn by the engine's diurnal generator with seed ``s``.
Django-free.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd

from planner.leaderboard.core import rules

COLUMNS = ("arrival_s", "input_tokens", "output_tokens")


@functools.lru_cache(maxsize=1)
def deployment() -> dict:
    from planner.catalogue import engine_spec

    return engine_spec(rules.DEPLOYMENT)


def theta() -> float:
    return float(deployment()["theta_tps"])


def _read(trace: dict) -> pd.DataFrame:
    if trace["source"] == "fixture":
        from simulations.engine.scenario.schema import trace_fixtures
        from simulations.engine.workload.traceio import read_trace_arrays

        cols = read_trace_arrays(trace_fixtures()[trace["fixture"]])
        frame = pd.DataFrame({c: np.asarray(cols[c]) for c in COLUMNS})
    elif trace["source"] == "slinfer":
        from simulations.engine.workload.generator.slinfer import read
        from simulations.engine.workload.generator.spec import SlinferSpec

        frame = read(SlinferSpec(kind="slinfer", trace=trace["trace"]))[list(COLUMNS)]
    else:
        raise ValueError(f"not a recorded trace: {trace['source']}")
    frame = frame.sort_values("arrival_s", kind="stable").reset_index(drop=True)
    frame["arrival_s"] = frame["arrival_s"] - float(frame["arrival_s"].iloc[0])
    frame["output_tokens"] = np.maximum(frame["output_tokens"].to_numpy(), 1)
    return frame


@functools.lru_cache(maxsize=8)
def base_frame(name: str, limit_s: float | None = None) -> pd.DataFrame:
    """The recorded window on its own time axis (``limit_s``: cut there: the reduced board of the regression
    test)."""
    frame = _read(rules.TRACES[name])
    if limit_s is not None:
        frame = frame[frame["arrival_s"] < limit_s].reset_index(drop=True)
    return frame


def multiplier(name: str, limit_s: float | None = None) -> float:
    """The rate multiplier that brings the recorded window's mean input rate to ``LOAD_X`` x theta."""
    frame = base_frame(name, limit_s)
    span = max(float(frame["arrival_s"].iloc[-1]), 1.0)
    return rules.LOAD_X * theta() / (float(frame["input_tokens"].sum()) / span)


def redraw(frame: pd.DataFrame, seed: int, rate: float = 1.0, bin_s: float = 60.0) -> pd.DataFrame:
    """Per ``bin_s`` bin with n requests: Poisson(``rate`` x n) requests, their (input, output) pairs drawn with
    replacement from the bin, arrivals uniform within it (the last, partial bin within its recorded span).
    Sorted by arrival."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x1EADB0A]))
    arr = frame["arrival_s"].to_numpy()
    bins = (arr // bin_s).astype(np.int64)
    starts = np.flatnonzero(np.r_[True, bins[1:] != bins[:-1]])
    ends = np.r_[starts[1:], len(arr)]
    last = float(arr[-1]) if len(arr) else 0.0
    pick, when = [], []
    for a, b in zip(starts, ends, strict=True):
        k = int(rng.poisson(rate * (b - a)))
        if k:
            lo = bins[a] * bin_s
            pick.append(rng.integers(a, b, size=k))
            when.append(lo + rng.uniform(0.0, max(min(bin_s, last - lo), 1e-3), size=k))
    idx = np.concatenate(pick) if pick else np.zeros(0, dtype=np.int64)
    t = np.concatenate(when) if when else np.zeros(0)
    order = np.argsort(t, kind="stable")
    return pd.DataFrame({"arrival_s": t[order],
                         "input_tokens": frame["input_tokens"].to_numpy()[idx][order],
                         "output_tokens": frame["output_tokens"].to_numpy()[idx][order]})


def day_requests(duration_s: float) -> int:
    """Requests of the synthetic day: ``DAY_LOAD_X`` x theta input tokens per second on average, at the
    generator's mean input length (the log-normal's mean, capped at its max: measured on one draw of 200k)."""
    spec = rules.TRACES["synthetic-day"]["synthetic"]
    from simulations.engine.workload.generator import diurnal

    probe = diurnal.synthesise({**spec, "total_requests": 200_000}, seed=0, model_names=[rules.MODEL],
                               region_names=[rules.REGION])
    mean_in = float(np.mean(probe.input_tokens))
    return int(math.ceil(rules.DAY_LOAD_X * theta() * float(duration_s) / mean_in))


def day_frame(seed: int, duration_s: float | None = None) -> pd.DataFrame:
    from simulations.engine.workload.generator import diurnal

    spec = dict(rules.TRACES["synthetic-day"]["synthetic"])
    if duration_s is not None:
        spec["duration_s"] = float(duration_s)
    spec["total_requests"] = day_requests(spec["duration_s"])
    spec["tier_mix"] = {"IW-F": 1.0}
    w = diurnal.synthesise(spec, seed=int(seed), model_names=[rules.MODEL], region_names=[rules.REGION])
    return pd.DataFrame({"arrival_s": w.arrival_s, "input_tokens": w.input_tokens, "output_tokens": w.output_tokens})


def frame_for(name: str, seed: int, limit_s: float | None = None) -> pd.DataFrame:
    """The requests one (trace, seed) cell of the board replays."""
    if rules.TRACES[name]["source"] == "synthetic":
        return day_frame(seed, limit_s)
    return redraw(base_frame(name, limit_s), seed, multiplier(name, limit_s))


def static_default(name: str, limit_s: float | None = None) -> int:
    """The baseline's own count: enough instances for the trace's peak ``PEAK_WINDOW_S`` input rate (theta per
    instance), computed on the recorded window (for the day: on seed 0's draw), never on results."""
    day = rules.TRACES[name]["source"] == "synthetic"
    frame = day_frame(0, limit_s) if day else base_frame(name, limit_s)
    w = rules.PEAK_WINDOW_S
    bins = (frame["arrival_s"].to_numpy() // w).astype(np.int64)
    tps = np.bincount(bins, weights=frame["input_tokens"].to_numpy(dtype=float)) / w
    tps = tps * (1.0 if day else multiplier(name, limit_s))
    return int(min(rules.MAX_INSTANCES, max(rules.MIN_INSTANCES, math.ceil(float(tps.max()) / theta()))))


def scenario(initial: int) -> dict:
    """The comparison scenario (planner.comparisons.core.runner) every strategy of the board runs on."""
    return {
        "name": "policy leaderboard",
        "seed": 0,
        "workload": {"frame": True},
        "fleet": {"regions": [{"name": rules.REGION, "spot_pool": {rules.MODEL: rules.SPOT_POOL},
                               "vm_capacity": rules.MAX_INSTANCES}],
                  "endpoints": [{"region": rules.REGION, "model": rules.MODEL, "deployment": rules.DEPLOYMENT,
                                 "initial": int(initial), "min": rules.MIN_INSTANCES, "max": rules.MAX_INSTANCES}]},
        "slo": dict(rules.SLO),
        "engine": dict(rules.ENGINE),
        "niw_queue": False,
    }
