"""Turn a finished Simulator into a typed, JSON-able SimulationResult (numpy at this boundary only)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from simulations.engine.core.entities import RELEASED
from simulations.engine.results.slo import rich_slo, rich_slo_wanted
from simulations.engine.scenario.config import TIERS

PCTS = (50, 90, 95, 99)


def _pcts(x: np.ndarray) -> dict:
    """Percentiles and mean of ``x``, a scratch array (a selection's copy): reordered in place, not copied again."""
    if x.size == 0:
        return {f"p{p}": None for p in PCTS} | {"mean": None}
    mean = float(x.mean())  # before the partition reorders x (a sum's rounding depends on the order)
    q = np.percentile(x, PCTS, overwrite_input=True)
    return {f"p{p}": float(v) for p, v in zip(PCTS, q, strict=True)} | {"mean": mean}


def _hist(x: np.ndarray, lo=1e-3, hi=1e5, bins=64) -> dict:
    """Counts of ``x`` (clipped to [lo, hi]) in log-spaced bins: ``numpy.histogram``'s counts (bins closed on the
    left, the last closed on both sides, values outside the edges left out), each value placed by a binary search
    of the edges instead of numpy's sort of the values."""
    edges = np.logspace(math.log10(lo), math.log10(hi), bins + 1)
    v = np.clip(x, lo, hi)
    j = np.searchsorted(edges, v, side="right") - 1
    j[v == edges[-1]] = bins - 1
    counts = np.bincount(j[(j >= 0) & (j < bins)], minlength=bins)
    return {"edges": edges.tolist(), "counts": counts.tolist()}


@dataclass
class SimulationResult:
    summary: dict
    tiers: dict
    usage: list
    timeline: dict
    scaling_events: list
    histograms: dict
    requests: dict = field(default_factory=dict, repr=False)  # per-request numpy arrays (not in to_dict)
    instances: list = field(default_factory=list, repr=False)  # life cycle of every instance
    slo: dict | None = None  # the richer SLO block (engine/results/slo.py), only when the scenario sets such targets

    def to_dict(self, *, max_events: int = 5000) -> dict:
        events = self.scaling_events
        return {
            "summary": self.summary, "tiers": self.tiers, "usage": self.usage, "timeline": self.timeline,
            "scaling_events": events[:max_events], "scaling_events_total": len(events),
            "histograms": self.histograms,
            **({"slo": self.slo} if self.slo is not None else {}),
        }

    def latency(self, metric: str = "ttft", tier: str | None = None) -> dict:
        return (self.tiers[tier] if tier else self.summary)[metric]


def _engine_build() -> str:
    """Which build of the loop ran: "compiled" (Cython) or "python" (see accel.py)."""
    from simulations.engine.accel import BUILD

    return BUILD["kind"]


def slo_met(sim, tier, arr, deadline, done, ttft, e2e, t_done) -> np.ndarray:
    """Which requests met their SLO, per tier (no per-request SLO arrays): done, TTFT within the tier's target, and
    finished by the request's deadline (else within the tier's E2E target). The one rule of the per-request result
    and of the streamed result (streamacc.py)."""
    met = done.copy()
    for i, name in enumerate(TIERS):
        sel = tier == i
        if not sel.any():
            continue
        ok = ttft[sel] <= sim.ttft_slo[i]
        e2e_target = float(sim.scenario.slo.e2e_s.get(name, math.inf))
        if deadline is not None:
            dl = deadline[sel]
            limit = np.where(np.isnan(dl), arr[sel] + e2e_target, dl)
            ok &= t_done[sel] <= limit
        elif math.isfinite(e2e_target):
            ok &= e2e[sel] <= e2e_target
        met[sel] &= ok
    return met


@dataclass
class _PerRequest:
    """The per-request arrays the result is made of (derived in place to keep the peak memory low)."""

    t_first: np.ndarray
    t_done: np.ndarray
    dropped: np.ndarray
    done: np.ndarray
    unfinished: np.ndarray
    ttft: np.ndarray
    e2e: np.ndarray
    queueing: np.ndarray
    tbt: np.ndarray
    tbt_max: np.ndarray
    met: np.ndarray


def _per_request(sim, w) -> _PerRequest:
    arr = w.arrival_s
    t_first = np.asarray(sim.state.t_first, dtype=np.float64)
    t_done = np.asarray(sim.state.t_done, dtype=np.float64)
    t_admit = np.asarray(sim.state.t_admit, dtype=np.float64)
    out = w.output_tokens
    dropped = np.zeros(len(w), dtype=bool)
    if sim.state.dropped:
        dropped[np.fromiter(sim.state.dropped.keys(), dtype=np.int64)] = True
    done = ~np.isnan(t_done) & ~dropped
    unfinished = ~done & ~dropped
    # derived per-request arrays, computed in place to keep the peak memory low (10M requests: 80 MB each)
    ttft = np.subtract(t_first, arr)
    e2e = np.subtract(t_done, arr)
    queueing = np.subtract(t_admit, arr)
    del t_admit
    sim.state.t_admit = None
    multi = out > 1
    tbt = np.subtract(t_done, t_first)
    denom = out - 1
    np.maximum(denom, 1, out=denom)
    with np.errstate(invalid="ignore", divide="ignore"):
        np.divide(tbt, denom, out=tbt)
    del denom
    tbt[~multi] = np.nan
    tbt_max = np.array(sim.state.tbt_max, dtype=np.float64)
    tbt_max[~(done & multi)] = np.nan
    met = slo_met(sim, w.tier, arr, w.deadline_s, done, ttft, e2e, t_done)
    return _PerRequest(t_first, t_done, dropped, done, unfinished, ttft, e2e, queueing, tbt, tbt_max, met)


def _block(sim, r: _PerRequest, multi: np.ndarray, mask: np.ndarray, pct: float | None = None) -> dict:
    """Counts, drop reasons, latency percentiles and SLO attainment of the requests in ``mask`` (``multi``: more
    than one output token); with ``pct``, also that TTFT percentile of the completed ones (``"ttft_pct"``, inf
    when none completed). The block's requests are taken once by index (ascending: every selection keeps the
    requests' order, so the means sum the same values in the same order as a mask over the whole run)."""
    idx = np.flatnonzero(mask)
    d = r.done[idx]
    total = len(idx)
    reasons: dict[str, int] = {}
    for rid, why in sim.state.dropped.items():
        if mask[rid]:
            reasons[why] = reasons.get(why, 0) + 1
    unfinished = int(np.count_nonzero(r.unfinished[idx]))
    if unfinished:
        reasons["unfinished"] = unfinished
    tt = r.ttft[idx][d]
    q = None
    if pct is not None:
        q = math.inf if not tt.size else (float(np.percentile(tt, pct)) if pct not in PCTS else None)
    dm = d & multi[idx]
    completed = int(np.count_nonzero(d))
    b = {
        "requests": total, "completed": completed, "dropped": total - completed, "drop_reasons": reasons,
        "ttft": _pcts(tt), "e2e": _pcts(r.e2e[idx][d]), "queueing": _pcts(r.queueing[idx][d]),
        "tbt_mean": _pcts(r.tbt[idx][dm]), "tbt_max": _pcts(r.tbt_max[idx][dm]),
        "slo_attainment": float(r.met[idx].sum() / total) if total else None,
        "preempted_requests": int((np.asarray(sim.state.preempted)[idx] > 0).sum()),
    }
    if pct is not None:  # a percentile _pcts computed is the same number (same interpolation of the same values)
        b["ttft_pct"] = q if q is not None else b["ttft"][f"p{int(pct)}"]
    return b


def _tiers(sim, w, r: _PerRequest) -> dict[str, dict]:
    tiers = {}
    multi = w.output_tokens > 1
    for i, name in enumerate(TIERS):
        mask = w.tier == i
        if mask.any():
            pct = sim.scenario.slo.percentile
            b = _block(sim, r, multi, mask, pct)
            b["slo_ttft_s"] = sim.ttft_slo[i]
            q = b.pop("ttft_pct")
            b[f"ttft_p{int(pct)}_meets_slo"] = bool(q <= sim.ttft_slo[i])
            tiers[name] = b
    return tiers


def _summary(sim, w, r: _PerRequest, end: float, tot: dict, wall_s: float) -> dict:
    done, out = r.done, w.output_tokens
    dm = done & (out > 1)
    sim.lifecycle.spot_flush(end)  # spot pool occupancy up to the end
    spot_hours = {name: s / 3600 for name, s in zip(sim.region_names, sim.lifecycle.spot_seconds, strict=False)}
    summary = {
        "requests": len(w), "completed": int(done.sum()), "dropped": int((~done).sum()),
        "duration_s": end, "ttft": _pcts(r.ttft[done]), "e2e": _pcts(r.e2e[done]), "queueing": _pcts(r.queueing[done]),
        "tbt_mean": _pcts(r.tbt[dm]), "tbt_max": _pcts(r.tbt_max[dm]),
        "slo_attainment": float(r.met.mean()) if len(w) else None,
        **tot, "scaling_waste_gpu_hours": tot["provisioning_gpu_hours"], **_floors(sim, end, tot["gpu_hours"]),
        "spot_instance_hours": spot_hours,
        "scale_outs": sum(1 for e in sim.scaling_events if e["action"] == "scale_out"),
        "scale_ins": sum(1 for e in sim.scaling_events if e["action"] == "scale_in"),
        "preemptions": int(np.sum(sim.state.preempted)),
        "mode": sim.engine.mode, "engine_build": _engine_build(), "events": sim.state.events, "wall_s": wall_s,
        "requests_per_wall_s": len(w) / wall_s if wall_s > 0 else None,
        "strategy": sim.scenario.policy.autoscaler, "scheduler": sim.scenario.policy.scheduler,
        "seed": sim.engine.seed,
    }
    summary.update(preemption_summary(sim))  # per-request preemptions and context-limit actions
    summary.update(prefix_cache_summary(sim))  # only when a deployment caches prefixes
    if sim._pd is not None:  # prefill/decode disaggregation: KV transfers and the decode-side wait
        summary["disaggregation"] = sim._pd.summary(done)
    if sim.control.migrations():  # live migrations (control.migrate_running), only when a policy migrated
        summary["migrations"] = sim.control.migrations()
    return summary


def build_result(sim, wall_s: float) -> SimulationResult:
    sim.free_run_state()
    w = sim.workload
    arr = w.arrival_s
    r = _per_request(sim, w)
    tiers = _tiers(sim, w, r)
    end = max(sim.state.t_work, float(arr[-1]) if len(arr) else 0.0)
    usage, tot = usage_block(sim, end, nominal_provisioning(sim, sim.scaling_events))
    summary = _summary(sim, w, r, end, tot, wall_s)
    done, ttft, e2e = r.done, r.ttft, r.e2e
    timeline = _timeline(sim, done, end)
    hist = {}
    done_idx = np.flatnonzero(done)
    done_tier = w.tier[done_idx]
    for i, name in enumerate(TIERS):
        if (w.tier == i).any():
            sel = done_idx[done_tier == i]
            hist[name] = {"ttft": _hist(ttft[sel]), "e2e": _hist(e2e[sel])}
    requests = {"arrival_s": arr, "ttft_s": ttft, "e2e_s": e2e, "queueing_s": r.queueing, "tbt_mean_s": r.tbt,
                "tbt_max_s": r.tbt_max, "completed": done, "endpoint": np.asarray(sim.state.served_ep),
                "instance": np.asarray(sim.state.served_inst), "first_token_s": r.t_first, "done_s": r.t_done,
                "preemptions": np.asarray(sim.state.preempted), "tier": w.tier}
    if sim.instance_engine.pfx_on:
        requests["cached_tokens"] = np.asarray(sim.instance_engine.pfx_hit)
    slo_block = None
    if rich_slo_wanted(sim):  # richer SLOs and metrics; default outputs unchanged
        slo_block, extra = rich_slo(sim, ttft=ttft, e2e=e2e, itl_mean=r.tbt, itl_max=r.tbt_max, done=done,
                                    dropped=r.dropped)
        requests.update(extra)
    instances = [{"iid": i.iid, "endpoint": i.endpoint.name, "source": i.source, "t_requested": i.t_requested,
                  "t_ready": i.t_ready, "t_released": None if i.t_released != i.t_released else i.t_released}
                 for i in sim.instances]
    return SimulationResult(summary=summary, tiers=tiers, usage=usage, timeline=timeline,
                            scaling_events=sim.scaling_events, histograms=hist, requests=requests,
                            instances=instances, slo=slo_block)


def _usage_key(ep) -> tuple:
    """(region, model), and the pool for the two pools of a disaggregated endpoint (own GPUs and prices)."""
    return (ep.region, ep.model, ep.pool) if ep.pool in ("prefill", "decode") else (ep.region, ep.model)


def usage_block(sim, end: float, nominal: dict | None = None) -> tuple[list, dict]:
    """Per (region, model), per pool of a disaggregated endpoint: instance-hours (provisioning, busy, idle), GPU-hours and cost of every instance the
    run used up to ``end``; and their totals. ``nominal``: (region, model) -> nominal provisioning delays
    (``nominal_provisioning``). Also used by the streamed replay (stream.py) at its end."""
    usage_map: dict = {}
    for inst in sim.instances:
        ep = inst.endpoint
        key = _usage_key(ep)
        u = usage_map.setdefault(key, {"region": ep.region, "model": ep.model, "deployment": ep.spec.name,
                                        **({"pool": ep.pool} if len(key) > 2 else {}),
                                        "gpus_per_instance": ep.spec.gpus_per_instance,
                                        "price_per_instance_hour": ep.spec.on_demand_price,
                                        "provisioning_s": 0.0, "busy_s": 0.0, "idle_s": 0.0, "instances_used": 0})
        stop = inst.t_released if inst.state == RELEASED else end
        ready = min(inst.t_ready, stop)
        u["provisioning_s"] += max(0.0, ready - inst.t_requested)
        window = max(0.0, stop - ready)
        busy = min(inst.busy_s, window)
        u["busy_s"] += busy
        u["idle_s"] += window - busy
        u["instances_used"] += 1
    for key, delays in (nominal or {}).items():
        if key in usage_map:
            for s in delays:  # one by one, in event order (the same float sums as ever)
                usage_map[key]["provisioning_s"] += s
    usage = []
    tot = {"instance_hours": 0.0, "gpu_hours": 0.0, "serving_gpu_hours": 0.0, "idle_gpu_hours": 0.0,
           "provisioning_gpu_hours": 0.0, "cost_usd": 0.0}
    for key in sorted(usage_map):
        u = usage_map.pop(key)
        g = u["gpus_per_instance"]
        prov_h, busy_h, idle_h = u.pop("provisioning_s") / 3600, u.pop("busy_s") / 3600, u.pop("idle_s") / 3600
        inst_h = prov_h + busy_h + idle_h
        u.update({
            "instance_hours": inst_h, "serving_instance_hours": busy_h, "idle_instance_hours": idle_h,
            "provisioning_instance_hours": prov_h, "gpu_hours": inst_h * g, "serving_gpu_hours": busy_h * g,
            "idle_gpu_hours": idle_h * g, "provisioning_gpu_hours": prov_h * g,
            "cost_usd": inst_h * u["price_per_instance_hour"],
        })
        usage.append(u)
        for k in tot:
            tot[k] += u[k]

    return usage, tot


def prefix_cache_summary(sim) -> dict:
    """``prefix_cache``: prompt tokens looked up in and served from the prefix caches (every admission, recomputed
    ones included, as vLLM counts its queries and hits) and their ratio; {} when no deployment caches prefixes."""
    if not sim.instance_engine.pfx_on:
        return {}
    q, h = int(sim.instance_engine.pfx_query_tok), int(sim.instance_engine.pfx_hit_tok)
    return {"prefix_cache": {"hit_rate": h / q if q else 0.0, "hit_tokens": h, "queried_tokens": q,
                             "requests_with_hits": int((np.asarray(sim.instance_engine.pfx_hit) > 0).sum())}}


def preemption_summary(sim) -> dict:
    """Preemptions per request: the largest count any single request suffered, the 99th percentile over
    all requests, how many requests were preempted at least once; and what ``engine.over_context`` did
    (limits.py)."""
    p = np.asarray(sim.state.preempted)
    return {
        "preemptions_per_request": {
            "max": int(p.max()) if p.size else 0,
            "p99": float(np.percentile(p, 99)) if p.size else 0.0,
            "requests_preempted": int((p > 0).sum()),
        },
        "context_limits": getattr(sim, "context_limits", None),
    }


def nominal_provisioning(sim, events) -> dict:
    """With ``engine.instant_provisioning`` instances serve at once; as in the SageServe authors' separate waste
    figure (not their Fig. 11 instance-hours), the nominal start-up delay of every scale-out (logged on its event) is
    counted afterwards as provisioning time:
    (region, model) -> the delays (seconds) of its scale-outs among ``events``, in event order."""
    out: dict = {}
    if not sim.engine.instant_provisioning:
        return out
    by_name = {ep.name: _usage_key(ep) for ep in sim.endpoints}
    for e in events:
        if e["action"] == "scale_out" and e["endpoint"] in by_name:
            key = by_name[e["endpoint"]]
            out.setdefault(key, []).append(float(e.get("delay_s") or 0.0))
    return out


def _floors(sim, end: float, gpu_hours: float) -> dict:
    """GPU-hours the endpoints' minimum instance counts cost over the run (identical for every strategy), and
    what the strategy spent above them: where a saving can come from."""
    floor = sum(ep.min_instances * ep.spec.gpus_per_instance for ep in sim.endpoints) * end / 3600.0
    return {"floor_gpu_hours": floor, "gpu_hours_above_floor": gpu_hours - floor}


def _timeline(sim, done, end) -> dict:
    step = sim.engine.timeline_step_s or 60.0
    names = [ep.name for ep in sim.endpoints]
    if not sim.timeline:
        return {"step_s": step, "endpoints": names, "t": [], "series": {}}
    tl = np.asarray(sim.timeline, dtype=np.float64)
    ts = np.unique(tl[:, 0])
    nb = len(ts)
    idx_t = np.searchsorted(ts, tl[:, 0])
    series = {}
    for col, name in ((2, "serving"), (3, "provisioning"), (4, "draining"), (5, "utilisation"), (6, "queue"),
                      (7, "running")):
        m = np.zeros((len(names), nb))
        m[tl[:, 1].astype(int), idx_t] = tl[:, col]
        series[name] = m.round(4).tolist()
    w = sim.workload
    ep_of = np.asarray(sim.state.served_ep)
    ok = ep_of >= 0
    flat = np.floor_divide(w.arrival_s[ok], step).astype(np.int64)
    np.minimum(flat, nb - 1, out=flat)
    flat += ep_of[ok].astype(np.int64) * nb
    rps = np.bincount(flat, minlength=len(names) * nb).reshape(len(names), nb) / step
    tps = np.bincount(flat, weights=(w.input_tokens + w.output_tokens)[ok],
                      minlength=len(names) * nb).reshape(len(names), nb) / step
    series["rps"] = rps.round(4).tolist()
    series["tps"] = tps.round(2).tolist()
    return {"step_s": step, "endpoints": names, "t": ts.tolist(), "series": series}
