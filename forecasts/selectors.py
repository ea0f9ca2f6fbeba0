"""Reads for the forecast pages: leaderboards at a chosen horizon and the Plotly figures."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from forecasts.core.pipeline import metrics_at_horizon
from forecasts.models import ForecastSeries

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"]
FAIL_FACTOR = 2.0  # an hour is flagged when its error is this many times the method's median ...
FAIL_MIN_WMAPE = 10.0  # ... and above this many percent


def horizon_choices(result: dict) -> list[tuple[int, str]]:
    res, h = result["resolution_s"], result["horizon_steps"]
    out = []
    for k in sorted({1, max(1, h // 4), max(1, h // 2), h}):
        minutes = k * res / 60
        out.append((k, f"{minutes:g} min" if minutes < 60 else f"{minutes / 60:g} h"))
    return out


def leaderboard_at(result: dict, steps: int) -> list[dict]:
    """The stored leaderboard re-scored over the first ``steps`` leads, best first."""
    metric = result["rank_metric"]
    rows = []
    for name in result["methods"]:
        m = metrics_at_horizon(result, name, steps)
        rows.append({"method": name, **m})
    rows.sort(key=lambda r: (r[metric] if r[metric] is not None and math.isfinite(r[metric]) else math.inf))
    for rank, r in enumerate(rows, 1):
        r["rank"] = rank
    skipped = [r for r in result["leaderboard"] if "skipped" in r]
    return rows + skipped


def failures(result: dict, method: str) -> list[dict]:
    """Hours whose error stands out: wMAPE > FAIL_FACTOR x the median and > FAIL_MIN_WMAPE %."""
    data = result["methods"][method]
    errors = np.asarray([np.nan if e is None else e for e in data["per_origin_wmape"]], dtype=float)
    if not np.isfinite(errors).any():
        return []
    threshold = max(FAIL_FACTOR * float(np.nanmedian(errors)), FAIL_MIN_WMAPE)
    res = result["resolution_s"]
    y = np.asarray(result["values"], dtype=float)
    h = result["horizon_steps"]
    out = []
    for origin, err, peak in zip(data["origins"], errors, data["peak"], strict=False):
        if np.isfinite(err) and err > threshold:
            actual_peak = float(y[origin : origin + min(h, result["peak_window_steps"])].max())
            out.append(
                {
                    "origin": origin,
                    "hour": origin * res / 3600,
                    "wmape": float(err),
                    "peak": peak,
                    "actual_peak": actual_peak,
                    "peak_error": (peak - actual_peak) / actual_peak * 100 if actual_peak > 0 else None,
                }
            )
    return out


def _html(fig: go.Figure) -> str:
    """The figure's JSON for the shared renderer (templates/includes/figure.html): one colour per legend entry."""
    from planner.plotstyle import embed, harmonise

    return embed(harmonise(fig))


POOR_WMAPE = 50.0  # % over the backtest: above it a forecast is flagged as a poor fit


def series_flags(s, rank_metric: str = "wmape") -> list[str]:
    """Why a series' forecast should not be trusted as it is: poor backtest fit, a zero peak, a fallback."""
    flags = []
    if not s.chosen_method:
        return flags
    err = next((row.get(rank_metric) for row in (s.leaderboard or []) if row.get("method") == s.chosen_method), None)
    if err is not None and err > POOR_WMAPE:
        flags.append(f"poor fit: {rank_metric} {err:.0f} % > {POOR_WMAPE:.0f} %")
    if s.peak is not None and s.peak <= 0:
        flags.append("next-hour peak is 0: no traffic forecast")
    used = getattr(s, "result_used", None)
    if used and used != s.chosen_method:
        flags.append(f"{s.chosen_method} fell back: {used} actually ran")
    if not s.leaderboard:
        flags.append("no backtest ran (the series is too short for the backtest span): no method was compared")
    return flags


def flagged_series(run) -> list:
    """The run's series, each with ``flags`` (series_flags), in the run's order."""
    from django.db.models.fields.json import KeyTextTransform

    series = list(run.series.select_related("job").defer("result")
                  .annotate(result_used=KeyTextTransform("used", "result")))
    for s in series:
        s.flags = series_flags(s, run.params.get("rank_metric", "wmape"))
    return series


def shown_status(run, series=None) -> str:
    """The run's status as a planner should read it: "needs review" instead of "succeeded" when a series fell
    back to another method, had no backtest, fits poorly or forecasts no traffic."""
    status = run.status
    if status != "succeeded":
        return status
    series = flagged_series(run) if series is None else series
    return "needs review" if any(s.flags for s in series) else status


def _paths(result: dict, method: str, steps: int):
    """Stitched forecast paths, leads < steps, with None between origins so lines break."""
    data = result["methods"][method]
    res = result["resolution_s"]
    x, mean, lower, upper = [], [], [], []
    k = min(steps, result["horizon_steps"])
    for i, origin in enumerate(data["origins"]):
        for j in range(k):
            x.append((origin + j) * res / 3600)
            mean.append(data["mean"][i][j])
            lower.append(data["lower"][i][j])
            upper.append(data["upper"][i][j])
        x.append(None), mean.append(None), lower.append(None), upper.append(None)
    return x, mean, lower, upper


def _bands(x, lower, upper):
    """One closed polygon per forecast path (None-separated), so bands never bridge the gaps."""
    bx, by = [], []
    seg_x, seg_lo, seg_hi = [], [], []
    for xi, lo, hi in list(zip(x, lower, upper, strict=False)) + [(None, None, None)]:
        if xi is None:
            if seg_x:
                bx += seg_x + seg_x[::-1] + [None]
                by += seg_hi + seg_lo[::-1] + [None]
            seg_x, seg_lo, seg_hi = [], [], []
            continue
        seg_x.append(xi), seg_lo.append(lo), seg_hi.append(hi)
    return bx, by


