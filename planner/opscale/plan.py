"""Operator-level plans over a trace, and the sweeps behind the figures (Django-free).

``run_plan(spec, frame)`` windows the trace (``window_s``), plans every window's prefill (lambda = requests/s,
L = the window's input-length statistic, SLO = TTFT) and decode (lambda = requests/s x mean output tokens,
context = input + output / 2, SLO = TBT) under operator-level (Alg. 1 + Alg. 2), operator-level without GPU
sharing (default stream), model-level autoscaling and static P95 provisioning, and sums GPU-seconds, energy and
memory per phase. Sweeps over QPS and input length at the trace's typical point feed the figures, with the
ILP optimum beside the greedy on the QPS sweep.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from planner.opscale.ilp import solve_ilp
from planner.opscale.model import Evaluator, Options, Workload
from planner.opscale.placement import PlacementOptions
from planner.opscale.point import Slo, plan_point
from planner.opscale.profiles import load_profile
from planner.opscale.scaling import model_level
from planner.opscale.spec import OpscaleSpec

Progress = Callable[[float, str], None]
QPS_SWEEP = (1, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 70, 80, 90, 100)
LENGTH_SWEEP = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
STRATEGIES = ("operator_level", "default_stream", "model_level", "static_p95")


def build_options(spec: OpscaleSpec) -> tuple[Options, PlacementOptions]:
    o = spec.options
    grid = tuple(b for b in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) if b <= o.prefill_batch_max)
    dgrid = tuple(b for b in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) if b <= o.decode_batch_max)
    options = Options(
        units=o.units,
        init_parallelism=o.init_parallelism,
        downscale=o.downscale,
        communication=o.communication,
        batch_grid=grid,
        decode_batch_grid=dgrid,
        model_tp=o.model_tp,
        eps_frac=o.eps_frac,
        enforce_capacity=o.enforce_capacity,
        interference=o.interference,
        kappa=o.kappa,
        upscale=o.upscale,
        band=o.band,
        decode_length=o.decode_length,
        fallback_model_level=o.fallback_model_level,
    )
    gpu_sharing = load_profile(spec.model, spec.gpu).gpu.supports_sharing
    return options, PlacementOptions(sharing=gpu_sharing if o.sharing is None else o.sharing)


def windows(frame: pd.DataFrame, window_s: float, length_stat: str = "mean", rate_scale: float = 1.0) -> pd.DataFrame:
    """Per window: start_s, qps, input length statistic, mean output tokens (empty windows dropped)."""
    t = frame["arrival_s"].to_numpy(dtype=float)
    t = t - t.min()
    idx = np.floor(t / window_s).astype(int)
    df = pd.DataFrame(
        {"w": idx, "in": frame["input_tokens"].to_numpy(float), "out": frame["output_tokens"].to_numpy(float)}
    )
    stat = {"mean": "mean", "p50": "median", "p90": lambda s: s.quantile(0.9)}[length_stat]
    g = df.groupby("w")
    out = pd.DataFrame(
        {
            "start_s": g.size().index * window_s,
            "qps": g.size().to_numpy() * rate_scale / window_s,
            "length": g["in"].agg(stat).to_numpy(),
            "out_tokens": g["out"].mean().clip(lower=1.0).to_numpy(),
        }
    )
    return out.reset_index(drop=True)


def _round_sig(x: float, digits: int = 2) -> float:
    if x <= 0:
        return 0.0
    return round(x, -int(math.floor(math.log10(abs(x)))) + digits - 1)


def _round_len(x: float) -> float:
    return float(max(16, int(round(x / 64.0)) * 64 or 16))


def decode_context(options: Options, length: float, out_tokens: float) -> float:
    """The sequence length a decode iteration's operators see (``Options.decode_length``)."""
    return length + out_tokens / 2.0 if options.decode_length == "context" else 1.0


def _point_key(phase: str, qps: float, length: float, out_tokens: float):
    if phase == "prefill":
        return (phase, _round_sig(qps), _round_len(length), 1.0)
    return (phase, _round_sig(qps), _round_len(length), _round_sig(out_tokens))


