"""Reads for traces: stored characterisation data and the Plotly figures built from it."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from planner.plotstyle import harmonise
from planner.traces.models import Trace

GROUP_BY = ("tier", "region", "model", "group")
_INDEX = {"region": 0, "model": 1, "tier": 2}
MAX_CDF_GROUPS = 8


def characterisation_data(trace: Trace) -> dict | None:
    """The stored series and CDFs (None until the characterisation job has finished)."""
    path = trace.characterisation_file
    if not path.exists():
        return None
    with open(path) as fh:
        return json.load(fh)


def pick_interval(trace: Trace, requested: str | None = None) -> str:
    """1-minute bins up to a 3-hour span (at most 180 points per line), 15-minute bins beyond (a day at 1 minute
    is 1,440 points per line: a hairball)."""
    if requested in ("60", "900"):
        return requested
    return "60" if (trace.span_s or 0) <= 3 * 3600 else "900"


def complete_bins(t_s: list[float], width: float, span_s: float) -> int:
    """How many leading bins are complete: a last bin that ends after the trace does is partial (its rate would
    drop towards zero only because the trace stops), so it is dropped."""
    n = len(t_s)
    while n > 1 and t_s[n - 1] + width > span_s + 1e-6:
        n -= 1
    return n


def aggregate_series(data: dict, interval: str, by: str) -> tuple[list[float], dict[str, dict[str, np.ndarray]]]:
    """Sum the per-(region|model|tier) series into one series per ``by`` value."""
    block = data["series"][interval]
    out: dict[str, dict[str, np.ndarray]] = {}
    for key, series in block["groups"].items():
        if key == "all":
            continue
        label = key if by == "group" else key.split("|")[_INDEX[by]]
        acc = out.setdefault(label, {name: np.zeros(len(block["t_s"])) for name in series})
        for name, values in series.items():
            acc[name] += np.asarray(values, dtype=float)
    return block["t_s"], dict(sorted(out.items()))


def rate_figure(trace: Trace, data: dict, *, interval: str, by: str) -> go.Figure:
    """RPS (solid) and input+output TPS (dashed, right axis) over time per group, like SageServe Fig. 3.
    One colour and one legend entry per group; a partial last bin is dropped (and the title says so)."""
    t_s, groups = aggregate_series(data, interval, by)
    width = float(interval)
    keep = complete_bins(list(t_s), width, float(trace.span_s or 0.0)) if t_s else 0
    x = np.asarray(t_s[:keep], dtype=float) / 3600.0
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for label, series in groups.items():
        fig.add_trace(
            go.Scatter(x=x, y=np.asarray(series["rps"])[:keep], name=label, mode="lines", line={"width": 1.5},
                       legendgroup=label, hovertemplate=f"{label} RPS: %{{y:,.2f}}<extra></extra>"),
            secondary_y=False,
        )
        tps = (series["input_tps"] + series["output_tps"])[:keep]
        fig.add_trace(
            go.Scatter(x=x, y=tps, name=label, mode="lines", line={"width": 1, "dash": "dash"}, legendgroup=label,
                       hovertemplate=f"{label} TPS: %{{y:,.0f}}<extra></extra>",
                       visible="legendonly" if len(groups) > 6 else True),
            secondary_y=True,
        )
    bin_words = "1 min" if interval == "60" else "15 min"
    dropped = len(t_s) - keep
    note = "; the last, partial bin is left out" if dropped else ""
    fig.update_layout(
        title=f"Requests/s (solid) and tokens/s (dashed) by {by}, {bin_words} bins{note}",
        height=480,
        margin={"l": 70, "r": 70, "t": 50, "b": 40},
    )
    fig.update_xaxes(title_text="hours from trace start")
    fig.update_yaxes(title_text="requests/s", secondary_y=False, rangemode="tozero")
    fig.update_yaxes(title_text="input+output tokens/s", secondary_y=True, rangemode="tozero")
    return harmonise(fig)


def cdf_figure(trace: Trace, data: dict) -> go.Figure:
    """Input and output token CDFs, overall and for the largest groups, like SageServe Fig. 10."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("input tokens", "output tokens"))
    order = ["all"] + [g["key"] for g in (trace.characterisation or {}).get("groups", [])][:MAX_CDF_GROUPS]
    if len(order) == 2:  # one group: it equals "all"
        order = ["all"]
    for key in order:
        cdf = data["cdf"].get(key)
        if not cdf:
            continue
        for col, side in ((1, "input"), (2, "output")):
            fig.add_trace(
                go.Scatter(
                    x=cdf[side]["x"],
                    y=cdf[side]["p"],
                    mode="lines",
                    name=key,
                    legendgroup=key,
                    showlegend=col == 1,
                    line={"width": 2.5 if key == "all" else 1.2},
                ),
                row=1,
                col=col,
            )
    fig.update_xaxes(type="log", title_text="tokens per request (log scale)")
    fig.update_yaxes(title_text="share of requests (CDF)", range=[0, 1.01], tickformat=".0%")
    fig.update_layout(title="Token length CDFs", height=440, margin={"l": 70, "r": 20, "t": 60, "b": 40})
    return harmonise(fig)
