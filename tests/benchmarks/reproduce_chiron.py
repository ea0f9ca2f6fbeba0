"""Reproduce Chiron's headline figures beside the paper's; optionally write docs/reproduction_chiron.md.

    python tests/benchmarks/reproduce_chiron.py --help
    python tests/benchmarks/reproduce_chiron.py --only fig19 --scale 0.1        # minutes at 1/10 scale
    python tests/benchmarks/reproduce_chiron.py --scale 1 --fresh --write-doc   # everything full size (~30 min)
    python tests/benchmarks/reproduce_chiron.py --load docs/results/chiron.json --write-doc   # the document only

Cases (all on the compiled engine, scenarios from simulations/engine/policies/chiron/scenarios.py):

- ``fig19``: Gamma 30 req/s CV 4 interactive + 1M batch requests at t = 5 min, 50-instance cap, 30 s load,
  80 simulated minutes; Chiron vs Llumnix-like (untuned) with live migration of running requests (Llumnix's
  default, the primary baseline), with our earlier queued-request rebalancing, and with no migration.
  ``--scale`` multiplies the rate, the dump and the cap.
- ``fig19x`` (the like-for-like accounting; rules fixed before its first run): the same Fig. 19 scenario run
  until the dump is done (at most ``FIG19X_MAX_H`` hours; interactive arrivals still stop at 80 min), GPU-hours
  counted over [0, 65 min] (the paper's deadline) and over [0, the strategy's own last batch completion] (the
  "at completion" figure; a run that has not finished by the limit is reported as not finished, with the share
  done, never as a completion figure). Baselines: Llumnix-like with each migration model (live, queued, none) in
  three configurations: as in ``fig19`` (floor 1, starts at 15, Llumnix's default knobs); idling at the paper's
  size (A.2: "both average about 15 GPUs"): endpoint floor 15, default knobs; and the same floor with the knobs the
  W_B live-migration sweep selected (``FIG19X_TUNED``, copied from the W_B results before this case first ran).
  Chiron's saving is reported per configuration and accounting window as a band (min, max) over the three
  migration models. Nothing in these runs is changed after seeing a number.
- ``estimator``: R^2 of the waiting-time estimate (eq. 1) against the actual wait of each queued batch request,
  at the snapshot whose queue is closest to 2,000 requests (2 mixed instances, no batch autoscaling).
- ``batchsize``: converged local-autoscaler batch limit and running batch, one instance saturated with interactive
  requests (200 ms ITL SLO), 8B vs 70B (``--tp``, default 4).
- ``wb``: 50 req/s interactive (x scale) + batch queues of growing size: the largest queue served within SLO
  (>= 99 % of both classes) by Chiron and by the best point of a Llumnix-like knob sweep ("tuned", with the
  queued-request rebalancing; ``--wb-live-queues`` adds the same sweep with live migration at a few sizes).
  Rules of the like-for-like W_B run (fixed before it ran; nothing changed after seeing a number): the scenario
  as before (50 req/s Poisson interactive for 65 min, the queue dumped at 5 min, 10 initial instances, cap 50,
  70 simulated minutes); queues 10k, 30k, 100k, 300k, 700k, 1M; Chiron as it is now; Llumnix-like over the
  same 8-point grid with live migration of running requests (Llumnix's default, the primary baseline) and with
  the queued-request rebalancing, both at every queue size; "tuned" per migration model by the rule in ``wb``
  (largest queue within SLO, then mean attainment of the worse class, then GPU-hours); the headline is the
  paper's Fig. 10 metric, the largest queue within SLO, Chiron against Llumnix-tuned (live), with the queued
  sweep beside it; each point also records the share of the queue finished and the batch output tokens
  completed per GPU-hour (the paper's per-instance throughput claim). ``--wb-prefetch`` runs the points
  queue size first (every configuration at 10k, then 30k, ...), so a run cut short leaves whole queue sizes.

Results are cached in var/reproduce_chiron/<case>.json (in the checkout), W_B per point (``--fresh`` to recompute);
``--load docs/results/chiron.json --seed-cache`` writes the saved runs back into that cache (as they were), so a
later ``--wb-prefetch`` runs only the points still missing.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from simulations.engine.policies.chiron import scenarios as S  # noqa: E402
from simulations.engine.results.metrics import build_result  # noqa: E402
from simulations.engine.simulator.loop import Simulator  # noqa: E402
from simulations.engine.simulator.scenario import build_workload, parse_scenario  # noqa: E402

CACHE = ROOT / "var" / "reproduce_chiron"
DOC = ROOT / "docs" / "reproduction_chiron.md"
RESULTS = ROOT / "docs" / "results" / "chiron.json"


def run(d: dict):
    sc = parse_scenario(d)
    t0 = time.process_time()
    w = build_workload(sc)
    sim = Simulator(sc, w)
    sim.run()
    res = build_result(sim, time.process_time() - t0)
    return sim, res, time.process_time() - t0


def _tier(res, name):
    return (res.to_dict().get("slo") or {}).get("tiers", {}).get(name, {})


def _instances_over_time(res):
    tl = res.timeline
    return tl


def fig19_case(name: str, scale: float, dump: int | None = None, **params) -> dict:
    """One Fig. 19 run; ``dump`` overrides the batch dump's size (the reduced-scale regression test uses it so
    that Chiron's batch autoscaler has to act)."""
    d = S.fig19(name, scale, **params)
    if dump is not None:
        next(p for p in d["workload"]["synthetic"]["parts"] if p["kind"] == "batch")["requests"] = int(dump)
    sim, res, cpu = run(d)
    r = res.requests
    nb = r["tier"] == 2
    done = r["done_s"]
    ev = sim.scaling_events
    # instances active over time from the scaling events (scale_out at request time, release on scale_in)
    n0 = d["fleet"]["endpoints"][0]["initial"]
    steps = sorted((e["t"], +1 if e["action"] == "scale_out" else -1) for e in ev
                   if e["action"] in ("scale_out", "scale_in"))
    n, peak, t_peak = n0, n0, 0.0
    for t, dv in steps:
        n += dv
        if n > peak:
            peak, t_peak = n, t
    batch_steps = [e[3] for e in getattr(sim.autoscaler, "events", []) if e[1] == "add" and e[2] == "batch"]
    t99 = float(np.sort(done[nb])[int(math.ceil(0.99 * nb.sum())) - 1]) if np.isfinite(done[nb]).mean() >= 0.99 else None
    out = {
        "strategy": name, "scale": scale, "requests": int(len(done)), "cpu_s": round(cpu, 1),
        "gpu_hours": round(res.summary["gpu_hours"], 2),
        "batch_done_by_65min": float(np.mean(done[nb] <= 3900)),
        "batch_done_by_71.5min": float(np.mean(done[nb] <= 4290)),
        "batch_done_by_80min": float(np.mean(done[nb] <= 4800)),
        "batch_99pct_done_at_min": None if t99 is None else round(t99 / 60, 1),
        "batch_attainment": _tier(res, "NIW").get("attainment"),
        "batch_ttft_attainment": _tier(res, "NIW").get("ttft_attainment"),
        "batch_itl_attainment": _tier(res, "NIW").get("itl_attainment"),
        "interactive_attainment": _tier(res, "IW-F").get("attainment"),
        "interactive_ttft_attainment": _tier(res, "IW-F").get("ttft_attainment"),
        "interactive_itl_attainment": _tier(res, "IW-F").get("itl_attainment"),
        "peak_instances": peak, "peak_at_min": round(t_peak / 60, 1),
        "scale_outs": sum(1 for e in ev if e["action"] == "scale_out"),
        "scale_ins": sum(1 for e in ev if e["action"] == "scale_in"),
        "largest_batch_step": max(batch_steps) if batch_steps else 0,
        "batch_steps": [(round(e[0] / 60, 1), e[3]) for e in getattr(sim.autoscaler, "events", [])
                        if e[1] == "add" and e[2] == "batch"][:20],
        "preemptions": int(np.asarray(r["preemptions"]).sum()),
        "batch_unfinished_at_80min": int((~(done[nb] <= 4800)).sum()),
        "live_migrations": int(sim.control.migrations()),
        "queued_moved": int(getattr(sim.autoscaler, "migrated", 0)),
    }
    out.update(fig19_detail(res, steps, n0))
    return out


