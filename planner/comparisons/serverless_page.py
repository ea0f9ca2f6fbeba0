"""The comparison page of a serverless comparison: KPI cards per system (SLO-met requests, average CPU / GPU
nodes, energy, resizing share), the systems table and the Plotly figures."""

from __future__ import annotations

from planner.comparisons.core.serverless import DESCRIPTIONS, FIGURE_TITLES, figures
from planner.plotstyle import embed


def kpis(summary: dict) -> dict | None:
    rows = summary.get("rows") or []
    if not rows:
        return None
    best = next(r for r in rows if r["key"] == summary.get("best"))
    return {"best": best, "baseline": summary.get("baseline"), "baseline_finished": summary.get("baseline_finished"),
            "cards": [{**r, "slo_pct": 100.0 * (r["slo_attainment"] or 0.0),
                       "resizing_pct": 100.0 * (r["resizing_share"] or 0.0), "is_best": r["key"] == best["key"]}
                      for r in rows]}


PAGE_FIGURES = ("nodes_over_time", "slo_met", "nodes", "energy")  # the resizing share is in the table (one bar)


def page_context(comp, summaries: dict[str, dict]) -> dict:
    from planner.comparisons.kind_pages import serverless_context

    summary = comp.summary or {}
    figs = figures(summary, summaries)
    return {"summary": summary, "rows": summary.get("rows") or [], "kpis": kpis(summary),
            "descriptions": DESCRIPTIONS, **serverless_context(comp),
            "figures": [(name, FIGURE_TITLES.get(name, name), embed(fig)) for name, fig in figs.items()
                        if name in PAGE_FIGURES]}
