"""Metrics of a shared-node run (spec 5.1): SLO-met requests, nodes in use, resizing share, migrations, energy.

- SLO-met: TTFT <= TTFT_SLO(L) (+ the cold-start grace) and average TPOT <= 0.25 s; dropped requests miss.
- Per-token deadline compliance: share of produced tokens that met deadline_k = ST + TTFT_SLO + (k-1) TPOT_SLO.
- Average nodes in use: time with >= 1 instance on the node (loading and keep-alive included) / run length.
- Resizing share: seconds of KV resizes / instance lifetimes (Fig. 31's "lifetime spent scaling"); also over GPU
  instances only (``resizing_share_gpu``), the only ones that resize.
- Misses by cause (``slo_misses``): dropped, unfinished, TTFT late, or only the average TPOT too slow.
- Migration rate: migrated (evicted or preempted) requests / requests; underestimation_eviction_rate counts only
  the evictions for lack of KV memory (Fig. 31's "migration due to underestimation").
- Energy: busy seconds at busy power plus in-use idle seconds at idle power (nodes not in use are off).
Django-free.
"""

from __future__ import annotations

import numpy as np


def nodes_timeline(events, length: float, points: int = 300) -> dict:
    """CPU and GPU nodes in use (hosting >= 1 instance) sampled at ``points`` instants over the run: the step
    function of the executor's node events, read at each sample time (the value just after it)."""
    step = max(length / points, 1e-9)
    ts = [round(i * step, 3) for i in range(points + 1)]
    counts = {"cpu": 0, "gpu": 0}
    out = {"t_s": ts, "cpu": [], "gpu": []}
    ev = sorted(events, key=lambda e: e[0])
    j = 0
    for t in ts:
        while j < len(ev) and ev[j][0] <= t:
            counts[ev[j][1]] += ev[j][2]
            j += 1
        out["cpu"].append(counts["cpu"])
        out["gpu"].append(counts["gpu"])
    return out


def misses(reqs) -> dict:
    """Why requests missed the SLO: dropped, unfinished, TTFT too late, or TTFT met but the average TPOT too slow
    (``tpot_only``; of those, ``tpot_only_tokens_on_time`` had every token by its Eq. 1 deadline). ``migrated`` counts
    the missed requests that were moved at least once (they are also in one of the other groups)."""
    out = {"dropped": 0, "unfinished": 0, "ttft": 0, "tpot_only": 0, "tpot_only_tokens_on_time": 0, "migrated": 0}
    for r in reqs:
        if r.slo_met():
            continue
        out["migrated"] += bool(r.migrations)
        if r.dropped:
            out["dropped"] += 1
        elif r.done_at is None or r.first_token_at is None:
            out["unfinished"] += 1
        elif r.first_token_at - r.arrival > r.ttft_slo + r.grace + 1e-9:
            out["ttft"] += 1
        else:
            out["tpot_only"] += 1
            out["tpot_only_tokens_on_time"] += r.late_tokens == 0
    return out


def summarize(ex) -> dict:
    reqs = ex.requests
    n = len(reqs)
    met = sum(1 for r in reqs if r.slo_met())
    length = max(ex.now, max((r.arrival for r in reqs), default=0.0), 1e-9)
    kinds = {}
    energy_j = 0.0
    for node in ex.nodes:
        k = kinds.setdefault(node.kind, {"nodes": 0, "in_use_s": 0.0, "busy_s": 0.0})
        k["nodes"] += 1
        k["in_use_s"] += node.in_use_time
        k["busy_s"] += node.busy_time
        energy_j += node.busy_time * node.busy_w + max(0.0, node.in_use_time - node.busy_time) * node.idle_w
    lifetimes = sum((i.reclaimed_at or ex.now) - i.created for i in ex.all_instances)
    resize = sum(i.resize_time for i in ex.all_instances)
    gpu_insts = [i for i in ex.all_instances if i.node.kind == "gpu"]
    gpu_lifetimes = sum((i.reclaimed_at or ex.now) - i.created for i in gpu_insts)
    ttft = np.array([r.first_token_at - r.arrival for r in reqs if r.first_token_at is not None])
    on_time = sum(r.on_time_tokens for r in reqs)
    late = sum(r.late_tokens for r in reqs)
    c = ex.counters
    return {
        "system": ex.cfg.system,
        "requests": n,
        "slo_met": met,
        "slo_attainment": met / n if n else None,
        "slo_attainment_per_token": sum(1 for r in reqs if r.slo_met_per_token()) / n if n else None,
        "dropped": sum(1 for r in reqs if r.dropped),
        "completed": sum(1 for r in reqs if r.done_at is not None),
        "avg_cpu_nodes": kinds.get("cpu", {}).get("in_use_s", 0.0) / length,
        "avg_gpu_nodes": kinds.get("gpu", {}).get("in_use_s", 0.0) / length,
        "run_length_s": length,
        "resizing_share": resize / lifetimes if lifetimes else 0.0,
        # GPU instances only: CPU instances hold the artefact's fixed KV pool and never resize (Fig. 17 is on GPU)
        "resizing_share_gpu": sum(i.resize_time for i in gpu_insts) / gpu_lifetimes if gpu_lifetimes else 0.0,
        "resizes": c["resizes"],
        "resize_seconds": resize,  # the resizing share's numerator and denominator (lifetimes of all instances)
        "instance_lifetime_s": lifetimes,
        "slo_misses": misses(reqs),
        "migration_rate": sum(1 for r in reqs if r.migrations) / n if n else 0.0,
        "underestimation_eviction_rate": c["evictions"] / n if n else 0.0,
        "preempted_instances": c["preemptions"],
        "evictions": c["evictions"],
        "per_token_deadline_compliance": on_time / (on_time + late) if on_time + late else None,
        "ttft_p50_s": float(np.percentile(ttft, 50)) if len(ttft) else None,
        "ttft_p99_s": float(np.percentile(ttft, 99)) if len(ttft) else None,
        "avg_decode_batch": c["decode_batch_sum"] / c["decode_iterations"] if c["decode_iterations"] else 0.0,
        "instances_created": len(ex.all_instances),
        "iterations": c["iterations"],
        "energy_kwh": energy_j / 3.6e6,
        "oom_checks": c["oom_checks"],
        "no_oom": True,  # Node.check() raised OutOfMemory otherwise; checked after every memory change
        "nodes_timeline": nodes_timeline(ex.node_events, length),
        "config": ex.cfg.to_dict(),
    }
