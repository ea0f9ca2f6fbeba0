"""Simulate-and-fit: the physics model's efficiency coefficients of one GPU type from benchmark runs.

The coefficients (``Efficiency``: eta_mem, eta_flop, layer_s, allreduce_s, client_s; step_s stays 0) are found
by Nelder-Mead on their logarithms, minimising the mean absolute log ratio simulated / measured of the stage E2E
means plus half that of the stage TTFT means, over the training runs' scored (not overloaded) stages. Each
evaluation re-simulates every training stage (``duration_scale`` of each stage, one seed) with the engine; the
result is then checked on full-length stages over several seeds by ``validate``. Nothing is fitted per run:
one set of coefficients serves every model on the GPU type.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from scipy.optimize import minimize

from planner.benchmarks.core.errors import BenchmarkError
from planner.benchmarks.core.resim import simulate_run
from planner.benchmarks.core.schema import BenchmarkRun
from planner.benchmarks.core.validate import compare, pooled, stage_overloaded
from planner.catalogue.physics import Efficiency

START = Efficiency(eta_mem=0.85, eta_flop=0.6, layer_s=50e-6, allreduce_s=10e-6, client_s=0.008, eta_link=0.5)
FITTED = ("eta_mem", "eta_flop", "layer_s", "allreduce_s", "client_s", "eta_link")
BOUNDS = {"eta_mem": (0.05, 3.0), "eta_flop": (0.05, 3.0), "layer_s": (1e-7, 1e-3), "allreduce_s": (1e-7, 1e-3),
          "client_s": (1e-5, 0.5), "eta_link": (0.02, 1.0)}


def _eff(x: np.ndarray, base: Efficiency, free=FITTED) -> Efficiency:
    vals = {}
    for name, v in zip(free, x, strict=True):
        lo, hi = BOUNDS[name]
        vals[name] = float(min(max(math.exp(v), lo), hi))
    return replace(base, **vals)


def loss(runs: list[BenchmarkRun], eff: Efficiency, *, duration_scale: float, seeds=(0,),
         include_overloaded: bool = False) -> float:
    terms = []
    for run in runs:
        for stage, sim in zip(run.stages, simulate_run(run, eff, seeds=seeds, duration_scale=duration_scale),
                              strict=False):
            if stage_overloaded(stage) and not include_overloaded:
                continue
            for meas, simv, w in ((stage.e2e.mean, sim.e2e["mean"], 1.0), (stage.ttft.mean, sim.ttft["mean"], 0.5)):
                if not math.isfinite(simv) or simv <= 0:
                    terms.append(w * 10.0)
                else:
                    terms.append(w * min(abs(math.log(simv / meas)), 10.0))
    return float(np.mean(terms)) if terms else 0.0


def fit(runs: list[BenchmarkRun], *, start: Efficiency = START, duration_scale: float = 0.2, maxiter: int = 80,
        progress=None, include_overloaded: bool = False, free=FITTED) -> tuple[Efficiency, dict]:
    """Fit the efficiencies on ``runs``; returns them and a report (loss, evaluations). ``include_overloaded``:
    fit queue-dominated stages too (a replay of one saturated run, where the queue is what is measured). ``free``:
    the coefficients fitted (the others stay as in ``start``), e.g. a model's own eta_mem and eta_flop on top of
    its GPU type's coefficients."""
    if not include_overloaded:
        runs = [r for r in runs if any(not stage_overloaded(s) for s in r.stages)]
    if not runs:
        raise BenchmarkError("no run with a scored (not overloaded) stage to calibrate on", field="run_ids",
                             hint="add runs whose stages the server kept up with (few failures, TTFT well below "
                                  "E2E)")
    x0 = np.array([math.log(getattr(start, n)) for n in free])
    count = {"n": 0}

    def objective(x):
        count["n"] += 1
        if progress is not None:
            progress(min(count["n"] / (maxiter * 1.5), 0.99), f"evaluation {count['n']}")
        return loss(runs, _eff(x, start, free), duration_scale=duration_scale, include_overloaded=include_overloaded)

    # a wide first simplex (each coefficient x2 in turn), then one restart from the result: Nelder-Mead stalls
    # in the flat valleys where two overheads trade off
    res = None
    for step in (0.7, 0.3):
        simplex = np.vstack([x0] + [x0 + step * np.eye(len(x0))[i] for i in range(len(x0))])
        res = minimize(objective, x0, method="Nelder-Mead",
                       options={"maxiter": maxiter, "xatol": 0.01, "fatol": 1e-4, "initial_simplex": simplex})
        x0 = res.x
    eff = _eff(res.x, start, free)
    return eff, {"loss": float(res.fun), "evaluations": count["n"], "runs": [r.name for r in runs],
                 "duration_scale": duration_scale}


def validate(runs: list[BenchmarkRun], eff: Efficiency, *, seeds=(0, 1, 2), duration_scale: float = 1.0) -> dict:
    rows = []
    for run in runs:
        rows.extend(compare(run, simulate_run(run, eff, seeds=seeds, duration_scale=duration_scale)))
    return {"rows": rows, "pooled": pooled(rows), "efficiency": eff.to_dict()}


def leave_one_out(runs: list[BenchmarkRun], *, group=lambda r: r.name, seeds=(0, 1, 2), duration_scale: float = 1.0,
                  fit_scale: float = 0.2, maxiter: int = 80, log=print) -> dict:
    """Calibrate on every group but one, predict the one left out (groups: experiments by default)."""
    groups = sorted({group(r) for r in runs})
    rows, fits = [], {}
    for g in groups:
        train = [r for r in runs if group(r) != g]
        test = [r for r in runs if group(r) == g]
        eff, info = fit(train, duration_scale=fit_scale, maxiter=maxiter)
        fits[g] = {"efficiency": eff.to_dict(), **info}
        for run in test:
            got = compare(run, simulate_run(run, eff, seeds=seeds, duration_scale=duration_scale))
            for r in got:
                r["held_out"] = g
            rows.extend(got)
            if log:
                for r in got:
                    log(f"{g}: stage {r['stage']} E2E {r['error_pct']['e2e_mean']:.1f} % TTFT "
                        f"{r['error_pct']['ttft_mean']:.1f} %{' (overloaded)' if r['overloaded'] else ''}")
    return {"rows": rows, "pooled": pooled(rows), "fits": fits}
