from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from rest_framework.exceptions import ValidationError

from planner.accounts.access import get_for_user_or_404, team_of
from planner.benchmarks.badges import badges_for
from planner.labels import label_view
from simulations import selectors, services
from simulations.engine.policies import AUTOSCALERS
from simulations.models import SimulationRun


def _errors(exc: ValidationError) -> list[str]:
    detail = exc.detail
    if isinstance(detail, dict) and isinstance(detail.get("error"), dict):  # planner.input_errors shape
        err = detail["error"]
        return [str(err.get("message", "")) + (f" ({err['hint']})" if err.get("hint") else "")]
    if isinstance(detail, dict):
        return [f"{field}: {' '.join(str(m) for m in (msgs if isinstance(msgs, list) else [msgs]))}"
                for field, msgs in detail.items()]
    return [str(detail)]


@login_required
def run_list(request):
    fixtures = services.fixture_scenarios()
    form = {"scenario": "", "fixture": "small_reactive", "strategy": "", "mode": "fast", "name": "",
            "result_mode": "table", "chunk_s": ""}
    errors: list[str] = []
    if request.method == "POST":
        form.update({k: request.POST.get(k, "") for k in form})
        team = team_of(request.user)
        try:
            if team is None:
                raise ValidationError({"team": "your account belongs to no team"})
            if form["scenario"].strip():
                try:
                    scenario = json.loads(form["scenario"])
                except ValueError as exc:
                    raise ValidationError({"scenario": f"is not valid JSON: {exc}"}) from None
                if not isinstance(scenario, dict):
                    raise ValidationError({"scenario": "must be a JSON object"})
            elif form["fixture"] in fixtures:
                scenario = fixtures[form["fixture"]]
            else:
                raise ValidationError({"scenario": "paste a scenario JSON or pick a fixture scenario"})
            run = services.create_run(team=team, user=request.user, scenario=scenario, strategy=form["strategy"],
                                      mode=form["mode"] or "fast", name=form["name"], result=_result_option(form))
            messages.info(request, f"Simulation #{run.pk} started.")
            return redirect("simulations:detail", pk=run.pk)
        except ValidationError as exc:
            errors = _errors(exc)
    elif request.GET.get("clone", "").isdigit():  # clone-and-edit a past run
        src = selectors.runs_for(request.user).filter(pk=int(request.GET["clone"])).first()
        if src is not None:
            form.update(scenario=json.dumps(src.scenario, indent=1), fixture="", strategy=src.strategy,
                        mode=src.mode, name=f"{src.name} (copy)", result_mode=src.result_mode,
                        chunk_s="" if src.chunk_s is None else f"{src.chunk_s:g}")
    elif request.GET.get("plan", "").isdigit():  # chain: simulate this plan
        form.update(_from_plan(request))
    from planner.listing import list_context

    listing = list_context(request, selectors.runs_for(request.user), sorts=SORTS, default_sort="-created",
                           search=("name", "tags", "notes", "strategy"), statuses=STATUSES)
    return render(request, "simulations/run_list.html", {
        "list": listing, "runs": listing["rows"], "fixtures": sorted(fixtures), "strategies": sorted(AUTOSCALERS),
        "form": form, "errors": errors, "example": json.dumps(fixtures.get("code_anchor", {}), indent=2),
    }, status=400 if errors else 200)


def _result_option(form: dict):
    """The form's result mode and chunk as the run option; the schema (services.create_run) checks it."""
    mode = form.get("result_mode") or "table"
    option: dict = {"mode": mode}
    chunk = (form.get("chunk_s") or "").strip()
    if chunk and mode == "streaming":
        try:
            option["chunk_s"] = float(chunk)
        except ValueError:
            raise ValidationError({"error": {"message": f"result.chunk_s: must be a number of seconds, got {chunk!r}",
                                             "where": "result.chunk_s", "hint": "e.g. 3600"}}) from None
    return option


STATUSES = ["queued", "running", "succeeded", "failed", "cancelled"]
SORTS = {"created": "created", "name": "name", "requests": "requests_simulated", "wall": "wall_s", "id": "id"}


def _from_plan(request) -> dict:
    """The form prefilled from a capacity plan: its peak instance counts per (region, model) as a static fleet
    (simulations.plan_chain), on a fixture workload the planner then picks."""
    from planner.plans.selectors import plans_for
    from simulations.plan_chain import scenario_from_plan

    plan = plans_for(request.user).filter(pk=int(request.GET["plan"])).first()
    if plan is None or not plan.result:
        return {}
    scenario, note = scenario_from_plan(plan.scenario, plan.result, name=f"fleet of plan #{plan.pk}", team=plan.team)
    messages.info(request, note)
    return {"scenario": json.dumps(scenario, indent=1), "fixture": "", "strategy": "static",
            "name": f"plan #{plan.pk}: {plan.name}"}


@login_required
def run_detail(request, pk: int):
    run = get_for_user_or_404(request.user, selectors.runs_for(request.user), pk=pk)
    from planner.plotstyle import embed

    ctx = {"run": run, "job": run.job, "scenario_json": json.dumps(run.scenario, indent=2),
           "labels_url": reverse("simulations:labels", args=[run.pk]),
           "validation_badges": badges_for(team_of(request.user), run.scenario)}
    from simulations import streamed_views

    if run.result and streamed_views.is_streamed(run.result):
        ctx.update(streamed_views.page_context(run.result))
        ctx["streamed"] = True
        return render(request, "simulations/run_detail.html", ctx)
    if run.result:
        ctx["timeline_json"] = embed(selectors.timeline_figure(run.result))
        ctx["latency_json"] = embed(selectors.latency_figure(run.result))
        ctx["summary"] = run.result.get("summary", {})
        ctx["tiers"] = run.result.get("tiers", {})
        ctx["usage"] = run.result.get("usage", [])
        ctx["events"] = run.result.get("scaling_events", [])[:200]
    return render(request, "simulations/run_detail.html", ctx)


run_labels = label_view(SimulationRun, "simulations:detail")


@login_required
def run_hourly_csv(request, pk: int):
    """The hourly rollups of a streamed run as CSV (404 for a run without them)."""
    from django.http import Http404

    from simulations.streamed_views import hourly_csv_response

    run = get_for_user_or_404(request.user, selectors.runs_for(request.user), pk=pk)
    if not run.result or not run.result.get("hourly"):
        raise Http404("this run has no hourly rollups (only streamed runs keep them)")
    return hourly_csv_response(run)
