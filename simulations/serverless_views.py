"""The serverless (SLINFER) page: paste or edit a serverless scenario, run it as a job, see every system's metrics."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render

from planner.accounts.access import team_of, visible_to
from planner.jobs.models import Job
from planner.jobs.services import create_job
from simulations.engine.serverless.spec import SpecError, parse

EXAMPLE = Path(settings.BASE_DIR) / "fixtures" / "serverless" / "slinfer_32x7b.json"
METRICS = [("slo_met", "SLO-met", "{:d}"), ("slo_attainment", "SLO %", "pct"), ("dropped", "Dropped", "{:d}"),
           ("avg_cpu_nodes", "Avg CPUs", "{:.2f}"), ("avg_gpu_nodes", "Avg GPUs", "{:.2f}"),
           ("resizing_share", "Resizing %", "pct"), ("migration_rate", "Migration %", "pct"),
           ("per_token_deadline_compliance", "Token deadlines met %", "pct"), ("energy_kwh", "Energy kWh", "{:.3f}")]


def _fmt(value, how: str) -> str:
    if value is None:
        return "n/a"
    return f"{100 * value:.1f}" if how == "pct" else how.format(value)


@login_required
def serverless_page(request):
    text = EXAMPLE.read_text()
    errors: list[str] = []
    if request.method == "POST":
        text = request.POST.get("spec", "")
        team = team_of(request.user)
        try:
            data = json.loads(text)
        except ValueError as exc:
            errors.append(f"spec: not valid JSON ({exc})")
            data = None
        if team is None:
            errors.append("your account belongs to no team")
        if not errors:
            if request.POST.get("action") == "compare":  # the systems as a comparison
                comp = _start_comparison(request, team, data, errors)
                if comp is not None:
                    return redirect("comparisons:detail", pk=comp.pk)
            spec = None
            try:
                spec = parse(data) if not errors else None
            except SpecError as exc:
                errors.append(f"spec.{exc.where}: {exc.message}" + (f" ({exc.hint})" if exc.hint else ""))
            if spec is not None:
                job = create_job(team=team, user=request.user, kind="serverless.run",
                                 params={"spec": spec.model_dump()})
                messages.info(request, f"Serverless run (job #{job.pk}) started.")
                return redirect("simulations:serverless")
    jobs = visible_to(request.user, Job.objects.filter(kind="serverless.run")).order_by("-created")[:50]
    rows = []
    for job in jobs:
        results = (job.result or {}).get("results", {})
        rows.append({"job": job, "name": (job.params.get("spec") or {}).get("name", ""),
                     "requests": (job.result or {}).get("requests"),
                     "systems": [{"system": s, "cells": [_fmt(r.get(k), how) for k, _, how in METRICS]}
                                 for s, r in results.items()]})
    from planner.comparisons.core.serverless import DEFAULT_SYSTEMS, SYSTEMS

    return render(request, "simulations/serverless.html", {
        "spec": text, "errors": errors, "rows": rows, "headers": [h for _, h, _ in METRICS],
        "compare_systems": list(SYSTEMS), "default_systems": DEFAULT_SYSTEMS,
    }, status=400 if errors else 200)


def _start_comparison(request, team, data, errors: list[str]):
    """The comparison of the ticked systems on the posted spec, or None with the reason in ``errors``."""
    from planner.comparisons.serverless import ServerlessVariantError, start_serverless_comparison

    if not isinstance(data, dict):
        errors.append("spec: a serverless scenario is a JSON object")
        return None
    try:
        return start_serverless_comparison(team=team, user=request.user, scenario={"kind": "serverless", **data},
                                           systems=request.POST.getlist("systems") or None,
                                           baseline=request.POST.get("baseline") or None)
    except SpecError as exc:
        errors.append(f"spec.{exc.where}: {exc.message}" + (f" ({exc.hint})" if exc.hint else ""))
    except ServerlessVariantError as exc:
        errors.append(f"{exc.field}: {exc.message}")
    return None
