"""Which deployments a simulation, comparison or plan uses, and how well each was checked against real runs: the
badges those pages show (``templates/includes/validation_badges.html``), from the team's validations."""

from __future__ import annotations

from django.db.models import Q
from django.urls import reverse

from planner.benchmarks.selectors import validation_badge
from planner.comparisons.kinds import RequestError, kind_of
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


def own_tables_ref(scenario: dict | None) -> dict | None:
    """A scenario whose latencies come from its paper's own tables (a serverless or an operator-level comparison's
    scenario, an operator-level plan's spec with its kind): its kind's ``catalogue_ref``, {"label", "model", "gpu",
    "tp", "kind", "text"} naming the catalogue deployment it stands for; None for any other scenario."""
    try:
        return kind_of(scenario).catalogue_ref(scenario) if isinstance(scenario, dict) else None
    except RequestError:  # not a comparison scenario of a known kind (a capacity plan's names none)
        return None


def _own_tables_badge(team, ref: dict) -> dict:
    """This page's own tables are not checked; the catalogue deployment of the same model and GPU type is named
    with its own badge, so the reader sees how far the planner's other pages are checked."""
    text = ref["text"]
    dep = _catalogue_match(team, {"name": "", "model": ref["model"], "gpu": ref["gpu"], "tp": ref["tp"]}) \
        if team is not None else None
    if dep is None:
        return {"label": ref["label"], "checked": False, "text": text, "url": None}
    badge = validation_badge(team, dep)
    if ref["tp"] is None and not badge["checked"]:  # no TP named: the checked deployment of the pair, if any
        visible = Deployment.objects.filter(Q(team=team) | Q(builtin=True), model__name=ref["model"],
                                            gpu__name=ref["gpu"]).order_by("builtin", "-pk")
        checked = next(((d, b) for d in visible if (b := validation_badge(team, d))["checked"]), None)
        dep, badge = checked or (dep, badge)
    return {"label": ref["label"], "checked": False, "url": reverse("benchmarks:deployment", args=[dep.pk]),
            "text": f"{text}; the catalogue's {dep.name} is {badge['text']}", "link": f"{dep.name}'s checks"}


def badges_for(team, scenario: dict | None) -> list[dict]:
    """One badge per deployment the scenario or plan names: {"label", "checked", "text", "url"}; a deployment the
    catalogue does not hold (an inline spec) is "not in the catalogue: not checked against real runs"; a
    serverless or operator-level scenario says its latencies come from its paper's tables."""
    own = own_tables_ref(scenario)
    if own is not None:
        return [_own_tables_badge(team, own)]
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
