"""Routing sweep: instance routers side by side as the arrival rate steps past the knee.

    from simulations.engine.sweep import routing_sweep
    out = routing_sweep(base_scenario_dict, rates=[10, 20, 30], routers=ROUTERS)

Each point simulates ``base`` (fixtures/scenarios/routing_sweep.json: 4 x llama-2-7b on A100-80GB, Poisson
arrivals, log-normal lengths, 10 minutes) at one fixed rate with one instance router on a static fleet, the
same workload (same seed) for every router at a rate. The knee of a router is the first rate whose SLO
attainment (the scenario's richer SLO: TTFT as a function of prompt length and mean ITL) falls below
``knee_attainment`` (0.9); ``None`` when it never does within the rates given.
"""

from __future__ import annotations

import copy
import time

ROUTERS = ("least-requests", "memory-usage", "round-robin", "llumnix")


def _point(base: dict, rate: float, router: str) -> dict:
    from simulations.engine import build_workload, parse_scenario, simulate

    d = copy.deepcopy(base)
    d["workload"]["synthetic"]["rps"] = float(rate)
    d["workload"]["synthetic"].pop("total_requests", None)
    d["strategy"] = dict(d.get("strategy") or {}, instance_router=router, autoscaler="static")
    sc = parse_scenario(d)
    t0 = time.process_time()
    r = simulate(sc, build_workload(sc))
    cpu = time.process_time() - t0
    s, slo = r.summary, r.slo["overall"] if r.slo else {}
    return {"router": router, "rate_rps": float(rate), "requests": s["requests"], "completed": s["completed"],
            "ttft_p50_s": s["ttft"]["p50"], "ttft_p99_s": s["ttft"]["p99"], "e2e_p99_s": s["e2e"]["p99"],
            "itl_mean_s": s["tbt_mean"]["mean"], "attainment": slo.get("attainment"),
            "normalised_latency_mean": (slo.get("normalised_latency_s_per_token") or {}).get("mean"),
            "preemptions": s["preemptions"], "cpu_s": round(cpu, 3)}


def routing_sweep(base: dict, rates, routers=ROUTERS, *, knee_attainment: float = 0.9, progress=None) -> dict:
    points = []
    total = len(rates) * len(routers)
    for i, (rate, router) in enumerate((r, x) for r in rates for x in routers):
        points.append(_point(base, rate, router))
        if progress is not None:
            progress((i + 1) / total, f"{router} at {rate} req/s")
    knees = {}
    for router in routers:
        mine = [p for p in points if p["router"] == router]
        knees[router] = next((p["rate_rps"] for p in mine
                              if p["attainment"] is not None and p["attainment"] < knee_attainment), None)
    return {"scenario": base.get("name"), "knee_attainment": knee_attainment, "rates_rps": list(rates),
            "routers": list(routers), "points": points, "knees_rps": knees}
