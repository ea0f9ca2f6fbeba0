"""Capacity search wall time with 1 and 2 worker processes on the bench day (3 regions x 4 models).

    nice -n 10 .venv/bin/python tests/benchmarks/bench_capacity_search.py [--hours 24] [--seeds 1,2,3]
        [--band-draws 20] [--strategies static,reactive-unified,lt-ua,preserve.scaler-oracle,chiron.default]
        [--workers 1,2]

The search is the one the workers run (planner.capacity.core.driver): every round replays the search over the
probes so far and runs the missing (fleet, seed) probes, here on a process pool of N workers (one probe per task,
as one Celery child job each), so the rounds' barriers and stragglers are the same as on Celery; the broker's and
the database's overhead are not included. ``--hours`` truncates the bench day (the first H hours, the requests
scaled with it) when the full day does not fit the machine. The bench day's deployments get their KV bytes per
token (from the model shapes, consistent with their KV capacities) because Chiron's swap-out needs them.

Prints one line per worker count and, last, one JSON object: wall_s per worker count, the speed-up, probes,
requests simulated and the answer's headline.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

# bytes of K and V per token, all layers, fp16: layers x kv heads x head dim x 2 x 2 (Bloom: MHA, hidden 14336).
# (0.9 x GPU memory - weights) / these = the fixture's kv_capacity_tokens, within 1 %.
KV_BYTES = {"llama2-70b": 80 * 8 * 128 * 4, "bloom-176b": 70 * 14336 * 4, "llama3.1-8b": 32 * 8 * 128 * 4,
            "llama3.2-3b": 28 * 8 * 128 * 4}
BASE: dict = {}


def bench_scenario(hours: float) -> dict:
    base = json.loads((ROOT / "fixtures/scenarios/bench_day.json").read_text())
    for dep in base["deployments"].values():
        dep["kv_bytes_per_token"] = float(KV_BYTES[dep["model"]])
    syn = base["workload"]["synthetic"]
    if hours < 24:
        syn["total_requests"] = int(syn["total_requests"] * hours / 24)
        syn["duration_s"] = int(hours * 3600)
    return base


def _init(base: dict) -> None:
    BASE.clear()
    BASE.update(base)


def _probe(inputs: dict) -> dict:
    from planner.capacity.core.driver import run_probe_inputs

    return run_probe_inputs(BASE, inputs)


def search(base: dict, spec, workers: int) -> tuple[float, dict, dict, int]:
    from planner.capacity.core.driver import advance, estimate_start, probe_inputs, subs_of
    from planner.comparisons.core.bundles import bundle_names
    from planner.comparisons.core.runner import engine_scenario_dict, load_workload, with_seed
    from simulations.engine import parse_scenario

    names = set(bundle_names())
    started = time.perf_counter()
    first = with_seed(base, spec.seeds[0])
    wl = load_workload(first, parse_scenario(engine_scenario_dict(first, {"strategy": "static", "key": "s"})))
    start = {s.key: estimate_start(base, wl, mode=s.mode) for s in subs_of(spec, base, names)}
    known: dict[str, dict] = {}
    rounds = 0
    with ProcessPoolExecutor(max_workers=workers, initializer=_init, initargs=(base,)) as pool:
        while True:
            state = advance(spec, base, known, start, names)
            if state.done:
                break
            rounds += 1
            pending = list(state.pending)
            for pid, out in zip(pending, pool.map(_probe, [probe_inputs(state.subs, p) for p in pending]), strict=True):
                known[pid] = out
            print(f"  workers={workers} round {rounds}: {len(pending)} probes, {len(known)} so far, "
                  f"{time.perf_counter() - started:.0f} s", flush=True)
    return time.perf_counter() - started, state.subs, known, rounds


def main() -> int:
    os.environ.pop("DJANGO_SETTINGS_MODULE", None)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--band-draws", type=int, default=20)
    ap.add_argument("--strategies", default="static,reactive-unified,lt-ua,preserve.scaler-oracle,chiron.default")
    ap.add_argument("--workers", default="1,2")
    args = ap.parse_args()
    from planner.capacity.core.spec import parse_spec
    from planner.decisions.answer import build_answer

    base = bench_scenario(args.hours)
    spec = parse_spec({"strategies": args.strategies.split(","), "seeds": [int(s) for s in args.seeds.split(",")],
                       "band_draws": args.band_draws})
    out = {"hours": args.hours, "strategies": spec.strategies, "seeds": spec.seeds, "band_draws": spec.band_draws,
           "cpus": os.cpu_count(), "load_before": os.getloadavg()[0], "wall_s": {}}
    for n in [int(w) for w in args.workers.split(",")]:
        wall, subs, known, rounds = search(base, spec, n)
        answer = build_answer(spec, base, subs)
        out["wall_s"][n] = round(wall, 1)
        by_kind = {"search": 0, "bands": 0, "load": 0}
        band_seeds = set(spec.band_seeds)
        for pid in known:
            _, _, seed, load = pid.split("|")
            by_kind["load" if float(load) != 1.0 else "bands" if int(seed) in band_seeds else "search"] += 1
        cpu = {}
        for pid, o in known.items():
            cpu[pid.split("|")[0]] = round(cpu.get(pid.split("|")[0], 0.0) + float(o.get("wall_s") or 0.0), 1)
        out.update(probes=len(known), probes_by_phase=by_kind, probe_seconds_by_strategy=cpu, rounds=rounds,
                   pruned=sorted(k for k, e in subs.items() if e.get("pruned")),
                   requests=sum(o["requests"] for o in known.values()), headline=answer["headline"])
        print(f"workers={n}: {wall:.1f} s wall, {len(known)} probes in {rounds} rounds; {answer['headline']}",
              flush=True)
    if 1 in out["wall_s"] and 2 in out["wall_s"]:
        out["speedup_1_to_2"] = round(out["wall_s"][1] / out["wall_s"][2], 2)
    out["load_after"] = os.getloadavg()[0]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
