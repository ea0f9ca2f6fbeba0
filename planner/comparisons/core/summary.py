"""Normalise one engine run (``simulations.engine.results.metrics.SimulationResult``) into the comparison summary.

Shape (all JSON-able; everything the page, the exports and the PDF use)::

    {"key", "strategy", "scheduler", "duration_s", "requests", "wall_s", "price_per_instance_hour",
     "totals": {instance_hours, gpu_hours, cost_usd, provisioning_gpu_hours, serving_gpu_hours,
                idle_gpu_hours, spot_pool_instance_hours, scale_out_events, scale_in_events,
                mean_utilisation},
     "endpoints": [{region, model, gpu, deployment, instance_hours, gpu_hours, cost_usd,
                    provisioning_gpu_hours, mean_utilisation, price_per_instance_hour}],
     "tiers": {tier: {n, completed, ttft_p50, ttft_q3, ttft_p95, ttft_p99, e2e_p50, e2e_p95, e2e_p99,
                      attainment, slo}},
     "waste_by_source": {"spot-same": GPU-h, "spot-other": GPU-h, "new-vm": GPU-h},
     "timeline": {"t_s": [...], "instances": {"region/model": [...]}, "utilisation": {...},
                  "instances_total": [...]},
     "decisions": [ {hour, region, model, forecast_tps, target, ...} ]   # LT policies only
    }

Siloed runs have two pools per (region, model); they are summed here so every strategy reports the
same (region, model) rows. Django-free.
"""

from __future__ import annotations

import math

import numpy as np

TIERS = ("IW-F", "IW-N", "NIW")


def _ep_key(name: str) -> str:
    parts = name.split("/")
    return "/".join(parts[:2])


def _clean(x):
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _timelines(tl: dict, t_s: list) -> tuple[dict, dict, dict]:
    """Per (region, model) key: paid instances (serving + provisioning + draining), utilisation x serving, serving."""
    names = tl.get("endpoints", [])
    series = tl.get("series", {})
    inst: dict[str, np.ndarray] = {}
    util_num: dict[str, np.ndarray] = {}
    serv: dict[str, np.ndarray] = {}
    if t_s:
        S = np.asarray(series.get("serving", []), dtype=float)
        P = np.asarray(series.get("provisioning", []), dtype=float)
        D = np.asarray(series.get("draining", []), dtype=float)
        U = np.asarray(series.get("utilisation", []), dtype=float)
        for e, name in enumerate(names):
            k = _ep_key(name)
            total = S[e] + P[e] + (D[e] if D.size else 0.0)
            inst[k] = inst.get(k, 0.0) + total
            util_num[k] = util_num.get(k, 0.0) + U[e] * S[e]
            serv[k] = serv.get(k, 0.0) + S[e]
    return inst, util_num, serv


_ENDPOINT_SUMS = ("instance_hours", "gpu_hours", "cost_usd", "provisioning_gpu_hours", "serving_gpu_hours",
                  "idle_gpu_hours", "instances_used")


def _endpoints(usage: list, mean_util: dict) -> dict[str, dict]:
    """The usage rows summed per (region, model), with the endpoint's mean utilisation; a disaggregated endpoint
    also keeps each pool's row apart (``pools``: its own deployment, GPU, price, hours and cost)."""
    endpoints: dict[str, dict] = {}
    for u in usage:
        k = f"{u['region']}/{u['model']}"
        e = endpoints.setdefault(k, {"region": u["region"], "model": u["model"],
                                     "deployment": u.get("deployment", ""),
                                     "gpu": _gpu_of(u.get("deployment", "")),
                                     "gpus_per_instance": u.get("gpus_per_instance"),
                                     "price_per_instance_hour": u.get("price_per_instance_hour"),
                                     **{f: 0.0 for f in _ENDPOINT_SUMS[:-1]}, "instances_used": 0})
        for f in _ENDPOINT_SUMS:
            e[f] += u.get(f, 0.0) or 0.0
        e["mean_utilisation"] = mean_util.get(k)
        if u.get("pool"):
            e.setdefault("pools", []).append({
                "pool": u["pool"], "deployment": u.get("deployment", ""), "gpu": _gpu_of(u.get("deployment", "")),
                "gpus_per_instance": u.get("gpus_per_instance"),
                "price_per_instance_hour": u.get("price_per_instance_hour"),
                **{f: u.get(f, 0.0) or 0.0 for f in _ENDPOINT_SUMS}})
    for e in endpoints.values():
        if e.get("pools"):  # the endpoint's own fields name both pools, prefill first
            e["pools"].sort(key=lambda p: p["pool"] != "prefill")
            e["deployment"] = " + ".join(p["deployment"] for p in e["pools"])
            e["gpu"] = " + ".join(p["gpu"] for p in e["pools"])
            e["price_per_instance_hour"] = None  # two prices: see the pools
    return endpoints