def fig19_detail(res, steps, n0: int) -> dict:
    """Figures the document's explanations quote: the fleet before the dump, the interactive misses by arrival
    time, the running requests and fleet size over the run (from the 30 s timeline)."""
    r = res.requests
    n5, ins5 = n0, 0
    for t, dv in steps:
        if t <= 300.0:
            n5 += dv
            ins5 += dv < 0
    iw = r["tier"] == 0
    met = np.asarray(r["slo_met"], dtype=bool)  # the engine's per-request verdict (the attainment's)
    arr = np.asarray(r["arrival_s"])
    miss = iw & ~met
    tl = res.timeline
    t = np.asarray(tl["t"], dtype=float)
    ser = tl["series"]
    fleet = np.asarray(ser["serving"]).sum(0) + np.asarray(ser["provisioning"]).sum(0)
    running = np.asarray(ser["running"]).sum(0)
    late = (t >= 2400) & (t < 4800)
    return {"instances_at_5min": int(n5), "scale_ins_before_5min": int(ins5),
            "interactive_misses": int(miss.sum()), "interactive_requests": int(iw.sum()),
            "interactive_misses_by_arrival": {"0-5 min": int((miss & (arr < 300)).sum()),
                                              "5-10 min": int((miss & (arr >= 300) & (arr < 600)).sum()),
                                              "10-80 min": int((miss & (arr >= 600)).sum())},
            "running_mean_40_80min": float(running[late].mean()) if late.any() else None,
            "fleet_mean": float(fleet.mean()) if len(fleet) else None,
            "fleet_min": int(fleet.min()) if len(fleet) else None, "fleet_max": int(fleet.max()) if len(fleet) else None,
            "live_migrations_per_s_5_80min": float(sim_migration_rate(res))}


