"""One look for every Plotly figure of the workspace. Django-free (plotly only).

``harmonise`` gives each legend entry ONE colour in every panel (traces are grouped by ``legendgroup``,
else by name; a group keeps an explicit colour when one of its traces has one), shows each group once in
the legend, puts the legend under the plot (wrapping, never scrolling), and fills missing axis titles
with a loud placeholder so a test catches them. ``embed`` serialises a figure for a
``<script type="application/json" data-plotly-for="...">`` tag that static/js/planner.js renders with PNG,
SVG and CSV downloads.
"""

from __future__ import annotations

import plotly.express as px
import plotly.graph_objects as go

_ESCAPES = {ord("<"): "\\u003C", ord(">"): "\\u003E", ord("&"): "\\u0026"}


def palette(n: int) -> list[str]:
    """A qualitative palette with at least ``n`` distinct colours (10, 24, then 26 + 24 + 24)."""
    q = px.colors.qualitative
    if n <= 10:
        return list(q.Plotly)
    if n <= 24:
        return list(q.Dark24)
    colours = list(dict.fromkeys(q.Alphabet + q.Dark24 + q.Light24))
    return colours if n <= len(colours) else [colours[i % len(colours)] for i in range(n)]


def colour_map(keys) -> dict[str, str]:
    keys = list(dict.fromkeys(keys))
    colours = palette(len(keys))
    return {k: colours[i % len(colours)] for i, k in enumerate(keys)}


def _group(trace) -> str:
    return str(trace.legendgroup or trace.name or "")


def _explicit_colour(trace):
    for attr in ("line", "marker"):
        part = getattr(trace, attr, None)
        colour = getattr(part, "color", None) if part is not None else None
        if isinstance(colour, str):
            return colour
    return None


def trace_colour(trace) -> str | None:
    """The colour a trace is drawn in (line for lines, marker for bars/markers)."""
    return _explicit_colour(trace)


def harmonise(fig: go.Figure, *, legend_below: bool = True) -> go.Figure:
    groups: dict[str, str | None] = {}
    for tr in fig.data:
        g = _group(tr)
        if groups.get(g) is None:
            groups[g] = _explicit_colour(tr)
    auto = colour_map([g for g, c in groups.items() if c is None])
    shown = set()
    for tr in fig.data:
        g = _group(tr)
        colour = groups[g] or auto[g]
        tr.legendgroup = g
        if tr.type in ("scatter", "scattergl"):
            tr.line.color = colour
            if tr.mode and "markers" in tr.mode:
                tr.marker.color = colour
        elif hasattr(tr, "marker"):
            tr.marker.color = colour
        if tr.showlegend is False or not g:  # kept out of the legend on purpose (bands, repeated panels)
            tr.showlegend = False
            continue
        tr.showlegend = g not in shown
        shown.add(g)
    if legend_below:
        fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.22, xanchor="left", x=0,
                                      font=dict(size=11), tracegroupgap=2))
        fig.update_layout(margin=dict(b=max(90, (fig.layout.margin.b or 0))))
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    return fig


def axes_without_title(fig: go.Figure) -> list[str]:
    """Names of the layout's x/y axes that have no title (shared x axes count when one of them has one)."""
    layout = fig.layout.to_plotly_json()
    missing = []
    for name, axis in layout.items():
        if not (name.startswith("xaxis") or name.startswith("yaxis")) or not isinstance(axis, dict):
            continue
        title = axis.get("title")
        text = title.get("text") if isinstance(title, dict) else title
        if not text and not axis.get("matches") and axis.get("visible") is not False:
            missing.append(name)
    return missing


def embed(fig: go.Figure | str) -> str:
    """JSON of a figure, safe inside a <script> tag."""
    text = fig if isinstance(fig, str) else fig.to_json()
    return text.translate(_ESCAPES)