def run_plan(spec: OpscaleSpec, frame: pd.DataFrame, progress: Progress | None = None) -> dict:
    report = progress or (lambda f, m="": None)
    t0 = time.perf_counter()
    profile = load_profile(spec.model, spec.gpu)
    options, placement = build_options(spec)
    slo = Slo(spec.slo.ttft_s, spec.slo.tbt_s, spec.slo.scale)
    win = windows(frame, spec.workload.window_s, spec.workload.length_stat, spec.workload.rate_scale)
    if len(win) > spec.workload.max_windows:
        raise ValueError(
            f"the trace has {len(win)} windows of {spec.workload.window_s:g} s, more than max_windows "
            f"{spec.workload.max_windows}: use longer windows"
        )
    cache: dict = {}
    rows = []
    for i, w in enumerate(win.itertuples(index=False)):
        for phase in ("prefill", "decode"):
            ctx = w.length if phase == "prefill" else decode_context(options, w.length, w.out_tokens)
            key = _point_key(phase, w.qps, ctx, w.out_tokens)
            if key not in cache:
                cache[key] = plan_point(profile, Workload(*key), slo, options, placement)
            rows.append({"start_s": w.start_s, "phase": phase, "key": key})
        report(0.6 * (i + 1) / max(1, len(win)), f"window {i + 1}/{len(win)} ({len(cache)} distinct points)")
    totals = _aggregate(rows, cache, spec.workload.window_s, profile, slo, options, win)
    timeline = [
        {
            "start_s": r["start_s"],
            "phase": r["phase"],
            "qps": cache[r["key"]]["qps"],
            "length": cache[r["key"]]["length"],
            "operator_level_gpus": cache[r["key"]]["operator_level"]["gpus"],
            "default_stream_gpus": cache[r["key"]]["default_stream"]["gpus"],
            "model_level_gpus": cache[r["key"]]["model_level"]["gpus"],
            "feasible": cache[r["key"]]["feasible"],
            "fallback": cache[r["key"]].get("fallback", False),
        }
        for r in rows
    ]
    typical = {
        "qps": float(win["qps"].mean()),
        "length": float(np.average(win["length"], weights=win["qps"])),
        "out_tokens": float(np.average(win["out_tokens"], weights=win["qps"])),
    }
    result = {
        "model": spec.model,
        "gpu": spec.gpu,
        "profile_sources": profile.sources,
        "derived_profile": profile.derived,
        "windows": int(len(win)),
        "window_s": spec.workload.window_s,
        "distinct_points": len(cache),
        "typical": typical,
        "totals": totals,
        "timeline": timeline,
        "infeasible_windows": sum(1 for r in rows if not cache[r["key"]]["feasible"]),
        "infeasible_reason": next((cache[r["key"]]["reason"] for r in rows if not cache[r["key"]]["feasible"]), ""),
    }
    if spec.sweeps:
        report(0.65, "QPS and length sweeps")
        result["sweeps"] = sweeps(profile, slo, options, placement, typical, spec.ilp, spec.ilp_time_limit_s, report)
    # the heaviest window, in full detail (configs, placement, per-operator sojourns)
    peak = max((r for r in rows if r["phase"] == "prefill"), key=lambda r: cache[r["key"]]["qps"])
    result["peak_detail"] = plan_point(profile, Workload(*peak["key"]), slo, options, placement, detail=True)
    result["runtime_s"] = time.perf_counter() - t0
    report(1.0, "done")
    return finite(result)


