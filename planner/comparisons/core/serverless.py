"""Serverless comparisons: SLINFER, the ServerlessLLM baselines and the ablations side by side on one
serverless scenario (simulations/engine/serverless). Django-free.

A comparison's ``scenario`` is a serverless spec with ``"kind": "serverless"`` (``is_serverless``); each
*system* below is one child job, exactly as a fleet strategy is. The aggregate puts SLO-met requests (the
paper's headline metric), average CPU and GPU nodes in use, energy and the resizing share side by side, with
SLO-met as a multiple of the baseline's (the paper's "x more SLO-met requests than sllm").
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from planner.plotstyle import colour_map

KIND = "serverless"

# system key -> (engine system, parameter overrides); the ablations are SLINFER with one mechanism off (spec 5.3)
SYSTEMS: dict[str, tuple[str, dict]] = {
    "sllm": ("sllm", {}),
    "sllm+c": ("sllm+c", {}),
    "sllm+c+s": ("sllm+c+s", {}),
    "slinfer": ("slinfer", {}),
    "slinfer-no-cpu": ("slinfer", {"use_cpu": False}),
    "slinfer-no-sharing": ("slinfer", {"sharing": False}),
    "slinfer-no-consolidation": ("slinfer", {"consolidation": False}),
}
DEFAULT_SYSTEMS = ["sllm", "sllm+c", "sllm+c+s", "slinfer"]
DEFAULT_BASELINE = "sllm"
DESCRIPTIONS = {
    "slinfer": "SLINFER: CPU and GPU nodes shared by many models, token-level scheduling, KV resizing, consolidation",
    "sllm": "ServerlessLLM: GPU only, one exclusive instance per GPU, queue when none is free",
    "sllm+c": "ServerlessLLM + CPU: CPU first, exclusive nodes",
    "sllm+c+s": "ServerlessLLM + CPU + static sharing: two fixed half-node slots per node",
    "slinfer-no-cpu": "SLINFER without CPU nodes (ablation)",
    "slinfer-no-sharing": "SLINFER without sharing: one instance per node (ablation)",
    "slinfer-no-consolidation": "SLINFER without consolidation: no preemption, no largest-batch routing (ablation)",
}
# the per-system figures the page, the API's totals and the PDF show
TOTALS = ("requests", "slo_met", "slo_attainment", "dropped", "avg_cpu_nodes", "avg_gpu_nodes", "energy_kwh",
          "resizing_share", "migration_rate", "per_token_deadline_compliance", "ttft_p99_s", "no_oom", "oom_checks")


class ServerlessVariantError(ValueError):
    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field, self.message = field, message


def is_serverless(scenario) -> bool:
    """A serverless scenario: marked ``"kind": "serverless"``, or shaped as one (``nodes`` and no ``fleet``, which
    every fleet scenario has), so a file of fixtures/serverless/ pasted as it is runs as what it is."""
    if not isinstance(scenario, dict):
        return False
    return scenario.get("kind") == KIND or ("nodes" in scenario and "fleet" not in scenario)


def spec_of(scenario: dict) -> dict:
    """The serverless spec inside a comparison's scenario (without the ``kind`` marker)."""
    return {k: v for k, v in scenario.items() if k != "kind"}


def build_variants(systems, baseline: str | None) -> tuple[list[dict], str]:
    """[{key, strategy, scheduler, knobs}] (the fleet variants' shape: ``strategy`` is the engine system,
    ``knobs`` the parameter overrides) and the baseline key; ServerlessVariantError names the bad input."""
    systems = list(dict.fromkeys(systems or DEFAULT_SYSTEMS))
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise ServerlessVariantError("systems", f"unknown system(s) {', '.join(map(str, unknown))}; "
                                                f"choose from {', '.join(SYSTEMS)}")
    base = baseline or (DEFAULT_BASELINE if DEFAULT_BASELINE in systems else systems[0])
    if base not in systems:
        raise ServerlessVariantError("baseline", f"the baseline {base!r} is not among the systems "
                                                 f"({', '.join(systems)})")
    variants = [{"key": s, "strategy": SYSTEMS[s][0], "scheduler": "", "knobs": dict(SYSTEMS[s][1])}
                for s in systems]
    return variants, base


def totals(metrics: dict) -> dict:
    return {k: metrics.get(k) for k in TOTALS}


def _ratio(a, b):
    return None if a is None or not b else a / b


def aggregate(summaries: dict[str, dict], baseline: str, order: list[str]) -> dict:
    """Rows in ``order`` for the systems that finished; SLO-met and energy against the baseline when it finished.
    ``best`` = most SLO-met requests (ties: fewer GPU nodes, then less energy)."""
    base = summaries.get(baseline)
    rows = []
    for key in order:
        m = summaries.get(key)
        if m is None:
            continue
        slo_met = m.get("slo_met") or 0
        rows.append({
            "key": key, "system": (m.get("system") or key), "is_baseline": key == baseline,
            "description": DESCRIPTIONS.get(key, ""), **totals(m),
            "slo_met_vs_baseline": _ratio(m.get("slo_met"), base and base.get("slo_met")),
            "energy_vs_baseline": _ratio(m.get("energy_kwh"), base and base.get("energy_kwh")),
            "wh_per_slo_met": (1000.0 * m["energy_kwh"] / slo_met) if slo_met and m.get("energy_kwh") is not None
            else None,
        })
    best = max(rows, key=lambda r: (r["slo_met"] or 0, -(r["avg_gpu_nodes"] or 0.0), -(r["energy_kwh"] or 0.0)),
               default=None)
    first = next(iter(summaries.values()), {})
    return {"kind": KIND, "baseline": baseline, "baseline_finished": base is not None, "order": order,
            "rows": rows, "best": best["key"] if best else None,
            "requests": first.get("requests"), "run_length_s": first.get("run_length_s")}


