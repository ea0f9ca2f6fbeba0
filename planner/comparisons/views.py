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
from planner.benchmarks.badges import badges_for
from planner.comparisons import families, kinds, selectors
from planner.comparisons.core.serverless import DEFAULT_SYSTEMS
from planner.comparisons.core.variants import SCHEDULERS
from planner.comparisons.kinds import RequestError, kind_of_comparison, parse_request
from planner.comparisons.models import Comparison
from planner.labels import label_view
from planner.opscale.spec import CATALOGUE_GPUS, CATALOGUE_MODELS

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


FORM_DEFAULTS = {"kind": "fleet", "fixture": "demo_day", "strategies": list(families.DEFAULT_STRATEGIES), "bundles": [],
                 "schedulers": [], "baseline": "reactive-unified", "name": "", "scenario_json": "",
                 "systems": list(DEFAULT_SYSTEMS), "serverless_baseline": "sllm", "op_trace": "",
                 "op_model": "llama3.1-8b", "op_gpu": "a100-80gb", "op_window_s": "60"}


def _list_page(request, form=None, error=None, status=200):
    from planner.listing import list_context
    from planner.traces.models import Trace

    listing = list_context(request, selectors.comparisons_for(request.user), sorts=SORTS, default_sort="-created",
                           search=("name", "tags", "notes", "baseline"), statuses=STATUSES,
                           status_filter=_status_filter)
    return render(request, "comparisons/list.html", {
        "list": listing, "comparisons": listing["rows"],
        "fixtures": selectors.scenario_fixtures(), "schedulers": SCHEDULERS,
        "form": {**FORM_DEFAULTS, **(form or {})}, "error": error, "families": families.fleet_families(),
        "systems": families.serverless_systems(), "serverless_default": families.SERVERLESS_DEFAULT,
        "traces": visible_to(request.user, Trace.objects.all()).order_by("-created")[:200],
        "op_models": sorted(CATALOGUE_MODELS), "op_gpus": sorted(CATALOGUE_GPUS),
    }, status=status)


@login_required
def comparison_list(request):
    form = None
    clone = request.GET.get("clone")
    if clone and clone.isdigit():  # clone-and-edit: the form starts from a past comparison
        src = selectors.comparisons_for(request.user).filter(pk=int(clone)).first()
        if src is not None:
            plain = [v for v in src.variants if not v.get("bundle") and v.get("role") != "tuning"]
            form = {"fixture": "", "strategies": list(dict.fromkeys(v["strategy"] for v in plain)),
                    "bundles": sorted({v["bundle"] for v in src.variants if v.get("bundle")}),
                    "schedulers": sorted({v["scheduler"] for v in src.variants if v.get("scheduler")}),
                    "baseline": src.baseline.split("@")[0], "name": f"{src.name or src} (copy)",
                    "scenario_json": json.dumps(src.scenario, indent=1)}
    sim = request.GET.get("clone_simulation", "")
    if sim.isdigit():  # chain: compare strategies on a simulation's scenario
        from simulations.selectors import runs_for

        run = runs_for(request.user).filter(pk=int(sim)).first()
        if run is not None:
            form = {"fixture": "", "strategies": list(families.DEFAULT_STRATEGIES), "schedulers": [], "baseline": "reactive-unified",
                    "name": f"strategies on simulation #{run.pk}", "scenario_json": json.dumps(run.scenario, indent=1)}
    return _list_page(request, form=form)


