"""The paper's evaluation (Figs. 10-13, the greedy-vs-oracle gap, the default-stream claim) recomputed with
our profiles; each check against the paper is computed here, never hard-coded. Django-free.

``python tests/benchmarks/reproduce_opscale.py`` runs ``reproduce()`` and writes docs/reproduction_opscale.md
and docs/results/opscale.json.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from planner.opscale.ilp import solve_ilp
from planner.opscale.model import Evaluator, Options, Workload
from planner.opscale.placement import PlacementOptions
from planner.opscale.plan import run_plan
from planner.opscale.point import Slo, plan_point
from planner.opscale.profiles import fit_report, load_profile
from planner.opscale.spec import parse_spec

ROOT = Path(__file__).resolve().parents[2]
STAND_IN = ("llama-3-8b", "a100")  # the dense 8B stand-in for Qwen2-7B (measured linear operators)
FIG11_QPS = tuple(range(2, 101, 2))
FIG10_LENGTHS = (512, 1024, 2048, 4096, 8192, 16384, 32768)
FIG10_QPS = 40.0  # the paper does not give Fig. 10's load; its Fig. 11 peak
TRACES = {
    "azure_code_2023": "fixtures/traces/azure_code_2023.csv",
    "mooncake_synthetic": "fixtures/traces/mooncake_synthetic.jsonl",
}
VARIANTS = {
    "default": {},
    "kappa 0 (no interference)": {"kappa": 0.0},
    "kappa 0.5": {"kappa": 0.5},
    "interference from the neighbours' load": {"interference": "load"},
    "oversubscription on both strategies (sm_sum)": {"interference": "sm_sum"},
    "GPU capacity enforced (SM load <= 1)": {"enforce_capacity": True},
    "paper units (A2)": {"units": "paper"},
    "downscale only the bottleneck (A7 as printed)": {"downscale": "bottleneck"},
    "upscale: largest latency cut per GPU added (Alg. 1 line 24, other reading)": {"upscale": "efficiency"},
    "keep downscaling inside the buffer epsilon (prose stopping rule)": {"band": "refine"},
}
# Fig. 12 under each reading the paper's text leaves open (spec option values; the default first)
FIG12_READINGS = {
    "default": {},
    "upscale: latency cut per GPU": {"upscale": "efficiency"},
    "refine inside the buffer": {"band": "refine"},
    "decode length 1 (Sec. 4.1 literal)": {"decode_length": "one"},
    "paper units (A2)": {"units": "paper"},
    "kappa 0 (no interference)": {"kappa": 0.0},
}
# How close Fig. 11's peak check sits to its boundary (rule fixed before it first ran): the 5-point rolling
# windows of the check, the one that sets the peak, and for each Fig. 11 point inside it the largest load
# (searched on a 0.05 QPS grid up to the next Fig. 11 point) at which the operator-level plan keeps its GPU count
BOUNDARY_STEP_QPS = 0.05
GAP_QPS = tuple(range(5, 101, 5))
ALG1_QPS = tuple(range(49, 57))  # where the printed greedy needed 3, 3, 8, 2 GPUs at 51-54 QPS
SLO_VARIANTS = {"SLO 3 x unloaded": 3.0, "SLO 10 x unloaded": 10.0}
FIG13 = (("qwen2-0.5b", 1), ("qwen2-1.5b", 1), ("qwen2-7b", 1), ("qwen2-72b", 4))


def _sv(p: dict, s: str, k: str):
    return (p[s].get("savings") or {}).get(k)


def fig11(options: Options, slo: Slo, placement: PlacementOptions | None = None, length: float = 1024) -> list[dict]:
    prof = load_profile(*STAND_IN)
    rows = []
    for q in FIG11_QPS:
        p = plan_point(prof, Workload("prefill", q, length), slo, options, placement)
        rows.append(
            {
                "qps": q,
                "model_level_gpus": p["model_level"]["gpus"],
                "operator_level_gpus": p["operator_level"]["gpus"],
                "gpus": _sv(p, "operator_level", "gpus"),
                "energy": _sv(p, "operator_level", "energy"),
                "memory": _sv(p, "operator_level", "memory"),
                "ds_gpus": _sv(p, "default_stream", "gpus"),
                "ds_energy": _sv(p, "default_stream", "energy"),
                "ds_memory": _sv(p, "default_stream", "memory"),
                "cost": _sv(p, "operator_level", "cost"),
            }
        )
    return rows


def fig11_boundary(f11: list[dict], options: Options, slo: Slo, length: float = 1024) -> dict:
    """The peak check of Fig. 11 against its 20 % floor: every rolling window's mean, the window that sets the
    peak, and how much load each of its saving points has before the operator-level plan needs one more GPU."""
    mid = [r for r in f11 if 30 <= r["qps"] <= 60]
    vals = [r["gpus"] if r["gpus"] is not None else float("nan") for r in mid]
    windows = [{"qps": [r["qps"] for r in mid[i : i + 5]], "mean": float(np.nanmean(vals[i : i + 5]))}
               for i in range(len(mid) - 4)]
    if not windows:
        return {"windows": [], "peak": None}
    peak = max(windows, key=lambda w: w["mean"])
    prof = load_profile(*STAND_IN)
    qps_all = [r["qps"] for r in f11]
    points = []
    for r in mid:
        if r["qps"] not in peak["qps"] or not r["gpus"]:
            continue
        nxt = next((q for q in qps_all if q > r["qps"]), r["qps"])
        last = r["qps"]
        q = r["qps"]
        while q + BOUNDARY_STEP_QPS <= nxt + 1e-9:
            q = round(q + BOUNDARY_STEP_QPS, 4)
            p = plan_point(prof, Workload("prefill", q, length), slo, options)
            if p["operator_level"]["gpus"] > r["operator_level_gpus"]:
                break
            last = q
        points.append({"qps": r["qps"], "saving": r["gpus"], "operator_level_gpus": r["operator_level_gpus"],
                       "model_level_gpus": r["model_level_gpus"], "holds_up_to_qps": last})
    n = len(peak["qps"])
    return {"windows": windows, "peak": peak, "points": points,
            "peak_if_one_point_lost": min((peak["mean"] - pt["saving"] / n for pt in points), default=None),
            "second_best": sorted((w["mean"] for w in windows), reverse=True)[1] if len(windows) > 1 else None}


def fig10(options: Options, slo: Slo) -> list[dict]:
    prof = load_profile(*STAND_IN)
    rows = []
    for L in FIG10_LENGTHS:
        p = plan_point(prof, Workload("prefill", FIG10_QPS, L), slo, options)
        rows.append(
            {
                "length": L,
                "model_level_gpus": p["model_level"]["gpus"],
                "operator_level_gpus": p["operator_level"]["gpus"],
                "gpus": _sv(p, "operator_level", "gpus"),
                "energy": _sv(p, "operator_level", "energy"),
                "memory": _sv(p, "operator_level", "memory"),
            }
        )
    return rows


def greedy_gap(options: Options, slo: Slo, length: float = 1024, time_limit_s: float = 20.0, qps=None) -> dict:
    """Greedy vs the ILP optimum of the Stage-1 objective over the QPS sweep (paper: 8 % mean gap)."""
    from planner.opscale.scaling import greedy

    prof = load_profile(*STAND_IN)
    rows = []
    for q in qps or GAP_QPS:
        ev = Evaluator(prof, Workload("prefill", q, length), options)
        target = slo.target(ev)
        g = greedy(ev, target)
        ilp = solve_ilp(ev, target, time_limit_s=time_limit_s)
        model_cost = len(ev.ops) * (q and _model_cost(ev, target))
        rows.append(
            {
                "qps": q,
                "greedy_cost": g.cost,
                "ilp_cost": ilp.cost,
                "ilp_status": ilp.status,
                "gap": (g.cost - ilp.cost) / ilp.cost if ilp.cost else None,
                "savings_gap": ((g.cost - ilp.cost) / model_cost) if (ilp.cost and model_cost) else None,
            }
        )
    gaps = [r["gap"] for r in rows if r["gap"] is not None]
    sgaps = [r["savings_gap"] for r in rows if r["savings_gap"] is not None]
    return {
        "rows": rows,
        "mean_gap": float(np.mean(gaps)) if gaps else None,
        "mean_savings_gap": float(np.mean(sgaps)) if sgaps else None,
        "all_optimal": all(r["ilp_status"] == "optimal" for r in rows),
    }


def fixed_budget(options: Options, slo: Slo, length: float = 1024, budgets=(1, 2, 3, 4, 6)) -> list[dict]:
    """The abstract's "1.6x throughput at fixed resources" (no method in the paper): the highest QPS such that
    every load up to it is served within the SLO on at most G GPUs, per strategy (QPS grid of 1)."""
    prof = load_profile(*STAND_IN)
    grid = range(1, 201)
    need = {"model_level": [], "operator_level": []}
    for q in grid:
        p = plan_point(prof, Workload("prefill", q, length), slo, options)
        for s in need:
            ok = p["model_level"]["feasible"] if s == "model_level" else p["operator_level"]["feasible"]
            need[s].append(p[s]["gpus"] if ok else 10**9)
    rows = []
    for g in budgets:
        best = {}
        for s, gpus in need.items():
            top = 0
            for q, n in zip(grid, gpus, strict=True):
                if n > g:
                    break
                top = q
            best[s] = top
        ratio = best["operator_level"] / best["model_level"] if best["model_level"] else None
        top = best["operator_level"]
        near = [need["operator_level"][q - 1] for q in range(max(1, top - 1), min(len(grid), top + 2) + 1)]
        rows.append(
            {
                "gpus": g,
                "model_level_qps": best["model_level"],
                "operator_level_qps": top,
                "ratio": ratio,
                "operator_level_gpus_around": near,  # GPUs needed at top-1 .. top+2 QPS (10**9: infeasible)
            }
        )
    return rows


def _gap_summary(g: dict) -> dict:
    gaps = [r["gap"] for r in g["rows"] if r["gap"] is not None]
    return {
        "mean_gap": g["mean_gap"],
        "max_gap": max(gaps) if gaps else None,
        "all_optimal": g["all_optimal"],
        "worst_qps": max(g["rows"], key=lambda r: r["gap"] or 0.0)["qps"] if gaps else None,
    }


def _model_cost(ev: Evaluator, target: float) -> int:
    from planner.opscale.scaling import model_level

    ml = model_level(ev, target)
    return ml.replicas * ml.tp


def alg1_trace(slo: Slo, readings: dict[str, dict]) -> list[dict]:
    """Alg. 1 + Alg. 2 move by move at the QPS where the printed greedy jumped, under each reading."""
    from planner.opscale.placement import place
    from planner.opscale.scaling import greedy, model_level

    prof = load_profile(*STAND_IN)
    rows = []
    for name, change in readings.items():
        for q in ALG1_QPS:
            ev = Evaluator(prof, Workload("prefill", q, 1024), replace(Options(), **change))
            target = slo.target(ev)
            st = greedy(ev, target)
            pl = place(ev, st.config, target)
            rows.append(
                {
                    "reading": name,
                    "qps": q,
                    "slo_s": target,
                    "latency_s": st.latency_s,
                    "cost": st.cost,
                    "gpus": pl.gpus,
                    "model_level_gpus": model_level(ev, target).gpus,
                    "ilp_cost": solve_ilp(ev, target, time_limit_s=20).cost,
                    "moves": [f"{m['move']} {m['op']} {tuple(m['from'])}->{tuple(m['to'])}" for m in st.moves],
                    "reason": st.reason,
                }
            )
    return rows


def des_checks(jobs: int = 100_000) -> list[dict]:
    """Spec 6.4: the discrete-event check (planner.opscale.des) of analytic plans the reproduction makes."""
    from planner.opscale.des import check_plan
    from planner.opscale.placement import place
    from planner.opscale.scaling import greedy, model_level

    prof = load_profile(*STAND_IN)
    cases = [
        ("Fig. 11, 20 QPS", Workload("prefill", 20, 1024), Options()),
        ("Fig. 11, 40 QPS", Workload("prefill", 40, 1024), Options()),
        ("Fig. 11, 60 QPS", Workload("prefill", 60, 1024), Options()),
        ("Fig. 11, 60 QPS, paper units", Workload("prefill", 60, 1024), Options(units="paper")),
        ("Mooncake typical prefill", Workload("prefill", 3.7, 15325), Options()),
        ("Mooncake typical decode", Workload("decode", 3.7, 15495, 340), Options()),
    ]
    rows = []
    for name, wl, opts in cases:
        ev = Evaluator(prof, wl, opts)
        target = Slo().target(ev)
        st = greedy(ev, target)
        pl = place(ev, st.config, target)
        ml = model_level(ev, target)
        for who, cfg, fac in (("operator-level", pl.config, pl.factors), ("model-level", ml.config(ev.ops), None)):
            for service in ("exponential", "deterministic"):
                r = check_plan(ev, cfg, fac, jobs=jobs, seed=7, service=service)
                rows.append(
                    {
                        "case": name,
                        "plan": who,
                        "service": service,
                        "mode": r["mode"],
                        "operators_ok": r["operators_ok"],
                        "worst_op": max(
                            r["operators"].values(),
                            key=lambda o: abs(o["wait_simulated_s"] - o["wait_analytic_s"]) / o["tolerance_s"],
                        ),
                        "latency_analytic_s": r["latency_analytic_s"],
                        "latency_simulated_s": r["latency_simulated_s"],
                        "latency_rel_error": r["latency_rel_error"],
                        "latency_ok": r["latency_ok"],
                        "slo_s": target,
                    }
                )
    return rows


def _window_savings(timeline: list[dict], phase: str) -> dict:
    vals = [
        1.0 - r["operator_level_gpus"] / r["model_level_gpus"]
        for r in timeline
        if r["phase"] == phase and r["feasible"] and r["model_level_gpus"]
    ]
    return {"mean": float(np.mean(vals)) if vals else None, "max": max(vals) if vals else None, "windows": len(vals)}


def _typical_point(spec, typical: dict) -> dict:
    from planner.opscale.plan import build_options, decode_context

    options, placement = build_options(spec)
    prof = load_profile(spec.model, spec.gpu)
    slo = Slo(spec.slo.ttft_s, spec.slo.tbt_s, spec.slo.scale)
    out = {}
    for ph in ("prefill", "decode"):
        q, L, o = typical["qps"], typical["length"], typical["out_tokens"]
        wl = Workload(ph, q, L) if ph == "prefill" else Workload(ph, q, decode_context(options, L, o), o)
        p = plan_point(prof, wl, slo, options, placement)
        out[ph] = {
            "model_level_gpus": p["model_level"]["gpus"],
            "operator_level_gpus": p["operator_level"]["gpus"],
            "gpus": _sv(p, "operator_level", "gpus"),
        }
    return out


def fig12(window_s: float = 60.0, options: dict | None = None) -> dict:
    """Prefill vs decode on the two traces at their own rates; ``options`` are spec options (readings)."""
    from planner.ingest.normalised import read_trace
    from planner.ingest.pipeline import ingest

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, rel in TRACES.items():
            dst = Path(tmp) / f"{name}.parquet"
            ingest(ROOT / rel, dst)
            frame = read_trace(dst, columns=["arrival_s", "input_tokens", "output_tokens"])
            spec = parse_spec(
                {
                    "model": STAND_IN[0],
                    "gpu": STAND_IN[1],
                    "workload": {"path": rel, "window_s": window_s},
                    "options": {"fallback_model_level": False, **(options or {})},
                    "sweeps": False,
                }
            )
            res = run_plan(spec, frame)
            out[name] = {
                "typical": res["typical"],
                "windows": res["windows"],
                "infeasible_windows": res["infeasible_windows"],
                "prefill": res["totals"]["prefill"]["operator_level"]["savings_vs_model_level"],
                "decode": res["totals"]["decode"]["operator_level"]["savings_vs_model_level"],
                # the other readings of "savings" in Fig. 12: the mean of the per-window GPU savings, and the
                # largest one ("up to ... %")
                "per_window": {ph: _window_savings(res["timeline"], ph) for ph in ("prefill", "decode")},
                # and one planning point per phase at the trace's typical load and lengths (GPU counts, not
                # GPU-seconds: "instances" provisioned for the average window)
                "typical_point": _typical_point(spec, res["typical"]),
                "static_p95": {
                    ph: res["totals"][ph]["static_p95"].get("savings_vs_model_level") for ph in ("prefill", "decode")
                },
            }
    return out


def fig13(options: Options, slo: Slo, qps: float = 40.0, length: float = 1024) -> list[dict]:
    rows = []
    for model, tp in FIG13:
        prof = load_profile(model, "a100")
        p = plan_point(prof, Workload("prefill", qps, length), slo, replace(options, model_tp=tp))
        rows.append(
            {
                "model": model,
                "tp": tp,
                "derived": prof.derived,
                "gpus": _sv(p, "operator_level", "gpus"),
                "energy": _sv(p, "operator_level", "energy"),
                "memory": _sv(p, "operator_level", "memory"),
                "model_level_gpus": p["model_level"]["gpus"],
                "operator_level_gpus": p["operator_level"]["gpus"],
            }
        )
    return rows


def _mean(rows, key, lo=None, hi=None, field="qps"):
    vals = [
        r[key] for r in rows if r[key] is not None and (lo is None or r[field] >= lo) and (hi is None or r[field] < hi)
    ]
    return float(np.mean(vals)) if vals else None


def checks(f11: list[dict], f10: list[dict], f12: dict, gap: dict) -> list[dict]:
    """The reproduction's checks against the paper, computed. Fig. 11 points are quantised (a few GPUs), so the peak is taken
    on a 5-point rolling mean, and "below 20 QPS" is the mean over those points."""
    low = _mean(f11, "gpus", hi=20)
    mid = [r for r in f11 if 30 <= r["qps"] <= 60]
    vals = np.array([r["gpus"] if r["gpus"] is not None else np.nan for r in mid])
    rolling = [float(np.nanmean(vals[i : i + 5])) for i in range(len(vals) - 4)] if len(vals) >= 5 else []
    peak = max(rolling) if rolling else None
    mem32 = next((r["memory"] for r in f10 if r["length"] == 32768), None)
    out = [
        {
            "item": "Fig. 11: GPU savings <= 5 % below 20 QPS (mean)",
            "value": low,
            "met": low is not None and low <= 0.05,
        },
        {
            "item": "Fig. 11: peak GPU savings between 20 and 40 % for 30-60 QPS (5-point rolling mean)",
            "value": peak,
            "met": peak is not None and 0.20 <= peak <= 0.40,
        },
        {
            "item": "Fig. 10: memory savings >= 50 % at 32K context",
            "value": mem32,
            "met": mem32 is not None and mem32 >= 0.5,
        },
    ]
    for name, r in f12.items():
        pre, dec = r["prefill"]["gpu_s"], r["decode"]["gpu_s"]
        ok = pre is not None and dec is not None and pre > 0 and pre >= 2 * max(dec, 0.0)
        out.append({"item": f"Fig. 12 ({name}): prefill GPU savings >= 2x decode", "value": [pre, dec], "met": ok})
    out.append(
        {
            "item": "greedy within 10 % of the ILP optimum on average (QPS sweep, 1K)",
            "value": gap.get("mean_gap"),
            "met": gap.get("mean_gap") is not None and gap["mean_gap"] <= 0.10,
        }
    )
    ds_g, ds_m, ds_e = _mean(f11, "ds_gpus"), _mean(f11, "ds_memory"), _mean(f11, "ds_energy")
    out.append(
        {
            "item": "default stream: GPU savings <= 0 while memory and energy savings > 0 (means over Fig. 11)",
            "value": [ds_g, ds_m, ds_e],
            "met": None not in (ds_g, ds_m, ds_e) and ds_g <= 0 < min(ds_m, ds_e),
        }
    )
    return out


def reproduce(variants: bool = True) -> dict:
    slo = Slo()
    base = Options()
    f11 = fig11(base, slo)
    f10 = fig10(base, slo)
    gap = greedy_gap(base, slo)
    f12 = fig12()
    result = {
        "fit_report": fit_report(),
        "fig11": f11,
        "fig10": f10,
        "fig12": f12,
        "fig13": fig13(base, slo),
        "fixed_budget": fixed_budget(base, slo),
        "gap": gap,
        "gap_1qps": {
            name: _gap_summary(greedy_gap(replace(base, **change), slo, qps=tuple(range(1, 101))))
            for name, change in (
                ("printed (cheapest move restoring the SLO)", {}),
                ("efficiency", {"upscale": "efficiency"}),
            )
        },
        "alg1_trace": alg1_trace(
            slo, {"printed": {}, "efficiency": {"upscale": "efficiency"}, "refine": {"band": "refine"}}
        ),
        "fig12_readings": {name: fig12(options=change) if change else f12 for name, change in FIG12_READINGS.items()},
        "fixed_budget_efficiency": fixed_budget(replace(base, upscale="efficiency"), slo),
        "des": des_checks(),
        "gap_by_length": {
            str(L): _gap_summary(greedy_gap(base, slo, length=L)) for L in (4096, 15296)
        },  # 15296: the Mooncake trace's typical input
        "checks": checks(f11, f10, f12, gap),
        "fig11_boundary": fig11_boundary(f11, base, slo),
        "boundary_step_qps": BOUNDARY_STEP_QPS,
        "defaults": {"options": base.__dict__, "slo_scale": slo.scale},
    }
    if variants:
        result["variants"] = {}
        runs = [(name, replace(base, **change), slo) for name, change in VARIANTS.items() if change]
        runs += [(name, base, Slo(scale=scale)) for name, scale in SLO_VARIANTS.items()]
        for name, o, s in runs:
            v11, v10 = fig11(o, s), fig10(o, s)
            result["variants"][name] = {"fig11": v11, "fig10": v10, "checks": checks(v11, v10, {}, {})}
    return result