# --- figures (Plotly; one colour per system, shared with the PDF) ------------------------------------------------

_LAYOUT = dict(template="plotly_white", margin=dict(l=70, r=20, t=60, b=90), height=420)


def _bars(rows, field, title, ytitle, scale=1.0) -> go.Figure:
    colours = colour_map([r["key"] for r in rows])
    fig = go.Figure()
    for r in rows:
        v = r.get(field)
        fig.add_trace(go.Bar(x=[r["key"]], y=[None if v is None else scale * v], name=r["key"], legendgroup=r["key"],
                             marker_color=colours[r["key"]], showlegend=False))
    fig.update_layout(title=title, yaxis_title=ytitle, xaxis_title="system", yaxis_rangemode="tozero", **_LAYOUT)
    return fig


def _nodes(rows) -> go.Figure:
    fig = go.Figure()
    keys = [r["key"] for r in rows]
    fig.add_trace(go.Bar(x=keys, y=[r["avg_cpu_nodes"] for r in rows], name="CPU nodes (Xeon 6462C)",
                         marker_color="#7f8c9a"))
    fig.add_trace(go.Bar(x=keys, y=[r["avg_gpu_nodes"] for r in rows], name="GPU nodes (A100-80GB)",
                         marker_color="#2f6db5"))
    fig.update_layout(title="Average nodes in use (a node hosting at least one instance)", barmode="group",
                      yaxis_title="nodes (time-average)", xaxis_title="system", yaxis_rangemode="tozero", **_LAYOUT)
    return fig


def smooth_steps(t, y, bins: int = 120) -> tuple[list[float], list[float]]:
    """A step series (value y[i] from t[i] on) as its time-average over ``bins`` equal windows, so thousands of
    one-second changes read as a line, not a barcode. Short series come back as they are."""
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    if len(t) <= 2 * bins or t[-1] <= t[0]:
        return t.tolist(), y.tolist()
    grid = np.linspace(t[0], t[-1], bins * 20 + 1)
    at = y[np.clip(np.searchsorted(t, grid, side="right") - 1, 0, len(y) - 1)]
    means = at[:-1].reshape(bins, 20).mean(axis=1)
    centres = (grid[:-1].reshape(bins, 20)[:, 0] + grid[20::20]) / 2.0
    return centres.tolist(), means.tolist()


def _timeline(rows, summaries: dict[str, dict]) -> go.Figure | None:
    """GPU nodes (solid) and CPU nodes (dotted) in use over the run, one small panel per system on a shared time
    axis (lines of several systems on one panel hide each other), averaged over short windows."""
    from plotly.subplots import make_subplots

    drawn = [(r, (summaries.get(r["key"]) or {}).get("nodes_timeline") or {}) for r in rows]
    drawn = [(r, tl) for r, tl in drawn if tl.get("t_s")]
    if not drawn:
        return None
    colours = colour_map([r["key"] for r in rows])
    fig = make_subplots(rows=len(drawn), cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=[r["key"] for r, _ in drawn])
    top = max(max(max(tl.get("gpu") or [0]), max(tl.get("cpu") or [0])) for _, tl in drawn)
    for i, (r, tl) in enumerate(drawn, start=1):
        for kind, dash in (("gpu", "solid"), ("cpu", "dot")):
            x, y = smooth_steps(tl["t_s"], tl[kind])
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines", legendgroup=kind, showlegend=i == 1,
                                     name=f"{kind.upper()} nodes", hovertemplate=f"{r['key']} {kind.upper()}: "
                                                                                 "%{y:.2f} nodes at %{x:.0f} s",
                                     line=dict(color=colours[r["key"]] if kind == "gpu" else "#55606e", dash=dash,
                                               width=1.8)), row=i, col=1)
        fig.update_yaxes(title_text="nodes", range=[0, top * 1.1 + 0.1], row=i, col=1)
    fig.update_xaxes(title_text="simulated time (s)", row=len(drawn), col=1)
    layout = {**_LAYOUT, "height": 140 + 150 * len(drawn), "margin": dict(l=70, r=20, t=90, b=60)}
    fig.update_layout(title="Nodes in use over the run, one panel per system<br><sup>solid: GPU nodes, dotted: "
                            "CPU nodes; each point the average over 1/120 of the run</sup>",
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, x=1.0, xanchor="right"), **layout)
    return fig


def figures(aggregate_: dict, summaries: dict[str, dict] | None = None) -> dict[str, go.Figure]:
    rows = aggregate_.get("rows") or []
    if not rows:
        return {}
    timeline = _timeline(rows, summaries or {})
    return {**({"nodes_over_time": timeline} if timeline is not None else {}),
        "slo_met": _bars(rows, "slo_met", "SLO-met requests (TTFT and average TPOT within their SLOs)",
                         "requests"),
        "nodes": _nodes(rows),
        "energy": _bars(rows, "energy_kwh", "Energy (busy W x busy s + idle W x in-use idle s)", "kWh"),
        "resizing": _bars(rows, "resizing_share", "Share of instance lifetime spent resizing the KV pool", "%",
                          scale=100.0),
    }


FIGURE_TITLES = {"nodes_over_time": "Nodes in use over time", "slo_met": "SLO-met requests", "nodes": "Nodes in use", "energy": "Energy",
                 "resizing": "Resizing share"}
