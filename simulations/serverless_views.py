"""The serverless (SLINFER) page: a serverless scenario in a form, run as a job or compared; every run's metrics."""

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
    """The serverless scenario in a form (the comparison builder's serverless form): "Run" simulates the ticked
    systems as one job, "Compare" starts a comparison of them. Errors at the top of the form and on the field."""
    from planner.comparisons.kind_forms import ServerlessForm

    form = ServerlessForm(request.POST if request.method == "POST" else None, prefix="sl",
                          initial=None if request.method == "POST" else _example_initial())
    error = ""
    if request.method == "POST":
        team = team_of(request.user)
        if team is None:
            error = "your account belongs to no team"
        elif form.is_valid():
            done = (_start_comparison(request, team, form) if request.POST.get("action") == "compare"
                    else _start_run(request, team, form))
            if done is not None:
                return done
    rows = _rows(request)
    return render(request, "simulations/serverless.html", {
        "form": form, "error": error, "rows": rows, "headers": [h for _, h, _ in METRICS],
        "validation_badges": _badges(request, form, rows),
    }, status=400 if request.method == "POST" else 200)


def _badges(request, form, rows: list[dict]) -> list[dict]:
    """How far the latencies of the listed runs' models (and the form's) are checked against real runs."""
    from planner.benchmarks.badges import badges_for
    from simulations.engine.serverless.spec import CATALOGUE_MODELS

    models = [form.data.get("sl-model") if form.is_bound else form.initial.get("model") or form.fields["model"].initial]
    models += [(row["job"].params.get("spec") or {}).get("model") for row in rows]
    known = {*CATALOGUE_MODELS, *CATALOGUE_MODELS.values()}
    team, out = team_of(request.user), []
    for model in dict.fromkeys(m for m in models if m in known):
        out += badges_for(team, {"kind": "serverless", "model": model})
    return out


def _example_initial() -> dict:
    """The bundled example (fixtures/serverless) as the form's starting values; the systems are the comparison's
    default four, so the default baseline (sllm) is among them."""
    data = json.loads(EXAMPLE.read_text())
    return {"name": data.get("name", ""), "model": data.get("model"),
            **{f"{group}__{key}": value for group in ("workload", "nodes", "params")
               for key, value in (data.get(group) or {}).items()}}


def _rows(request) -> list[dict]:
    jobs = visible_to(request.user, Job.objects.filter(kind="serverless.run")).order_by("-created")[:50]
    rows = []
    for job in jobs:
        results = (job.result or {}).get("results", {})
        rows.append({"job": job, "name": (job.params.get("spec") or {}).get("name", ""),
                     "requests": (job.result or {}).get("requests"),
                     "systems": [{"system": s, "cells": [_fmt(r.get(k), how) for k, _, how in METRICS]}
                                 for s, r in results.items()]})
    return rows


def _start_run(request, team, form):
    """One job simulating the ticked systems; a redirect, or None with the schema's error on its field."""
    if form.ablations():
        form.add_error("systems", f"{', '.join(form.ablations())}: an ablation runs only in a comparison; use "
                                  "\"Compare the systems\" or untick it")
        return None
    try:
        spec = parse({k: v for k, v in form.scenario().items() if k != "kind"})
    except SpecError as exc:
        form.place_error(exc.where, exc.message + (f" ({exc.hint})" if exc.hint else ""))
        return None
    job = create_job(team=team, user=request.user, kind="serverless.run", params={"spec": spec.model_dump()})
    messages.info(request, f"Serverless run (job #{job.pk}) started.")
    return redirect("simulations:serverless")


def _start_comparison(request, team, form):
    """The comparison of the ticked systems; a redirect to it, or None with the error on its field."""
    from planner.comparisons.kinds import RequestError, parse_request

    try:
        kind, req = parse_request({"scenario": form.scenario(), "systems": form.cleaned_data["systems"],
                                   "baseline": form.cleaned_data["baseline"], "name": form.cleaned_data["name"]})
        comp = kind.start(team=team, user=request.user, request=req)
    except RequestError as exc:
        form.place_error(exc.field, exc.message + (f" ({exc.hint})" if exc.hint else ""))
        return None
    return redirect("comparisons:detail", pk=comp.pk)
