"""The comparison page's Plotly figures (after SageServe's Fig. 11, 12a, 12b, 13a / Table 1, 13b and 15).
Django-free.

Each function takes the per-variant summaries (and the aggregate) and returns a ``plotly.graph_objects
.Figure``; ``all_figures`` returns ``{id: figure}`` for the page (``fig.to_json()``). Titles are plain words
with the paper reference as a small note; every strategy has one colour and one line style in every figure
(lines that overlap stay apart by their dashes); every axis has a title with its unit; the legend sits above
the plot, clear of the tick labels; a figure with nothing to show (all zero) is left out.
"""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from planner.plotstyle import colour_map, harmonise

TIERS = ("IW-F", "IW-N", "NIW")
_LAYOUT = dict(template="plotly_white", margin=dict(l=70, r=20, t=95, b=60), height=440)
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def _layout(fig: go.Figure, title: str, note: str = "", **kw) -> go.Figure:
    text = title + (f"<br><sup>{note}</sup>" if note else "")
    fig.update_layout(title=dict(text=text, y=0.97, yanchor="top"), **_LAYOUT, **kw)
    return fig


def _legend_on_top(fig: go.Figure) -> go.Figure:
    """The legend between the title and the plot (above the subplot titles when there are some)."""
    above_titles = bool(fig.layout.annotations)
    fig.update_layout(legend=dict(orientation="h", yanchor="bottom", y=1.09 if above_titles else 1.02, xanchor="left",
                                  x=0, font=dict(size=11), tracegroupgap=2),
                      margin=dict(t=115 if above_titles else 95))
    return fig


def _has_data(fig: go.Figure) -> bool:
    """Any trace with a non-zero value (a chart of zeros or Nones says nothing)."""
    for tr in fig.data:
        ys = getattr(tr, "y", None)
        if ys is not None and any(y not in (None, 0, 0.0) for y in ys):
            return True
    return False


def _colour(trace_kw: dict, key: str, colours: dict) -> dict:
    return {**trace_kw, "legendgroup": key, "marker_color": colours.get(key)}


def _ep_label(e: dict) -> str:
    return f"{e['region']} / {e['model']}"


def instances_over_time(summaries: dict[str, dict], order: list[str]) -> go.Figure:
    """Fig. 11: instances deployed (summed over regions and models) per strategy, area = instance-hours."""
    fig = go.Figure()
    colours = colour_map(order)
    for i, key in enumerate(order):
        s = summaries[key]
        tl = s.get("timeline") or {}
        t = [x / 3600.0 for x in tl.get("t_s", [])]
        total = tl.get("instances_total") or []
        ih = (s.get("totals") or {}).get("instance_hours", 0.0)
        fig.add_trace(go.Scatter(x=t, y=total, mode="lines", line_shape="hv", name=f"{key} ({ih:,.1f} inst-h)",
                                 legendgroup=key, line=dict(color=colours[key], dash=DASHES[i % len(DASHES)],
                                                            width=2 if i == 0 else 1.6)))
    return _layout(fig, "Instances in the fleet over the simulated span",
                   "area under a line = instance-hours; one line style per strategy · after SageServe Fig. 11",
                   xaxis_title="simulated time (h)", yaxis_title="instances (serving + provisioning, count)",
                   yaxis_rangemode="tozero")


def hours_per_endpoint(summaries: dict[str, dict], order: list[str], metric: str = "instance_hours") -> go.Figure:
    """Fig. 12a: instance-hours (or GPU-hours) per (region, model), grouped by strategy."""
    fig = go.Figure()
    colours = colour_map(order)
    for key in order:
        eps = summaries[key].get("endpoints", [])
        fig.add_trace(go.Bar(**_colour(dict(x=[_ep_label(e) for e in eps], y=[e.get(metric, 0.0) for e in eps],
                                            name=key), key, colours)))
    label = "GPU-hours" if metric == "gpu_hours" else "instance-hours"
    return _layout(fig, f"{label[0].upper()}{label[1:]} per region and model", "after SageServe Fig. 12a",
                   barmode="group", yaxis_title=f"{label} (h)", xaxis_title="region / model")


