"""Measured vs simulated, per run and stage: TTFT and E2E (mean, p90, p99), the per-token time
(E2E - TTFT) / (output tokens - 1), absolute percentage errors and pooled medians.

A stage is *overloaded* when more than 10 % of its requests failed or its mean TTFT exceeds half its mean E2E
(requests queue longer than they run): such stages are shown but left out of the score, since a simulator
should show the overload, not match the tail of a collapsing server.
"""

from __future__ import annotations

import math

import numpy as np

from planner.benchmarks.core.resim import StageSim
from planner.benchmarks.core.schema import BenchmarkRun, StageResult

METRICS = ("ttft_mean", "ttft_p90", "ttft_p99", "e2e_mean", "e2e_p90", "e2e_p99", "per_token")


def stage_overloaded(stage: StageResult) -> bool:
    return stage.failure_rate > 0.10 or stage.ttft.mean > 0.5 * stage.e2e.mean


def measured_per_token(run: BenchmarkRun, stage: StageResult) -> float | None:
    """(E2E mean - TTFT mean) / (output tokens - 1), with the tokens the server generated (the configured output
    length for shared-prefix runs: ignore_eos), else the client's mean output length."""
    sp = run.workload.shared_prefix
    out = sp.output_len if sp is not None else stage.output_len_mean
    if not out or out <= 1:
        return None
    return (stage.e2e.mean - stage.ttft.mean) / (out - 1)


def ape(sim: float | None, meas: float | None) -> float | None:
    if sim is None or meas is None or not meas or not math.isfinite(sim):
        return None
    return abs(sim - meas) / meas * 100.0


def compare(run: BenchmarkRun, sims: list[StageSim]) -> list[dict]:
    rows = []
    by_index = {s.index: s for s in sims}
    for stage in run.stages:
        sim = by_index.get(stage.index)
        if sim is None:
            continue
        meas = {"ttft_mean": stage.ttft.mean, "ttft_p90": stage.ttft.p90, "ttft_p99": stage.ttft.p99,
                "e2e_mean": stage.e2e.mean, "e2e_p90": stage.e2e.p90, "e2e_p99": stage.e2e.p99,
                "per_token": measured_per_token(run, stage)}
        simv = {"ttft_mean": sim.ttft["mean"], "ttft_p90": sim.ttft["p90"], "ttft_p99": sim.ttft["p99"],
                "e2e_mean": sim.e2e["mean"], "e2e_p90": sim.e2e["p90"], "e2e_p99": sim.e2e["p99"],
                "per_token": sim.per_token}
        rows.append({
            "run": run.name, "model": run.engine.model, "gpu": run.engine.gpu,
            "tp": run.engine.tensor_parallel_size, "stage": stage.index, "rate": stage.rate,
            "overloaded": stage_overloaded(stage),
            "measured": meas, "simulated": simv,
            "error_pct": {k: ape(simv[k], meas[k]) for k in METRICS},
            "unfinished": sim.unfinished,
            # simulated prefix-cache hit rate of the stage (None: the deployment does not cache prefixes)
            "prefix_hit_rate": None if sim.prefix_hit_rate != sim.prefix_hit_rate else round(sim.prefix_hit_rate, 4),
        })
    return rows


def pooled(rows: list[dict]) -> dict:
    """Median / p90 / max absolute percentage error per metric over the scored (not overloaded) stages."""
    scored = [r for r in rows if not r["overloaded"]]
    out = {"stages_scored": len(scored), "stages_overloaded": len(rows) - len(scored)}
    for key in METRICS:
        errs = np.array([r["error_pct"][key] for r in scored if r["error_pct"][key] is not None], float)
        out[key] = ({"median": float(np.median(errs)), "p90": float(np.percentile(errs, 90)),
                     "max": float(errs.max()), "n": int(errs.size)} if errs.size else None)
    return out