def sim_migration_rate(res) -> float:
    """Live migrations per second between the dump (5 min) and the end of the run (80 min)."""
    return float(res.summary.get("migrations", 0)) / (4800.0 - 300.0)


FIG19X_MAX_H = 6.0
# the W_B live-migration sweep's tuned point (docs: "W_B, Llumnix-like with live migration"), fixed before fig19x ran
FIG19X_TUNED = {"scale_up_below": 50.0, "scale_down_above": 200.0, "max_batch": 1024}
FIG19X_CONFIGS = {"default": ({}, None), "floor15": ({}, 15), "floor15_tuned": (FIG19X_TUNED, 15)}


def gpu_hours_until(sim, t_end: float) -> float:
    """GPU-hours of every instance the run requested, billed from request to release (or ``t_end``), cut at
    ``t_end``: the summary's ``gpu_hours`` when ``t_end`` is the run's end (no nominal provisioning here)."""
    total = 0.0
    for inst in sim.instances:
        released = inst.t_released == inst.t_released  # NaN while the instance is held
        stop = min(inst.t_released, t_end) if released else t_end
        total += max(0.0, stop - inst.t_requested) * inst.endpoint.spec.gpus_per_instance
    return total / 3600.0


def fig19x_case(name: str, scale: float, floor: int | None = None, **params) -> dict:
    d = S.fig19(name, scale, **params)
    d["engine"]["max_time_s"] = FIG19X_MAX_H * 3600.0
    if floor is not None:
        ep = d["fleet"]["endpoints"][0]
        ep["min"] = max(1, round(floor * scale))
        ep["initial"] = max(ep["initial"], ep["min"])
    sim, res, cpu = run(d)
    r = res.requests
    nb = r["tier"] == 2
    done = np.asarray(r["done_s"], dtype=float)[nb]
    finished = bool(np.isfinite(done).all())
    t_done = float(done.max()) if finished else None
    t99 = float(np.sort(done)[int(math.ceil(0.99 * len(done))) - 1]) if np.isfinite(done).mean() >= 0.99 else None
    return {"strategy": name, "scale": scale, "floor": floor, "params": params, "cpu_s": round(cpu, 1),
            "max_h": FIG19X_MAX_H, "gpu_hours_65min": gpu_hours_until(sim, 3900.0),
            "gpu_hours_80min": gpu_hours_until(sim, 4800.0),
            "gpu_hours_run": float(res.summary["gpu_hours"]),
            "gpu_hours_to_end_check": gpu_hours_until(sim, float(sim.now)),
            "dump_finished": finished, "dump_done_at_min": None if t_done is None else round(t_done / 60, 2),
            "dump_99pct_at_min": None if t99 is None else round(t99 / 60, 2),
            "gpu_hours_at_completion": None if t_done is None else gpu_hours_until(sim, t_done),
            "batch_done_share": float(np.isfinite(done).mean()),
            "batch_done_by_65min": float(np.mean(done <= 3900)),
            "interactive_attainment": _tier(res, "IW-F").get("attainment")}


