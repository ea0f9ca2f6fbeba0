"""One planning point: operator-level (Alg. 1 + Alg. 2, with and without GPU sharing) against model-level
autoscaling under the same queueing model, with GPUs, memory and energy savings. Django-free."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from planner.opscale.energy import device_power_w, eq9_power_w
from planner.opscale.model import Evaluator, Options, Workload
from planner.opscale.placement import PlacementOptions, place
from planner.opscale.profiles import OperatorProfile
from planner.opscale.scaling import greedy, model_level


@dataclass(frozen=True)
class Slo:
    """TTFT (prefill) and TBT (decode) targets: absolute seconds, or ``scale`` x the unloaded latency of one
    request (b = 1, no queueing) when the absolute value is None. The paper publishes no SLO values."""

    ttft_s: float | None = None
    tbt_s: float | None = None
    scale: float = 5.0

    def target(self, ev: Evaluator) -> float:
        value = self.ttft_s if ev.workload.phase == "prefill" else self.tbt_s
        return value if value is not None else self.scale * ev.unloaded_latency(ev.options.model_tp)


def _saving(ours: float, base: float) -> float | None:
    if not base or not math.isfinite(base) or not math.isfinite(ours):
        return None
    return 1.0 - ours / base


def _fallback_row(ev: Evaluator, ml, shared, stage1_feasible: bool, ml_row: dict, detail: bool) -> dict:
    """The operator-level row when the product falls back to the model-level placement: the model-level plan's
    GPUs, memory and energy (so every saving is 0), with what the operator-level placement would have needed."""
    if not (shared.feasible and stage1_feasible):
        why = "the operator-level plan misses the SLO where model-level meets it"
    else:
        why = f"the operator-level placement needs {shared.gpus} GPUs, model-level {ml.gpus}"
    row = {
        "gpus": ml.gpus,
        "k_base": ml.replicas,
        "new_devices": 0,
        "cost": ml_row["cost"],
        "latency_s": ml.latency_s,
        "feasible": True,
        "memory_gb": ml.memory_bytes / 1e9,
        "energy_eq9_w": ml_row["energy_eq9_w"],
        "energy_device_w": ml_row["energy_device_w"],
        "reason": f"fell back to the model-level placement: {why}",
        "fallback": True,
        "operator_level_gpus": shared.gpus,
        "savings": {k: 0.0 for k in ("gpus", "memory", "energy", "energy_device", "cost")},
    }
    if detail:
        cfg = ml.config(ev.ops)
        row["config"] = {v: {"r": r, "b": b, "p": p} for v, (r, b, p) in cfg.items()}
        row["placement"] = [
            {"index": i, "base": True, "replicas": [f"{v}#{i // ml.tp}" for v in ev.ops]} for i in range(ml.gpus)
        ]
        row["sojourn_s"] = ev.sojourns(cfg)
    return row


def _placement_row(ev: Evaluator, pl, stage1_feasible: bool, ml, ml_row: dict, detail: bool) -> dict:
    """One placement's row: GPUs, cost, latency, memory, energy, and its savings against the model level."""
    cfg = pl.config
    mem = ev.total_memory(cfg)
    row = {
        "gpus": pl.gpus,
        "k_base": pl.k_base,
        "new_devices": pl.new_devices,
        "cost": ev.cost(cfg),
        "latency_s": pl.latency_s,
        "feasible": bool(pl.feasible and stage1_feasible),
        "memory_gb": mem / 1e9,
        "energy_eq9_w": eq9_power_w(ev, cfg, pl.factors),
        "energy_device_w": device_power_w(ev, cfg, pl.gpus),
        "reason": pl.reason,
        "fallback": False,
    }
    if ml.feasible:
        row["savings"] = {
            "gpus": _saving(pl.gpus, ml.gpus),
            "memory": _saving(mem, ml.memory_bytes),
            "energy": _saving(row["energy_eq9_w"], ml_row["energy_eq9_w"]),
            "energy_device": _saving(row["energy_device_w"], ml_row["energy_device_w"]),
            "cost": _saving(row["cost"], ml_row["cost"]),
        }
    if detail:
        row["config"] = {v: {"r": r, "b": b, "p": p} for v, (r, b, p) in cfg.items()}
        row["placement"] = pl.to_dict()["devices"]
        row["sojourn_s"] = ev.sojourns(cfg, pl.factors)
    return row


def plan_point(
    profile: OperatorProfile,
    workload: Workload,
    slo: Slo,
    options: Options | None = None,
    placement: PlacementOptions | None = None,
    *,
    detail: bool = False,
) -> dict:
    options = options or Options()
    placement = placement or PlacementOptions(sharing=profile.gpu.supports_sharing)
    ev = Evaluator(profile, workload, options)
    slo_s = slo.target(ev)
    t0 = time.perf_counter()
    ml = model_level(ev, slo_s)
    st1 = greedy(ev, slo_s)
    t1 = time.perf_counter()
    shared = place(ev, st1.config, slo_s, placement)
    t2 = time.perf_counter()
    alone = place(ev, st1.config, slo_s, PlacementOptions(**{**placement.__dict__, "sharing": False}))
    out = {
        "phase": workload.phase,
        "qps": workload.qps,
        "length": workload.length,
        "out_tokens": workload.out_tokens,
        "slo_s": slo_s,
        "feasible": bool(ml.feasible and st1.feasible),
        "reason": "; ".join(
            f"{who}: {why}"
            for who, ok, why in (("model-level", ml.feasible, ml.reason), ("operator-level", st1.feasible, st1.reason))
            if not ok
        ),
        "model_level": {
            "replicas": ml.replicas,
            "batch": ml.batch,
            "gpus": ml.gpus,
            "cost": ml.replicas * ml.tp * len(ev.ops),
            "latency_s": ml.latency_s,
            "memory_gb": ml.memory_bytes / 1e9,
            "feasible": ml.feasible,
            "reason": ml.reason,
        },
        "stage1": {
            "cost": st1.cost,
            "latency_s": st1.latency_s,
            "feasible": st1.feasible,
            "iterations": st1.iterations,
            "reason": st1.reason,
            "runtime_s": t1 - t0,
        },
        "placement_runtime_s": t2 - t1,
    }
    if ml.feasible:
        ml_cfg = ml.config(ev.ops)
        ml_eq9 = eq9_power_w(ev, ml_cfg)
        ml_dev = device_power_w(ev, ml_cfg, ml.gpus)
        out["model_level"].update(energy_eq9_w=ml_eq9, energy_device_w=ml_dev)
    fell_back = bool(
        options.fallback_model_level
        and ml.feasible
        and (shared.gpus > ml.gpus or not (shared.feasible and st1.feasible))
    )
    out["fallback"] = fell_back
    if fell_back:
        out["feasible"] = True
    for name, pl in (("operator_level", shared), ("default_stream", alone)):
        if name == "operator_level" and fell_back:
            out[name] = _fallback_row(ev, ml, shared, st1.feasible, out["model_level"], detail)
            continue
        out[name] = _placement_row(ev, pl, st1.feasible, ml, out["model_level"], detail)
    return out
