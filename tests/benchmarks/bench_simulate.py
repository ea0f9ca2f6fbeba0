"""Simulator benchmark: simulated requests per wall-clock (and CPU) second, peak memory, anchor latencies.

    python tests/benchmarks/bench_simulate.py            # all cases (about 2-4 minutes on 2 cores)
    python tests/benchmarks/bench_simulate.py --quick    # smaller day (smoke run)
    python tests/benchmarks/bench_simulate.py --ten-million   # also measure a 10M-request day

Each case runs in its own process (clean peak RSS); one JSON object is printed as the last line.
Cases: (a) the Azure code trace at 20x its rate into one endpoint of 8 llama2-70b A100 TP8 instances,
(b) fixtures/scenarios/bench_day.json (synthetic day, 3 regions x 4 models, unified reactive), fast mode
in full and reference mode on a slice of the same density, and the anchor (code trace, 8 fixed
instances, max batch 512) latencies beside SageServe's and splitwise-sim's published figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# as manage.py / celery set it: the engine is single-threaded, and an idle BLAS thread pool spinning after the
# result's numpy work is CPU time the simulation did not use
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(ROOT))

PUBLISHED = {
    "sageserve_sim": {"ttft": {"p50": 1.43, "p90": 4.93, "p99": 23.2}, "e2e": {"p50": 3.66, "p90": 17.3, "p99": 36.3},
                      "requests_per_wall_s": {"fixed": 590, "reactive": 330}},
    "splitwise_sim": {"ttft": {"p50": 0.33, "p90": 1.61, "p99": 8.52}, "e2e": {"p50": 1.83, "p90": 8.03, "p99": 21.1},
                      "requests_per_wall_s": 1100, "note": "token-JSQ router, 2048 batch tokens"},
    "vidur": {"requests_per_wall_s": 40, "note": "conversation trace"},
}


CASES = ("code_x20", "anchor", "anchor_reactive", "anchor_2048", "day")


def _load(name: str) -> dict:
    return json.loads((ROOT / "fixtures" / "scenarios" / name).read_text())


def run_case(case: str, mode: str, requests: int | None, static: bool = False) -> dict:
    from simulations.engine import build_workload, parse_scenario, simulate

    if case == "code_x20":
        d = _load("code_x20.json")
    elif case == "anchor":
        d = _load("code_anchor.json")
    elif case == "anchor_reactive":
        d = _load("code_anchor.json")
        d["fleet"]["regions"][0]["spot_pool"] = {"llama2-70b": 8}
        d["fleet"]["endpoints"][0].update(initial=8, min=2, max=16)
        d["strategy"]["autoscaler"] = "reactive-unified"
    elif case == "anchor_2048":
        d = _load("code_anchor.json")
        d["deployments"]["llama2-70b/a100-80gb/tp8"]["max_batch_tokens"] = 2048
    elif case == "day":
        d = _load("bench_day.json")
        if requests:
            syn = d["workload"]["synthetic"]
            # same arrival density as the full day: shorten the day in proportion, peak inside the window
            scale = requests / syn["total_requests"]
            if scale < 1:
                syn["duration_s"] = syn["duration_s"] * scale
                syn["peak_hour"] = syn["duration_s"] / 3600 / 2
            else:
                # a denser day (e.g. 10M requests): scale the fleet with the traffic so the per-instance load
                # stays that of the 1.6M-request day (otherwise queues grow without bound)
                import math

                for r in d["fleet"]["regions"]:
                    r["vm_capacity"] = math.ceil(r["vm_capacity"] * scale)
                    r["spot_pool"] = {m: math.ceil(c * scale) for m, c in r["spot_pool"].items()}
                for e in d["fleet"]["endpoints"]:
                    e["initial"] = math.ceil(e["initial"] * scale)
                    e["max"] = math.ceil(e["max"] * scale)
            syn["total_requests"] = requests
    else:
        raise SystemExit(f"unknown case {case}")
    if case == "day" and static:
        d["strategy"]["autoscaler"] = "static"  # fleet fixed at the (scaled) initial counts
    d.setdefault("engine", {})["mode"] = mode
    sc = parse_scenario(d)
    t0 = time.perf_counter()
    w = build_workload(sc)
    build_s = time.perf_counter() - t0
    c0 = time.process_time()
    t1 = time.perf_counter()
    r = simulate(sc, w)
    wall = time.perf_counter() - t1
    cpu = time.process_time() - c0
    s = r.summary
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    pick = ("p50", "p90", "p95", "p99")
    return {
        "case": case, "mode": mode, "engine_build": s["engine_build"], "requests": s["requests"], "completed": s["completed"],
        "workload_build_s": round(build_s, 2), "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
        "requests_per_wall_s": round(s["requests"] / wall), "requests_per_cpu_s": round(s["requests"] / cpu),
        "events": s["events"], "peak_rss_mb": round(rss_mb, 1),
        "ttft": {k: round(s["ttft"][k], 3) for k in pick}, "e2e": {k: round(s["e2e"][k], 3) for k in pick},
        "gpu_hours": round(s["gpu_hours"], 3), "scale_outs": s["scale_outs"], "scale_ins": s["scale_ins"],
        "preemptions": s["preemptions"],
    }


def sub(case: str, mode: str, requests: int | None = None, static: bool = False) -> dict:
    cmd = [sys.executable, __file__, "--case", case, "--mode", mode] + (["--static"] if static else [])
    if requests:
        cmd += ["--requests", str(requests)]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if out.returncode:
        raise SystemExit(f"case {case} {mode} failed:\n{out.stderr}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    print(json.dumps(result), file=sys.stderr)
    return result


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", choices=CASES, help="run one case in this process and print its JSON (used by the driver)")
    ap.add_argument("--mode", choices=("fast", "reference"), default="fast", help="engine mode for --case")
    ap.add_argument("--requests", type=int, help="with --case day: requests in the synthetic day (same density)")
    ap.add_argument("--static", action="store_true", help="with --case day: fleet fixed at the initial counts")
    ap.add_argument("--quick", action="store_true", help="smaller day (smoke run)")
    ap.add_argument("--ten-million", action="store_true", help="also measure a 10M-request day")
    return ap.parse_args(argv)


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    if args.case:
        print(json.dumps(run_case(args.case, args.mode, args.requests, args.static)))
        return
    quick = args.quick
    day_n = 200_000 if quick else None
    ref_n = 50_000 if quick else 100_000
    res: dict = {"machine": {"python": platform.python_version(), "cpu": platform.processor() or platform.machine(),
                             "note": "one core per case; the machine is shared, so cpu-s rates are the fairer figure"}}
    res["anchor"] = sub("anchor", "fast")
    res["anchor_2048_batch_tokens"] = sub("anchor_2048", "fast")
    res["anchor_reactive"] = sub("anchor_reactive", "fast")
    res["anchor_reference"] = sub("anchor", "reference")
    res["code_x20_fast"] = sub("code_x20", "fast")
    res["code_x20_reference"] = sub("code_x20", "reference")
    res["day_fast"] = sub("day", "fast", day_n)
    small = sub("day", "fast", ref_n)
    res["day_slice_fast"] = small
    res["day_slice_reference"] = sub("day", "reference", ref_n)
    big = res["day_fast"]
    # memory per request from two sizes -> 10M-request extrapolation
    per_req = (big["peak_rss_mb"] - small["peak_rss_mb"]) / max(1, big["requests"] - small["requests"])
    res["memory_10M_extrapolated_mb"] = round(big["peak_rss_mb"] + per_req * (10_000_000 - big["requests"]), 0)
    if args.ten_million:
        res["day_10M_fast"] = sub("day", "fast", 10_000_000)
        res["day_10M_fast_static"] = sub("day", "fast", 10_000_000, static=True)
    res["published"] = PUBLISHED
    res["summary"] = {
        "day_requests": big["requests"],
        "day_fast_requests_per_wall_s": big["requests_per_wall_s"],
        "day_fast_requests_per_cpu_s": big["requests_per_cpu_s"],
        "day_reference_requests_per_cpu_s": res["day_slice_reference"]["requests_per_cpu_s"],
        "code_x20_fast_requests_per_cpu_s": res["code_x20_fast"]["requests_per_cpu_s"],
        "code_x20_reference_requests_per_cpu_s": res["code_x20_reference"]["requests_per_cpu_s"],
        "target_100k_req_per_s_met": big["requests_per_cpu_s"] >= 100_000,
        "day_peak_rss_mb": big["peak_rss_mb"],
        "memory_10M_extrapolated_mb": res["memory_10M_extrapolated_mb"],
    }
    print(json.dumps(res))


if __name__ == "__main__":
    main(sys.argv[1:])
