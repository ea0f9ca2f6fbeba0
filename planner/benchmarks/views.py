"""Benchmark pages: the list with upload and calibration, a run's stages, a deployment's validation."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from planner.accounts.access import get_for_user_or_404, team_of
from planner.benchmarks import selectors, services
from planner.benchmarks.core.errors import BenchmarkError
from planner.benchmarks.forms import CalibrateForm, UploadForm
from planner.benchmarks.models import BenchmarkRun, Validation
from planner.hardware.models import Deployment
from planner.hardware.selectors import get_visible_or_404


@login_required
def run_list(request):
    form = UploadForm()
    if request.method == "POST":
        form = UploadForm(request.POST, request.FILES)
        if form.is_valid():
            f = form.cleaned_data["file"]
            try:
                run = services.import_benchmark(team_of(request.user), request.user, {f.name or "upload": f.read()},
                                                name=form.cleaned_data["name"], gpu=form.cleaned_data["gpu"],
                                                engine=form.engine(), original_name=f.name or "")
            except BenchmarkError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, f"Imported {run.name}: {run.stage_count} stage(s).")
                return redirect("benchmarks:run", pk=run.pk)
    runs = selectors.runs_for(request.user)
    return render(request, "benchmarks/run_list.html", {
        "runs": runs, "form": form, "calibrate_form": CalibrateForm(),
        "validations": selectors.validations_for(request.user)[:20],
    })


@login_required
@require_POST
def calibrate(request):
    form = CalibrateForm(request.POST)
    ids = request.POST.getlist("run_ids")
    if not form.is_valid():
        messages.error(request, f"Calibration not started: {form.errors.as_text()}")
        return redirect("benchmarks:list")
    try:
        job = services.start_calibration(team_of(request.user), request.user, ids,
                                         holdout=form.cleaned_data["holdout"], seed=form.cleaned_data["seed"])
    except BenchmarkError as exc:
        messages.error(request, f"Calibration not started: {exc}")
        return redirect("benchmarks:list")
    messages.success(request, f"Calibration job #{job.pk} queued.")
    return redirect("jobs:detail", pk=job.pk)


@login_required
def run_detail(request, pk: int):
    run = get_for_user_or_404(request.user, BenchmarkRun.objects.all(), pk=pk)
    schema = run.schema()
    return render(request, "benchmarks/run_detail.html", {
        "run": run, "schema": schema, "validations": run.validations.order_by("-created")[:10],
    })


@login_required
def deployment_validation(request, pk: int):
    dep = get_visible_or_404(request.user, Deployment.objects.select_related("model", "gpu"), pk=pk)
    team = team_of(request.user)
    validations = Validation.objects.filter(team=team, deployment=dep).order_by("-created", "-id")
    latest = validations.first()
    runs = selectors.runs_for(request.user).filter(gpu_name=dep.gpu.name, tp=dep.tp)
    if request.method == "POST":
        try:
            job = services.start_validation(team, request.user, request.POST.getlist("run_ids"), deployment=dep)
        except BenchmarkError as exc:
            messages.error(request, f"Validation not started: {exc}")
        else:
            messages.success(request, f"Validation job #{job.pk} queued.")
            return redirect("jobs:detail", pk=job.pk)
    return render(request, "benchmarks/deployment_validation.html", {
        "dep": dep, "badge": selectors.validation_badge(team, dep), "latest": latest,
        "versions": selectors.versions(team, dep),
        "validations": validations[:10], "runs": runs,
        "physics": (dep.fit_report or {}).get("physics"),
    })
