"""Pages: list + new-comparison form, the comparison page (figures, savings table, exports)."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from planner.accounts.access import get_for_user_or_404, team_of, visible_to
from planner.comparisons import fair_display, selectors
from planner.comparisons.core.serverless import is_serverless
from planner.comparisons.core.variants import SCHEDULERS, STRATEGIES, VariantError
from planner.comparisons.models import Comparison
from planner.comparisons.services import start_comparison, validate_scenario
from planner.labels import label_view

DEFAULT_STRATEGIES = ["reactive-unified", "lt-i", "lt-u", "lt-ua"]


STATUSES = ["queued", "running", "succeeded", "partial", "failed", "cancelled"]
SORTS = {"created": "created", "name": "name", "baseline": "baseline", "id": "id"}


def _status_filter(qs, status):
    from django.db.models import Q

    bad = Q(results__status__in=["failed", "cancelled"])
    if status == "partial":  # the parent job says so (harden-jobs), or an older row whose strategies failed
        return (qs.filter(job__status="partial") | qs.filter(job__status="succeeded").filter(bad)).distinct()
    if status == "succeeded":
        return qs.filter(job__status="succeeded").exclude(bad)
    if status == "running":
        return qs.filter(job__status__in=["queued", "running"], results__status__in=["running", "done", "failed"]
                         ).distinct()
    return qs.filter(job__status=status)


def _list_page(request, form=None, error=None, status=200):
    from planner.listing import list_context

    listing = list_context(request, selectors.comparisons_for(request.user), sorts=SORTS, default_sort="-created",
                           search=("name", "tags", "notes", "baseline"), statuses=STATUSES,
                           status_filter=_status_filter)
    form = form or {"fixture": "sageserve_day", "strategies": DEFAULT_STRATEGIES, "schedulers": [],
                    "baseline": "reactive-unified", "name": "", "scenario_json": ""}
    return render(request, "comparisons/list.html", {
        "list": listing, "comparisons": listing["rows"],
        "fixtures": selectors.scenario_fixtures(), "strategies": STRATEGIES, "schedulers": SCHEDULERS,
        "form": form, "error": error, **fair_display.form_context(),
    }, status=status)


@login_required
def comparison_list(request):
    form = None
    clone = request.GET.get("clone")
    if clone and clone.isdigit():  # clone-and-edit: the form starts from a past comparison
        src = selectors.comparisons_for(request.user).filter(pk=int(clone)).first()
        if src is not None:
            form = {"fixture": "", "strategies": [v["strategy"] for v in src.variants if not v.get("scheduler")]
                    or [v["strategy"] for v in src.variants], "schedulers": sorted({v["scheduler"] for v in src.variants
                                                                                   if v.get("scheduler")}),
                    "baseline": src.baseline.split("@")[0], "name": f"{src.name or src} (copy)",
                    "scenario_json": json.dumps(src.scenario, indent=1)}
    sim = request.GET.get("clone_simulation", "")
    if sim.isdigit():  # chain: compare strategies on a simulation's scenario
        from simulations.selectors import runs_for

        run = runs_for(request.user).filter(pk=int(sim)).first()
        if run is not None:
            form = {"fixture": "", "strategies": DEFAULT_STRATEGIES, "schedulers": [], "baseline": "reactive-unified",
                    "name": f"strategies on simulation #{run.pk}", "scenario_json": json.dumps(run.scenario, indent=1)}
    return _list_page(request, form=form)


@login_required
@require_POST
def comparison_create(request):
    from simulations.engine import ScenarioError

    team = team_of(request.user)
    strategies = request.POST.getlist("strategies")
    schedulers = request.POST.getlist("schedulers")
    text = request.POST.get("scenario_json", "")
    form = {"fixture": request.POST.get("fixture", ""), "strategies": strategies, "schedulers": schedulers,
            "baseline": request.POST.get("baseline", ""), "name": request.POST.get("name", ""),
            "scenario_json": text}
    try:
        if text.strip():
            scenario = json.loads(text)
        else:
            scenario = selectors.load_fixture(request.POST.get("fixture", ""))
        if is_serverless(scenario):  # issue 18: a pasted serverless scenario compares its systems
            from planner.comparisons.serverless_views import start_from_form

            return start_from_form(request, team, scenario, form)
        validate_scenario(scenario)
        comp = start_comparison(team=team, user=request.user, scenario=scenario, strategies=strategies,
                                schedulers=schedulers, baseline=request.POST.get("baseline") or None,
                                name=request.POST.get("name", ""), **fair_display.form_inputs(request.POST))
    except KeyError:
        error = "Choose a scenario fixture or paste a scenario JSON."
    except json.JSONDecodeError as exc:
        error = f"The scenario JSON does not parse: {exc}."
    except ScenarioError as exc:
        error = f"Scenario field {exc.field}: {exc.message}"
    except VariantError as exc:
        error = f"{exc.field}: {exc.message}"
    else:
        return redirect("comparisons:detail", pk=comp.pk)
    return _list_page(request, form=form, error=error, status=400)  # the pasted JSON stays in the form


FIGURE_TITLES = {"fig11": "Instances over time", "fig12a": "Instance-hours per region and model",
                 "fig12a_gpu": "GPU-hours per region and model", "fig12b": "Memory utilisation",
                 "fig13a": "Latency per tier", "fig13b": "Scaling waste", "fig15": "SLO violations"}


@login_required
def comparison_detail(request, pk: int):
    from planner.comparisons import outcome
    from planner.plotstyle import embed

    comp = get_for_user_or_404(request.user, Comparison.objects.select_related("job")
                               .prefetch_related("results__job"), pk=pk)
    if is_serverless(comp.scenario):  # issue 18: systems on shared CPU/GPU nodes (serverless_views.py)
        from planner.comparisons.serverless_views import serverless_detail

        return serverless_detail(request, comp)
    summary = comp.summary or {}
    rows = [_display_row(r) for r in summary.get("rows", [])]
    figures = selectors.figures_json(comp) if rows else {}
    return render(request, "comparisons/detail.html", {
        "comp": comp, "results": comp.results.all(), "rows": rows, "status": comp.status,
        "failures": outcome.failures_of(comp), "progress": outcome.progress_of(comp),
        "wall_s": outcome.wall_s_of(comp), "kpis": selectors.kpis(comp),
        "breakdown": summary.get("breakdown", []), "projection": summary.get("projection", {}),
        "figures": [(name, FIGURE_TITLES.get(name, name), embed(fig)) for name, fig in figures.items()],
        "summary_error": summary.get("error"),
        "energy": summary.get("energy", []),
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


comparison_labels = label_view(Comparison, "comparisons:detail")


@login_required
def comparison_build(request):
    """The scenario builder: a comparison from forms (a trace, the fleet from the catalogue, SLOs, strategies)."""
    from planner.comparisons.builder import ScenarioBuilderForm
    from planner.traces.models import Trace
    from simulations.engine import ScenarioError

    team = team_of(request.user)
    traces = list(visible_to(request.user, Trace.objects.exclude(characterisation=None)).order_by("-created")[:200])
    initial = {"trace": request.GET.get("trace") or (traces[0].pk if traces else None)}
    if request.method == "POST" and request.POST.get("action") == "refresh":  # another trace: other endpoints
        initial = {"trace": request.POST.get("trace")}
        return render(request, "comparisons/build.html", {
            "form": ScenarioBuilderForm(team=team, traces=traces, initial=initial), "traces": traces})
    form = ScenarioBuilderForm(request.POST or None, team=team, traces=traces, initial=initial)
    scenario_json, status = "", 200
    if request.method == "POST" and request.POST.get("action") != "refresh" and form.is_valid():
        scenario = form.scenario()
        scenario_json = json.dumps(scenario, indent=1)
        try:
            validate_scenario(scenario)
            comp = start_comparison(team=team, user=request.user, scenario=scenario,
                                    strategies=form.cleaned_data["strategies"],
                                    schedulers=form.cleaned_data["schedulers"],
                                    baseline=form.cleaned_data["baseline"] or None, name=scenario["name"])
        except (ScenarioError, VariantError) as exc:  # the schema's error lands on the field that produced it
            from planner.comparisons.builder import form_field_for

            hint = f" ({exc.hint})" if getattr(exc, "hint", "") else ""
            target = form_field_for(exc.field)
            form.add_error(target, f"{exc.message}{hint}" if target else f"{exc.field}: {exc.message}{hint}")
        else:
            return redirect("comparisons:detail", pk=comp.pk)
    if request.method == "POST":
        status = 400 if form.errors else 200
    return render(request, "comparisons/build.html", {"form": form, "traces": traces,
                                                       "scenario_json": scenario_json}, status=status)
