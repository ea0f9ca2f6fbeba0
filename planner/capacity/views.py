"""Pages: the search form and list, a search's page (the decision card on top, candidates, progress)."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from planner.accounts.access import get_for_user_or_404, team_of
from planner.capacity import selectors
from planner.capacity.core.spec import DEFAULT_TARGETS, SpecError
from planner.capacity.models import CapacitySearch
from planner.capacity.services import start_search

PAGE_STRATEGIES = ["static", "reactive-unified", "lt-ua", "preserve.scaler-oracle", "chiron.default",
                   "industry.dynamo-arima"]  # the Dynamo planner sizes both pools of a disaggregated endpoint
DEFAULT_FORM = {"fixture": "small_reactive", "strategies": ["static", "reactive-unified"], "name": "",
                "targets": dict(DEFAULT_TARGETS), "probability": "0.9", "seeds": "1,2,3", "band_draws": "20", "start_plan": "",
                "quota_gpus": "", "gpu_options": "", "disaggregated": "", "scenario_json": ""}


def _strategy_choices() -> list[str]:
    from planner.comparisons.core.variants import STRATEGIES

    return list(dict.fromkeys(PAGE_STRATEGIES + sorted(STRATEGIES)))


def _list_page(request, form=None, error=None, status=200):
    from planner.comparisons.selectors import scenario_fixtures

    return render(request, "capacity/list.html", {
        "searches": selectors.searches_for(request.user)[:50], "fixtures": scenario_fixtures(),
        "strategies": _strategy_choices(), "form": form or DEFAULT_FORM, "error": error,
        "tiers": list(DEFAULT_TARGETS)}, status=status)


@login_required
def search_list(request):
    return _list_page(request)


def _json_field(text: str, name: str) -> dict:
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(name, f"does not parse as JSON: {exc}", hint='e.g. {"us-west": 64}') from None
    if not isinstance(value, dict):
        raise SpecError(name, "must be a JSON object", hint='e.g. {"us-west": 64}')
    return value


def spec_from_form(post) -> dict:
    """The form's fields as a search spec (checked by the spec's schema afterwards)."""
    spec: dict = {"strategies": post.getlist("strategies")}
    targets = {}
    for tier in DEFAULT_TARGETS:
        raw = post.get(f"target_{tier}", "").strip()
        if raw:
            try:
                targets[tier] = float(raw.rstrip("%")) / (100.0 if raw.endswith("%") or float(raw) > 1 else 1.0)
            except ValueError:
                raise SpecError(f"targets.{tier}", f"{raw!r} is not a number", hint="e.g. 0.99 or 99%") from None
    if targets:
        spec["targets"] = targets
    for name, kind in (("probability", float), ("band_draws", int), ("start_plan", int)):
        raw = post.get(name, "").strip()
        if raw:
            try:
                spec[name] = kind(raw)
            except ValueError:
                raise SpecError(name, f"{raw!r} is not a number", hint="see the field's help") from None
    seeds = post.get("seeds", "").strip()
    if seeds:
        try:
            spec["seeds"] = [int(s) for s in seeds.replace(" ", "").split(",") if s]
        except ValueError:
            raise SpecError("seeds", f"{seeds!r} is not a comma-separated list of integers", hint="e.g. 1,2,3") from None
    for name in ("quota_gpus", "gpu_options", "disaggregated"):
        value = _json_field(post.get(name, ""), name)
        if value:
            spec[name] = value
    return spec


@login_required
@require_POST
def search_create(request):
    from planner.comparisons.selectors import load_fixture
    from simulations.engine import ScenarioError

    post = request.POST
    form = {"fixture": post.get("fixture", ""), "strategies": post.getlist("strategies"), "name": post.get("name", ""),
            "targets": {t: post.get(f"target_{t}", "") for t in DEFAULT_TARGETS},
            "probability": post.get("probability", ""), "seeds": post.get("seeds", ""),
            "band_draws": post.get("band_draws", ""), "start_plan": post.get("start_plan", ""),
            "quota_gpus": post.get("quota_gpus", ""),
            "gpu_options": post.get("gpu_options", ""), "disaggregated": post.get("disaggregated", ""),
            "scenario_json": post.get("scenario_json", "")}
    try:
        text = form["scenario_json"]
        scenario = json.loads(text) if text.strip() else load_fixture(form["fixture"])
        if not isinstance(scenario, dict):
            raise ScenarioError("scenario", "must be a JSON object")
        search = start_search(team=team_of(request.user), user=request.user, scenario=scenario,
                              spec=spec_from_form(post), name=form["name"])
    except KeyError:
        error = "Choose a scenario fixture or paste a scenario JSON."
    except json.JSONDecodeError as exc:
        error = f"The scenario JSON does not parse: {exc}."
    except ScenarioError as exc:
        error = f"Scenario field {exc.field}: {exc.message}" + (f" ({exc.hint})" if exc.hint else "")
    except SpecError as exc:
        error = f"{exc.where}: {exc.message}" + (f" ({exc.hint})" if exc.hint else "")
    else:
        return redirect("capacity:detail", pk=search.pk)
    return _list_page(request, form=form, error=error, status=400)


@login_required
def search_detail(request, pk: int):
    search = get_for_user_or_404(request.user, CapacitySearch.objects.select_related("job"), pk=pk)
    failed = list(search.probes.filter(status__in=["failed", "cancelled"]).exclude(error__type="SearchEnded")
                  .values("pid", "status", "error")[:20])  # spare work skipped after the answer is no failure
    return render(request, "capacity/detail.html", {
        "search": search, "answer": search.answer or None, "probes": selectors.probe_counts(search),
        "failed": failed, "spec_pretty": json.dumps(search.spec, indent=1),
        "steps": search.round})


@login_required
def search_csv(request, pk: int):
    search = get_for_user_or_404(request.user, CapacitySearch.objects.all(), pk=pk)
    resp = HttpResponse(selectors.export_csv(search), content_type="text/csv")
    resp["Content-Disposition"] = f'attachment; filename="capacity-search-{search.pk}.csv"'
    return resp


@login_required
def search_pdf(request, pk: int):
    search = get_for_user_or_404(request.user, CapacitySearch.objects.all(), pk=pk)
    if not search.answer:
        return HttpResponse("The search has no answer yet.", status=409, content_type="text/plain")
    resp = HttpResponse(selectors.export_pdf(search), content_type="application/pdf")
    resp["Content-Disposition"] = f'attachment; filename="capacity-search-{search.pk}.pdf"'
    return resp