def _gpu_of(deployment: str) -> str:
    return (deployment.split("/") + ["", ""])[1]


def _scaling(events: list, usage: list) -> tuple[dict[str, float], int, int, list[dict]]:
    """(GPU-hours spent provisioning per source of the scale-out, scale-outs, scale-ins, the plan decisions)."""
    gpus_of = {f"{u['region']}/{u['model']}": u.get("gpus_per_instance", 1) for u in usage}
    waste: dict[str, float] = {}
    outs = ins = 0
    decisions = []
    for ev in events:
        action = ev.get("action")
        if action == "scale_out":
            outs += 1
            g = gpus_of.get(_ep_key(ev["endpoint"]), 1)
            waste[ev.get("source", "?")] = waste.get(ev.get("source", "?"), 0.0) + ev.get("delay_s", 0.0) * g / 3600
        elif action == "scale_in":
            ins += 1
        elif action == "plan":
            decisions.append({k: v for k, v in ev.items() if k != "action"})
    return waste, outs, ins, decisions


def _tiers(result) -> dict[str, dict]:
    """Per tier: counts, TTFT / E2E percentiles (and the TTFT third quartile from the requests), attainment."""
    tiers = {}
    req = getattr(result, "requests", None) or {}
    for name in TIERS:
        t = result.tiers.get(name)
        if not t:
            continue
        q3 = None
        if req:
            idx = TIERS.index(name)
            mask = (np.asarray(req["tier"]) == idx) & np.asarray(req["completed"], dtype=bool)
            if mask.any():
                q3 = float(np.percentile(np.asarray(req["ttft_s"])[mask], 75))
        tiers[name] = {
            "n": t.get("requests"), "completed": t.get("completed"), "dropped": t.get("dropped"),
            "ttft_p50": _clean(t["ttft"].get("p50")), "ttft_q3": q3, "ttft_p95": _clean(t["ttft"].get("p95")),
            "ttft_p99": _clean(t["ttft"].get("p99")), "e2e_p50": _clean(t["e2e"].get("p50")),
            "e2e_p95": _clean(t["e2e"].get("p95")), "e2e_p99": _clean(t["e2e"].get("p99")),
            "attainment": _clean(t.get("slo_attainment")), "slo": {"ttft_s": t.get("slo_ttft_s")},
            # arrival -> admission (includes the NIW queue manager's hold): how long a tier was deferred
            "queueing_p50": _clean((t.get("queueing") or {}).get("p50")),
            "queueing_p95": _clean((t.get("queueing") or {}).get("p95")),
        }
    return tiers


def _totals(summ: dict, util_num: dict, serv: dict, outs: int, ins: int, decisions: list) -> dict:
    tot_serv = sum(float(v.sum()) for v in serv.values())
    totals = {
        "instance_hours": summ.get("instance_hours", 0.0), "gpu_hours": summ.get("gpu_hours", 0.0),
        "cost_usd": summ.get("cost_usd", 0.0), "provisioning_gpu_hours": summ.get("provisioning_gpu_hours", 0.0),
        "serving_gpu_hours": summ.get("serving_gpu_hours", 0.0), "idle_gpu_hours": summ.get("idle_gpu_hours", 0.0),
        "spot_pool_instance_hours": float(sum((summ.get("spot_instance_hours") or {}).values())),
        "scale_out_events": outs, "scale_in_events": ins,
        "mean_utilisation": (sum(float(util_num[k].sum()) for k in util_num) / tot_serv) if tot_serv else None,
        # where savings can come from (the floors cost every strategy the same)
        "floor_gpu_hours": summ.get("floor_gpu_hours"), "gpu_hours_above_floor": summ.get("gpu_hours_above_floor"),
        "gpu_hours_without_provisioning": summ.get("gpu_hours", 0.0) - summ.get("provisioning_gpu_hours", 0.0),
    }
    methods: dict[str, int] = {}
    for d in decisions:  # which forecast method actually ran each decision (fallbacks included)
        m = str(d.get("forecast_method") or "?") + (" (fallback)" if d.get("forecast_fallback") else "")
        methods[m] = methods.get(m, 0) + 1
    totals["forecast_methods"] = methods
    if summ.get("prefix_cache"):  # only when a deployment caches prefixes (the engine's summary has it then)
        totals["prefix_cache_hit_rate"] = summ["prefix_cache"]["hit_rate"]
    return totals


