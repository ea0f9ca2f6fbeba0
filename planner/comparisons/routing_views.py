"""Pages of the routing sweep: a form that starts one on the workers, and its result (chart, knees, table)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render

from planner.accounts.access import get_for_user_or_404, team_of, visible_to
from planner.comparisons import routing
from planner.jobs.models import Job
from planner.jobs.services import QueueUnavailable


def _sweeps(user):
    return visible_to(user, Job.objects.filter(kind=routing.KIND)).order_by("-created")[:20]


@login_required
def routing_sweep_page(request):
    form = {"rates": ",".join(f"{r:g}" for r in routing.DEFAULT_RATES), "routers": routing.routers_known(),
            "minutes": "10", "knee_attainment": "0.9"}
    error, status = None, 200
    if request.method == "POST":
        form = {"rates": request.POST.get("rates", ""), "routers": request.POST.getlist("routers"),
                "minutes": request.POST.get("minutes", ""), "knee_attainment": request.POST.get("knee_attainment", "")}
        team = team_of(request.user)
        try:
            if team is None:
                raise routing.SweepInputError("team", "your account belongs to no team; ask an admin to add you")
            params = routing.clean_params(rates=[x for x in form["rates"].split(",") if x.strip()],
                                          routers=form["routers"], minutes=form["minutes"],
                                          knee_attainment=form["knee_attainment"])
            job = routing.start_routing_sweep(team=team, user=request.user, params=params)
        except routing.SweepInputError as exc:
            error, status = f"{exc.field}: {exc.message}", 400
        except QueueUnavailable:
            error, status = "the job queue is unavailable, so nothing was started; try again in a minute", 503
        else:
            messages.success(request, f"Routing sweep started as job #{job.pk}.")
            return redirect("comparisons:routing-sweep-detail", pk=job.pk)
    return render(request, "comparisons/routing_sweep.html", {
        "form": form, "error": error, "routers": routing.routers_known(), "sweeps": _sweeps(request.user),
        "max_rates": routing.MAX_RATES, "max_minutes": routing.MAX_MINUTES}, status=status)


@login_required
def routing_sweep_detail(request, pk: int):
    from planner.plotstyle import embed

    job = get_for_user_or_404(request.user, Job.objects.filter(kind=routing.KIND), pk=pk)
    result = job.result if job.status == Job.Status.SUCCEEDED else {}
    knees = [(r, (result.get("knees_rps") or {}).get(r)) for r in result.get("routers", [])]
    return render(request, "comparisons/routing_sweep_detail.html", {
        "job": job, "result": result, "knees": knees, "points": result.get("points", []),
        "figure": embed(routing.figure(result)) if result.get("points") else ""})
