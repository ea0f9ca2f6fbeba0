"""Which deployments a simulation, comparison or plan uses, and how well each was checked against real runs: the
badges those pages show (``templates/includes/validation_badges.html``), from the team's validations."""

from __future__ import annotations

from django.db.models import Q
from django.urls import reverse

from planner.benchmarks.selectors import validation_badge
from planner.hardware.models import Deployment


def deployment_refs(scenario: dict | None) -> list[dict]:
    """The deployments a scenario (``deployments`` and the fleet's endpoints) or a capacity plan (``deployments``
    list of model / gpu) names, once each: [{"label", "name", "model", "gpu", "tp"}]."""
    refs: dict[str, dict] = {}
    if not isinstance(scenario, dict):
        return []

    def add(name="", model="", gpu="", tp=None):
        label = name or "/".join(x for x in (model, gpu, f"tp{tp}" if tp else "") if x)
        if label and label not in refs:
            refs[label] = {"label": label, "name": name, "model": model, "gpu": gpu, "tp": tp}

    deps = scenario.get("deployments")
    if isinstance(deps, dict):
        for key, spec in deps.items():
            add(name=str(spec.get("name") or key) if isinstance(spec, dict) else str(key))
    elif isinstance(deps, list):
        for spec in deps:
            if isinstance(spec, dict):
                add(name=str(spec.get("name") or ""), model=str(spec.get("model") or ""),
                    gpu=str(spec.get("gpu") or ""), tp=spec.get("tp"))
    fleet = scenario.get("fleet")
    for ep in (fleet.get("endpoints") or []) if isinstance(fleet, dict) else []:
        dep = ep.get("deployment") if isinstance(ep, dict) else None
        if isinstance(dep, str):
            add(name=dep)
        elif isinstance(dep, dict):
            add(name=str(dep.get("name") or ""), model=str(dep.get("model") or ""), gpu=str(dep.get("gpu") or ""),
                tp=dep.get("tp"))
    return list(refs.values())


def _catalogue_match(team, ref: dict) -> Deployment | None:
    visible = Deployment.objects.filter(Q(team=team) | Q(builtin=True)).select_related("model", "gpu")
    if ref["name"]:
        found = sorted(visible.filter(name=ref["name"]), key=lambda d: (d.builtin, -d.pk))  # the team's own first
        if found:
            return found[0]
    if ref["model"] and ref["gpu"]:
        qs = visible.filter(model__name=ref["model"], gpu__name=ref["gpu"])
        if ref["tp"]:
            qs = qs.filter(tp=ref["tp"])
        found = sorted(qs, key=lambda d: (d.builtin, -d.pk))
        if found:
            return found[0]
    return None


def badges_for(team, scenario: dict | None) -> list[dict]:
    """One badge per deployment the scenario or plan names: {"label", "checked", "text", "url"}; a deployment the
    catalogue does not hold (an inline spec) is "not in the catalogue: not checked against real runs"."""
    out = []
    for ref in deployment_refs(scenario):
        dep = _catalogue_match(team, ref) if team is not None else None
        if dep is None:
            out.append({"label": ref["label"], "checked": False, "url": None,
                        "text": "not in the catalogue: not checked against real runs"})
            continue
        badge = validation_badge(team, dep)
        out.append({"label": ref["label"], "checked": badge["checked"], "text": badge["text"],
                    "url": reverse("benchmarks:deployment", args=[dep.pk])})
    return out
