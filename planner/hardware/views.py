"""Catalogue pages: list, deployment detail (fit vs measurement), create/edit forms, upload."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from planner.accounts.access import team_of
from planner.benchmarks.selectors import validation_badge, versions
from planner.catalogue.errors import ProfileError
from planner.hardware import services
from planner.hardware.forms import DeploymentForm, GpuTypeForm, ModelProfileForm, PriceFormSet, UploadForm
from planner.hardware.models import Deployment, GpuType, ModelProfile
from planner.hardware.plots import fit_figure
from planner.hardware.selectors import can_edit, deployments_for, get_visible_or_404, gpus_for, models_for

ERROR_ROWS = [
    ("train", "training rows"),
    ("heldout", "held-out rows (flagged rows excluded)"),
    ("heldout_all_rows", "held-out rows, all"),
]


@login_required
def catalogue_list(request):
    deps = deployments_for(request.user)
    filters = {k: request.GET.get(k) for k in ("model", "gpu", "basis") if request.GET.get(k)}
    if "model" in filters:
        deps = deps.filter(model__name=filters["model"])
    if "gpu" in filters:
        deps = deps.filter(gpu__name=filters["gpu"])
    if "basis" in filters:
        deps = deps.filter(basis=filters["basis"])
    return render(
        request,
        "hardware/catalogue_list.html",
        {
            "deployments": deps,
            "gpus": gpus_for(request.user),
            "models": models_for(request.user),
            "filters": filters,
            "bases": Deployment.Basis.choices,
        },
    )


def _pct(block: dict | None) -> dict | None:
    """The error summary with percentages as text (one decimal), for the template."""
    if not block:
        return None
    out = {"n": block.get("n", 0)}
    for k in ("median_ape", "p90_ape", "max_ape"):
        v = block.get(k)
        out[k] = "" if v is None else f"{100 * v:.1f} %"
    return out


def _error_table(report: dict) -> list[dict]:
    rows = []
    for key, label in ERROR_ROWS:
        block = report.get(key)
        if block:
            rows.append(
                {"label": label, "prompt": _pct(block.get("prompt_time")), "token": _pct(block.get("token_time"))}
            )
    also = report.get("also") or {}
    for key, label in (
        ("split_configs_heldout", "held-out whole configurations (other split)"),
        ("loss_l2_heldout", "held-out rows with the least-squares fit"),
        ("cross_validated_5_fold", "every row held out once (5-fold cross-validation)"),
    ):
        if also.get(key):
            rows.append(
                {"label": label, "prompt": _pct(also[key]["prompt_time"]), "token": _pct(also[key]["token_time"])}
            )
    return rows


def source_note(basis: str, source: str) -> str:
    """The source without the basis word the page already shows ("estimated (no measurement on this GPU)" under
    "Estimated by a datasheet rule" reads "no measurement on this GPU")."""
    text = (source or "").strip()
    if basis and text.lower().startswith(basis.lower()):
        text = text[len(basis):].strip()
        text = text[5:] if text.lower().startswith("from ") else text
        if text.startswith("(") and text.endswith(")") and text.count("(") == 1:
            text = text[1:-1]
    return text


@login_required
def deployment_detail(request, pk: int):
    dep = get_visible_or_404(request.user, Deployment.objects.select_related("model", "gpu"), pk=pk)
    fig = fit_figure(dep)
    try:
        spec, spec_error = dep.engine_spec(), None
    except ProfileError as exc:
        spec, spec_error = None, exc
    return render(
        request,
        "hardware/deployment_detail.html",
        {
            "dep": dep,
            "source_note": source_note(dep.basis, dep.source),
            "editable": can_edit(request.user, dep),
            "figure_json": fig.to_json() if fig is not None else None,
            "error_rows": _error_table(dep.fit_report or {}),
            "spec_json": json.dumps(spec, indent=1) if spec else None,
            "spec_error": spec_error,
            "report": dep.fit_report or {},
            "validation": validation_badge(team_of(request.user), dep),
            "versions": versions(team_of(request.user), dep),
        },
    )


def _deployment_form(request, instance: Deployment | None):
    kwargs = {"models_qs": models_for(request.user), "gpus_qs": gpus_for(request.user)}
    if request.method == "POST":
        form = DeploymentForm(request.POST, **kwargs)
        if form.is_valid():
            try:
                dep = services.save_deployment(
                    team_of(request.user), request.user, form.to_service_dict(), instance=instance
                )
            except ProfileError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(
                    request, f"Saved {dep.name} (theta {dep.theta_tps:.0f} TPS, KV {dep.kv_capacity_tokens:,} tokens)."
                )
                return redirect("hardware:deployment", pk=dep.pk)
    else:
        form = DeploymentForm(initial=DeploymentForm.initial_from(instance) if instance else None, **kwargs)
    return render(
        request, "hardware/form.html", {"form": form, "title": f"Edit {instance}" if instance else "New deployment"}
    )


def _editable_or_403(request, model, pk: int):
    """A catalogue entry the user's team may edit: another team's is a 404, a built-in a 403."""
    entry = get_visible_or_404(request.user, model.objects.all(), pk=pk)
    if not can_edit(request.user, entry):
        raise PermissionDenied("built-in entries are read-only: copy it first")
    return entry


@login_required
def deployment_create(request):
    return _deployment_form(request, None)


@login_required
def deployment_edit(request, pk: int):
    return _deployment_form(request, _editable_or_403(request, Deployment, pk))


@login_required
@require_POST
def deployment_copy(request, pk: int):
    dep = get_visible_or_404(request.user, Deployment.objects.all(), pk=pk)
    copy = services.copy_deployment(team_of(request.user), request.user, dep)
    messages.success(request, f"Copied {dep.name} into your team; edit the copy.")
    return redirect("hardware:deployment", pk=copy.pk)


@login_required
@require_POST
def deployment_delete(request, pk: int):
    dep = get_visible_or_404(request.user, Deployment.objects.all(), pk=pk)
    try:
        services.delete_entry(team_of(request.user), dep)
    except ProfileError as exc:
        messages.error(request, str(exc))
        return redirect("hardware:deployment", pk=dep.pk)
    messages.info(request, f"Deleted {dep.name}.")
    return redirect("hardware:list")


def _gpu_form(request, instance: GpuType | None):
    if request.method == "POST":
        form, prices = GpuTypeForm(request.POST), PriceFormSet(request.POST, prefix="prices")
        if form.is_valid() and prices.is_valid():
            data = {k: v for k, v in form.cleaned_data.items() if v is not None}
            data["prices"] = [
                {**p, "as_of": p["as_of"].isoformat()}
                for p in (f.cleaned_data for f in prices.forms)
                if p and not p.get("DELETE")
            ]
            for p in data["prices"]:
                p.pop("DELETE", None)
            try:
                gpu = services.save_gpu(team_of(request.user), request.user, data, instance=instance)
            except ProfileError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, f"Saved GPU type {gpu.name}.")
                return redirect("hardware:list")
    else:
        initial = instance.as_catalogue_dict() if instance else None
        form = GpuTypeForm(initial=initial)
        prices = PriceFormSet(prefix="prices", initial=initial["prices"] if initial else None)
    return render(
        request,
        "hardware/form.html",
        {"form": form, "formset": prices, "title": f"Edit {instance}" if instance else "New GPU type"},
    )


@login_required
def gpu_create(request):
    return _gpu_form(request, None)


@login_required
def gpu_edit(request, pk: int):
    return _gpu_form(request, _editable_or_403(request, GpuType, pk))


@login_required
@require_POST
def gpu_copy(request, pk: int):
    gpu = get_visible_or_404(request.user, GpuType.objects.all(), pk=pk)
    copy = services.copy_gpu(team_of(request.user), request.user, gpu)
    messages.success(request, f"Copied {gpu.name} into your team as {copy.name}.")
    return redirect("hardware:gpu-edit", pk=copy.pk)


def _model_form(request, instance: ModelProfile | None):
    if request.method == "POST":
        form = ModelProfileForm(request.POST)
        if form.is_valid():
            try:
                m = services.save_model(team_of(request.user), request.user, form.to_service_dict(), instance=instance)
            except ProfileError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, f"Saved model {m.name} ({m.kv_bytes_per_token:,} KV bytes/token).")
                return redirect("hardware:list")
    else:
        initial = instance.as_catalogue_dict() if instance else None
        if initial:
            initial["aliases"] = ", ".join(initial["aliases"])
        form = ModelProfileForm(initial=initial)
    return render(
        request, "hardware/form.html", {"form": form, "title": f"Edit {instance}" if instance else "New model"}
    )


@login_required
def model_create(request):
    return _model_form(request, None)


@login_required
def model_edit(request, pk: int):
    return _model_form(request, _editable_or_403(request, ModelProfile, pk))


@login_required
def upload(request):
    summary = None
    if request.method == "POST":
        form = UploadForm(request.POST, request.FILES)
        if form.is_valid():
            f = form.cleaned_data["file"]
            opts = {k: form.cleaned_data[k] for k in ("time_unit", "token_time", "split", "holdout", "seed", "loss", "prefill_form")}
            try:
                summary = services.import_profile(
                    team_of(request.user), request.user, f.read(), filename=f.name or "", **opts
                )
            except ProfileError as exc:
                form.add_error(None, str(exc))
            else:
                for d in summary["deployments"]:
                    held = d.get("heldout") or {}
                    p, t = _pct(held.get("prompt_time")), _pct(held.get("token_time"))
                    d["heldout_text"] = f"{p['median_ape']} / {t['median_ape']}" if p and t else ""
                messages.success(
                    request,
                    f"Imported {len(summary['deployments'])} deployment(s), "
                    f"{len(summary['gpu_types'])} GPU type(s), {len(summary['models'])} model(s).",
                )
    else:
        form = UploadForm()
    return render(request, "hardware/upload.html", {"form": form, "summary": summary})