def _fig19x_name(cfg: str, knobs: dict, mig: str, scale: float) -> str:
    """Cache name of one Fig. 19 like-for-like Llumnix-like run; a configuration with knobs carries them."""
    return f"fig19x_{cfg}{'_' + _tag(knobs) if knobs else ''}_llumnix-{mig}_x{scale:g}"


def fig19x(scale: float, fresh: bool) -> dict:
    out = {"chiron": cached(f"fig19x_chiron_x{scale:g}", fresh, lambda: fig19x_case("chiron", scale))}
    for cfg, (knobs, floor) in FIG19X_CONFIGS.items():
        for key, mig in LLUMNIX_VARIANTS.items():
            out[f"{cfg}/{key}"] = cached(_fig19x_name(cfg, knobs, mig, scale), fresh,
                                         lambda mig=mig, knobs=knobs, floor=floor:
                                         fig19x_case("llumnix", scale, floor, migration=mig, **knobs))
    out = {k: v for k, v in out.items() if v is not None}  # --cached-only: the runs done so far
    c = out.get("chiron")
    if c is None:
        return {}
    bands = {}
    for cfg in FIG19X_CONFIGS:
        for window in ("gpu_hours_65min", "gpu_hours_at_completion"):
            saves = []
            for key in LLUMNIX_VARIANTS:
                v = out.get(f"{cfg}/{key}")
                if v is None or c[window] is None or v[window] is None:
                    saves.append(None)
                else:
                    saves.append(1 - c[window] / v[window])
            known = [x for x in saves if x is not None]
            bands[f"{cfg}/{window}"] = {"savings": dict(zip(LLUMNIX_VARIANTS, saves, strict=True)),
                                        "min": min(known) if known else None, "max": max(known) if known else None}
    out["bands"] = bands
    return out


# the Llumnix-like variants of Fig. 19: live migration of running requests (Llumnix's default, the primary
# baseline), our earlier queued-request rebalancing, none
LLUMNIX_VARIANTS = {"llumnix": "live", "llumnix_queued": "queued", "llumnix_no_migration": "none"}


def fig19(scale: float, fresh: bool) -> dict:
    out = {"chiron": cached(f"fig19_chiron_x{scale:g}", fresh, lambda: fig19_case("chiron", scale))}
    for key, mig in LLUMNIX_VARIANTS.items():
        out[key] = cached(f"fig19_llumnix-{mig}_x{scale:g}", fresh,
                          lambda mig=mig: fig19_case("llumnix", scale, migration=mig))
    return out


def estimator(target_q: int = 2000) -> dict:
    dep = S.deployment("8b")
    parts = [S.batch_part(dep["model"], 400, 0.0), S.batch_part(dep["model"], 6000, 120.0)]
    d = S.scenario(parts=parts, dep=dep, initial=2, cap=2, max_time_s=4 * 3600.0,
                   strategy=S.strategy("chiron", record_estimates=True, batch_autoscaler=False,
                                       interactive_autoscaler=False, batch_tick_s=10.0),
                   name="chiron-estimator")
    sim, res, cpu = run(d)
    pol = sim.autoscaler
    est = np.array([(t, rid, k, m, s) for t, rid, k, m, s in pol.estimates], dtype=np.float64)
    times = np.unique(est[:, 0])
    rows = []
    for t in times:
        snap = est[est[:, 0] == t]
        actual = np.array([pol.dispatched_at.get(int(rid), np.nan) - t for rid in snap[:, 1]])
        ok = np.isfinite(actual)
        if ok.sum() < 10:
            continue
        a, e = actual[ok], snap[ok, 3]
        ss_res = float(((a - e) ** 2).sum())
        ss_tot = float(((a - a.mean()) ** 2).sum())
        rows.append({"t": float(t), "queued": int(len(snap)), "r2": 1 - ss_res / ss_tot if ss_tot > 0 else None,
                     "overestimate": float(np.median(e / np.maximum(a, 1e-9)))})
    best = min(rows, key=lambda x: abs(x["queued"] - target_q)) if rows else None
    return {"snapshots": rows, "at_target": best, "cpu_s": round(cpu, 1)}