def summarise(result, *, key: str = "", strategy: str = "", scheduler: str = "") -> dict:
    summ = result.summary
    usage = result.usage
    tl = result.timeline or {}
    t_s = list(tl.get("t", []))
    inst, util_num, serv = _timelines(tl, t_s)
    utilisation = {k: np.where(serv[k] > 0, util_num[k] / np.maximum(serv[k], 1e-12), 0.0) for k in inst}
    mean_util = {k: (float(util_num[k].sum() / serv[k].sum()) if serv[k].sum() > 0 else None) for k in inst}
    endpoints = _endpoints(usage, mean_util)
    waste, outs, ins, decisions = _scaling(result.scaling_events, usage)
    prices = [u.get("price_per_instance_hour") for u in usage if u.get("price_per_instance_hour")]
    total_series = np.sum(list(inst.values()), axis=0).tolist() if inst else []
    return {
        "key": key, "strategy": strategy or summ.get("strategy", ""), "scheduler": scheduler or summ.get("scheduler", ""),
        "duration_s": summ.get("duration_s"), "requests": summ.get("requests"), "completed": summ.get("completed"),
        "wall_s": summ.get("wall_s"), "requests_per_wall_s": summ.get("requests_per_wall_s"),
        "price_per_instance_hour": prices[0] if prices else None,
        "totals": _totals(summ, util_num, serv, outs, ins, decisions),
        "endpoints": [endpoints[k] for k in sorted(endpoints)], "tiers": _tiers(result),
        "waste_by_source": waste,
        "timeline": {"t_s": t_s, "instances": {k: v.round(3).tolist() for k, v in inst.items()},
                     "utilisation": {k: v.round(4).tolist() for k, v in utilisation.items()},
                     "instances_total": [round(x, 3) for x in total_series]},
        "decisions": decisions,
        "energy": energy_summary(summ, usage),
        "validity": summ.get("validity"),  # share beyond context limits / fitted ranges (simulations/engine/results/validity.py)
        **({"disaggregation": _disaggregation(summ)} if summ.get("disaggregation") else {}),
    }


def _disaggregation(summ: dict) -> dict:
    """Prefill/decode disaggregated endpoints (simulations/engine/fleet/disagg.py): KV transfers, their time, the wait on
    the decode side and the prefill side (queueing: arrival to prefill admission)."""
    d = summ["disaggregation"]
    q = summ.get("queueing") or {}
    return {"transfers": d["transfers"], "kv_gb_moved": d["kv_gb_moved"],
            "transfer_p50": _clean(d["transfer_s"]["p50"]), "transfer_p90": _clean(d["transfer_s"]["p90"]),
            "decode_wait_p50": _clean(d["decode_wait_s"]["p50"]), "decode_wait_p90": _clean(d["decode_wait_s"]["p90"]),
            "prefill_wait_p50": _clean(q.get("p50")), "prefill_wait_p90": _clean(q.get("p90"))}


def energy_summary(summ: dict, usage: list) -> dict:
    """Energy of one run (simulations/engine/results/energy.py): kWh (busy / idle / provisioning), its cost per region,
    and per (region, model); ``energy_kwh`` is None when a deployment has no power figures."""
    per_endpoint: dict[str, dict] = {}
    for u in usage:
        k = f"{u['region']}/{u['model']}"
        e = per_endpoint.setdefault(k, {"region": u["region"], "model": u["model"], "device_kind": u.get("device_kind"),
                                        "energy_kwh": 0.0, "energy_cost_usd": 0.0})
        if u.get("energy_kwh") is None or e["energy_kwh"] is None:
            e["energy_kwh"] = e["energy_cost_usd"] = None
        else:
            e["energy_kwh"] += u["energy_kwh"]
            e["energy_cost_usd"] += u["energy_cost_usd"]
    return {
        "energy_kwh": _clean(summ.get("energy_kwh")), "busy_kwh": _clean(summ.get("busy_kwh")),
        "idle_kwh": _clean(summ.get("idle_kwh")), "provisioning_kwh": _clean(summ.get("provisioning_kwh")),
        "energy_cost_usd": _clean(summ.get("energy_cost_usd")), "pue": summ.get("energy_pue"),
        "by_region": summ.get("energy_by_region") or {}, "missing_power": summ.get("energy_missing_power") or [],
        "endpoints": [per_endpoint[k] for k in sorted(per_endpoint)],
    }