def finite(obj):
    """The result with every non-finite float (an unstable queue's infinite wait) as None: valid JSON."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(v) for v in obj]
    return obj


def _aggregate(rows, cache, window_s, profile, slo, options, win) -> dict:
    out: dict = {}
    for phase in ("prefill", "decode"):
        # totals over the windows both strategies can serve within the SLO; the others are counted, not summed
        every = [cache[r["key"]] for r in rows if r["phase"] == phase]
        prow = [p for p in every if p["feasible"]]
        agg = {s: {"gpu_s": 0.0, "energy_j": 0.0, "energy_device_j": 0.0, "memory_gb_s": 0.0} for s in STRATEGIES}
        agg["infeasible_windows"] = len(every) - len(prow)
        agg["fallback_windows"] = sum(1 for p in prow if p.get("fallback"))
        agg["windows"] = len(prow)
        agg["infeasible_reason"] = next((p["reason"] for p in every if not p["feasible"]), "")
        for p in prow:
            for s in ("operator_level", "default_stream", "model_level"):
                row = p[s]
                agg[s]["gpu_s"] += row["gpus"] * window_s
                agg[s]["energy_j"] += (row.get("energy_eq9_w") or 0.0) * window_s
                agg[s]["energy_device_j"] += (row.get("energy_device_w") or 0.0) * window_s
                agg[s]["memory_gb_s"] += (row.get("memory_gb") or 0.0) * window_s
        # static P95: the model-level replica count of the 95th-percentile window, held all the time
        qs = np.array([p["qps"] for p in prow])
        q95 = float(np.quantile(qs, 0.95)) if len(qs) else 0.0
        ref = min(prow, key=lambda p: abs(p["qps"] - q95)) if prow else None
        if ref is not None:
            ev = Evaluator(profile, Workload(phase, ref["qps"], ref["length"], ref["out_tokens"]), options)
            ml = model_level(ev, slo.target(ev))
            agg["static_p95"]["gpu_s"] = ml.gpus * window_s * len(prow)
            agg["static_p95"]["energy_j"] = None  # Eq. 9 attributes energy per request: undefined for idle capacity
            agg["static_p95"]["energy_device_j"] = None
            agg["static_p95"]["memory_gb_s"] = ml.memory_bytes / 1e9 * window_s * len(prow)
            agg["static_p95"]["replicas"] = ml.replicas
            agg["static_p95"]["qps_p95"] = q95
            busy = sum(p["model_level"]["gpus"] for p in prow) / max(1, len(prow) * max(ml.gpus, 1))
            agg["static_p95"]["utilisation"] = busy
        base = agg["model_level"]
        if not prow:
            agg["static_p95"]["energy_j"] = agg["static_p95"]["energy_device_j"] = None
        for s in ("operator_level", "default_stream", "static_p95"):
            agg[s]["savings_vs_model_level"] = {
                k: (1.0 - agg[s][k] / base[k]) if (base[k] and agg[s][k] is not None) else None
                for k in ("gpu_s", "energy_j", "energy_device_j", "memory_gb_s")
            }
        out[phase] = agg
    return out


def sweeps(profile, slo, options, placement, typical, with_ilp: bool, ilp_limit: float, report=None) -> dict:
    report = report or (lambda f, m="": None)
    length = _round_len(typical["length"])
    out_tokens = _round_sig(typical["out_tokens"])
    qps_rows, len_rows, phase_rows = [], [], []
    for i, q in enumerate(QPS_SWEEP):
        p = plan_point(profile, Workload("prefill", q, length), slo, options, placement)
        row = _sweep_row(p)
        if with_ilp:
            ev = Evaluator(profile, Workload("prefill", q, length), options)
            ilp = solve_ilp(ev, slo.target(ev), time_limit_s=ilp_limit)
            row["ilp"] = ilp.to_dict()
            row["greedy_cost"] = p["stage1"]["cost"]
        qps_rows.append(row)
        report(0.65 + 0.2 * (i + 1) / len(QPS_SWEEP), f"QPS sweep {q}")
    q0 = max(1.0, _round_sig(typical["qps"]))
    for L in LENGTH_SWEEP:
        len_rows.append(_sweep_row(plan_point(profile, Workload("prefill", q0, L), slo, options, placement)))
    report(0.95, "length sweep")
    for phase in ("prefill", "decode"):
        ctx = length if phase == "prefill" else decode_context(options, length, out_tokens)
        phase_rows.append(
            _sweep_row(plan_point(profile, Workload(phase, q0, ctx, out_tokens), slo, options, placement))
        )
    return {"qps": qps_rows, "length": len_rows, "phase": phase_rows, "at": {"length": length, "qps": q0}}


def _sweep_row(p: dict) -> dict:
    row = {
        "phase": p["phase"],
        "qps": p["qps"],
        "length": p["length"],
        "feasible": p["feasible"],
        "model_level_gpus": p["model_level"]["gpus"],
        "operator_level_gpus": p["operator_level"]["gpus"],
        "default_stream_gpus": p["default_stream"]["gpus"],
        "model_level_cost": p["model_level"]["cost"],
        "operator_level_cost": p["operator_level"]["cost"],
    }
    for s in ("operator_level", "default_stream"):
        row[f"{s}_savings"] = p[s].get("savings")
    return row
