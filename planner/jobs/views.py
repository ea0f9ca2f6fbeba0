from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from planner.accounts.access import get_for_user_or_404, visible_to
from planner.jobs.models import Job
from planner.jobs.services import cancel_job


@login_required
def job_list(request):
    jobs = visible_to(request.user, Job.objects.filter(parent=None))[:200]
    return render(request, "jobs/job_list.html", {"jobs": jobs})


@login_required
def job_detail(request, pk: int):
    job = get_for_user_or_404(request.user, Job.objects.all(), pk=pk)
    return render(request, "jobs/job_detail.html", {"job": job, "children": job.children.all()})


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
