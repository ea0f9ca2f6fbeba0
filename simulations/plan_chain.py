"""Chain "simulate this plan": a capacity plan's instance counts become a simulation scenario.

The engine needs latency models, so each (model, GPU type) of the plan is looked up in the hardware catalogue
(the team's own deployments first, then the built-ins; the GPU name may be a prefix, "h100" -> "h100-80gb").
Each (region, model) becomes one endpoint on the GPU type the plan gives it most instance-hours, with the
plan's PEAK hourly count as a static fleet (initial = min = max): the engine has no hour-by-hour schedule
autoscaler, so this tests whether the plan's peak sizing serves the demand, and the note says so. The
workload is the synthesiser sized from the plan's demand (input TPS per model and region -> requests at
1,024 input tokens on average). The planner can edit everything in the form before running it.
"""

from __future__ import annotations

from collections import defaultdict

MEAN_INPUT_TOKENS = 1024


def _catalogue_spec(model: str, gpu: str, team=None) -> dict | None:
    from django.db.models import Q

    from planner.hardware.models import Deployment

    qs = Deployment.objects.select_related("model", "gpu").filter(model__name=model)
    qs = qs.filter(Q(gpu__name=gpu) | Q(gpu__name__startswith=f"{gpu}-"))
    dep = (qs.filter(team=team).first() if team is not None else None) or qs.filter(team__isnull=True).first()
    return dep.engine_spec() if dep is not None else None


def scenario_from_plan(plan_scenario: dict, result: dict, *, name: str, team=None) -> tuple[dict, str]:
    """(engine scenario, a sentence saying what was carried over and what was simplified)."""
    hours = int(result.get("hours") or plan_scenario.get("hours") or 24)
    inst_h: dict[tuple, float] = defaultdict(float)
    peak: dict[tuple, int] = defaultdict(int)
    for row in result.get("instances", []):
        key = (row["region"], row["model"], row["gpu"])
        inst_h[key] += row["instances"]
        peak[key] = max(peak[key], int(row["instances"]))
    best: dict[tuple, str] = {}
    for (region, model, gpu), _h in sorted(inst_h.items(), key=lambda kv: -kv[1]):
        best.setdefault((region, model), gpu)
    deployments, endpoints, missing = {}, [], []
    for (region, model), gpu in sorted(best.items()):
        spec = _catalogue_spec(model, gpu, team)
        if spec is None:
            missing.append(f"{model} on {gpu}")
            continue
        deployments[spec["name"]] = spec
        n = max(1, peak[(region, model, gpu)])
        endpoints.append({"region": region, "model": model, "deployment": spec["name"], "initial": n, "min": n,
                          "max": n})
    demand: dict[tuple, float] = defaultdict(float)
    for c in result.get("coverage", []):
        demand[(c["region"], c["model"])] += float(c.get("forecast") or 0.0)
    models = sorted({m for _, m in best} - {m.split(" on ")[0] for m in missing})
    regions = sorted({r for r, _ in best})
    total_tps_h = sum(v for (r, m), v in demand.items() if m in models)
    by_model = {m: sum(v for (r, mm), v in demand.items() if mm == m) for m in models}
    by_region = {r: sum(v for (rr, m), v in demand.items() if rr == r and m in models) for r in regions}
    total_requests = max(1000, int(total_tps_h * 3600 / MEAN_INPUT_TOKENS)) if total_tps_h else 20000
    scenario = {
        "name": name, "seed": 0, "deployments": deployments,
        "fleet": {"regions": [{"name": r} for r in regions], "endpoints": endpoints},
        "workload": {"synthetic": {
            "duration_s": hours * 3600, "total_requests": total_requests,
            "model_weights": {m: round(v / total_tps_h, 4) for m, v in by_model.items()} if total_tps_h else {},
            "region_weights": {r: round(v / total_tps_h, 4) for r, v in by_region.items()} if total_tps_h else {},
            "input_tokens": {"mean": MEAN_INPUT_TOKENS, "sigma": 1.0, "max": 8192},
            "output_tokens": {"mean": 256, "sigma": 1.0, "max": 2048}}},
        "strategy": {"autoscaler": "static", "scheduler": "fcfs"},
    }
    note = (f"Prefilled from the plan: {len(endpoints)} endpoints at the plan's peak hourly instance counts "
            f"(static: the simulator has no hour-by-hour schedule), a synthetic workload of {total_requests:,} "
            f"requests sized from the plan's forecast over {hours} h.")
    if missing:
        note += f" Not in the hardware catalogue, left out: {', '.join(missing)}."
    return scenario, note
