"""Disaggregated-serving benchmark: simulated requests per CPU-second on the disaggregated bench day.

    python tests/benchmarks/bench_disagg.py                    # the full day (1.6M requests), fast mode
    python tests/benchmarks/bench_disagg.py --requests 200000  # a slice of the same arrival density
    python tests/benchmarks/bench_disagg.py --mixed-pool 8192    # every endpoint with Splitwise's mixed pool

fixtures/scenarios/bench_day_disagg.json: fixtures/scenarios/bench_day.json (3 regions x 4 models) with every
endpoint split into a prefill pool and a decode pool (static P/D 2:2), KV over InfiniBand. Prints one JSON object:
requests, CPU and wall seconds, requests per CPU-second, events, KV transfers and the latency percentiles; the
same figures for the aggregated bench day under the same static strategy (``--no-aggregated`` skips it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(ROOT))


def day(name: str, requests: int | None) -> dict:
    d = json.loads((ROOT / "fixtures" / "scenarios" / name).read_text())
    syn = d["workload"]["synthetic"]
    if requests and requests < syn["total_requests"]:  # same arrival density: a shorter day, peak inside it
        scale = requests / syn["total_requests"]
        syn.update(total_requests=requests, duration_s=syn["duration_s"] * scale)
        syn["peak_hour"] = syn["duration_s"] / 3600 / 2
    d["strategy"] = {"autoscaler": "static", "scheduler": "fcfs"}
    return d


def run(d: dict, mode: str) -> dict:
    from simulations.engine import build_workload, parse_scenario, simulate

    d.setdefault("engine", {})["mode"] = mode
    sc = parse_scenario(d)
    w = build_workload(sc)
    c0, t0 = time.process_time(), time.perf_counter()
    r = simulate(sc, w)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    s = r.summary
    out = {"requests": s["requests"], "completed": s["completed"], "engine_build": s["engine_build"], "mode": mode,
           "cpu_s": round(cpu, 2), "wall_s": round(wall, 2), "requests_per_cpu_s": round(s["requests"] / cpu),
           "events": s["events"], "gpu_hours": round(s["gpu_hours"], 2),
           "ttft": {k: round(s["ttft"][k], 4) for k in ("p50", "p90", "p99")},
           "e2e": {k: round(s["e2e"][k], 3) for k in ("p50", "p90", "p99")}}
    if "disaggregation" in s:
        g = s["disaggregation"]
        out["kv_transfers"] = g["transfers"]
        out["transfer_s"] = {k: round(g["transfer_s"][k], 5) for k in ("p50", "p90", "p99")}
        out["decode_wait_s"] = {k: round(g["decode_wait_s"][k], 5) for k in ("p50", "p90", "p99")}
        if "mixed_pool" in g:
            out["mixed_pool"] = {k: v for k, v in g["mixed_pool"].items() if k != "prefill_queue_tokens"}
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=None, help="requests in the day (default: the full 1.6M)")
    ap.add_argument("--mode", choices=("fast", "reference"), default="fast")
    ap.add_argument("--no-aggregated", action="store_true", help="skip the aggregated day")
    ap.add_argument("--mixed-pool", type=int, default=None, metavar="TOKENS",
                    help="give every disaggregated endpoint the mixed pool at this prefill queue threshold")
    args = ap.parse_args(argv)
    d = day("bench_day_disagg.json", args.requests)
    if args.mixed_pool is not None:
        for e in d["fleet"]["endpoints"]:
            e["mixed_pool"] = {"prefill_queue_tokens": args.mixed_pool}
    out = {"disaggregated": run(d, args.mode)}
    print(json.dumps(out["disaggregated"]), file=sys.stderr)
    if not args.no_aggregated:
        out["aggregated"] = run(day("bench_day.json", args.requests), args.mode)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
