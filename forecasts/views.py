from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from forecasts import selectors, services
from forecasts.api.serializers import ForecastRunCreateSerializer
from forecasts.forms import ForecastRunForm
from forecasts.models import ForecastRun
from planner.accounts.access import get_for_user_or_404, team_of, visible_to
from planner.labels import label_view
from planner.traces.models import Trace


@login_required
def run_list(request):
    traces = visible_to(request.user, Trace.objects.filter(status=Trace.Status.READY))[:200]
    form = ForecastRunForm(
        request.POST or None,
        traces=traces,
        initial={"trace": request.GET.get("trace")} if request.GET.get("trace") else None,
    )
    status = 200
    if request.method == "POST":
        if form.is_valid() and team_of(request.user) is not None:
            data = {**form.cleaned_data, "group_by": form.cleaned_data["group_by"]}
            ser = ForecastRunCreateSerializer(data=data)
            if ser.is_valid():
                trace = visible_to(request.user, Trace.objects.filter(status=Trace.Status.READY)).get(pk=data["trace"])
                run = services.create_run(
                    trace=trace, team=team_of(request.user), user=request.user, params=ser.to_params()
                )
                messages.success(request, f"Forecast run #{run.pk} started.")
                return redirect("forecasts:detail", pk=run.pk)
            for field, errors in ser.errors.items():
                form.add_error(field if field in form.fields else None, errors)
        status = 400
    from planner.listing import list_context

    listing = list_context(request, visible_to(request.user, ForecastRun.objects.select_related("trace", "job")),
                           sorts={"created": "created", "trace": "trace__name", "id": "id"}, default_sort="-created",
                           search=("name", "tags", "notes", "trace__name"),
                           statuses=["queued", "running", "succeeded", "partial", "failed", "cancelled"])
    for run in listing["rows"]:
        run.shown_status = selectors.shown_status(run)
    return render(request, "forecasts/list.html", {"runs": listing["rows"], "list": listing, "form": form},
                  status=status)


@login_required
def run_detail(request, pk: int):
    run = get_for_user_or_404(request.user, ForecastRun.objects.select_related("trace", "job"), pk=pk)
    all_series = selectors.flagged_series(run)
    flagged = [s for s in all_series if s.flags]
    context = {"run": run, "shown_status": selectors.shown_status(run, all_series), "all_series": all_series, "flagged": flagged, "poor_wmape": selectors.POOR_WMAPE,
               "labels_url": reverse("forecasts:labels", args=[run.pk])}
    selected = None
    wanted = request.GET.get("series")
    for s in all_series:
        if s.chosen_method and (wanted is None or str(s.pk) == wanted):
            selected = s
            break
    if selected is not None:
        selected = run.series.get(pk=selected.pk)  # now with its result
        if not selected.result:  # chosen but no stored result: nothing to chart (the empty state says so)
            selected = None
    if selected is not None:
        result = selected.result
        methods = list(result["methods"])
        method = (
            request.GET.get("method")
            if request.GET.get("method") in methods
            else (result["chosen"] if result["chosen"] in methods else (methods[0] if methods else ""))
        )
        horizons = selectors.horizon_choices(result)
        try:
            steps = int(request.GET.get("horizon", result["horizon_steps"]))
        except ValueError:
            steps = result["horizon_steps"]
        steps = min(max(1, steps), result["horizon_steps"])
        model_text = ", ".join(
            f"{k} {v if not isinstance(v, float) else round(v, 4)}"
            for k, v in result["model"].items()
            if k not in ("requested", "fits", "updates", "members")
        )
        context.update(
            series=selected,
            result=result,
            model_text=model_text,
            methods=methods,
            method=method,
            horizons=horizons,
            steps=steps,
            backtest_bins=result["n_bins"] - result["initial"],
            leaderboard=selectors.leaderboard_at(result, steps) if methods else [],
            failures=selectors.failures(result, method) if method else [],
            figures={
                "forecast": selectors.forecast_figure(selected, method, steps),
                "errors": selectors.error_figure(selected) if methods else "",
                "residuals": selectors.residual_figure(selected, method, steps) if method else "",
                "leads": selectors.lead_figure(selected) if methods else "",
            },
        )
    return render(request, "forecasts/detail.html", context)


@login_required
@require_POST
def run_delete(request, pk: int):
    run = get_for_user_or_404(request.user, ForecastRun.objects.all(), pk=pk)
    services.delete_run(run)
    messages.success(request, f"Forecast run #{pk} deleted.")
    return redirect("forecasts:list")


run_labels = label_view(ForecastRun, "forecasts:detail")
