"""CPU seconds of one capacity-search probe per strategy on the bench day, with a digest of its result.

    nice -n 10 .venv/bin/python tests/benchmarks/bench_policy_probe.py [--hours 1] [--seed 1] [--count N]
        [--strategies static,reactive-unified,lt-ua,preserve.scaler-oracle,chiron.default] [--repeat 1]
        [--root CHECKOUT]

A probe is built exactly as the capacity search builds it (``planner.capacity.core.driver.run_probe_inputs`` on the
bench day of ``bench_capacity_search.bench_scenario``: the first ``--hours`` hours, the deployments' KV bytes per
token): the strategy's mode (static for ``static``, the autoscalers' floor otherwise) and the search's first fleet
(``estimate_start``: the peak 15-minute load / theta for static, the mean for a floor: the fleets its recorded digests were taken at), or ``--count`` instances per
(region, model). The probe runs in this process; its CPU time is ``time.process_time`` around the probe (the
workload build, the simulation and the reduction), best of ``--repeat``.

The digest hashes what the simulation returned (the summary without wall-clock fields, the scaling events and every
per-request array: instance, TTFT, E2E, ...) and the probe's outcome (without its wall time), so two checkouts that
print the same digest gave bit-identical probes (``--root`` runs another checkout's engine, policies and search
with this script). Prints one line per strategy and, last, one JSON object.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

VOLATILE = {"wall_s", "requests_per_wall_s", "engine_build"}
STRATEGIES = "static,reactive-unified,lt-ua,preserve.scaler-oracle,chiron.default"


def result_digest(result, outcome: dict) -> str:
    import numpy as np

    h = hashlib.sha256()
    h.update(json.dumps({k: v for k, v in result.summary.items() if k not in VOLATILE}, sort_keys=True,
                        default=str).encode())
    h.update(json.dumps(result.scaling_events, sort_keys=True, default=str).encode())
    for key in sorted(result.requests):
        a = np.asarray(result.requests[key])
        h.update(key.encode() + str(a.dtype).encode() + a.tobytes())
    h.update(json.dumps({k: v for k, v in outcome.items() if k != "wall_s"}, sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


def probe_of(base: dict, strategy: str, seed: int, count: int | None) -> dict:
    """The search's inputs of the first probe of ``strategy``: its mode and the search's start fleet."""
    from planner.capacity.core.driver import AUTOSCALED_MODE, estimate_start, strategy_ref
    from planner.capacity.core.probe import groups_of
    from planner.comparisons.core.bundles import bundle_names
    from planner.comparisons.core.runner import engine_scenario_dict, load_workload, with_seed
    from simulations.engine import parse_scenario

    ref = strategy_ref(strategy, set(bundle_names()))
    mode = "static" if ref["strategy"] == "static" else AUTOSCALED_MODE
    if count is not None:
        fleet = {g: count for g in groups_of(base)}
    else:
        first = with_seed(base, seed)
        wl = load_workload(first, parse_scenario(engine_scenario_dict(first, {"strategy": "static", "key": "s"})))
        fleet = estimate_start(base, wl, statistic="peak" if mode == "static" else "mean")
    return {"strategy": ref, "mode": mode, "deployments": {}, "pools": {}, "fleet": fleet, "seed": seed, "load": 1.0}


def run_one(base: dict, inputs: dict) -> tuple[float, str, dict]:
    """One probe: (CPU seconds, digest, outcome). The engine's result is caught where the probe calls simulate."""
    import planner.capacity.core.probe as probe_module
    from planner.capacity.core.driver import run_probe_inputs

    caught = []
    simulate = probe_module.simulate

    def catching(*a, **k):
        caught.append(simulate(*a, **k))
        return caught[-1]

    probe_module.simulate = catching
    try:
        cpu = time.process_time()
        out = run_probe_inputs(base, inputs)
        cpu = time.process_time() - cpu
    finally:
        probe_module.simulate = simulate
    return cpu, result_digest(caught[-1], out), out


def main() -> int:
    os.environ.pop("DJANGO_SETTINGS_MODULE", None)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=None, help="instances per (region, model) (default: the search's start)")
    ap.add_argument("--strategies", default=STRATEGIES)
    ap.add_argument("--repeat", type=int, default=1, help="runs per strategy; the CPU figure is the best")
    ap.add_argument("--root", default=str(ROOT), help="checkout whose engine, policies and search run")
    args = ap.parse_args()
    root = Path(args.root).resolve()
    sys.path.insert(0, str(root))
    sys.path.insert(0, str(root / "tests" / "benchmarks"))
    import warnings

    warnings.filterwarnings("ignore")
    from bench_capacity_search import bench_scenario

    from simulations.engine.accel import BUILD

    base = bench_scenario(args.hours)
    out = {"root": str(root), "hours": args.hours, "seed": args.seed, "count": args.count, "load_before": os.getloadavg(),
           "strategies": {}}
    for name in args.strategies.split(","):
        inputs = probe_of(base, name, args.seed, args.count)
        runs = [run_one(base, inputs) for _ in range(args.repeat)]
        digests = {d for _, d, _ in runs}
        if len(digests) != 1:
            raise RuntimeError(f"{name}: repeated probes differ: {sorted(digests)}")
        cpu = min(c for c, _, _ in runs)
        o = runs[0][2]
        out["strategies"][name] = {"cpu_s": round(cpu, 3), "digest": digests.pop(), "mode": inputs["mode"],
                                   "fleet_instances": sum(inputs["fleet"].values()), "requests": o["requests"],
                                   "cost_usd": o["cost_usd"]}
        print(f"{name:24s} {inputs['mode']:6s} {sum(inputs['fleet'].values()):4d} inst  {cpu:8.2f} CPU-s  "
              f"digest {out['strategies'][name]['digest']}  ({o['requests']} requests)", flush=True)
    out["load_after"] = os.getloadavg()
    out["engine_build"] = BUILD["kind"]
    reactive = out["strategies"].get("reactive-unified", {}).get("cpu_s")
    if reactive:
        out["x_reactive"] = {k: round(v["cpu_s"] / reactive, 2) for k, v in out["strategies"].items()}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
