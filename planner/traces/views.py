from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from planner.accounts.access import get_for_user_or_404, team_of, visible_to
from planner.traces import selectors, services
from planner.traces.forms import WORKLOADS, SynthForm, UploadForm, workload_choices
from planner.traces.models import Trace


def _error_message(exc: services.TraceInputError) -> str:
    return str(exc)


@login_required
def trace_list(request):
    traces = visible_to(request.user, Trace.objects.select_related("job"))[:500]
    return render(request, "traces/list.html", {"traces": traces, "form": UploadForm()})


@login_required
def trace_upload(request):
    form = UploadForm(request.POST or None, request.FILES or None)
    status = 200
    if request.method == "POST":
        if form.is_valid() and team_of(request.user) is not None:
            d = form.cleaned_data
            try:
                trace = services.import_upload(
                    d["file"],
                    team=team_of(request.user),
                    user=request.user,
                    name=d["name"] or None,
                    fmt=d["format"],
                    options=form.options(),
                    description=d["description"],
                    region=d["region"],
                    model=d["model"],
                    tier=d["tier"],
                )
            except services.DuplicateTrace as exc:
                form.add_error(None, _error_message(exc))
                status = 409
            except services.TraceInputError as exc:
                form.add_error(None, _error_message(exc))
                status = exc.status
            else:
                messages.success(request, f"Stored {trace.original_name!r}; a worker normalises it, then characterises "
                                          "it (this page shows its status).")
                return redirect("traces:detail", pk=trace.pk)
        elif team_of(request.user) is None:
            form.add_error(None, "your account belongs to no team")
            status = 400
        else:
            status = 400
    return render(request, "traces/upload.html", {"form": form}, status=status)


@login_required
def trace_synthesise(request):
    team = team_of(request.user)
    traces = visible_to(request.user, Trace.objects.filter(source=Trace.Source.UPLOAD))[:200]
    status = 200
    if request.method == "POST":
        form = SynthForm(request.POST, traces=traces)
        if form.is_valid() and team is not None:
            d = form.cleaned_data
            spec = d["spec"]
            if d.get("token_trace"):
                spec = services.with_token_trace(spec, d["token_trace"])
            try:
                trace = services.synthesise_trace(
                    spec, team=team, user=request.user, name=d["name"] or None, seed=d["seed"]
                )
            except services.TraceInputError as exc:
                form.add_error(None, _error_message(exc))
                status = exc.status
            else:
                messages.success(request, f"Synthesised {trace.requests:,} requests.")
                return redirect("traces:detail", pk=trace.pk)
        else:
            status = 400
    else:
        fixture = request.GET.get("fixture", "sageserve_day")
        if fixture not in dict(workload_choices()):
            fixture = "sageserve_day"
        path = WORKLOADS / f"{fixture}.json"
        initial = {"spec": path.read_text() if path.exists() else "{}", "name": fixture.replace("_", "-")}
        form = SynthForm(initial=initial, traces=traces)
    return render(request, "traces/synthesise.html", {"form": form, "fixtures": workload_choices()}, status=status)


@login_required
def trace_detail(request, pk: int):
    trace = get_for_user_or_404(request.user, Trace.objects.select_related("job"), pk=pk)
    by = request.GET.get("by", "tier")
    if by not in selectors.GROUP_BY:
        by = "tier"
    interval = selectors.pick_interval(trace, request.GET.get("interval"))
    status, reason = trace.current_status()
    data = selectors.characterisation_data(trace) if trace.characterisation else None
    figures = {}
    if data is not None:
        from planner.plotstyle import embed

        figures["rates"] = embed(selectors.rate_figure(trace, data, interval=interval, by=by))
        figures["cdf"] = embed(selectors.cdf_figure(trace, data))
    return render(
        request,
        "traces/detail.html",
        {
            "trace": trace,
            "figures": figures,
            "by": by,
            "interval": interval,
            "group_by": selectors.GROUP_BY,
            "summary": trace.characterisation,
            "status": status,
            "reason": reason,
            "options_json": json.dumps(trace.options, indent=1)[:4000],
        },
    )


@login_required
@require_POST
def trace_delete(request, pk: int):
    trace = get_for_user_or_404(request.user, Trace.objects.all(), pk=pk)
    name = trace.name
    services.delete_trace(trace)
    messages.info(request, f"Deleted trace {name!r}.")
    return redirect("traces:list")


@login_required
@require_POST
def trace_characterise(request, pk: int):
    trace = get_for_user_or_404(request.user, Trace.objects.all(), pk=pk)
    try:
        services.characterise_again(trace, user=request.user)
    except services.TraceInputError as exc:
        messages.error(request, _error_message(exc))
    return redirect("traces:detail", pk=trace.pk)
