"""The floor: the engine's batching model on the same hour in one tight compiled loop, beside the engine.

    python tests/benchmarks/bench_floor.py                    # best of 3, the code trace's hour x 19,000 requests
    python tests/benchmarks/bench_floor.py --requests 88190 --repeat 5

Workload: the code trace's hour replicated to ``--requests`` requests (as bench_startup.py), on the code anchor's
fleet (fixtures/scenarios/code_anchor.json: 8 fixed Llama-2-70B A100 TP8 instances, FCFS, token JSQ). The engine:
``simulate(scenario, workload)``, and ``Simulator.run`` alone on a fresh simulator, process CPU time. The floor:
``support/floor_loop.pyx`` (compiled with Cython on first use, with the machine's C compiler), the same
prefill / decode latency model, batch limits and KV capacity in one loop of typed arrays, without preemption,
policies, metrics or per-request bookkeeping beyond first-token and completion times (its docstring states the
model). Both runs must complete every request; the script prints their mean TTFT and E2E side by side so the
reader sees how close the two models are. Goal (the engine architecture issue): engine within 2x of the floor.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _floor_module():
    import numpy as np
    import pyximport

    pyximport.install(setup_args={"include_dirs": np.get_include()}, language_level=3,
                      build_dir=str(Path(tempfile.gettempdir()) / "fleet-planner-floor"))
    from support import floor_loop

    return floor_loop


def run_engine(scenario, workload) -> dict:
    """``simulate()`` (the run, its result, energy and validity) and, separately, ``Simulator.run`` alone."""
    from simulations.engine import simulate
    from simulations.engine.simulator.loop import Simulator

    c0 = time.process_time()
    result = simulate(scenario, workload)
    cpu = time.process_time() - c0
    sim = Simulator(scenario, workload)
    c0 = time.process_time()
    sim.run()
    run_cpu = time.process_time() - c0
    s = result.summary
    return {"simulate_cpu_s": cpu, "run_cpu_s": run_cpu, "completed": s["completed"],
            "ttft_mean_s": s["ttft"]["mean"], "e2e_mean_s": s["e2e"]["mean"], "events": s["events"],
            "preemptions": s.get("preemptions", 0)}


def run_floor(floor, scenario, workload) -> dict:
    import numpy as np

    dep = scenario.fleet.endpoints[0].deployment
    n_inst = sum(e.initial for e in scenario.fleet.endpoints)
    args = (np.ascontiguousarray(workload.arrival_s, dtype=np.float64),
            np.ascontiguousarray(workload.input_tokens, dtype=np.int64),
            np.ascontiguousarray(workload.output_tokens, dtype=np.int64),
            int(n_inst), int(dep.max_batch_size), int(dep.max_batch_tokens), int(dep.kv_capacity_tokens),
            dep.prefill.c0, dep.prefill.c1, dep.prefill.c2, dep.decode.c0, dep.decode.c_batch, dep.decode.c_ctx)
    c0 = time.process_time()
    t_first, t_done, iterations = floor.run_floor(*args)
    cpu = time.process_time() - c0
    ok = ~np.isnan(t_done)
    return {"cpu_s": cpu, "completed": int(ok.sum()), "iterations": int(iterations),
            "ttft_mean_s": float(np.mean(t_first[ok] - workload.arrival_s[ok])),
            "e2e_mean_s": float(np.mean(t_done[ok] - workload.arrival_s[ok]))}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=19_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    from bench_startup import write_hour

    from simulations.engine import BUILD, build_workload, parse_scenario

    floor = _floor_module()
    scenario = parse_scenario(json.loads((ROOT / "fixtures" / "scenarios" / "code_anchor.json").read_text()))
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "hour.parquet"
        write_hour(args.requests, trace)
        workload = build_workload(scenario, trace=trace)
    engine_runs = [run_engine(scenario, workload) for _ in range(args.repeat)]
    floor_runs = [run_floor(floor, scenario, workload) for _ in range(args.repeat)]
    engine = min(engine_runs, key=lambda r: r["simulate_cpu_s"])
    best_run = min(r["run_cpu_s"] for r in engine_runs)
    fl = min(floor_runs, key=lambda r: r["cpu_s"])
    return {"engine_build": BUILD["kind"], "requests": len(workload), "repeat": args.repeat,
            "load_average": os.getloadavg(),
            "engine": {**engine, "run_cpu_s_best": best_run}, "floor": fl,
            "ratio_simulate_over_floor": round(engine["simulate_cpu_s"] / fl["cpu_s"], 2),
            "ratio_run_over_floor": round(best_run / fl["cpu_s"], 2), "target_ratio": 2.0,
            "met": engine["simulate_cpu_s"] / fl["cpu_s"] <= 2.0}


if __name__ == "__main__":
    print(json.dumps(main()))
