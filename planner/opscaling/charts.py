"""Plotly figures of an operator-level plan: savings against QPS, context length and phase; GPUs over time."""

from __future__ import annotations

import plotly.graph_objects as go

# legends below the plot (beside it they take half of a half-width chart at 1024 px)
LAYOUT = dict(height=400, margin=dict(t=50, b=110, l=60, r=10),
              legend=dict(orientation="h", yanchor="top", y=-0.28, x=0.0, xanchor="left"))
METRICS = (("gpus", "GPUs"), ("energy", "energy"), ("memory", "memory"))


def _pct(v):
    return None if v is None else 100.0 * v


def _savings_lines(rows: list[dict], x: str, title: str, xaxis: str) -> go.Figure:
    fig = go.Figure()
    xs = [r[x] for r in rows]
    for key, label in METRICS:
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=[_pct((r["operator_level_savings"] or {}).get(key)) for r in rows],
                name=label,
                mode="lines+markers",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=[_pct((r["default_stream_savings"] or {}).get("gpus")) for r in rows],
            name="GPUs, default stream (no sharing)",
            mode="lines",
            line=dict(dash="dot"),
        )
    )
    fig.update_layout(title=title, xaxis_title=xaxis, yaxis_title="savings vs model-level (%)", **LAYOUT)
    return fig


def savings_vs_qps(result: dict) -> go.Figure:
    sw = result["sweeps"]
    return _savings_lines(sw["qps"], "qps", f"Savings vs QPS (prefill, {sw['at']['length']:.0f}-token inputs)", "QPS")


def savings_vs_length(result: dict) -> go.Figure:
    sw = result["sweeps"]
    fig = _savings_lines(
        sw["length"], "length", f"Savings vs context length (prefill, {sw['at']['qps']:g} QPS)", "input tokens"
    )
    fig.update_xaxes(type="log")
    return fig


def savings_by_phase(result: dict) -> go.Figure:
    fig = go.Figure()
    phases = ["prefill", "decode"]
    for key, label in (("gpu_s", "GPU-seconds"), ("energy_j", "energy"), ("memory_gb_s", "memory GB-seconds")):
        ys = [_pct(result["totals"][ph]["operator_level"]["savings_vs_model_level"][key]) for ph in phases]
        fig.add_trace(go.Bar(x=phases, y=ys, name=label))
    fig.update_layout(
        title="Savings over the trace, by phase", xaxis_title="phase", yaxis_title="savings vs model-level (%)",
        barmode="group", **LAYOUT
    )
    return fig


def gpus_over_time(result: dict) -> go.Figure:
    fig = go.Figure()
    for phase in ("prefill", "decode"):
        rows = [r for r in result["timeline"] if r["phase"] == phase]
        xs = [r["start_s"] / 60.0 for r in rows]
        colour = "#2f6db5" if phase == "prefill" else "#e4572e"
        # model level wide and pale under operator level thin and dashed: equal counts stay visible as two lines
        for key, label, line in (("model_level_gpus", "model-level", dict(width=6, dash="solid")),
                                 ("operator_level_gpus", "operator-level", dict(width=2, dash="dash"))):
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=[r[key] for r in rows],
                    name=f"{phase}: {label}",
                    mode="lines",
                    opacity=0.35 if key == "model_level_gpus" else 1.0,
                    line=dict(shape="hv", color=colour, **line),
                )
            )
    top = max((max(r["model_level_gpus"], r["operator_level_gpus"]) for r in result["timeline"]), default=1)
    fig.update_layout(title="GPUs per window", xaxis_title="time into the trace (minutes)",
                      yaxis_title="GPUs (count)", yaxis_range=[0, 1.15 * top + 0.25], **LAYOUT)
    return fig


def sojourn_breakdown(result: dict) -> go.Figure:
    from planner.opscale.profiles import OPS

    detail = result["peak_detail"]["operator_level"]
    ops = sorted(detail["config"], key=lambda v: OPS.index(v) if v in OPS else len(OPS))  # jsonb sorts keys
    fig = go.Figure(
        go.Bar(
            x=ops,
            y=[None if detail["sojourn_s"][v] is None else 1e3 * detail["sojourn_s"][v] for v in ops],
            text=[f"r={detail['config'][v]['r']} b={detail['config'][v]['b']}" for v in ops],
        )
    )
    fig.update_layout(
        title=f"Per-operator sojourn at the busiest window ({result['peak_detail']['qps']:g} QPS, prefill)",
        xaxis_title="operator",
        yaxis_title="time in the operator s_v (ms)",
        **LAYOUT,
    )
    return fig


def all_figures(result: dict) -> dict[str, str]:
    figs = {"phase": savings_by_phase(result), "timeline": gpus_over_time(result), "sojourn": sojourn_breakdown(result)}
    if result.get("sweeps"):
        figs["qps"] = savings_vs_qps(result)
        figs["length"] = savings_vs_length(result)
    return {k: f.to_json() for k, f in figs.items()}
