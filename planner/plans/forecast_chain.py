"""Chain "plan from this forecast": a forecast run's next-hour peaks become a plan's demand.

Each (region, model) of the run's ``input_tps`` series (tiers summed) becomes one demand entry whose point
value is the forecast peak and whose quantiles are {0.5: peak, level: upper bound of the interval}, with the
plan's risk level set to the run's interval level, so the ILP covers the forecast's upper bound. The
deployment per model is the hardware catalogue's (the team's own first, then the built-in H100 one), priced
per GPU-hour from its on-demand instance price. The planner edits everything in the form before solving.
"""

from __future__ import annotations

import math
from collections import defaultdict


def _deployment_for(team, model: str):
    from django.db.models import Q

    from planner.hardware.models import Deployment

    qs = Deployment.objects.select_related("gpu", "model").filter(Q(team=team) | Q(team__isnull=True), model__name=model)
    deps = list(qs)
    for preferred in ("h100-80gb/tp8", "h100-80gb/tp4", "h100-80gb/tp2"):
        hit = next((d for d in deps if d.team_id == getattr(team, "pk", None) and d.name.endswith(preferred)), None) \
            or next((d for d in deps if d.name.endswith(preferred)), None)
        if hit:
            return hit
    return deps[0] if deps else None


def scenario_from_forecast(run, team=None) -> tuple[dict, str]:
    """(plan scenario, a sentence on what was carried over)."""
    level = float(run.params.get("level", 0.9))
    hours = max(1, math.ceil(float(run.params.get("horizon_s", 3600)) / 3600))
    peak: dict[tuple, float] = defaultdict(float)
    upper: dict[tuple, float] = defaultdict(float)
    flagged = 0
    for s in run.series.all():
        if s.metric != "input_tps" or s.peak is None:
            continue
        g = s.group or {}
        key = (str(g.get("region", "all")), str(g.get("model", "all")))
        peak[key] += max(0.0, float(s.peak))
        upper[key] += max(0.0, float(s.peak_upper if s.peak_upper is not None else s.peak))
        flagged += 1 if (s.peak or 0) <= 0 else 0
    gpus, deployments, demand, missing = {}, [], [], []
    for model in sorted({m for _, m in peak}):
        dep = _deployment_for(team, model)
        if dep is None:
            missing.append(model)
            continue
        spec = dep.engine_spec()
        per_gpu = (spec.get("price_per_instance_hour") or {}).get("on_demand", 0.0) / max(1, spec["gpus_per_instance"])
        gpus[spec["gpu"]] = {"on_demand": round(per_gpu, 4)}
        deployments.append({"name": spec["name"]})
    for (region, model), p in sorted(peak.items()):
        if model in missing:
            continue
        demand.append({"model": model, "region": region, "tps": [round(p, 2)] * hours,
                       "quantiles": {"0.5": [round(p, 2)] * hours, f"{level:g}": [round(upper[(region, model)], 2)] * hours}})
    scenario = {"name": f"plan from forecast run #{run.pk}", "hours": hours, "risk_quantile": level,
                "regions": sorted({r for r, _ in peak}), "gpus": gpus, "deployments": deployments, "demand": demand}
    note = (f"Prefilled from forecast run #{run.pk}: {len(demand)} demand entries (next-hour peak, covered at the "
            f"{level:g} upper bound), deployments from the hardware catalogue at on-demand prices.")
    if missing:
        note += f" No catalogue deployment for: {', '.join(missing)}."
    if flagged:
        note += f" {flagged} series forecast a peak of 0: check the forecast page."
    return scenario, note
