"""The comparison page of a serverless comparison (issue 18): KPI cards per system (SLO-met requests, average
CPU / GPU nodes, energy, resizing share), the systems table, Plotly figures and the exports. Reached through
``comparison_detail`` when the scenario is serverless; the status, failures and progress are the comparison's."""

from __future__ import annotations

import json

from django.shortcuts import redirect, render

from planner.comparisons.core.serverless import DESCRIPTIONS, FIGURE_TITLES, figures


def kpis(summary: dict) -> dict | None:
    rows = summary.get("rows") or []
    if not rows:
        return None
    best = next(r for r in rows if r["key"] == summary.get("best"))
    return {"best": best, "baseline": summary.get("baseline"), "baseline_finished": summary.get("baseline_finished"),
            "cards": [{**r, "slo_pct": 100.0 * (r["slo_attainment"] or 0.0),
                       "resizing_pct": 100.0 * (r["resizing_share"] or 0.0), "is_best": r["key"] == best["key"]}
                      for r in rows]}


def serverless_detail(request, comp):
    from planner.comparisons import outcome
    from planner.comparisons.selectors import summaries_of
    from planner.plotstyle import embed

    summary = comp.summary or {}
    figs = figures(summary, summaries_of(comp))
    return render(request, "comparisons/serverless_detail.html", {
        "comp": comp, "results": comp.results.all(), "status": comp.status, "summary": summary,
        "rows": summary.get("rows") or [], "failures": outcome.failures_of(comp),
        "progress": outcome.progress_of(comp), "wall_s": outcome.wall_s_of(comp), "kpis": kpis(summary),
        "descriptions": DESCRIPTIONS,
        "figures": [(name, FIGURE_TITLES.get(name, name), embed(fig)) for name, fig in figs.items()],
        "scenario_pretty": json.dumps(comp.scenario, indent=1)[:20000],
    })


def start_from_form(request, team, scenario: dict, form: dict):
    """A serverless scenario pasted into the comparisons page's form: its ``systems`` (else the default four) are
    the variants; the form's baseline is used when it names one of them. Errors go back to the form (400)."""
    from planner.comparisons.core.serverless import SYSTEMS
    from planner.comparisons.serverless import ServerlessVariantError, start_serverless_comparison
    from planner.comparisons.views import _list_page
    from simulations.engine.serverless.spec import SpecError

    baseline = form.get("baseline") if form.get("baseline") in SYSTEMS else None
    try:
        comp = start_serverless_comparison(team=team, user=request.user, scenario=scenario, baseline=baseline,
                                           name=form.get("name", ""))
    except SpecError as exc:
        error = f"Serverless scenario field {exc.where}: {exc.message}"
    except ServerlessVariantError as exc:
        error = f"{exc.field}: {exc.message}"
    else:
        return redirect("comparisons:detail", pk=comp.pk)
    return _list_page(request, form=form, error=error, status=400)
