"""Prefix caching and vLLM V1 scheduling: simulated requests per CPU-second on a prefix-heavy day.

    python tests/benchmarks/bench_prefix.py                   # the full 1.6M-request day, V1 + prefix caching
    python tests/benchmarks/bench_prefix.py --requests 200000 # a slice of the same density
    python tests/benchmarks/bench_prefix.py --off             # the same day and fleet without either option

The day is fixtures/scenarios/bench_day.json (3 regions x 4 models, unified reactive, fast mode) with every
deployment set to ``vllm_v1`` and ``prefix_caching``, and every prompt given a shared prefix: each request
belongs to one of ``--groups`` system prompts of its model and its first ``--prefix-tokens`` prompt tokens
(at most its prompt less one token) are that group's, hashed as 512-token ids (Mooncake's block size). The CPU
time is the simulation's alone (``simulate``), as bench_simulate.py measures it. One JSON object is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(ROOT))

CHUNK = 512


def prefix_ids(workload, groups: int, prefix_tokens: int, seed: int = 0):
    """CSR (offsets, ids): request i holds min(prefix, prompt - 1) // 512 ids of its model's group g."""
    rng = np.random.default_rng(seed)
    n = len(workload)
    g = rng.integers(0, groups, n) + workload.model.astype(np.int64) * groups
    k = np.minimum(prefix_tokens, workload.input_tokens - 1) // CHUNK
    k = np.maximum(k, 0)
    off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(k, out=off[1:])
    j = np.arange(off[-1], dtype=np.int64) - np.repeat(off[:-1], k)
    ids = np.repeat(g * 64, k) + j
    return off, ids


def run(requests: int | None, groups: int, prefix_tokens: int, off: bool) -> dict:
    from simulations.engine import build_workload, parse_scenario, simulate
    from simulations.engine.accel import BUILD

    d = json.loads((ROOT / "fixtures" / "scenarios" / "bench_day.json").read_text())
    syn = d["workload"]["synthetic"]
    if requests and requests < syn["total_requests"]:
        scale = requests / syn["total_requests"]
        syn["duration_s"] = syn["duration_s"] * scale
        syn["peak_hour"] = syn["duration_s"] / 3600 / 2
        syn["total_requests"] = requests
    if not off:
        for dep in d["deployments"].values():
            dep["vllm_v1"] = True
            dep["prefix_caching"] = True
    sc = parse_scenario(d)
    w = build_workload(sc)
    if not off:
        o, ids = prefix_ids(w, groups, prefix_tokens)
        w = replace(w, prefix_off=o, prefix_ids=ids)
    c0 = time.process_time()
    t0 = time.perf_counter()
    r = simulate(sc, w)
    cpu = time.process_time() - c0
    wall = time.perf_counter() - t0
    s = r.summary
    pc = s.get("prefix_cache") or {}
    return {"requests": len(w), "cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
            "requests_per_cpu_s": round(len(w) / cpu), "engine_build": BUILD.get("kind"),
            "v1_and_prefix_caching": not off, "groups": groups, "prefix_tokens": prefix_tokens,
            "prefix_hit_rate": round(pc.get("hit_rate", 0.0), 4), "hit_tokens": pc.get("hit_tokens", 0),
            "completed": s["completed"], "events": s["events"], "gpu_hours": round(s["gpu_hours"], 3),
            "preemptions": s["preemptions"], "ttft_p50": s["ttft"]["p50"], "ttft_p99": s["ttft"]["p99"],
            "target_met": len(w) / cpu >= 100_000}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=None, help="a slice of the day (default: all 1.6M)")
    ap.add_argument("--groups", type=int, default=32, help="system prompts per model (default 32)")
    ap.add_argument("--prefix-tokens", type=int, default=2048, help="shared prompt head, tokens (default 2048)")
    ap.add_argument("--off", action="store_true", help="the same day without V1 scheduling and prefix caching")
    a = ap.parse_args(argv)
    print(json.dumps(run(a.requests, a.groups, a.prefix_tokens, a.off)))


if __name__ == "__main__":
    main()
