"""Request-by-request replay of a per-request run, with the queue checked over time (Django-free).

    python -m planner.benchmarks.core.replay fixtures/benchmarks/llmservingsim-rtx4090 --gpu rtx-4090 \
        --out docs/validation_replay.md

The folder holds LLMServingSim's ``requests.jsonl`` (per request: arrival, queued, scheduled, first and last token
times), ``meta.json`` (the engine configuration) and ``timeseries.csv`` (vLLM's running / waiting gauges per second).
Protocol: the GPU type's efficiencies are fitted (calibrate.fit, queue-dominated stages included: the queue is what
is measured) on the first half of the requests only; the whole run is then replayed with its own arrivals and
lengths, and the running and waiting counts are compared second by second with the server's gauges and with the
counts derived from the requests' own timestamps; TTFT and E2E of the second half are the held-out check.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import numpy as np

from planner.benchmarks.core import calibrate
from planner.benchmarks.core.resim import (
    REGION,
    build_requests,
    deployment_for,
    scenario_for,
)
from planner.benchmarks.core.schema import BenchmarkRun
from planner.benchmarks.core.upload import parse_upload
from planner.benchmarks.core.validate import ape
from simulations.engine import parse_scenario, simulate
from simulations.engine.workload.workload import Workload


def engine_of(meta: dict, gpu: str) -> dict:
    kw = meta.get("engine_kwargs") or {}
    kv = meta.get("kv_cache") or {}
    return {"model": kw.get("model") or meta.get("model"), "tensor_parallel_size": kw.get("tensor_parallel_size", 1),
            "max_num_seqs": kw.get("max_num_seqs", 256), "max_num_batched_tokens": kw.get("max_num_batched_tokens", 2048),
            "max_model_len": kw.get("max_model_len", 0), "gpu": gpu, "engine_version": str(meta.get("vllm_version", "")),
            "gpu_memory_utilization": kv.get("gpu_memory_utilization", 0.9),
            "prefix_caching": bool(kv.get("enable_prefix_caching", True))}


def counts(arrival, admitted, done, ticks) -> tuple[np.ndarray, np.ndarray]:
    """Running (admitted, not done) and waiting (arrived, not admitted) requests at each tick."""
    t = np.asarray(ticks, float)[:, None]
    running = ((admitted[None, :] <= t) & (done[None, :] > t)).sum(axis=1)
    waiting = ((arrival[None, :] <= t) & (admitted[None, :] > t)).sum(axis=1)
    return running, waiting


def replay(folder: Path, gpu: str, *, maxiter: int = 40) -> dict:
    raw = (folder / "requests.jsonl").read_bytes()
    meta = json.loads((folder / "meta.json").read_text())
    engine = engine_of(meta, gpu)
    lines = [ln for ln in raw.splitlines() if ln.strip()]
    half = len(lines) // 2
    full: BenchmarkRun = parse_upload({"requests.jsonl": raw}, engine=engine, name=folder.name)
    first: BenchmarkRun = parse_upload({"first_half.jsonl": b"\n".join(lines[:half])}, engine=engine)
    eff, info = calibrate.fit([first], duration_scale=1.0, maxiter=maxiter, include_overloaded=True)
    dep = deployment_for(full, eff)
    req = build_requests(full, 0)
    wl = Workload.from_arrays({k: req[k] for k in ("arrival_s", "input_tokens", "output_tokens")},
                              default_model=dep["model"], default_region=REGION)
    res = simulate(parse_scenario(scenario_for(full, dep, 0)), wl).requests
    order = np.argsort(req["arrival_s"], kind="stable")  # from_arrays sorts by arrival: back to file order
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    arr, queue, done = res["arrival_s"][back], res["queueing_s"][back], res["done_s"][back]
    ttft, e2e = res["ttft_s"][back] + eff.client_s, res["e2e_s"][back] + eff.client_s
    rows = [json.loads(ln) for ln in lines]
    q0 = min(r["queued_ts"] for r in rows)
    m_arr = np.array([r["queued_ts"] - q0 for r in rows])
    m_adm = np.array([r["scheduled_ts"] - q0 for r in rows])
    m_done = np.array([r["last_token_ts"] - q0 for r in rows])
    with open(folder / "timeseries.csv") as fh:
        gauges = list(csv.DictReader(fh))
    ticks = [float(g["t"]) for g in gauges]
    sim_run, sim_wait = counts(arr, arr + queue, done, ticks)
    req_run, req_wait = counts(m_arr, m_adm, m_done, ticks)
    g_run = np.array([float(g["running"]) for g in gauges])
    g_wait = np.array([float(g["waiting"]) for g in gauges])
    second = slice(half, None)
    m_ttft = np.array([r["first_token_ts"] - r["queued_ts"] for r in rows])
    m_e2e = np.array([r["last_token_ts"] - r["queued_ts"] for r in rows])
    busy = (g_run + g_wait) > 0
    return {
        "run": folder.name, "engine": engine, "requests": len(rows), "fitted_on_first": half,
        "efficiency": eff.to_dict(), "fit_loss": info["loss"],
        "second_half": {k: {"measured": float(m.mean()), "simulated": float(s.mean()),
                            "error_pct": ape(float(s.mean()), float(m.mean()))}
                        for k, m, s in (("ttft_mean", m_ttft[second], ttft[second]),
                                        ("e2e_mean", m_e2e[second], e2e[second]))},
        "counts": {
            "ticks": len(ticks), "busy_ticks": int(busy.sum()),
            "running_mae_vs_gauge": float(np.abs(sim_run - g_run)[busy].mean()),
            "waiting_mae_vs_gauge": float(np.abs(sim_wait - g_wait)[busy].mean()),
            "running_mae_vs_requests": float(np.abs(sim_run - req_run)[busy].mean()),
            "waiting_mae_vs_requests": float(np.abs(sim_wait - req_wait)[busy].mean()),
            "gauge_running_mean": float(g_run[busy].mean()), "gauge_waiting_mean": float(g_wait[busy].mean()),
        },
        "series": {"t": ticks, "gauge_running": g_run.tolist(), "gauge_waiting": g_wait.tolist(),
                   "requests_running": req_run.tolist(), "requests_waiting": req_wait.tolist(),
                   "sim_running": sim_run.tolist(), "sim_waiting": sim_wait.tolist()},
    }


def markdown(r: dict, command: str) -> str:
    c, h = r["counts"], r["second_half"]
    lines = [
        "# Request-by-request replay: queueing and batching checked over time",
        "",
        "Generated by `" + command + "`; do not edit by hand. Protocol: planner/benchmarks/core/replay.py.",
        "",
        f"Run: {r['run']} ({r['requests']} ShareGPT requests through real vLLM {r['engine']['engine_version']}, "
        f"{r['engine']['model']} on {r['engine']['gpu']}, max_num_seqs {r['engine']['max_num_seqs']}, "
        f"max_num_batched_tokens {r['engine']['max_num_batched_tokens']}; fixtures/benchmarks/SOURCES.md). The "
        f"physics model's efficiencies were fitted on the first {r['fitted_on_first']} requests only; the whole run "
        "was replayed with its own arrivals and lengths.",
        "",
        "| check | measured | simulated | error |",
        "|---|---|---|---|",
        f"| TTFT mean, second half (held out) | {h['ttft_mean']['measured']:.2f} s | {h['ttft_mean']['simulated']:.2f} s "
        f"| {h['ttft_mean']['error_pct']:.1f} % |",
        f"| E2E mean, second half (held out) | {h['e2e_mean']['measured']:.2f} s | {h['e2e_mean']['simulated']:.2f} s "
        f"| {h['e2e_mean']['error_pct']:.1f} % |",
        f"| running requests, mean abs. difference per second vs vLLM's gauge | mean {c['gauge_running_mean']:.1f} | | "
        f"{c['running_mae_vs_gauge']:.1f} requests |",
        f"| waiting requests, mean abs. difference per second vs vLLM's gauge | mean {c['gauge_waiting_mean']:.1f} | | "
        f"{c['waiting_mae_vs_gauge']:.1f} requests |",
        f"| running / waiting vs the requests' own timestamps | | | {c['running_mae_vs_requests']:.1f} / "
        f"{c['waiting_mae_vs_requests']:.1f} requests |",
        "",
        "Over " + str(c["busy_ticks"]) + " busy seconds. Coefficients: "
        + ", ".join(f"{k} = {v:.4g}" for k, v in r["efficiency"].items()) + ".",
        "",
        "| t (s) | running: gauge / requests / simulated | waiting: gauge / requests / simulated |",
        "|---|---|---|",
    ]
    s = r["series"]
    for i in range(0, len(s["t"]), 10):
        lines.append(f"| {s['t'][i]:.0f} | {s['gauge_running'][i]:.0f} / {s['requests_running'][i]} / "
                     f"{s['sim_running'][i]} | {s['gauge_waiting'][i]:.0f} / {s['requests_waiting'][i]} / "
                     f"{s['sim_waiting'][i]} |")
    lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m planner.benchmarks.core.replay", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--out", default="")
    ap.add_argument("--maxiter", type=int, default=40)
    args = ap.parse_args(argv)
    r = replay(Path(args.folder), args.gpu, maxiter=args.maxiter)
    command = " ".join(["python -m planner.benchmarks.core.replay", *(argv or sys.argv[1:])])
    if args.out:
        Path(args.out).write_text(markdown(r, command))
    print(json.dumps({k: r[k] for k in ("second_half", "counts", "efficiency")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