def utilisation(summaries: dict[str, dict], order: list[str]) -> go.Figure:
    """Fig. 12b: mean effective memory utilisation per (region, model) and strategy."""
    fig = go.Figure()
    colours = colour_map(order)
    for key in order:
        eps = summaries[key].get("endpoints", [])
        fig.add_trace(go.Bar(**_colour(dict(x=[_ep_label(e) for e in eps],
                                            y=[100.0 * (e.get("mean_utilisation") or 0.0) for e in eps], name=key),
                                       key, colours)))
    return _layout(fig, "How full the KV cache was, per region and model",
                   "time-weighted mean of the memory in use, weights excluded · after SageServe Fig. 12b",
                   barmode="group", yaxis_title="KV memory in use (%)", xaxis_title="region / model")


def latency_per_tier(summaries: dict[str, dict], order: list[str]) -> go.Figure:
    """Fig. 13a / Table 1: p95 TTFT and p95 E2E per tier and strategy."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("p95 time to first token", "p95 end-to-end latency"),
                        horizontal_spacing=0.1)
    colours = colour_map(order)
    for key in order:
        tiers = summaries[key].get("tiers") or {}
        present = [t for t in ("IW-F", "IW-N") if tiers.get(t, {}).get("n")]
        for col, metric in ((1, "ttft_p95"), (2, "e2e_p95")):
            fig.add_trace(go.Bar(**_colour(dict(x=present, y=[tiers[t].get(metric) for t in present], name=key,
                                                showlegend=col == 1), key, colours)), row=1, col=col)
    fig.update_xaxes(title_text="tier (interactive)")
    fig.update_yaxes(title_text="seconds", rangemode="tozero")
    return _layout(fig, "Latency of interactive requests (95th percentile)", "after SageServe Fig. 13a and Table 1",
                   barmode="group")


def scaling_waste(summaries: dict[str, dict], order: list[str]) -> go.Figure:
    """Fig. 13b: GPU-hours spent provisioning (paid, serving nothing), split by where the instance came from."""
    sources = []
    for key in order:
        for src in (summaries[key].get("waste_by_source") or {}):
            if src not in sources:
                sources.append(src)
    fig = go.Figure()
    if not sources:
        fig.add_trace(go.Bar(x=order, y=[(summaries[k].get("totals") or {}).get("provisioning_gpu_hours", 0.0)
                                         for k in order], name="provisioning"))
    for src in sources:
        fig.add_trace(go.Bar(x=order, y=[(summaries[k].get("waste_by_source") or {}).get(src, 0.0) for k in order],
                             name=src))
    return _layout(fig, "GPU-hours paid while instances start up, by where they came from",
                   "scaling waste · after SageServe Fig. 13b", barmode="stack", yaxis_title="GPU-hours (h)",
                   xaxis_title="strategy")


def violations_per_scheduler(summaries: dict[str, dict], order: list[str]) -> go.Figure:
    """Fig. 15: SLO violations (%) per IW tier for each variant (scheduler variants side by side)."""
    fig = go.Figure()
    for tier in ("IW-F", "IW-N"):
        ys = []
        for key in order:
            t = (summaries[key].get("tiers") or {}).get(tier) or {}
            att = t.get("attainment")
            ys.append(None if att is None else 100.0 * (1.0 - att))
        fig.add_trace(go.Bar(x=order, y=ys, name=f"{tier} violations"))
    return _layout(fig, "Requests that missed their latency target, per tier",
                   "a request misses when its time to first token exceeds its tier's target · after SageServe Fig. 15b",
                   barmode="group", yaxis_title="requests missing the target (%)", xaxis_title="strategy")


def all_figures(summaries: dict[str, dict], order: list[str]) -> dict[str, go.Figure]:
    order = [k for k in order if k in summaries]
    figs = {
        "fig11": instances_over_time(summaries, order),
        "fig12a": hours_per_endpoint(summaries, order, "instance_hours"),
        "fig12a_gpu": hours_per_endpoint(summaries, order, "gpu_hours"),
        "fig12b": utilisation(summaries, order),
        "fig13a": latency_per_tier(summaries, order),
        "fig13b": scaling_waste(summaries, order),
        "fig15": violations_per_scheduler(summaries, order),
    }
    return {name: _legend_on_top(harmonise(fig, legend_below=False)) for name, fig in figs.items()
            if _has_data(fig)}