def batchsize(tp: int = 4, minutes: float = 10.0) -> dict:
    out = {}
    for model, rate in (("8b", 60.0), ("70b", 15.0)):
        dep = S.deployment(model, tp=tp)
        d = S.scenario(parts=[S.interactive_part(dep["model"], rate, minutes * 60.0)], dep=dep, initial=1, cap=1,
                       max_time_s=minutes * 60.0,
                       strategy=S.strategy("chiron", log_local_steps=True, interactive_autoscaler=False,
                                           batch_autoscaler=False), name=f"chiron-batchsize-{model}")
        sim, res, cpu = run(d)
        steps = sim.autoscaler.local.steps
        half = [s for s in steps if s[0] >= minutes * 30.0]
        out[model] = {"deployment": dep["name"], "rate_rps": rate, "steps": len(steps),
                      "converged_limit": float(np.median([s[3] for s in half])) if half else None,
                      "running_batch": float(np.median([s[8] for s in half])) if half else None,
                      "itl_s": float(np.median([s[6] for s in half])) if half else None,
                      "kv_bound_batch": None, "cpu_s": round(cpu, 1),
                      "interactive_attainment": _tier(res, "IW-F").get("attainment")}
    out["ratio_limit"] = out["8b"]["converged_limit"] / out["70b"]["converged_limit"]
    out["ratio_running"] = out["8b"]["running_batch"] / out["70b"]["running_batch"]
    return out


# Llumnix-like "tuned": the same grid as the comparison bundles' sweep (planner/comparisons/core/chiron_bundles.py
# LLUMNIX_TUNE_GRID; not imported: that module needs Django)
# (``migration``: the W_B sweep used the queued-request rebalancing first; the live-migration sweep is
# ``--wb-live-queues``)
WB_GRID = [{"scale_up_below": u, "scale_down_above": d, "max_batch": mb}
           for u in (10.0, 50.0) for d in (60.0, 200.0) for mb in (256, 1024)]


def wb_point(scale: float, strategy_name: str, knobs: dict, q: int, fresh: bool = False) -> dict:
    """One W_B run (50 req/s x scale Poisson interactive for 65 min + ``q`` batch requests at t = 5 min, cap
    50 x scale), cached per point in var/reproduce_chiron/wbpt_*.json."""
    dep = S.deployment("8b")
    cap = max(2, round(50 * scale))

    def case() -> dict:
        parts = [S.interactive_part(dep["model"], 50.0 * scale, 65 * 60.0), S.batch_part(dep["model"], q, 300.0)]
        d = S.scenario(parts=parts, dep=dep, initial=max(1, round(10 * scale)), cap=cap, max_time_s=65 * 60.0 + 300,
                       strategy=S.strategy(strategy_name, **knobs), name="chiron-wb")
        sim, res, cpu = run(d)
        nb = np.asarray(res.requests["tier"]) == 2
        done = np.isfinite(np.asarray(res.requests["done_s"], dtype=float)) & nb
        tokens = float(np.asarray(sim.workload.output_tokens, dtype=float)[done].sum())
        gh = float(res.summary["gpu_hours"])
        return {"queue": q, "gpu_hours": round(gh, 2), "cpu_s": round(cpu, 1),
                "batch": _tier(res, "NIW").get("attainment"), "interactive": _tier(res, "IW-F").get("attainment"),
                "batch_done_share": float(done.sum() / max(1, nb.sum())),
                "batch_tokens_per_gpu_hour": tokens / gh if gh > 0 else None}

    return cached(f"wbpt_x{scale:g}_{strategy_name}_{_tag(knobs)}_{q}", fresh, case)


