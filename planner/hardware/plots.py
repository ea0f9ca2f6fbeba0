"""Plotly figures for the deployment page (built in Python, rendered with the local plotly.min.js)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from planner.catalogue.fit import EXCLUDING, prefill_time


def _excluded(flags: list[str], target: str) -> bool:
    """True when the fit left this configuration out for ``target`` (see catalogue.fit.EXCLUDING)."""
    return any(f in EXCLUDING[target] for f in flags)


def fit_figure(deployment) -> go.Figure | None:
    """Prefill: measured median per configuration vs batch tokens, with the fitted curve.
    Decode: fitted vs measured per-iteration time (points on the diagonal are perfect)."""
    all_points = deployment.points or []
    # SLINFER tables measure prefill (batch 1) and decode in separate rows: each side plots its own points
    points = [p for p in all_points if p.get("prompt_time_s") is not None]
    decode_points = [p for p in all_points if p.get("token_time_s") is not None]
    if not points or not decode_points:
        return None
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("Prefill: one iteration over T batch tokens", "Decode: per-iteration time, fitted vs measured"),
    )
    t_max = max(p["batch_tokens"] for p in points)
    grid = np.unique(np.geomspace(1, t_max * 1.1, 200).round())
    fig.add_trace(
        go.Scatter(
            x=grid,
            y=prefill_time(deployment.prefill, grid) * 1e3,
            mode="lines",
            name="fit c0 + c1·T + c2·T²" + (" (one prompt of T)" if "c_sq" in deployment.prefill else ""),
            line={"color": "#1f77b4"},
        ),
        row=1,
        col=1,
    )
    if "c_sq" in deployment.prefill:  # the richer form depends on the batch's prompts, not only T: per configuration
        fig.add_trace(
            go.Scatter(
                x=[p["batch_tokens"] for p in points],
                y=[p["prompt_time_fit_s"] * 1e3 for p in points],
                mode="markers",
                name="fit at each measured batch",
                marker={"color": "#1f77b4", "symbol": "x", "size": 7},
            ),
            row=1,
            col=1,
        )
    for flagged, color, label in ((False, "#2ca02c", "measured"), (True, "#d62728", "flagged, not fitted")):
        sel = [p for p in points if _excluded(p["flags"], "prompt_time") == flagged]
        if sel:
            fig.add_trace(
                go.Scatter(
                    x=[p["batch_tokens"] for p in sel],
                    y=[p["prompt_time_s"] * 1e3 for p in sel],
                    mode="markers",
                    name=f"prefill {label}",
                    marker={"color": color, "size": 8},
                    text=[
                        f"prompt {p['prompt_size']} × batch {p['batch_size']}<br>{', '.join(p['flags'])}" for p in sel
                    ],
                ),
                row=1,
                col=1,
            )
    _decode_panel(fig, decode_points)
    fig.update_xaxes(type="log", title_text="batch prompt tokens T", row=1, col=1)
    fig.update_yaxes(type="log", title_text="prompt_time (ms)", row=1, col=1)
    fig.update_xaxes(title_text="measured token_time per iteration (ms)", row=1, col=2)
    fig.update_yaxes(title_text="fitted (ms)", row=1, col=2)
    fig.update_layout(height=430, margin={"t": 40, "l": 60, "r": 20, "b": 50}, legend={"orientation": "h", "y": -0.2})
    return fig


def _decode_panel(fig: go.Figure, decode_points: list[dict]) -> None:
    """The right panel: fitted vs measured per-iteration decode time, measured and flagged points apart."""
    lo = min(min(p["token_time_s"], p["token_time_fit_s"]) for p in decode_points) * 1e3
    hi = max(max(p["token_time_s"], p["token_time_fit_s"]) for p in decode_points) * 1e3
    fig.add_trace(
        go.Scatter(
            x=[lo, hi], y=[lo, hi], mode="lines", name="fitted = measured", line={"color": "#999", "dash": "dash"}
        ),
        row=1,
        col=2,
    )
    for flagged, color, label in ((False, "#2ca02c", "measured"), (True, "#d62728", "flagged, not fitted")):
        sel = [p for p in decode_points if _excluded(p["flags"], "token_time") == flagged]
        if sel:
            fig.add_trace(
                go.Scatter(
                    x=[p["token_time_s"] * 1e3 for p in sel],
                    y=[p["token_time_fit_s"] * 1e3 for p in sel],
                    mode="markers",
                    name=f"decode {label}",
                    marker={"color": color, "size": 8, "symbol": "diamond"},
                    text=[
                        f"prompt {p['prompt_size']} × batch {p['batch_size']}, {p['token_size']} tokens" for p in sel
                    ],
                ),
                row=1,
                col=2,
            )
