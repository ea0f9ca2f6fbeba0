"""Reads for traces: stored characterisation data and the Plotly figures built from it."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

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
    if requested in ("60", "900"):
        return requested
    return "60" if trace.span_s <= 2 * 86400 else "900"


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
    """RPS (solid) and input+output TPS (dashed, right axis) over time per group, like SageServe Fig. 3."""
    t_s, groups = aggregate_series(data, interval, by)
    x = np.asarray(t_s, dtype=float) / 3600.0
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    palette = [
        "#1f77b4",
        "#ff7f0e",
        "#2ca02c",
        "#d62728",
        "#9467bd",
        "#8c564b",
        "#e377c2",
        "#7f7f7f",
        "#bcbd22",
        "#17becf",
    ]
    for i, (label, series) in enumerate(groups.items()):
        colour = palette[i % len(palette)]
        fig.add_trace(
            go.Scatter(
                x=x,
                y=series["rps"],
                name=f"{label} RPS",
                mode="lines",
                line={"color": colour, "width": 1.5},
                legendgroup=label,
            ),
            secondary_y=False,
        )
        tps = series["input_tps"] + series["output_tps"]
        fig.add_trace(
            go.Scatter(
                x=x,
                y=tps,
                name=f"{label} TPS",
                mode="lines",
                line={"color": colour, "width": 1, "dash": "dash"},
                legendgroup=label,
                visible="legendonly" if len(groups) > 6 else True,
            ),
            secondary_y=True,
        )
    width = "1 min" if interval == "60" else "15 min"
    fig.update_layout(
        title=f"Requests and tokens per second by {by} ({width} bins)",
        height=460,
        margin={"l": 60, "r": 60, "t": 50, "b": 40},
        legend={"orientation": "h", "y": -0.2},
    )
    fig.update_xaxes(title_text="hours from trace start")
    fig.update_yaxes(title_text="requests/s", secondary_y=False)
    fig.update_yaxes(title_text="input+output tokens/s", secondary_y=True)
    return fig


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
    fig.update_xaxes(type="log", title_text="tokens per request")
    fig.update_yaxes(title_text="fraction of requests", range=[0, 1.01])
    fig.update_layout(title="Token length CDFs", height=420, margin={"l": 60, "r": 20, "t": 60, "b": 40})
    return fig