def wb(scale: float, queues: list[int], fresh: bool = False, migration: str = "queued", with_chiron: bool = True) -> dict:
    def largest(points):
        ok = [p["queue"] for p in points if (p["batch"] or 0) >= 0.99 and (p["interactive"] or 0) >= 0.99]
        return max(ok) if ok else 0

    chiron = [wb_point(scale, "chiron", {}, q, fresh) for q in queues] if with_chiron else []
    llum = {json.dumps(g): [wb_point(scale, "llumnix", {**g, "migration": migration}, q, fresh) for q in queues]
            for g in WB_GRID}
    # tuned = the sweep point with the largest queue within SLO; ties (e.g. all 0) broken by the best SLO attainment
    # (mean over the queues of the worse class's attainment: the paper's "maximizes SLO attainment and throughput"),
    # then by the fewest GPU-hours
    def attained(points):
        return sum(min(p["batch"] or 0, p["interactive"] or 0) for p in points) / len(points)

    best = max(llum, key=lambda k: (largest(llum[k]), attained(llum[k]), -sum(p["gpu_hours"] for p in llum[k])))
    return {"scale": scale, "queues": queues, "migration": migration, "chiron": chiron,
            "chiron_largest": largest(chiron) if chiron else None,
            "llumnix_tuned_knobs": json.loads(best), "llumnix_tuned": llum[best],
            "llumnix_tuned_largest": largest(llum[best]),
            "llumnix_sweep_largest": {k: largest(v) for k, v in llum.items()}, "llumnix_sweep": llum}


def wb_prefetch(scale: float, queues: list[int], groups: list[str]) -> None:
    """Run (and cache) the W_B points queue size first: for each queue, Chiron ("chiron") and the 8-point grid
    with live ("live") or queued ("queued") migration, as ``groups`` asks; ``wb`` then aggregates the cache."""
    for q in queues:
        for g in groups:
            if g == "chiron":
                wb_point(scale, "chiron", {}, q)
                continue
            for knobs in WB_GRID:
                wb_point(scale, "llumnix", {**knobs, "migration": g}, q)
        print(f"W_B prefetch: queue {q:,} done ({', '.join(groups)})", file=sys.stderr, flush=True)


def _tag(knobs: dict) -> str:
    return "_".join(f"{k}{v}" if isinstance(v, str) else f"{k}{v:g}" for k, v in sorted(knobs.items()))


def _cached_point(scale: float, strategy_name: str, knobs: dict, q: int) -> bool:
    return (CACHE / f"wbpt_x{scale:g}_{strategy_name}_{_tag(knobs)}_{q}.json").exists()


def _seed(name: str, value) -> int:
    f = CACHE / f"{name}.json"
    if value is None or f.exists():
        return 0
    f.write_text(json.dumps(value, indent=1, default=float))
    return 1


def seed_cache(saved: dict) -> int:
    """Write the per-run cache files back from a saved results JSON (the runs it holds, as they were), so that a
    later run computes only what is missing; a file already cached is kept. A Fig. 19 run with knobs other than the
    ones this script now prescribes is not seeded (its cache name carries the knobs)."""
    r, a = saved["results"], saved["args"]
    sc, ws = a.get("scale", 1.0), a.get("wb_scale", 1.0)
    n = sum(_seed(f"fig19_chiron_x{sc:g}" if k == "chiron" else f"fig19_llumnix-{LLUMNIX_VARIANTS[k]}_x{sc:g}", v)
            for k, v in (r.get("fig19") or {}).items())
    for k, v in (r.get("fig19x") or {}).items():
        if k == "chiron":
            n += _seed(f"fig19x_chiron_x{sc:g}", v)
        elif k != "bands":
            cfg, key = k.split("/")
            knobs = {x: y for x, y in v["params"].items() if x != "migration"}
            n += _seed(_fig19x_name(cfg, knobs, LLUMNIX_VARIANTS[key], sc), v) if knobs == FIG19X_CONFIGS[cfg][0] else 0
    n += _seed("estimator", r.get("estimator")) + _seed(f"batchsize_tp{a.get('tp', 4)}", r.get("batchsize"))
    for p in (r.get("wb_chiron") or {}).get("points", []):
        n += _seed(f"wbpt_x{ws:g}_chiron__{p['queue']}", p)
    for key in ("wb", "wb_live"):
        w = r.get(key) or {}
        for g, pts in (w.get("llumnix_sweep") or {}).items():
            knobs = {**json.loads(g), "migration": w["migration"]}
            for p in pts:
                n += _seed(f"wbpt_x{ws:g}_llumnix_{_tag(knobs)}_{p['queue']}", p)
        for pts in (w.get("partial") or {}).values():
            for p in pts:
                knobs = {**p["knobs"], "migration": w["migration"]}
                n += _seed(f"wbpt_x{ws:g}_llumnix_{_tag(knobs)}_{p['queue']}", {k: v for k, v in p.items() if k != "knobs"})
    return n


