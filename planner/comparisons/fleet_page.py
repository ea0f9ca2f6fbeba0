"""The comparison page of a fleet comparison: the answer and KPI cards, the savings table, figures, per-endpoint
breakdown, energy and the seeds / equal-SLO table."""

from __future__ import annotations

from planner.comparisons import fair_display, selectors
from planner.plotstyle import embed

FIGURE_TITLES = {"fig11": "Instances over time", "fig12a": "Instance-hours per region and model",
                 "fig12a_gpu": "GPU-hours per region and model", "fig12b": "KV cache use",
                 "fig13a": "Latency per tier", "fig13b": "GPU-hours paid while starting up",
                 "fig15": "Requests missing their target"}


def _pct(x):
    return None if x is None else 100.0 * x


def display_row(r: dict) -> dict:
    t = r.get("tiers") or {}
    return {**r, "iwf_att": _pct(t.get("IW-F", {}).get("attainment")), "iwn_att": _pct(t.get("IW-N", {}).get("attainment")),
            "niw_att": _pct(r.get("niw_deadline_met")), "iwf_p95": t.get("IW-F", {}).get("ttft_p95_s"),
            "iwn_p95": t.get("IW-N", {}).get("ttft_p95_s"), "iwf_e2e": t.get("IW-F", {}).get("e2e_p95_s"),
            "iwf_delta": _pct(t.get("IW-F", {}).get("attainment_delta")),
            "iwn_delta": _pct(t.get("IW-N", {}).get("attainment_delta"))}


def page_context(comp, summaries: dict[str, dict]) -> dict:
    summary = comp.summary or {}
    rows = [display_row(r) for r in summary.get("rows", [])]
    figures = selectors.figures_json(comp) if rows else {}
    return {
        "rows": rows, "kpis": selectors.kpis(comp),
        "breakdown": summary.get("breakdown", []), "projection": summary.get("projection", {}),
        "figures": [(name, FIGURE_TITLES.get(name, name), embed(fig)) for name, fig in figures.items()],
        "summary_error": summary.get("error"), "energy": summary.get("energy", []),
        "fair": fair_display.display(summary.get("fair")),
    }
