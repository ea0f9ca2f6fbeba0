"""Plotly figures for a solved plan (built in Python, rendered with the local plotly.min.js)."""

from __future__ import annotations

from collections import defaultdict

import plotly.graph_objects as go

from planner.plans.exports import model_label
from planner.plotstyle import embed, harmonise

OPTION_COLOURS = {"reserved": "#2b6cb0", "on_demand": "#dd6b20", "spot": "#38a169"}


def instances_by_pool(result: dict) -> go.Figure:
    """Stacked areas: instances running per hour by (region, GPU type), all models together."""
    hours = list(range(result.get("hours", 0)))
    count = defaultdict(lambda: [0] * len(hours))
    for row in result.get("instances", []):
        count[f"{row['region']} / {row['gpu']}"][row["hour"]] += row["instances"]
    fig = go.Figure()
    for name in sorted(count):
        fig.add_trace(go.Scatter(x=hours, y=count[name], name=name, stackgroup="inst", mode="lines"))
    fig.update_layout(
        title="Instances per hour, by region and GPU type",
        xaxis_title="plan hour",
        yaxis_title="instances (count)",
        height=420,
        margin=dict(t=50, b=40, l=50, r=10),
    )
    return fig


def supply_by_option(result: dict) -> go.Figure:
    """Stacked areas: where the GPUs come from each hour (reserved used, on-demand, spot)."""
    hours = list(range(result.get("hours", 0)))
    series = {k: [0.0] * len(hours) for k in ("reserved", "on_demand", "spot")}
    for row in result.get("supply", []):
        series["reserved"][row["hour"]] += min(row["used"], row["reserved"])
        series["on_demand"][row["hour"]] += row["on_demand"]
        series["spot"][row["hour"]] += row["spot"]
    fig = go.Figure()
    for name, ys in series.items():
        fig.add_trace(
            go.Scatter(
                x=hours,
                y=ys,
                name=name.replace("_", "-"),
                stackgroup="opt",
                mode="lines",
                line=dict(color=OPTION_COLOURS[name]),
            )
        )
    fig.update_layout(
        title="GPUs per hour by purchase option",
        xaxis_title="plan hour",
        yaxis_title="GPUs (count)",
        height=360,
        margin=dict(t=50, b=40, l=50, r=10),
    )
    return fig


def cost_breakdown(result: dict) -> go.Figure:
    cost = result.get("cost", {})
    static = result.get("static_peak", {}).get("total")
    names = ["reserved", "on_demand", "spot", "start_fees"]
    fig = go.Figure()
    for name in names:
        if cost.get(name):
            fig.add_trace(
                go.Bar(
                    x=["this plan"],
                    y=[cost[name]],
                    name=name.replace("_", "-"),
                    marker_color=OPTION_COLOURS.get(name, "#718096"),
                )
            )
    if static:
        fig.add_trace(go.Bar(x=["static peak, on-demand"], y=[static], name="static peak", marker_color="#a0aec0"))
    fig.update_layout(
        barmode="stack",
        title="Cost by purchase option vs static peak",
        yaxis_title="cost over the horizon ($)",
        xaxis_title="plan",
        yaxis_tickformat=",.0f",
        height=360,
        margin=dict(t=50, b=40, l=60, r=10),
    )
    return fig


def coverage(result: dict, limit: int = 12) -> go.Figure:
    """Per endpoint (first ``limit`` by demand): forecast (dotted), covered target (dashed) and planned capacity
    (solid), one colour per endpoint and ONE legend entry per endpoint (the line styles are explained in the
    title), so 12 endpoints make 12 legend entries, not 36."""
    rows = defaultdict(list)
    for c in result.get("coverage", []):
        rows[(model_label(c), c["region"])].append(c)
    ranked = sorted(rows, key=lambda k: -sum(c["target"] for c in rows[k]))[:limit]
    fig = go.Figure()
    for n, key in enumerate(ranked):
        cs = sorted(rows[key], key=lambda c: c["hour"])
        hours = [c["hour"] for c in cs]
        label = f"{key[0]} @ {key[1]}"
        visible = True if n < 3 else "legendonly"
        served = [c["capacity"] + c["rerouted_out"] - c["rerouted_in"] for c in cs]
        for ys, what, line in (
            ([c["forecast"] for c in cs], "forecast", dict(dash="dot")),
            ([c["target"] for c in cs], "target (risk level)", dict(dash="dash")),
            (served, "served (local capacity ± rerouting)", dict(shape="hv")),
        ):
            fig.add_trace(
                go.Scatter(x=hours, y=ys, name=label, line=line, visible=visible, legendgroup=label,
                           hovertemplate=f"{label} {what}<br>hour %{{x}}: %{{y:,.0f}} TPS<extra></extra>")
            )
    more = f" (top {limit} endpoints by demand)" if len(rows) > limit else ""
    fig.update_layout(
        title=f"Coverage vs forecast{more}: dotted = forecast, dashed = target, solid = served; click a name to show it",
        xaxis_title="plan hour",
        yaxis_title="input tokens per second (TPS)",
        height=460,
        margin=dict(t=50, b=40, l=60, r=10),
    )
    return fig


def all_figures(result: dict) -> dict[str, str]:
    figs = {"pools": instances_by_pool(result), "options": supply_by_option(result), "cost": cost_breakdown(result),
            "coverage": coverage(result)}
    return {name: embed(harmonise(fig)) for name, fig in figs.items()}
