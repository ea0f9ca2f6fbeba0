"""Pages: list + new-comparison form, the comparison page (figures, savings table, exports)."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from planner.accounts.access import get_for_user_or_404, team_of
from planner.comparisons import fair_display, selectors
from planner.comparisons.core.variants import SCHEDULERS, STRATEGIES, VariantError
from planner.comparisons.models import Comparison
from planner.comparisons.services import start_comparison, validate_scenario

DEFAULT_STRATEGIES = ["reactive-unified", "lt-i", "lt-u", "lt-ua"]


@login_required
def comparison_list(request):
    return render(request, "comparisons/list.html", {
        "comparisons": selectors.comparisons_for(request.user)[:100],
        "fixtures": selectors.scenario_fixtures(), "strategies": STRATEGIES, "schedulers": SCHEDULERS,
        "default_strategies": DEFAULT_STRATEGIES, **fair_display.form_context(),
    })


@login_required
@require_POST
def comparison_create(request):
    from simulations.engine import ScenarioError

    team = team_of(request.user)
    strategies = request.POST.getlist("strategies")
    schedulers = request.POST.getlist("schedulers")
    try:
        if request.POST.get("scenario_json", "").strip():
            scenario = json.loads(request.POST["scenario_json"])
        else:
            scenario = selectors.load_fixture(request.POST.get("fixture", ""))
        validate_scenario(scenario)
        comp = start_comparison(team=team, user=request.user, scenario=scenario, strategies=strategies,
                                schedulers=schedulers, baseline=request.POST.get("baseline") or None,
                                name=request.POST.get("name", ""), **fair_display.form_inputs(request.POST))
    except KeyError:
        messages.error(request, "Choose a scenario fixture or paste a scenario JSON.")
        return redirect("comparisons:list")
    except json.JSONDecodeError as exc:
        messages.error(request, f"The scenario JSON does not parse: {exc}.")
        return redirect("comparisons:list")
    except ScenarioError as exc:
        messages.error(request, f"Scenario field {exc.field}: {exc.message}")
        return redirect("comparisons:list")
    except VariantError as exc:
        messages.error(request, f"{exc.field}: {exc.message}")
        return redirect("comparisons:list")
    return redirect("comparisons:detail", pk=comp.pk)


@login_required
def comparison_detail(request, pk: int):
    comp = get_for_user_or_404(request.user, Comparison.objects.select_related("job"), pk=pk)
    summary = comp.summary or {}
    rows = [_display_row(r) for r in summary.get("rows", [])]
    return render(request, "comparisons/detail.html", {
        "comp": comp, "results": comp.results.select_related("job"), "rows": rows,
        "breakdown": summary.get("breakdown", []), "projection": summary.get("projection", {}),
        "energy": summary.get("energy", []),
        "figures": selectors.figures_json(comp) if rows else {}, "summary_error": summary.get("error"),
        "scenario_pretty": json.dumps(comp.scenario, indent=1)[:20000],
        "fair": fair_display.display(summary.get("fair")),
    })


def _pct(x):
    return None if x is None else 100.0 * x


def _display_row(r: dict) -> dict:
    t = r.get("tiers") or {}
    return {**r, "iwf_att": _pct(t.get("IW-F", {}).get("attainment")), "iwn_att": _pct(t.get("IW-N", {}).get("attainment")),
            "niw_att": _pct(r.get("niw_deadline_met")), "iwf_p95": t.get("IW-F", {}).get("ttft_p95_s"),
            "iwn_p95": t.get("IW-N", {}).get("ttft_p95_s"), "iwf_e2e": t.get("IW-F", {}).get("e2e_p95_s"),
            "iwf_delta": _pct(t.get("IW-F", {}).get("attainment_delta")),
            "iwn_delta": _pct(t.get("IW-N", {}).get("attainment_delta"))}


def _download(content, content_type, filename):
    resp = HttpResponse(content, content_type=content_type)
    resp["Content-Disposition"] = f'attachment; filename="{filename}"'
    return resp


@login_required
def comparison_csv(request, pk: int):
    comp = get_for_user_or_404(request.user, Comparison.objects.all(), pk=pk)
    return _download(selectors.export_csv(comp), "text/csv", f"comparison-{comp.pk}.csv")


@login_required
def comparison_json(request, pk: int):
    comp = get_for_user_or_404(request.user, Comparison.objects.all(), pk=pk)
    return _download(selectors.export_json(comp), "application/json", f"comparison-{comp.pk}.json")


@login_required
def comparison_pdf(request, pk: int):
    comp = get_for_user_or_404(request.user, Comparison.objects.all(), pk=pk)
    if not comp.summary.get("rows"):
        messages.warning(request, "The cost report needs the finished savings table; wait for the comparison.")
        return redirect("comparisons:detail", pk=comp.pk)
    return _download(selectors.export_pdf(comp), "application/pdf", f"comparison-{comp.pk}-cost-report.pdf")
