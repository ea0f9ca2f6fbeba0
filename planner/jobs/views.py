from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from planner.accounts.access import get_for_user_or_404, visible_to
from planner.jobs.models import Job
from planner.jobs.services import cancel_job

# kind -> (param holding the object's id, URL name of its page, noun); children point at their parent's object
_OBJECT_PAGES = {
    "plan.solve": ("plan_id", "plans:detail", "capacity plan"),
    "simulation.run": ("run_id", "simulations:detail", "simulation"),
    "comparisons.aggregate": ("comparison", "comparisons:detail", "comparison"),
    "comparisons.variant": ("comparison", "comparisons:detail", "comparison"),
    "trace.characterise": ("trace_id", "traces:detail", "trace"),
    "forecasts.run": ("run_id", "forecasts:detail", "forecast run"),
    "opscale.plan": ("operator_plan_id", "opscaling:detail", "operator-level plan"),
}


def display_state(job) -> tuple[str, float]:
    """(status, progress) as a person should read them: a parent that waits (queued) while its children run is
    running, and its progress is its children's (95 % of it; the rest is the parent's own aggregation). A forecast
    run that succeeded with a series to look at (a fallback, no backtest, a poor fit) reads "needs review", as on
    its own page."""
    if job.kind == "forecasts.run" and job.status == "succeeded":
        return _forecast_status(job), float(job.progress or 0.0)
    if job.status != "queued":
        return job.status, float(job.progress or 0.0)
    children = list(job.children.values_list("status", "progress"))
    if not children or all(st == "queued" for st, _ in children):
        return job.status, float(job.progress or 0.0)
    done = sum(100.0 if st in ("succeeded", "failed", "cancelled") else float(p or 0.0) for st, p in children)
    return "running", round(0.95 * done / len(children), 1)


def _forecast_status(job) -> str:
    from forecasts.models import ForecastRun
    from forecasts.selectors import shown_status

    pk = (job.params or {}).get("run_id")
    run = ForecastRun.objects.filter(pk=pk).first() if str(pk).isdigit() else None
    return shown_status(run) if run is not None else job.status


def object_link(job) -> dict | None:
    """{url, label} of the row a job works for (its plan, simulation, comparison, trace, forecast run)."""
    from django.urls import NoReverseMatch, reverse

    spec = _OBJECT_PAGES.get(job.kind)
    params = job.params or {}
    if spec is None and job.kind == "forecasts.series" and job.parent_id:
        spec, params = _OBJECT_PAGES["forecasts.run"], (job.parent.params or {})
    if spec is None:
        return None
    key, url_name, noun = spec
    pk = params.get(key)
    if not str(pk).isdigit():
        return None
    try:
        url = reverse(url_name, args=[int(pk)])
    except NoReverseMatch:
        return None
    extra = f" · {params['key']}" if job.kind == "comparisons.variant" and params.get("key") else ""
    return {"url": url, "label": f"{noun} #{pk}{extra}"}


@login_required
def job_list(request):
    from planner.jobs.registry import known_kinds
    from planner.listing import list_context

    qs = visible_to(request.user, Job.objects.select_related("parent"))
    if request.GET.get("children") != "1":
        qs = qs.filter(parent=None)
    listing = list_context(request, qs, sorts={"created": "created", "kind": "kind", "status": "status", "id": "id"},
                           default_sort="-created", search=("kind", "message"),
                           statuses=[s.value for s in Job.Status], status_filter=lambda q, v: q.filter(status=v),
                           kinds=known_kinds())
    jobs = list(listing["rows"])
    for job in jobs:
        job.object_link = object_link(job)
        job.shown_status, job.shown_progress = display_state(job)
    return render(request, "jobs/job_list.html", {"jobs": jobs, "list": listing})


@login_required
def job_detail(request, pk: int):
    import json

    job = get_for_user_or_404(request.user, Job.objects.select_related("parent"), pk=pk)
    return render(request, "jobs/job_detail.html", {
        "job": job, "children": job.children.all(), "object_link": object_link(job),
        "params_json": json.dumps(job.params, indent=2, default=str),
        "result_json": json.dumps(job.result, indent=2, default=str),
    })


@login_required
@require_POST
def job_cancel(request, pk: int):
    job = get_for_user_or_404(request.user, Job.objects.all(), pk=pk)
    if cancel_job(job):
        messages.info(request, f"Job #{job.pk} cancelled.")
    else:
        messages.warning(request, f"Job #{job.pk} had already ended ({job.status}).")
    next_url = request.POST.get("next", "")
    if next_url and url_has_allowed_host_and_scheme(next_url, allowed_hosts={request.get_host()}):
        return redirect(next_url)
    return redirect("jobs:detail", pk=job.pk)
