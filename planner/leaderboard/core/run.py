"""Run the leaderboard's cells: every (trace, seed, configuration) once, on a pool of processes. Django-free.

A configuration is the static baseline at one count (``("static", n)``) or a strategy at its defaults or at one
point of its tuning grid (``(strategy, point index or None)``). Each run returns the few figures the board needs:
GPU-hours, cost, energy, SLO attainment (rules.SLO, over all requests), tokens and requests.
"""

from __future__ import annotations

import functools
import os
import resource
import time
from concurrent.futures import ProcessPoolExecutor

from planner.leaderboard.core import rules, workloads


def configs(trace: str, strategies=None) -> list[tuple]:
    """Every configuration the board runs on ``trace``."""
    out: list[tuple] = [("static", n) for n in rules.STATIC_GRID]
    for name, s in rules.STRATEGIES.items():
        if strategies is not None and name not in strategies:
            continue
        if (s.get("only") and trace not in s["only"]) or trace in s.get("except", ()):
            continue
        out.extend([(name, i) for i in range(len(s["grid"]))] or [(name, None)])
    return out


def knobs_of(name: str, point) -> dict:
    if point is None:
        return {}
    s = rules.STRATEGIES[name]
    knob, value = s["knob"], s["grid"][point]
    if isinstance(knob, tuple):
        return dict(zip(knob, value, strict=True))
    return {knob: value}


def variant(name: str, point) -> dict:
    """The comparison variant (planner.comparisons.core.variants) of one configuration."""
    from planner.comparisons.core.variants import _bundle_variants

    if name == "static":
        return {"key": f"static.{point}", "strategy": "static", "scheduler": "", "knobs": {}}
    v = _bundle_variants([rules.STRATEGIES[name]["bundle"]])[0]
    v["knobs"] = {**v["knobs"], **knobs_of(name, point)}
    v["key"] = f"{name}.{'default' if point is None else point}"
    return v


@functools.lru_cache(maxsize=2)
def _frame(trace: str, seed: int, limit_s):
    return workloads.frame_for(trace, seed, limit_s)


def run_one(trace: str, seed: int, config: tuple, limit_s=None) -> dict:
    """Simulate one cell and return its figures."""
    from planner.comparisons.core.runner import engine_scenario_dict
    from planner.comparisons.core.summary import summarise
    from simulations.engine import build_workload, parse_scenario, simulate

    name, point = config
    initial = point if name == "static" else workloads.static_default(trace, limit_s)
    frame = _frame(trace, seed, limit_s)
    eng = parse_scenario(engine_scenario_dict(workloads.scenario(initial), variant(name, point)))
    result = simulate(eng, build_workload(eng, frame=frame))
    s = summarise(result, key=name, strategy=name)
    overall = (result.slo or {}).get("overall") or {}
    tot = s["totals"]
    tokens = int(frame["input_tokens"].sum() + frame["output_tokens"].sum())
    return {"trace": trace, "seed": int(seed), "strategy": name, "point": point,
            "requests": int(len(frame)), "tokens": tokens,
            "gpu_hours": tot["gpu_hours"], "cost_usd": tot["cost_usd"],
            "provisioning_gpu_hours": tot["provisioning_gpu_hours"],
            "energy_kwh": (s.get("energy") or {}).get("energy_kwh"),
            "attainment": overall.get("attainment"), "completed": int(sum(
                (t.get("completed") or 0) for t in (s.get("tiers") or {}).values())),
            "scale_events": int(tot.get("scale_out_events", 0)) + int(tot.get("scale_in_events", 0))}


def _run_chunk(task):
    trace, seed, chunk, limit_s = task
    return [run_one(trace, seed, c, limit_s) for c in chunk]


def tasks(traces, seeds, strategies=None, limit_s=None, chunk: int = 12) -> list[tuple]:
    out = []
    for trace in traces:
        cfgs = configs(trace, strategies)
        for seed in seeds:
            for i in range(0, len(cfgs), chunk):
                out.append((trace, int(seed), cfgs[i:i + chunk], limit_s))
    return out


def run_all(traces=None, seeds=None, *, strategies=None, limit_s=None, workers: int = 2, progress=None,
            sink=None) -> dict:
    """All cells; returns ``{"runs": [...], "wall_s", "cpu_s", "workers"}`` (CPU-seconds of this process and its
    pool workers, so a loaded host shows as wall > CPU / workers). ``sink(runs)`` sees every finished group."""
    traces = list(traces or rules.TRACES)
    seeds = list(seeds or rules.SEEDS)
    todo = tasks(traces, seeds, strategies, limit_s)
    t0, c0 = time.perf_counter(), _cpu()
    runs: list[dict] = []
    if workers <= 1:
        for i, t in enumerate(todo):
            runs.extend(done := _run_chunk(t))
            if sink:
                sink(done)
            if progress:
                progress(i + 1, len(todo))
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for i, chunk in enumerate(pool.map(_run_chunk, todo)):
                runs.extend(chunk)
                if sink:
                    sink(chunk)
                if progress:
                    progress(i + 1, len(todo))
    runs.sort(key=lambda r: (r["trace"], r["strategy"], -1 if r["point"] is None else r["point"], r["seed"]))
    return {"runs": runs, "wall_s": time.perf_counter() - t0, "cpu_s": _cpu() - c0, "workers": workers}


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def default_workers() -> int:
    return max(1, min(2, os.cpu_count() or 1))