def forecast_figure(series: ForecastSeries, method: str, steps: int) -> str:
    result = series.result
    res = result["resolution_s"]
    y = np.asarray(result["values"], dtype=float)
    first = max(0, result["initial"] - 86400 // res)  # a day of context before the backtest
    hours = np.arange(first, len(y)) * res / 3600
    fig = go.Figure()
    level = int(round(result["level"] * 100))
    if method in result["methods"]:
        x, mean, lower, upper = _paths(result, method, steps)
        bx, by = _bands(x, lower, upper)
        fig.add_trace(
            go.Scatter(
                x=bx,
                y=by,
                mode="lines",
                line={"width": 0},
                fill="toself",
                fillcolor="rgba(255,127,14,0.25)",
                name=f"{level}% interval",
                hoverinfo="skip",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=mean,
                mode="lines",
                line={"color": "#ff7f0e", "width": 1.5},
                name=f"{method} (backtest, hourly origins)",
            )
        )
        bad = failures(result, method)
        if bad:
            fig.add_trace(
                go.Scatter(
                    x=[b["hour"] for b in bad],
                    y=[b["actual_peak"] for b in bad],
                    mode="markers",
                    marker={"symbol": "x", "size": 10, "color": "#d62728"},
                    name="failed hour (error >> median)",
                    text=[f"wMAPE {b['wmape']:.1f}%" for b in bad],
                )
            )
    fig.add_trace(go.Scatter(x=hours, y=y[first:], mode="lines", line={"color": "#1f77b4", "width": 1}, name="actual"))
    fc = result["forecast"]
    fx = (fc["start"] + np.arange(len(fc["mean"]))) * res / 3600
    bx, by = _bands(list(fx), fc["lower"], fc["upper"])
    fig.add_trace(
        go.Scatter(
            x=bx,
            y=by,
            mode="lines",
            line={"width": 0},
            fill="toself",
            fillcolor="rgba(44,160,44,0.25)",
            showlegend=False,
            hoverinfo="skip",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=fx,
            y=fc["mean"],
            mode="lines",
            line={"color": "#2ca02c", "dash": "dash"},
            name=f"forecast past the end ({fc['method']}), peak {fc['peak']:.4g}",
        )
    )
    fig.update_layout(
        title=f"{series.label}: actual vs forecast",
        height=440,
        margin={"l": 60, "r": 20, "t": 50, "b": 40},
        legend={"orientation": "h", "y": -0.2},
    )
    fig.update_xaxes(title_text="hours from trace start")
    fig.update_yaxes(title_text=series.metric.replace("_", " "))
    return _html(fig)


def error_figure(series: ForecastSeries) -> str:
    result = series.result
    res = result["resolution_s"]
    fig = go.Figure()
    for i, (name, data) in enumerate(result["methods"].items()):
        fig.add_trace(
            go.Scatter(
                x=np.asarray(data["origins"]) * res / 3600,
                y=data["per_origin_wmape"],
                mode="lines+markers",
                marker={"size": 4},
                name=name,
                line={"color": PALETTE[i % len(PALETTE)], "width": 1},
                visible=True if name in (result["chosen"], "naive") else "legendonly",
            )
        )
    fig.update_layout(
        title="Error of each hourly forecast (wMAPE over the horizon): where forecasts fail",
        height=340,
        margin={"l": 60, "r": 20, "t": 50, "b": 40},
    )
    fig.update_xaxes(title_text="forecast origin, hours from trace start")
    fig.update_yaxes(title_text="wMAPE %")
    return _html(fig)


def residual_figure(series: ForecastSeries, method: str, steps: int) -> str:
    result = series.result
    res = result["resolution_s"]
    y = np.asarray(result["values"], dtype=float)
    x, mean, _, _ = _paths(result, method, steps)
    xs, resid = [], []
    for xi, m in zip(x, mean, strict=False):
        if xi is None:
            continue
        xs.append(xi)
        resid.append(y[int(round(xi * 3600 / res))] - m)
    fig = go.Figure(go.Bar(x=xs, y=resid, marker={"color": "#7f7f7f"}, name="actual - forecast"))
    fig.update_layout(
        title=f"Residuals of {method} (actual - forecast; negative = over-forecast)",
        height=300,
        margin={"l": 60, "r": 20, "t": 50, "b": 40},
    )
    fig.update_xaxes(title_text="hours from trace start")
    fig.update_yaxes(title_text=f"actual - forecast ({series.metric.replace('_', ' ')})")
    return _html(fig)


def lead_figure(series: ForecastSeries) -> str:
    result = series.result
    res = result["resolution_s"]
    fig = go.Figure()
    for i, (name, data) in enumerate(result["methods"].items()):
        leads = (np.arange(len(data["mae_by_lead"])) + 1) * res / 60
        fig.add_trace(
            go.Scatter(
                x=leads,
                y=data["mae_by_lead"],
                mode="lines+markers",
                name=name,
                line={"color": PALETTE[i % len(PALETTE)]},
            )
        )
    fig.update_layout(title="Mean absolute error by lead time", height=300, margin={"l": 60, "r": 20, "t": 50, "b": 40})
    fig.update_xaxes(title_text="minutes ahead")
    fig.update_yaxes(title_text=f"MAE ({series.metric.replace('_', ' ')})")
    return _html(fig)
