"""Routing sweeps on the workers: instance routers side by side as the arrival rate steps past the knee.

The sweep itself is Django-free (simulations/engine/sweep.py, also `manage.py routing_sweep`); this module checks a
request's parameters once, starts the job and draws its result. The base scenario is the bundled
fixtures/scenarios/routing_sweep.json (4 x llama-2-7b on A100-80GB, Poisson arrivals, log-normal lengths).
"""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings

KIND = "comparisons.routing_sweep"
MAX_RATES = 16
MAX_MINUTES = 30.0
DEFAULT_RATES = (10, 11, 12, 13, 14, 15, 16, 17)


class SweepInputError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def routers_known() -> list[str]:
    from simulations.engine.sweep import ROUTERS

    return list(ROUTERS)


def clean_params(*, rates, routers, minutes, knee_attainment=0.9) -> dict:
    """The job's parameters, checked: rates in req/s (1-16 of them, each in (0, 10,000]), known routers,
    simulated minutes per point in (0, 30], the knee's attainment threshold in (0, 1)."""
    import math

    from simulations.engine.policies import INSTANCE_ROUTERS

    try:
        rates = sorted({float(r) for r in rates})
    except (TypeError, ValueError):
        raise SweepInputError("rates", "rates must be numbers (requests per second)") from None
    if not rates or len(rates) > MAX_RATES:
        raise SweepInputError("rates", f"give between 1 and {MAX_RATES} rates")
    if any(not math.isfinite(r) or r <= 0 or r > 10_000 for r in rates):
        raise SweepInputError("rates", "every rate must be > 0 and at most 10,000 requests per second")
    routers = list(dict.fromkeys(routers or []))
    unknown = [r for r in routers if r not in INSTANCE_ROUTERS]
    if not routers or unknown:
        raise SweepInputError("routers", f"choose routers among {sorted(INSTANCE_ROUTERS)}"
                              + (f"; unknown: {unknown}" if unknown else ""))
    try:
        minutes, knee = float(minutes), float(knee_attainment)
    except (TypeError, ValueError):
        raise SweepInputError("minutes", "minutes and knee_attainment must be numbers") from None
    if not (0 < minutes <= MAX_MINUTES):
        raise SweepInputError("minutes", f"simulated minutes per point must be in (0, {MAX_MINUTES:g}]")
    if not (0 < knee < 1):
        raise SweepInputError("knee_attainment", "the knee's attainment threshold must be between 0 and 1")
    if rates[0] * minutes * 60.0 < 1.0:  # the workload generator needs at least one request per point
        raise SweepInputError("rates", f"the rate {rates[0]:g} req/s over {minutes:g} simulated minutes gives no "
                              "request at all; use a higher rate or more minutes")
    return {"rates": rates, "routers": routers, "minutes": minutes, "knee_attainment": knee}


def sweep_requests(params: dict) -> int:
    """How many requests a sweep simulates in all (every router at every rate): its size for the job queues."""
    return int(sum(params["rates"]) * params["minutes"] * 60.0 * len(params["routers"]))


def base_scenario(minutes: float) -> dict:
    path = Path(settings.BASE_DIR) / "fixtures" / "scenarios" / "routing_sweep.json"
    base = json.loads(path.read_text())
    base.setdefault("workload", {}).setdefault("synthetic", {})["duration_s"] = minutes * 60.0
    return base


def start_routing_sweep(*, team, user, params: dict):
    from planner.jobs.services import create_job

    return create_job(team=team, user=user, kind=KIND, params=params, requests=sweep_requests(params))


def figure(result: dict):
    """SLO attainment against the arrival rate, one line per router, each knee marked."""
    import plotly.graph_objects as go

    from planner.plotstyle import harmonise

    fig = go.Figure()
    for router in result.get("routers", []):
        pts = [p for p in result.get("points", []) if p["router"] == router and p["attainment"] is not None]
        fig.add_trace(go.Scatter(x=[p["rate_rps"] for p in pts], y=[100 * p["attainment"] for p in pts],
                                 mode="lines+markers", name=router, legendgroup=router))
        knee = (result.get("knees_rps") or {}).get(router)
        if knee is not None:
            at = next(p for p in pts if p["rate_rps"] == knee)
            fig.add_trace(go.Scatter(x=[knee], y=[100 * at["attainment"]], mode="markers", name=router,
                                     legendgroup=router, showlegend=False, marker=dict(size=14, symbol="x"),
                                     hovertemplate=f"knee of {router}: {knee:g} req/s<extra></extra>"))
    threshold = 100 * result.get("knee_attainment", 0.9)
    fig.add_hline(y=threshold, line_dash="dot", annotation_text=f"knee threshold {threshold:g} %")
    fig.update_layout(title="SLO attainment against arrival rate (x = the knee)", height=420,
                      xaxis_title="arrival rate (requests/s)", yaxis_title="SLO attainment (%)")
    fig.update_yaxes(rangemode="tozero")
    return harmonise(fig)