def wb_cached(scale: float, queues: list[int]) -> dict:
    """W_B aggregated from the cached points only (a run cut short): per migration model, the queue sizes at which
    Chiron and all 8 sweep points are cached; the others are named as not run."""
    out = {}
    chiron_done = [q for q in queues if _cached_point(scale, "chiron", {}, q)]
    if chiron_done:
        out["wb_chiron"] = {"queues": chiron_done, "points": [wb_point(scale, "chiron", {}, q) for q in chiron_done],
                            "not_run": [q for q in queues if q not in chiron_done]}
    for key, mig in (("wb", "queued"), ("wb_live", "live")):
        done = [q for q in chiron_done
                if all(_cached_point(scale, "llumnix", {**g, "migration": mig}, q) for g in WB_GRID)]
        if done:
            out[key] = wb(scale, done, migration=mig, with_chiron=key == "wb")
            out[key]["not_run"] = [q for q in queues if q not in done]
            # the points of a queue size not run whole (the page names their measured cost, CPU s)
            out[key]["partial"] = {str(q): [{"knobs": g, **wb_point(scale, "llumnix", {**g, "migration": mig}, q)}
                                            for g in WB_GRID if _cached_point(scale, "llumnix", {**g, "migration": mig}, q)]
                                   for q in out[key]["not_run"]}
            out[key]["partial"] = {q: v for q, v in out[key]["partial"].items() if v}
    return out


CACHED_ONLY = {"on": False}  # --cached-only: use what is cached, run nothing


def cached(name: str, fresh: bool, fn):
    CACHE.mkdir(parents=True, exist_ok=True)
    f = CACHE / f"{name}.json"
    if f.exists() and not fresh:
        return json.loads(f.read_text())
    if CACHED_ONLY["on"]:
        return None
    t = time.time()
    out = fn()
    out["_wall_s"] = round(time.time() - t, 1)
    f.write_text(json.dumps(out, indent=1, default=float))
    return out


def _queues(a) -> list[int]:
    return ([int(x) for x in a.wb_queues.split(",")] if a.wb_queues
            else [round(q * a.wb_scale) for q in (10_000, 30_000, 100_000, 300_000, 700_000, 1_000_000)])


