"""Reads: runs visible to a user, and the Plotly figures of a run page."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from planner.accounts.access import visible_to
from planner.plotstyle import harmonise
from simulations.models import SimulationRun


def runs_for(user):
    return visible_to(user, SimulationRun.objects.select_related("job"))


def timeline_figure(result: dict) -> go.Figure:
    tl = result.get("timeline") or {}
    t = [x / 3600 for x in tl.get("t", [])]
    names = tl.get("endpoints", [])
    series = tl.get("series", {})
    fig = make_subplots(rows=4, cols=1, shared_xaxes=True, vertical_spacing=0.05,
                        subplot_titles=("Serving (+ provisioning) instances", "Effective memory utilisation",
                                        "Requests per second (routed)", "Waiting requests"))
    for i, name in enumerate(names):
        group = dict(legendgroup=name)
        if "serving" in series:
            total = [s + p for s, p in zip(series["serving"][i], series["provisioning"][i], strict=False)]
            fig.add_trace(go.Scatter(x=t, y=total, name=name, mode="lines", **group), row=1, col=1)
        if "utilisation" in series:
            fig.add_trace(go.Scatter(x=t, y=series["utilisation"][i], name=name, mode="lines", showlegend=False,
                                     **group), row=2, col=1)
        if "rps" in series:
            fig.add_trace(go.Scatter(x=t, y=series["rps"][i], name=name, mode="lines", showlegend=False, **group),
                          row=3, col=1)
        if "queue" in series:
            fig.add_trace(go.Scatter(x=t, y=series["queue"][i], name=name, mode="lines", showlegend=False,
                                     **group), row=4, col=1)
    fig.update_xaxes(title_text="simulated time (h)", row=4, col=1)
    for row, title in enumerate(("instances (count)", "KV memory in use (fraction)", "requests/s", "requests waiting"),
                                start=1):
        fig.update_yaxes(title_text=title, row=row, col=1, rangemode="tozero")
    fig.update_layout(height=960, margin=dict(l=70, r=20, t=40, b=40))
    return harmonise(fig)


def latency_figure(result: dict) -> go.Figure:
    hist = result.get("histograms") or {}
    fig = make_subplots(rows=1, cols=2, subplot_titles=("TTFT (s)", "E2E (s)"))
    for tier, h in hist.items():
        for col, metric in ((1, "ttft"), (2, "e2e")):
            edges = h[metric]["edges"]
            mids = [(edges[i] * edges[i + 1]) ** 0.5 for i in range(len(edges) - 1)]
            fig.add_trace(go.Scatter(x=mids, y=h[metric]["counts"], name=f"{tier}", mode="lines",
                                     line_shape="hvh", legendgroup=tier, showlegend=col == 1), row=1, col=col)
    fig.update_xaxes(type="log", title_text="seconds (log scale)")
    fig.update_yaxes(title_text="requests per bin", rangemode="tozero")
    fig.update_layout(height=420, margin=dict(l=70, r=20, t=40, b=40))
    return harmonise(fig)
