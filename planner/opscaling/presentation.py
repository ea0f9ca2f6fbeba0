"""What an operator-level plan's result shows: the totals table, the fallback note, the figures, the greedy's gap
to the ILP and the busiest window. Used by the operator-level plan page and the operator-level comparison page."""

from __future__ import annotations

from planner.opscaling.charts import all_figures


def _ilp_gap(result: dict) -> dict | None:
    """Greedy (Alg. 1) against the ILP optimum on the plan's QPS sweep."""
    rows = [r for r in (result.get("sweeps") or {}).get("qps", []) if (r.get("ilp") or {}).get("cost")]
    if not rows:
        return None
    gaps = [(r["greedy_cost"] - r["ilp"]["cost"]) / r["ilp"]["cost"] for r in rows]
    worst = max(range(len(rows)), key=lambda i: gaps[i])
    return {
        "points": len(rows),
        "mean": sum(gaps) / len(gaps),
        "worst": gaps[worst],
        "worst_qps": rows[worst]["qps"],
        "all_optimal": all(r["ilp"]["status"] == "optimal" for r in rows),
    }


def _in_graph_order(config: dict) -> list[tuple[str, dict]]:
    """PostgreSQL's jsonb sorts keys: put the operators back in dataflow order."""
    from planner.opscale.profiles import OPS

    return sorted(config.items(), key=lambda kv: OPS.index(kv[0]) if kv[0] in OPS else len(OPS))


def _fallback_note(spec: dict, totals: dict) -> str:
    on = ((spec or {}).get("options") or {}).get("fallback_model_level", True)
    if not on:
        return (
            "Fallback to the model-level placement: off (the paper's algorithm as printed), so an operator-level "
            "window may need more GPUs than model-level."
        )
    used = {ph: (totals.get(ph) or {}).get("fallback_windows", 0) for ph in ("prefill", "decode")}
    return (
        "Fallback to the model-level placement: on (the default). A window whose operator-level placement needs "
        "more GPUs than model-level (or misses the SLO where model-level meets it) uses the model-level placement: "
        f"{used['prefill']} prefill and {used['decode']} decode windows did."
    )


def _rows(totals: dict) -> list[dict]:
    rows = []
    for phase in ("prefill", "decode"):
        for strategy in ("model_level", "operator_level", "default_stream", "static_p95"):
            agg = totals.get(phase, {}).get(strategy)
            if agg:
                rows.append({
                    "phase": phase, "strategy": strategy, "gpu_h": agg["gpu_s"] / 3600.0,
                    "energy_kwh": None if agg.get("energy_j") is None else agg["energy_j"] / 3.6e6,
                    "memory_gb_h": agg["memory_gb_s"] / 3600.0, "savings": agg.get("savings_vs_model_level"),
                    "fallback_windows": totals[phase].get("fallback_windows", 0) if strategy == "operator_level" else 0,
                    "windows": totals.get(phase, {}).get("windows"),
                })
    return rows


def catalogue_named(result: dict) -> dict:
    """The result with its model and GPU under the hardware catalogue's names (llama3.1-8b, a100-80gb), as every
    other page names them; the profiles' own names (llama-3-8b, a100) where the catalogue has none."""
    from planner.opscale.spec import CATALOGUE_GPUS, CATALOGUE_MODELS

    models = {v: k for k, v in CATALOGUE_MODELS.items()}
    gpus = {v: k for k, v in CATALOGUE_GPUS.items()}
    if not result:
        return result
    return {**result, "model": models.get(result.get("model"), result.get("model")),
            "gpu": gpus.get(result.get("gpu"), result.get("gpu"))}


def result_context(spec: dict, result: dict | None) -> dict:
    result = result or {}
    totals = result.get("totals", {})
    return {
        "result": catalogue_named(result), "rows": _rows(totals),
        "fallback_note": _fallback_note(spec, totals) if result else "",
        "figures": all_figures(result) if result else None,
        "peak": result.get("peak_detail"), "ilp_gap": _ilp_gap(result),
        "peak_config": _in_graph_order((result.get("peak_detail") or {}).get("operator_level", {}).get("config", {})),
    }
