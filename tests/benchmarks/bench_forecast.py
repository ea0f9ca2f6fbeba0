"""Forecasting speed: full fits, hourly incremental updates, and 36 series over a simulated week.

    .venv/bin/python tests/benchmarks/bench_forecast.py [--quick]

Prints one JSON object as its last line. Figures (wall-clock seconds on this machine):
- fit_s[method]: fit on one week of 1-minute data (10,080 bins) of a SageServe-like series
- step_ms[method]: one hourly step = update with 60 new 1-minute bins + forecast of the next 60 bins
  (the mean over 24 steps, excluding the step that triggers the daily refit)
- fleet: 36 series (3 regions x 4 models x 3 tiers) fitted on one week, then stepped hourly for a
  simulated week (168 steps each, refitting daily), total seconds including the fits
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

# One BLAS thread: on a loaded 2-core machine OpenBLAS's threads spin against each other and made
# small LAPACK calls (ARIMA initialisation, least squares) 5-100x slower. Override from the shell.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import numpy as np  # noqa: E402

from forecasts.core import IncrementalForecaster  # noqa: E402
from forecasts.core import synthetic as syn  # noqa: E402

METHODS = (
    "naive",
    "seasonal_naive_daily",
    "seasonal_naive_weekly",
    "moving_average",
    "arima",
    "arima_fourier",
    "mstl_arima",
    "holt_winters",
    "ensemble",
)


def bench_fit_and_step(method: str, y: np.ndarray, history: int, res: int, steps_per_hour: int) -> tuple[float, float]:
    t0 = time.perf_counter()
    f = IncrementalForecaster(method, res, refit_every_s=None).fit(y[:history])
    fit_s = time.perf_counter() - t0
    times = []
    for hour in range(24):
        a = history + hour * steps_per_hour
        t0 = time.perf_counter()
        f.update(y[a : a + steps_per_hour])
        f.forecast(steps_per_hour)
        times.append(time.perf_counter() - t0)
    assert f.used_method == method, (method, f.fallback_reason)
    return fit_s, 1000 * statistics.mean(times)


def bench_fleet(method: str, res: int, n_series: int, days_history: int, days_sim: int) -> dict:
    per_hour = 3600 // res
    series = [
        syn.sageserve_like(days=days_history + days_sim, resolution_s=res, seed=s, base=1000.0 * (1 + s % 5))
        for s in range(n_series)
    ]
    history = days_history * 86400 // res
    t0 = time.perf_counter()
    forecasters = [IncrementalForecaster(method, res).fit(y[:history]) for y in series]
    fit_total = time.perf_counter() - t0
    peaks = []
    for hour in range(days_sim * 24):
        a = history + hour * per_hour
        for f, y in zip(forecasters, series, strict=False):
            fc = f.forecast(per_hour)
            peaks.append(fc.peak)
            f.update(y[a : a + per_hour])
    total = time.perf_counter() - t0
    return {
        "method": method,
        "resolution_s": res,
        "series": n_series,
        "history_days": days_history,
        "simulated_days": days_sim,
        "fit_s": round(fit_total, 2),
        "total_s": round(total, 2),
        "refits_per_series": forecasters[0].n_fits,
        "used": sorted({f.used_method for f in forecasters}),
    }


def evaluate_fixture(total_rps: float, resolution_s: int, backtest_days: int, days: int = 7) -> dict:
    """Backtest every method on the 36 series of fixtures/workloads/sageserve_week.json.

    Not a speed figure: the accuracy of each method on the SageServe-like week (the accuracy check),
    averaged over series, with the share of series each method wins. The trace starts on a Monday,
    so a 3-day hold-out covers Friday and the weekend dip.
    """
    from forecasts.core.backtest import leaderboard
    from forecasts.core.series import build_series
    from planner.ingest.synth import synthesize

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "fixtures", "workloads", "sageserve_week.json")) as fh:
        spec = json.load(fh)
    spec["total_rps"] = total_rps
    spec["days"] = days  # 14: two weeks, so weekly seasonality can be learnt before the hold-out
    t0 = time.perf_counter()
    frame = synthesize(spec)
    series = build_series(frame, resolution_s, metrics=("input_tps",))
    horizon = 3600 // resolution_s
    per_method: dict[str, list[dict]] = {}
    wins: dict[str, int] = {}
    by_tier: dict[str, dict[str, list[float]]] = {}
    for key, df in series.items():
        y = df["input_tps"].to_numpy()
        initial = len(y) - backtest_days * 86400 // resolution_s
        rows, _ = leaderboard(y, resolution_s, horizon=horizon, initial=initial, every=horizon)
        ranked = [r for r in rows if "rank" in r]
        if ranked:
            wins[ranked[0]["method"]] = wins.get(ranked[0]["method"], 0) + 1
        for r in ranked:
            per_method.setdefault(r["method"], []).append(r)
            by_tier.setdefault(key[2], {}).setdefault(r["method"], []).append(r["wmape"])
    summary = {}
    for method, rows in per_method.items():
        summary[method] = {
            k: round(float(np.nanmean([r[k] for r in rows])), 3)
            for k in ("wmape", "rel_mae", "coverage", "peak_error", "peak_bias", "peak_upper_coverage")
        }
        summary[method]["series"] = len(rows)
    return {
        "days": days,
        "requests": len(frame),
        "total_rps": total_rps,
        "resolution_s": resolution_s,
        "backtest_days": backtest_days,
        "series": len(series),
        "wins": wins,
        "mean_by_method": summary,
        "wmape_by_tier": {t: {m: round(float(np.mean(v)), 2) for m, v in d.items()} for t, d in by_tier.items()},
        "seconds": round(time.perf_counter() - t0, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer methods and a 1-day fleet run")
    parser.add_argument(
        "--evaluate", action="store_true", help="accuracy on the SageServe-like fixture week instead of speed"
    )
    parser.add_argument("--rps", type=float, default=4.0, help="--evaluate: total requests/s of the week")
    parser.add_argument("--days", type=int, default=7, help="--evaluate: days of the fixture (7 or 14)")
    args = parser.parse_args()
    if args.evaluate:
        print(json.dumps(evaluate_fixture(args.rps, 900, 3, args.days)))
        return
    out: dict = {"fit_s": {}, "step_ms": {}, "fit_5min_s": {}, "step_5min_ms": {}, "fleet": []}
    y1 = syn.sageserve_like(days=15, resolution_s=60, seed=1)
    y5 = syn.sageserve_like(days=15, resolution_s=300, seed=1)
    methods = METHODS if not args.quick else ("seasonal_naive_daily", "arima", "arima_fourier", "holt_winters")
    for method in methods:
        # seasonal_naive_weekly needs more than a week: give every method 8 days there
        days = 8 if method in ("seasonal_naive_weekly", "ensemble") else 7
        fit_s, step_ms = bench_fit_and_step(method, y1, days * 1440, 60, 60)
        out["fit_s"][method] = round(fit_s, 3)
        out["step_ms"][method] = round(step_ms, 2)
        fit_s, step_ms = bench_fit_and_step(method, y5, days * 288, 300, 12)
        out["fit_5min_s"][method] = round(fit_s, 3)
        out["step_5min_ms"][method] = round(step_ms, 2)
        print(
            method,
            out["fit_s"][method],
            out["step_ms"][method],
            out["fit_5min_s"][method],
            out["step_5min_ms"][method],
            file=sys.stderr,
            flush=True,
        )
    days_sim = 1 if args.quick else 7
    for method, res in (
        ("arima", 60),
        ("arima_fourier", 60),
        ("arima", 300),
        ("arima_fourier", 300),
        ("holt_winters", 300),
    ):
        if args.quick and res == 60:
            continue
        row = bench_fleet(method, res, 36, 7, days_sim)
        out["fleet"].append(row)
        print(row, file=sys.stderr, flush=True)
    out["openblas_threads"] = os.environ.get("OPENBLAS_NUM_THREADS")
    out["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]  # the machine is shared: context
    out["cpus"] = os.cpu_count()
    out["targets"] = {"fit_s": 2.0, "step_ms": 50.0, "fleet_week_total_s": 60.0}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
