import json
from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from planner.accounts.access import get_for_user_or_404, team_of, visible_to
from planner.benchmarks.badges import badges_for
from planner.labels import label_view
from planner.optimizer.scenario import ScenarioError
from planner.optimizer.schema import plan_problems
from planner.plans.charts import all_figures
from planner.plans.exports import plan_csv
from planner.plans.models import CapacityPlan
from planner.plans.selectors import plans_for
from planner.plans.services import create_plan

EXAMPLES_DIR = Path(settings.BASE_DIR) / "fixtures" / "plans"


def examples() -> dict[str, str]:
    return {p.stem: p.read_text() for p in sorted(EXAMPLES_DIR.glob("*.json"))} if EXAMPLES_DIR.is_dir() else {}


STATUSES = ["queued", "running", "succeeded", "infeasible", "failed", "cancelled"]
SORTS = {"created": "created", "name": "name", "cost": "total_cost", "hours": "hours", "id": "id"}


def _status_filter(qs, status):
    if status == "infeasible":
        return qs.filter(feasible=False) | qs.exclude(solver_status__in=["", "optimal", "time_limit"])
    if status == "succeeded":
        return qs.filter(job__status="succeeded").exclude(feasible=False)
    return qs.filter(job__status=status)


def _list_context(request, scenario_text: str, error=None, name=""):
    from planner.listing import list_context

    listing = list_context(request, plans_for(request.user), sorts=SORTS, default_sort="-created",
                           search=("name", "tags", "notes"), statuses=STATUSES, status_filter=_status_filter)
    return {"list": listing, "plans": listing["rows"], "examples": examples(), "scenario_text": scenario_text,
            "error": error, "name": name}


@login_required
def plan_list(request):
    ex = examples()
    text, name = next(iter(ex.values()), ""), ""
    forecast = request.GET.get("forecast", "")
    if forecast.isdigit():  # chain: plan from this forecast
        from forecasts.models import ForecastRun
        from planner.plans.forecast_chain import scenario_from_forecast

        run = visible_to(request.user, ForecastRun.objects.all()).filter(pk=int(forecast)).first()
        if run is not None:
            scenario, note = scenario_from_forecast(run, team=team_of(request.user))
            text, name = json.dumps(scenario, indent=1), scenario["name"]
            messages.info(request, note)
    clone = request.GET.get("clone", "")
    if clone.isdigit():  # clone-and-edit a past plan
        src = plans_for(request.user).filter(pk=int(clone)).first()
        if src is not None:
            text, name = json.dumps(src.scenario, indent=1), f"{src.name} (copy)"
    return render(request, "plans/list.html", _list_context(request, text, name=name))


@login_required
@require_POST
def plan_create(request):
    text = request.POST.get("scenario", "")
    upload = request.FILES.get("scenario_file")
    if upload is not None:
        text = upload.read().decode("utf-8", errors="replace")
    error, scenario = None, None
    try:
        scenario = json.loads(text)
    except json.JSONDecodeError as exc:
        error = f"scenario: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
    hours = request.POST.get("hours") or None
    if error is None:
        try:
            hours = int(hours) if hours else None
            team = team_of(request.user)
            if team is None:
                raise ScenarioError("team", "your user belongs to no team")
            plan = create_plan(
                team=team, user=request.user, scenario=scenario, name=request.POST.get("name", ""), hours=hours
            )
        except ValueError as exc:  # ScenarioError is a ValueError; so is a non-numeric hours
            error = str(exc) if isinstance(exc, ScenarioError) else "hours: must be a whole number"
            if isinstance(exc, ScenarioError) and exc.hint:
                error += f" ({exc.hint})"
        else:
            messages.info(request, f"Plan #{plan.pk} queued.")
            return redirect("plans:detail", pk=plan.pk)
    context = _list_context(request, text, error, request.POST.get("name", ""))
    context["problems"] = _json_problems(scenario)
    if error and any(error.startswith(f"{p['label']}:") for p in context["problems"]):
        context["error"] = None  # the list names the parser's first problem too
    return render(request, "plans/list.html", context, status=400)


def _json_problems(scenario) -> list[dict]:
    """Every schema problem of a pasted scenario, for the list at the top of the form (the parser names one)."""
    if not isinstance(scenario, dict):
        return []
    return [{"label": where, "anchor": "", "message": message + (f" ({hint})" if hint else "")}
            for where, message, hint in plan_problems(scenario)]