def _form_request(post) -> dict:
    """The new-comparison form's fields as a comparison request (kinds.parse_request reads it): the fleet panel's
    scenario, strategies and bundles; the serverless panel's systems; the operator-level panel's trace and names.
    A pasted scenario JSON wins and runs as the kind it is."""
    kind = post.get("kind") or "fleet"
    pasted = (post.get("scenario_json") or "").strip()
    if kind == "serverless" and not pasted:
        return {"scenario": dict(families.SERVERLESS_DEFAULT), "systems": post.getlist("systems"),
                "baseline": post.get("serverless_baseline", ""), "name": post.get("name", "")}
    if kind == "operator-level" and not pasted:
        try:
            window = float(post.get("op_window_s") or 60)
        except ValueError:
            raise RequestError("op_window_s", "must be a number of seconds", "e.g. 60") from None
        trace = post.get("op_trace") or ""
        return {"scenario": {"kind": "operator-level", "model": post.get("op_model", ""),
                             "gpu": post.get("op_gpu", ""),
                             "workload": {"trace_id": int(trace) if trace.isdigit() else trace, "window_s": window}},
                "name": post.get("name", "")}
    tune = {}
    if post.get("tune"):
        try:
            tune = {"tolerance": float(post.get("tolerance") or 0.5) / 100.0}
        except ValueError:
            raise RequestError("tune.tolerance", "give the tolerance in points", "e.g. 0.5") from None
    return {"scenario": pasted, "scenario_fixture": post.get("fixture", ""),
            "strategies": post.getlist("strategies"), "schedulers": post.getlist("schedulers"),
            "baseline": post.get("baseline", ""), "name": post.get("name", ""), "bundles": post.getlist("bundles"),
            "seeds": (post.get("seeds") or "").replace(" ", ""), "tune": tune}


@login_required
@require_POST
def comparison_create(request):
    team = team_of(request.user)
    post = request.POST
    form = {**{k: post.get(k, "") for k in ("kind", "fixture", "baseline", "name", "scenario_json",
                                            "serverless_baseline", "op_trace", "op_model", "op_gpu", "op_window_s")},
            **{k: post.getlist(k) for k in ("strategies", "schedulers", "bundles", "systems")}}
    try:
        kind, req = parse_request(_form_request(post))
        if (post.get("kind") or "fleet") == "fleet":  # the fleet panel sent it, whatever the pasted scenario's kind
            req = kind.from_fleet_panel(req)
        comp = kind.start(team=team, user=request.user, request=req)
    except RequestError as exc:
        hint = f" How to fix: {exc.hint}" if exc.hint else ""
        error = f"{exc.field}: {exc.message}.{hint}" if exc.field else f"{exc.message}.{hint}"
        return _list_page(request, form=form, error=error, status=400)  # the pasted JSON stays in the form
    return redirect("comparisons:detail", pk=comp.pk)


@login_required
def comparison_detail(request, pk: int):
    from planner.comparisons import outcome

    comp = get_for_user_or_404(request.user, Comparison.objects.select_related("job")
                               .prefetch_related("results__job"), pk=pk)
    kind = kind_of_comparison(comp)
    return render(request, kind.template, {
        "comp": comp, "kind": kind, "results": comp.results.all(), "status": comp.status,
        "disaggregated": any((r.metrics or {}).get("disaggregation") for r in comp.results.all()),
        "failures": outcome.failures_of(comp), "progress": outcome.progress_of(comp),
        "wall_s": outcome.wall_s_of(comp), "scenario_pretty": json.dumps(comp.scenario, indent=1)[:20000],
        "validation_badges": badges_for(team_of(request.user), comp.scenario), "answer": kind.answer(comp),
        **kind.page_context(comp, selectors.summaries_of(comp)),
    })


def _download(content, content_type, filename):
    resp = HttpResponse(content, content_type=content_type)
    resp["Content-Disposition"] = f'attachment; filename="{filename}"'
    return resp


@login_required
def comparison_csv(request, pk: int):
    comp = get_for_user_or_404(request.user, Comparison.objects.all(), pk=pk)
    return _download(kinds.export_csv(comp), "text/csv", f"comparison-{comp.pk}.csv")


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
    return _download(kinds.export_pdf(comp), "application/pdf", f"comparison-{comp.pk}-cost-report.pdf")


comparison_labels = label_view(Comparison, "comparisons:detail")