def _from_saved(a) -> int:
    """--load: seed the cache from the saved results (--seed-cache), or write the page from them (adding the W_B
    points cached so far with --wb-from-cache, and saving them)."""
    saved = json.loads(Path(a.load).read_text())
    if a.seed_cache:
        CACHE.mkdir(parents=True, exist_ok=True)
        print(f"seeded {seed_cache(saved)} cached runs in {CACHE} from {a.load}")
        return 0
    from tests.benchmarks.support.chiron_doc import write_doc

    if a.wb_from_cache:
        CACHED_ONLY["on"] = True
        saved["results"].update(wb_cached(a.wb_scale, _queues(a)))
        saved["args"]["wb_from_cache"] = True
        Path(a.load).write_text(json.dumps(saved, indent=1, default=float) + "\n")
    write_doc(saved["results"], DOC, argparse.Namespace(**saved["args"]))
    print(f"wrote {DOC}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["fig19", "fig19x", "estimator", "batchsize", "wb"], action="append",
                    help="run only these cases (repeatable); default all")
    ap.add_argument("--scale", type=float, default=1.0, help="Fig. 19 scale (rate, dump and cap); default 1 = full")
    ap.add_argument("--wb-scale", type=float, default=1.0, help="W_B sweep scale (rate, queues, cap); default 1 = full")
    ap.add_argument("--wb-queues", default=None,
                    help="W_B batch queue sizes, comma-separated (default 10k, 30k, 100k, 300k, 700k, 1M x --wb-scale)")
    ap.add_argument("--wb-live-queues", default=None,
                    help="also sweep Llumnix-like with live migration at these W_B queue sizes (comma-separated)")
    ap.add_argument("--wb-from-cache", action="store_true",
                    help="with --load: add the W_B points cached so far (whole queue sizes only) to the saved results")
    ap.add_argument("--seed-cache", action="store_true",
                    help="with --load: write the saved runs back as cached points (kept as they were) and stop, so "
                         "that --wb-prefetch or --cached-only adds only what is missing")
    ap.add_argument("--wb-prefetch", default=None,
                    help="only run and cache W_B points, queue size first: comma-separated of chiron, live, queued")
    ap.add_argument("--tp", type=int, default=4, help="tensor parallelism of the 70B deployment (2, 4 or 8)")
    ap.add_argument("--fresh", action="store_true", help="ignore cached results")
    ap.add_argument("--write-doc", action="store_true", help="write docs/reproduction_chiron.md from the results")
    ap.add_argument("--out", default=str(RESULTS), help="with --write-doc: save the results JSON here")
    ap.add_argument("--cached-only", action="store_true",
                    help="run nothing: aggregate and document the cached runs (missing ones are left out)")
    ap.add_argument("--load", default=None,
                    help="write the document from a saved results JSON (with --write-doc) instead of running")
    a = ap.parse_args(argv)
    if a.load:
        return _from_saved(a)
    if a.wb_prefetch:
        qs = ([int(x) for x in a.wb_queues.split(",")] if a.wb_queues
              else [round(q * a.wb_scale) for q in (10_000, 30_000, 100_000, 300_000, 700_000, 1_000_000)])
        wb_prefetch(a.wb_scale, qs, a.wb_prefetch.split(","))
        return 0
    cases = a.only or ["fig19", "fig19x", "estimator", "batchsize", "wb"]
    CACHED_ONLY["on"] = a.cached_only
    results = {}
    if "fig19" in cases:
        results["fig19"] = fig19(a.scale, a.fresh)
    if "fig19x" in cases:
        results["fig19x"] = fig19x(a.scale, a.fresh)
    if "estimator" in cases:
        results["estimator"] = cached("estimator", a.fresh, estimator)
    if "batchsize" in cases:
        results["batchsize"] = cached(f"batchsize_tp{a.tp}", a.fresh, lambda: batchsize(a.tp))
    if "wb" in cases and a.cached_only:
        qs = ([int(x) for x in a.wb_queues.split(",")] if a.wb_queues
              else [round(q * a.wb_scale) for q in (10_000, 30_000, 100_000, 300_000, 700_000, 1_000_000)])
        results.update(wb_cached(a.wb_scale, qs))
    elif "wb" in cases:
        qs = ([int(x) for x in a.wb_queues.split(",")] if a.wb_queues
              else [round(q * a.wb_scale) for q in (10_000, 30_000, 100_000, 300_000, 700_000, 1_000_000)])
        results["wb"] = wb(a.wb_scale, qs, a.fresh)  # every point cached (wbpt_*)
        if a.wb_live_queues:
            lq = [int(x) for x in a.wb_live_queues.split(",")]
            results["wb_live"] = wb(a.wb_scale, lq, a.fresh, migration="live", with_chiron=False)
    results = {k: v for k, v in results.items() if v}
    if "fig19" in results:
        results["fig19"] = {k: v for k, v in results["fig19"].items() if v is not None}
        if not {"chiron", "llumnix"} <= set(results["fig19"]):
            results.pop("fig19")
    print(json.dumps(results, indent=1, default=float))
    if a.write_doc:
        from tests.benchmarks.support.chiron_doc import model_facts_json, write_doc

        results["model_facts"] = model_facts_json()  # the latency model's figures the prose quotes
        args = {k: getattr(a, k) for k in ("scale", "wb_scale", "tp", "wb_live_queues", "only", "cached_only")}
        Path(a.out).write_text(json.dumps({"args": args, "results": results}, indent=1, default=float) + "\n")
        write_doc(results, DOC, a)
        print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
