"""Pages: list + new-comparison form, the comparison page (figures, savings table, exports)."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
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
    """The scenario builder: a comparison from forms generated from the scenario schema (a trace or the
    synthesiser, per-endpoint fleet rows from the catalogue, SLOs, strategies and bundles)."""
    from planner.comparisons.builder import ScenarioBuilderForm, initial_from_scenario
    from planner.traces.models import Trace
    from simulations.engine import ScenarioError

    team = team_of(request.user)
    traces = list(visible_to(request.user, Trace.objects.exclude(characterisation=None)).order_by("-created")[:200])
    action = request.POST.get("action", "run")
    context = {"traces": traces, "scenario_json": ""}
    if request.method != "POST":
        initial = {"trace": request.GET.get("trace") or (traces[0].pk if traces else None),
                   "source": "synthetic" if request.GET.get("source") == "synthetic" or not traces else "trace"}
        rows = None
        clone = request.GET.get("clone", "")
        if clone.isdigit():  # clone-and-edit a past comparison in the forms
            src = selectors.comparisons_for(request.user).filter(pk=int(clone)).first()
            if src is not None:
                specs = ScenarioBuilderForm(team=team, traces=traces).specs
                initial, rows, why_not = initial_from_scenario(specs, src.scenario, src.variants, src.baseline)
                if why_not:
                    messages.info(request, f"Comparison #{src.pk} cannot be edited in the forms: {why_not}.")
                    return redirect(f"{reverse('comparisons:list')}?clone={src.pk}#new-comparison")
                context["scenario_json"] = json.dumps(src.scenario, indent=1)
        form = ScenarioBuilderForm(team=team, traces=traces, initial=initial, rows=rows)
        return render(request, "comparisons/build.html", {**context, "form": form})
    if action == "refresh":  # another trace: its regions and models as the rows
        form = ScenarioBuilderForm(team=team, traces=traces, initial={
            "trace": request.POST.get("trace"), "source": request.POST.get("source", "trace")})
        return render(request, "comparisons/build.html", {**context, "form": form})
    form = ScenarioBuilderForm(request.POST, team=team, traces=traces, extra_rows=1 if action == "add_row" else 0)
    if action == "add_row":
        return render(request, "comparisons/build.html", {**context, "form": form})
    if form.is_valid():
        scenario = form.scenario()
        context["scenario_json"] = json.dumps(scenario, indent=1)
        try:
            validate_scenario(scenario)
            comp = start_comparison(team=team, user=request.user, scenario=scenario,
                                    strategies=form.cleaned_data["strategies"],
                                    schedulers=form.cleaned_data["schedulers"],
                                    bundles=form.cleaned_data["bundles"] or None,
                                    baseline=form.cleaned_data["baseline"] or None, name=scenario["name"])
        except (ScenarioError, VariantError) as exc:  # the schema's error lands on the field that produced it
            hint = f" ({exc.hint})" if getattr(exc, "hint", "") else ""
            form.place_error(exc.field, f"{exc.message}{hint}")
        else:
            return redirect("comparisons:detail", pk=comp.pk)
    return render(request, "comparisons/build.html", {**context, "form": form}, status=400)