BUILDER_KINDS = (("fleet", "Fleet autoscaling strategies",
                  "SageServe, PreServe, Chiron, the industry autoscalers and the baselines, on a fleet you describe"),
                 ("serverless", "Serverless systems on shared CPU/GPU nodes",
                  "SLINFER against ServerlessLLM: many models sharing a few nodes"),
                 ("operator-level", "Operator-level against model-level scaling",
                  "each operator scaled and placed on its own, on one of your traces"))


def _kind_forms(request, kind: str, traces_all) -> dict:
    """The serverless and operator-level forms of the builder, bound to the POST when that kind was chosen."""
    from planner.comparisons.kind_forms import OperatorLevelForm, ServerlessForm

    post = request.POST if request.method == "POST" else None
    return {"serverless_form": ServerlessForm(post if kind == "serverless" else None, prefix="sl"),
            "operator_form": OperatorLevelForm(post if kind == "operator-level" else None, prefix="op",
                                               traces=traces_all)}


def _start_kind(request, team, form, data: dict):
    """Start a serverless or operator-level comparison from its form; the comparison, or None with the kind's
    error on the field that produced it."""
    try:
        kind, req = parse_request({"scenario": form.scenario(), **data})
        return kind.start(team=team, user=request.user, request=req)
    except RequestError as exc:
        hint = f" ({exc.hint})" if exc.hint else ""
        form.place_error(exc.field, f"{exc.message}{hint}")
    return None


def _build_other_kind(request, team, kind: str, context: dict):
    form = context["serverless_form" if kind == "serverless" else "operator_form"]
    if form.is_valid():
        data = ({"systems": form.cleaned_data["systems"], "baseline": form.cleaned_data["baseline"]}
                if kind == "serverless" else {})
        comp = _start_kind(request, team, form, {**data, "name": form.cleaned_data.get("name") or ""})
        if comp is not None:
            return redirect("comparisons:detail", pk=comp.pk)
    return render(request, "comparisons/build.html", {**context, "active_form": form}, status=400)


@login_required
def comparison_build(request):
    """The comparison builder: every kind of comparison from forms generated from its schema. Fleet strategies: a
    trace or the synthesiser, per-endpoint fleet rows from the catalogue, SLOs, strategies grouped by family;
    serverless systems; operator-level plans."""
    from planner.comparisons.builder import ScenarioBuilderForm, initial_from_scenario
    from planner.traces.models import Trace

    team = team_of(request.user)
    traces_all = list(visible_to(request.user, Trace.objects.all()).order_by("-created")[:200])
    traces = [t for t in traces_all if t.characterisation is not None]
    action = request.POST.get("action", "run")
    kind = (request.POST.get("kind") if request.method == "POST" else request.GET.get("kind")) or "fleet"
    kind = kind if kind in {k for k, _, _ in BUILDER_KINDS} else "fleet"
    context = {"traces": traces, "traces_all": traces_all, "scenario_json": "", "kind": kind, "kinds": BUILDER_KINDS,
               **_kind_forms(request, kind, traces_all)}
    if request.method == "POST" and kind != "fleet":
        context["form"] = ScenarioBuilderForm(team=team, traces=traces, initial={"source": "synthetic"
                                                                                  if not traces else "trace"})
        return _build_other_kind(request, team, kind, context)
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
        data = {"scenario": scenario, "strategies": form.cleaned_data["strategies"],
                "schedulers": form.cleaned_data["schedulers"], "bundles": form.cleaned_data["bundles"] or [],
                "baseline": form.cleaned_data["baseline"], "name": scenario["name"]}
        try:
            kind, req = parse_request(data)
            comp = kind.start(team=team, user=request.user, request=req)
        except RequestError as exc:  # the schema's error lands on the field that produced it
            hint = f" ({exc.hint})" if exc.hint else ""
            form.place_error(exc.field.removeprefix("scenario."), f"{exc.message}{hint}")
        else:
            return redirect("comparisons:detail", pk=comp.pk)
    return render(request, "comparisons/build.html", {**context, "form": form}, status=400)