@login_required
def plan_detail(request, pk: int):
    plan = get_for_user_or_404(request.user, CapacityPlan.objects.select_related("job"), pk=pk)
    result = plan.result or {}
    context = {
        "plan": plan,
        "outcome": plan.outcome,
        "plan_labels_url": reverse("plans:labels", args=[plan.pk]),
        "result": result,
        "figures": all_figures(result) if result else None,
        "reserved": result.get("reserved_gpus", []),
        "cost": result.get("cost", {}),
        "gpu_hours": result.get("gpu_hours", {}),
        "diagnosis": result.get("diagnosis", []),
        "static": result.get("static_peak", {}),
        "scenario_json": json.dumps(plan.scenario, indent=1),
    }
    context["validation_badges"] = badges_for(team_of(request.user), plan.scenario)
    checks = list(plan.capacity_checks.select_related("job").order_by("-created")[:5])
    context["checks"] = checks
    context["checked"] = next((c for c in checks if c.answer), None)
    return render(request, "plans/detail.html", context)


@login_required
@require_POST
def plan_check(request, pk: int):
    """Check by simulation (planner.capacity.services.start_plan_check): the plan's hourly fleet on forecast draws."""
    from planner.capacity.core.spec import SpecError
    from planner.capacity.services import start_plan_check
    from simulations.engine import ScenarioError as EngineScenarioError

    plan = get_for_user_or_404(request.user, CapacityPlan.objects.all(), pk=pk)
    if not (plan.result or {}).get("instances"):
        messages.error(request, "This plan has no instance counts to check (it did not finish).")
        return redirect("plans:detail", pk=plan.pk)
    try:
        search, note = start_plan_check(plan, user=request.user)
    except (EngineScenarioError, SpecError) as exc:
        messages.error(request, f"The plan's fleet cannot be simulated: {getattr(exc, 'message', exc)}")
        return redirect("plans:detail", pk=plan.pk)
    messages.info(request, note)
    return redirect("capacity:detail", pk=search.pk)


@login_required
def plan_csv_download(request, pk: int):
    plan = get_for_user_or_404(request.user, CapacityPlan.objects.all(), pk=pk)
    if not plan.result:
        messages.warning(request, "The plan has no result yet.")
        return redirect("plans:detail", pk=plan.pk)
    response = HttpResponse(plan_csv(plan.result), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="plan-{plan.pk}.csv"'
    return response


plan_labels = label_view(CapacityPlan, "plans:detail")


@login_required
def plan_build(request):
    """The plan builder: a plan scenario from forms generated from the plan schema (regions, catalogue
    deployments, demand typed / from a forecast run / from a trace, quotas, risk), the JSON kept beside it."""
    from forecasts.models import ForecastRun
    from planner.plans.builder import PlanBuilderForm, initial_from_plan
    from planner.traces.models import Trace

    team = team_of(request.user)
    forecasts = list(visible_to(request.user, ForecastRun.objects.all()).order_by("-created")[:200])
    traces = list(visible_to(request.user, Trace.objects.exclude(characterisation=None)).order_by("-created")[:200])
    kwargs = {"team": team, "forecasts": forecasts, "traces": traces}
    context = {"scenario_json": ""}
    if request.method != "POST":
        initial, rows = {}, None
        forecast = request.GET.get("forecast", "")
        if forecast.isdigit():  # chain: plan from this forecast, in the forms
            initial = {"demand_source": "forecast", "forecast": int(forecast)}
        clone = request.GET.get("clone", "")
        if clone.isdigit():  # clone-and-edit a past plan in the forms
            src = plans_for(request.user).filter(pk=int(clone)).first()
            if src is not None:
                initial, rows, why_not = initial_from_plan(PlanBuilderForm(**kwargs).specs, src.scenario)
                if why_not:
                    messages.info(request, f"Plan #{src.pk} cannot be edited in the forms: {why_not}.")
                    return redirect(f"{reverse('plans:list')}?clone={src.pk}#new-plan")
                context["scenario_json"] = json.dumps(src.scenario, indent=1)
        form = PlanBuilderForm(initial=initial, rows=rows, **kwargs)
        return render(request, "plans/build.html", {**context, "form": form})
    action = request.POST.get("action", "run")
    form = PlanBuilderForm(request.POST, extra_rows=1 if action == "add_row" else 0, **kwargs)
    if action == "add_row":
        return render(request, "plans/build.html", {**context, "form": form})
    if form.is_valid():
        scenario = form.scenario()
        context["scenario_json"] = json.dumps(scenario, indent=1)
        try:
            if team is None:
                raise ScenarioError("team", "your user belongs to no team")
            plan = create_plan(team=team, user=request.user, scenario=scenario, name=scenario["name"])
        except ScenarioError as exc:  # the plan parser's error lands on the field (or row) that produced it
            hint = f" ({exc.hint})" if getattr(exc, "hint", "") else ""
            form.place_error(exc.field, f"{exc.message}{hint}")
        else:
            messages.info(request, f"Plan #{plan.pk} queued." + (f" {form.note}" if getattr(form, "note", "") else ""))
            return redirect("plans:detail", pk=plan.pk)
    return render(request, "plans/build.html", {**context, "form": form}, status=400)
