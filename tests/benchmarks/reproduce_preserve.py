"""Reproduce PreServe's RQ3 (Fig. 10, routing) and RQ2 (Figs. 8/9, scaling) in our engine and write
docs/reproduction_preserve.md.

    nice -n 10 python tests/benchmarks/reproduce_preserve.py --write-doc --out docs/reproduction_preserve.json
                                                        # everything (RQ3, seed spread, what-ifs, RQ2), ~5 min
    python tests/benchmarks/reproduce_preserve.py --load docs/reproduction_preserve.json --write-doc  # doc only
    python tests/benchmarks/reproduce_preserve.py --rq3 --minutes 2 --json        # a quick look
    python tests/benchmarks/reproduce_preserve.py --rq3 --load docs/reproduction_preserve.json --write-doc \
        --out docs/reproduction_preserve.json     # RQ3 (+ seed spread) only; RQ2 and the what-ifs from the JSON

RQ3: fixtures/scenarios/preserve_routing.json (4 x LLaMA-2-7B on a DERIVED A40 deployment, Poisson arrivals,
ShareGPT-like lengths, 10 minutes per rate; vLLM 0.6.6 defaults). Stage 1 runs the baselines (least-requests, the
paper's MU = GPU utilisation + KV in use, Llumnix-like, the latter also with live migration, plus our memory-usage
with queued prompts) on a rate grid and finds the knee: the first grid rate where the best of them has a P99
normalised latency above twice its value at the lowest rate. Stage 2 runs
every router at 0.8-1.2 x the knee; stage 3 runs PreServe at every grid rate. ``--sensitivity``: what-if testbeds
(KV of a 40 GB A40, a flatter batch cost) that explain the misses, never used for the targets.
RQ2: the SYNTHETIC week (simulations/engine/policies/preserve/week.py), days 3-4 replayed in two hours, up to 8
instances, every scaling strategy; instance-hours against static-8 and the peak of 5-minute mean normalised latency.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from simulations.engine import build_workload, parse_scenario, simulate  # noqa: E402

BASE = ROOT / "fixtures/scenarios/preserve_routing.json"
DOC = ROOT / "docs/reproduction_preserve.md"
MU = "MU (paper's: GPU util + KV in use)"
MUQ = "memory-usage (ours: + queued prompts)"
MIG = "llumnix (live migration)"
# the targets' "best of": the paper's baselines (sec. 5.4: LR, MU as in sec. 3.2.2, Llumnix); the extended set adds our
# token-aware memory-usage, reported beside it; the knee is found on the extended set (the rule as before)
BASELINES = ("least-requests", MU, "llumnix", MIG)
BASELINES_EXT = (*BASELINES, MUQ)
ROUTERS = {
    "least-requests": {"instance_router": "least-requests"},
    MU: {"instance_router": "gpu-memory-usage"},
    MUQ: {"instance_router": "memory-usage"},
    "llumnix": {"instance_router": "llumnix"},
    MIG: {"instance_router": "llumnix", "autoscaler": "llumnix-migrate", "params": {"scaling": False}},
    "round-robin": {"instance_router": "round-robin"},
    "preserve (oracle lengths)": {"autoscaler": "preserve-router", "predictor": "oracle"},
    "preserve (Table-2 noise)": {"autoscaler": "preserve-router", "predictor": "table2-noise"},
    "preserve (bucket-median)": {"autoscaler": "preserve-router", "predictor": "bucket-median"},
    "preserve (oracle, unbounded hold)": {"autoscaler": "preserve-router", "predictor": "oracle",
                                          "params": {"hold_capacity": 10**9}},
    "preserve (oracle, queued decode)": {"autoscaler": "preserve-router", "predictor": "oracle",
                                         "params": {"queued_decode": True}},
}


def _p99_with_drops(nl: np.ndarray) -> float:
    """P99 of normalised latency counting dropped / unfinished requests as infinitely late."""
    v = np.where(np.isnan(nl), np.inf, nl)
    return float(np.percentile(v, 99, method="higher")) if len(v) else float("nan")


def rq3_point(rate: float, name: str, minutes: float, deployment: dict | None = None, seed: int | None = None) -> dict:
    d = json.loads(BASE.read_text())
    if seed is not None:  # the seed spread only (--seeds); the targets use the fixture's seed
        d["seed"] = d["workload"]["synthetic"]["seed"] = int(seed)
    for key, value in (deployment or {}).items():  # sensitivity runs only (--sensitivity)
        dep = d["deployments"]["llama-2-7b/a40/tp1-derived"]
        if key == "c_batch_x":
            dep["decode"]["c_batch"] *= value
        else:
            dep[key] = value
    d["workload"]["synthetic"].update(rate_rps=float(rate), duration_s=float(minutes) * 60)
    d["strategy"] = {**d["strategy"], **copy.deepcopy(ROUTERS[name])}
    sc = parse_scenario(d)
    w = build_workload(sc)
    t0 = time.process_time()
    r = simulate(sc, w)
    cpu = time.process_time() - t0
    o = r.slo["overall"]
    nl = np.asarray(r.requests["normalised_latency"], dtype=float)
    return {"rate_rps": rate, "router": name, "seed": int(d["seed"]), "requests": int(r.summary["requests"]),
            "dropped": int(r.summary["dropped"]), "preemptions": int(r.summary["preemptions"]),
            "migrations": int(r.summary.get("migrations", 0)),
            "p99_nl_s": float(np.nanpercentile(nl, 99)), "p99_nl_with_drops_s": _p99_with_drops(nl),
            "mean_ttft_s": float(r.summary["ttft"]["mean"]), "attainment": float(o["attainment"]),
            "cpu_s": round(cpu, 2)}


def run_rq3(minutes: float, grid, log) -> dict:
    stage1 = [rq3_point(rate, b, minutes) for rate in grid for b in BASELINES_EXT]
    for p in stage1:
        log(f"rq3 grid {p['router']:>16} {p['rate_rps']:5.2f} p99 {p['p99_nl_s']:.3f}")
    knee = find_knee(stage1, grid, BASELINES_EXT)
    factors = (0.8, 0.9, 0.95, 1.0, 1.1, 1.2)
    points = []
    for f in factors:
        for name in ROUTERS:
            p = rq3_point(round(knee * f, 3), name, minutes)
            p["factor"] = f
            points.append(p)
            log(f"rq3 {f:4.2f}x {name:>34} p99 {p['p99_nl_s']:.3f} drops {p['dropped']} cpu {p['cpu_s']}")
    # every grid rate, PreServe against the best baseline: how the cut depends on where the knee is put
    by_rate = [rq3_point(rate, name, minutes) for rate in grid
               for name in ("preserve (oracle lengths)", "preserve (Table-2 noise)")]
    for p in by_rate:
        log(f"rq3 grid {p['router']:>26} {p['rate_rps']:5.2f} p99 {p['p99_nl_s']:.3f}")
    out = {"minutes": minutes, "grid": list(grid), "stage1": stage1, "knee_rps": knee, "points": points,
           "by_rate": by_rate, "knee_paper_set_rps": find_knee(stage1, grid, BASELINES)}
    out["targets"] = rq3_targets(points)
    return out


def find_knee(stage1, grid, baselines) -> float:
    """The first grid rate whose best P99 (over ``baselines``) is above twice the best at the lowest rate."""
    best = {rate: min(p["p99_nl_s"] for p in stage1 if p["rate_rps"] == rate and p["router"] in baselines)
            for rate in grid}
    return next((rate for rate in grid if best[rate] > 2 * best[grid[0]]), grid[-1])


def rq3_targets(points) -> dict:
    def at(f, name, key="p99_nl_s"):
        return next(p[key] for p in points if p["factor"] == f and p["router"] == name)

    t = {}
    for f in (1.1, 1.2):
        for suffix, bset in (("", BASELINES), ("_ext", BASELINES_EXT)):
            best = min(at(f, b) for b in bset)
            best_name = min(bset, key=lambda b: at(f, b))
            t[f"{f}x{suffix}"] = {"best_baseline": best_name, "best_baseline_p99": best,
                                  "cut_oracle": 1 - at(f, "preserve (oracle lengths)") / best,
                                  "cut_table2": 1 - at(f, "preserve (Table-2 noise)") / best,
                                  "cut_oracle_unbounded_hold": 1 - at(f, "preserve (oracle, unbounded hold)") / best,
                                  "drops_oracle": at(f, "preserve (oracle lengths)", "dropped"),
                                  "drops_table2": at(f, "preserve (Table-2 noise)", "dropped")}
    spread = {}
    for f in (0.8, 0.9, 0.95):
        vals = [at(f, n) for n in ROUTERS]
        spread[f"{f}x"] = max(vals) / min(vals) - 1
        vals = [at(f, n) for n in ROUTERS if n != "round-robin"]
        spread[f"{f}x without round-robin"] = max(vals) / min(vals) - 1
    t["below_knee_spread"] = spread
    return t


SEED_ROUTERS = (*BASELINES_EXT, "preserve (oracle lengths)", "preserve (Table-2 noise)")


def run_seeds(minutes: float, knee: float, seeds, log) -> dict:
    """The same RQ3 points with other workload seeds (0.8x and 1.1x the knee): how much of a cut is noise. The
    targets stay on the fixture's seed (the rule of earlier sessions); this only says how robust the verdict is."""
    rows = []
    for f in (0.8, 1.1):
        for seed in seeds:
            for name in SEED_ROUTERS:
                p = rq3_point(round(knee * f, 3), name, minutes, seed=seed)
                p["factor"] = f
                rows.append(p)
                log(f"seeds {f:4.2f}x seed {seed} {name:>34} p99 {p['p99_nl_s']:.3f}")
    return {"seeds": list(seeds), "knee_rps": knee, "points": rows}


SENSITIVITY = {  # what-if testbeds, to explain the RQ3 misses (never used for the targets)
    "KV 44,632 tokens (the paper's '40 GB' A40)": ({"kv_capacity_tokens": 44632}, (9, 10, 11, 11.5, 12, 12.5)),
    "decode c_batch x 0.25 (a flatter batch cost)": ({"c_batch_x": 0.25}, (10, 12, 13, 14, 15, 16)),
}
SENS_ROUTERS = ("least-requests", MU, "llumnix", MUQ, "preserve (oracle lengths)")  # cut vs the first three


def run_sensitivity(minutes: float, log) -> dict:
    out = {}
    for label, (dep, grid) in SENSITIVITY.items():
        rows = []
        for rate in grid:
            for name in SENS_ROUTERS:
                p = rq3_point(float(rate), name, minutes, dep)
                rows.append(p)
                log(f"sensitivity {label[:20]} {rate:5.2f} {name:>26} p99 {p['p99_nl_s']:.3f}")
        out[label] = {"grid": [float(r) for r in grid], "points": rows}
    return out


# ---------------------------------------------------------------- RQ2
RQ2 = {  # in the order they run (the ones the targets need first)
    "static-8": ("static-n", {"instances": 8}, "", "least-requests"),
    "PreServe (Table-2 noise, oracle-noise forecast)": ("preserve", {"forecaster": "oracle-noise"}, "table2-noise",
                                                        None),
    "Llumnix-like": ("llumnix", {}, "", "llumnix"),
    "Llumnix-like (live migration)": ("llumnix-migrate", {}, "", "llumnix"),
    "static-4": ("static-n", {"instances": 4}, "", "least-requests"),
    "PreServe (oracle lengths, oracle-noise forecast)": ("preserve", {"forecaster": "oracle-noise"}, "oracle", None),
    "static-6": ("static-n", {"instances": 6}, "", "least-requests"),
    "reactive (KV 80 % / 30 %)": ("preserve-reactive", {}, "", "least-requests"),
    "forecast-only (oracle-noise)": ("preserve-forecast", {"forecaster": "oracle-noise"}, "oracle", "least-requests"),
    "hybrid (oracle-noise + KV thresholds)": ("preserve-hybrid", {"forecaster": "oracle-noise"}, "oracle",
                                              "least-requests"),
    "PreServe (Table-2 noise, seasonal-naive forecast)": ("preserve", {"forecaster": "seasonal_naive_daily"},
                                                          "table2-noise", None),
}


def rq2_run(name: str, rep: dict, capacity: dict, log) -> dict:
    import pandas as pd

    auto, params, pred, router = RQ2[name]
    d = json.loads(BASE.read_text())
    d["workload"] = {"frame": True, "model": "llama-2-7b", "region": "r1", "tier": "IW-F"}
    d["fleet"]["endpoints"][0].update(initial=4, min=1, max=8)
    p = dict(params)
    if auto in ("preserve", "preserve-forecast", "preserve-hybrid"):
        p.update(capacity, window_s=rep["window_s"], series_resolution_s=600, history=rep["history"])
    st = {**d["strategy"], "autoscaler": auto, "params": p}
    if pred:
        st["predictor"] = pred
    else:
        st.pop("predictor", None)
    if router:
        st["instance_router"] = router
    d["strategy"] = st
    d["engine"]["timeline_step_s"] = 60
    sc = parse_scenario(d)
    frame = pd.DataFrame({k: rep[k] for k in ("arrival_s", "input_tokens", "output_tokens")})
    w = build_workload(sc, frame=frame)
    t0 = time.process_time()
    r = simulate(sc, w)
    cpu = time.process_time() - t0
    nl = np.asarray(r.requests["normalised_latency"], dtype=float)
    iso = np.asarray(r.requests["isolated_e2e_s"], dtype=float) / np.maximum(np.asarray(w.output_tokens), 1)
    slo = 3.0 * float(np.nanmean(iso))
    arr = np.asarray(w.arrival_s)
    idx = np.floor(arr / 300.0).astype(int)
    means = []
    for k in range(int(idx.max()) + 1):
        v = nl[idx == k]
        v = np.where(np.isnan(v), np.inf, v)  # a dropped request is infinitely late
        means.append(float(np.mean(v)) if len(v) else 0.0)
    means = np.asarray(means)
    u = r.summary
    out = {"strategy": name, "requests": int(u["requests"]), "dropped": int(u["dropped"]),
           "instance_hours": float(u["gpu_hours"]), "slo_s_per_token": slo,
           "peak_5min_nl_s": float(means.max()), "windows_over_slo": int((means > slo).sum()),
           "windows": len(means), "p99_nl_s": float(np.nanpercentile(nl, 99)),
           "scale_outs": sum(1 for e in r.scaling_events if e["action"] == "scale_out"), "cpu_s": round(cpu, 1),
           "migrations": int(u.get("migrations", 0)),
           "drain_after_last_arrival_s": float(np.nanmax(np.asarray(r.requests["done_s"], dtype=float))) - float(arr.max())}
    log(f"rq2 {name:>50} inst-h {out['instance_hours']:.2f} peak {out['peak_5min_nl_s']:.3f} "
        f"over {out['windows_over_slo']}/{out['windows']} cpu {out['cpu_s']}")
    return out


def run_rq2(knee_rps: float, log, only=None, compression: float = 24.0, save=None) -> dict:
    from planner.comparisons.core.bundles_preserve import CAPACITY
    from simulations.engine.policies.preserve.week import replay

    peak = 7 * knee_rps / 4  # the replay's peak 30-minute rate: 7 instances' worth at our knee per instance
    rep = replay(peak, compression=compression, seed=0)
    runs = []
    for n in RQ2:
        if only and n not in only:
            continue
        runs.append(rq2_run(n, rep, CAPACITY, log))
        if save is not None:
            save(runs)
    s8 = next((x["instance_hours"] for x in runs if x["strategy"] == "static-8"), None)
    for x in runs:
        x["saving_vs_static8"] = 1 - x["instance_hours"] / s8 if s8 else None
    cal = {k: float(v) for k, v in rep["calibration"].items()}
    return {"peak_rps": peak, "requests": int(len(rep["arrival_s"])), "window_s": rep["window_s"],
            "compression": compression,
            "calibration": cal, "capacity": CAPACITY, "runs": runs}


# ---------------------------------------------------------------- the document
def _f(x, n=3):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else (f"{x:.{n}f}" if isinstance(x, float)
                                                                              else str(x))


DIFFERENCES = [
    "- Testbed: the paper ran vLLM 0.6.6 on 8 real A40s; we simulate a derived A40 (see Setting). Absolute "
    "latencies differ (our isolated normalised latency is ~0.035 s/token against the paper's ~0.067, which includes "
    "HTTP and streaming); compare ratios, not seconds.",
    "- Llumnix-like: reported WITHOUT and WITH live migration of running requests (session 5: "
    "simulations/engine/policies/llumnix_migration.py on the public `migrate_running` call; Llumnix's defaults: "
    "0.05 s poll, migrate out below freeness -3 blocks per request, least free paired with most free, shortest "
    "request first, pipelined copy at 25 GB/s while the request keeps decoding, last stage <= 16 blocks + a 20 ms "
    "switch-over). In our model a migration costs the moved request ~20-80 ms and the destination's batch the same "
    "pause; the copy itself does not slow either GPU. Migrations are rare (only instances whose queued demand "
    "exceeds their free KV migrate out) and change little: migration is not what sets Llumnix-like's P99 or peak "
    "here. The paper attributes Llumnix's spikes to 'communication overhead and delays from KV cache migration' "
    "(with Llumnix's default gloo backend, through host memory): an interference our transfer model, which follows "
    "Llumnix's own near-zero-downtime design, does not produce. Sia, Magnus, PASS and LoongServe are not built.",
    "- Hold queue: the paper gives no capacity; ours is 256. Dropped requests are excluded from the P99 column (the "
    "paper's metric is over served requests) and shown beside it. On current main no run drops: the hold queue "
    "never fills (the ablation 'hold off' gave the same P99 at 12.5 req/s: 1.097 vs 1.091; session 5, before the "
    "max_model_len fix).",
    "- Anticipator: computed on demand from the running requests (exact, no per-iteration events); the map the "
    "paper maintains gives the same U_j. Requests waiting for prefill are outside the map, as in the paper ('the "
    "map is updated once the prefill phase is complete', sec. 4.3.1): an overload made of a long waiting queue is "
    "seen by the scaler only as those requests are admitted (not changed: it is the paper's rule); the router sees "
    "the queue through L_p (queued prompt tokens).",
    "- Router score, current_d: we count the running requests' predicted remaining decode (the anticipator's). The "
    "other reading of 'the total tokens to be generated in the decode phase' (queued requests' predicted output "
    "too) is the row 'preserve (oracle, queued decode)': worse in our engine, so not the default. The memory "
    "penalty does its job: without it (beta = 0) P99 at 12.5 req/s was 2.53 instead of 1.09 s/token (ablation, "
    "session 5, before the max_model_len fix).",
    "- MU baseline (session 6): the paper's MU (sec. 3.2.2, 'the lowest weighted average of GPU utilization and "
    "memory usage') is the router `gpu-memory-usage`: 0.5 x GPU utilisation + 0.5 x KV in use / capacity. "
    "Utilisation is 1 while the instance has any unfinished request, else 0 (nvidia-smi's sampled utilisation of a "
    "vLLM engine, which steps back to back while it has work); KV in use counts the running requests only, as "
    "vLLM's gpu_cache_usage_perc (queued prompts hold no blocks without chunked prefill). The equal weights are "
    "ours (the paper gives none; knob `mu_util_weight`). At RQ3 rates every instance is busy at almost every "
    "arrival (ad hoc probe: 6 of 5,396 arrivals at 9 req/s and 5 of 8,262 at 13.75 req/s saw an idle instance, "
    "at the start), so this MU is in effect 'lowest KV in use', blind to queued prompts. Sessions 1-5 used our "
    "`memory-usage` (KV in use + queued prompt tokens) as MU: token-aware, which the paper's MU is not. It stays as "
    "an extra, and the targets are given against both sets. At 1.1x the paper's MU is the best baseline of either "
    "set (3.663 s/token; ours 3.780).",
    "- vLLM 0.6.6 defaults (session 6; checked in vllm-project/vllm: EngineArgs, SchedulerConfig.__post_init__, "
    "the V0 default-args rule): max_num_seqs 256, max_num_batched_tokens = max(max_model_len, 2048) = 4,096 "
    "without chunked prefill, chunked prefill on by default only when max_model_len > 32K, "
    "gpu_memory_utilization 0.9, recompute preemption, block-manager watermark 0.01 were already ours. "
    "max_model_len 4,096 (Llama-2) was MISSING from the deployment: at 13.75 req/s 63 of 8,262 requests have "
    "prompt + output > 4,096 (8,960 output tokens over the limit). With the limit (vLLM: outputs stop at it) "
    "P99 past the knee falls by ~30 % for every router (memory-usage at 1.1x: 5.422 without, 3.780 with; "
    "PreServe oracle 6.21 -> 4.41): a few 4-8k-token requests held an instance's KV for minutes. The fixture "
    "now also sets the engine's vLLM settings explicitly (chunked_prefill false, watermark 0.01, vllm "
    "preemption, recompute, reject over-context), so a change of the engine's defaults cannot move it.",
    "- RQ3 knee: 12.5 req/s with either baseline set (paper: 9.3-9.5). Past it the backlog grows through the 10 "
    "minutes, and the worst 1 % are short requests arriving late behind seconds of queue. The paper's 1.1x point "
    "(10.5 QPS: P99 0.45-1.23 s, mean TTFT 2.2-4.3 s, SLO 0.2 s) is ~2-6x its SLO; ours at 1.0x (12.5) is ~3x "
    "(Llumnix-like 0.313 vs an SLO of ~0.105 s/token) and at 1.1x ~35x: our knee definition (best baseline P99 > "
    "2x its light-load value) lands later than the paper's 'overload boundary'. The table 'PreServe against the "
    "best baseline at every grid rate' shows this does not decide the target: at NO grid rate does PreServe beat "
    "the best baseline by 30 % (best: +7.8 % at 14 req/s). The seed spread shows how fragile one 10-minute run "
    "past the knee is: at 13.75 req/s the best baseline's P99 is 0.20-0.71 s/token on seeds 2-5 against 3.66 on "
    "seed 1; PreServe (oracle) is behind on every seed (cuts -20 % on seed 1, -40 % to -270 % on seeds 2-5).",
    "- RQ3 below the knee (miss): the worst 1 % of normalised latency are short requests (median 6-7 output "
    "tokens) whose few decode iterations are stretched by other requests' prefills (no chunked prefill in vLLM "
    "0.6.6: every admission stalls the batch; a 4k-token prompt takes ~0.6 s): their decode time per token is "
    "0.12-0.17 s against a mean of 0.08 (10 req/s, session 5). A count-based router (least-requests, Llumnix-like) "
    "puts each stall among fewer requests; a token-based one does not: at 0.8x (10 req/s) Llumnix-like 0.116 and "
    "LR 0.122 against the paper's MU 0.156, our memory-usage 0.143 and PreServe 0.167 (oracle) / 0.150 (Table-2); "
    "PreServe is 28-44 % behind the best on all five seeds. The what-if testbeds rule out the two obvious "
    "suspects: with the paper's 40 GB KV or with a 4x flatter batch cost PreServe is still behind at every rate.",
    "- RQ2 against Llumnix (miss): our Llumnix-like, with or without migration, peaks near 1.4x the SLO (the "
    "paper's: 2.3x) while using fewer instance-hours than PreServe: the paper's Llumnix spikes come from migration "
    "interference we do not model (above). The synthetic week has no unexpected spike (the paper's Proactive / "
    "Hybrid fail at one, ~20 h into the code trace), so forecast-only and hybrid with the oracle-noise forecaster "
    "do as well as PreServe here.",
    "- RQ2: the week is synthetic, the forecaster an oracle with Table 1 noise or our seasonal naive, not an "
    "mLSTM; the request rate of the compressed replay is our choice (the paper does not say how it scaled the "
    "rate). Instance-hours include the drain after the last arrival (column): the window target then falls to 1 "
    "(forecast 0) and the surplus instances are isolated, finishing their own requests (the paper's isolation "
    "rule), so nothing is stranded.",
    "- Scaler (session 5 fix): the once-per-window low-load scale-down is floored at the window's target; the "
    "paper's formula alone fired at start-up on empty instances and isolated what the window start had just "
    "pre-started (test_preserve.py).",
]


def _seed_section(res: dict) -> list:
    q = res["rq3_seeds"]
    pts = q["points"] + [p for p in res["rq3"]["points"] if p["factor"] in (0.8, 1.1) and p["router"] in SEED_ROUTERS]
    L = ["### RQ3 seed spread (the same points with other workload seeds; the targets use seed 1)", "",
         "P99 normalised latency (s/token). cut = 1 - PreServe / best of the paper's set (LR, MU, Llumnix-like with "
         "and without migration); spread = max/min - 1 over these seven routers (round-robin and the PreServe "
         "ablations not run here).", "",
         "| x knee | seed | best of the paper's set | its P99 | our memory-usage (+ queued) | PreServe oracle | cut | "
         "PreServe Table-2 | cut | spread |", "|---|---|---|---|---|---|---|---|---|---|"]
    for f in (0.8, 1.1):
        for seed in [1, *q["seeds"]]:
            row = {p["router"]: p["p99_nl_s"] for p in pts if p["factor"] == f and p.get("seed", 1) == seed}
            if len(row) < len(SEED_ROUTERS):
                continue
            bname = min(BASELINES, key=lambda b: row[b])
            best, po, pt = row[bname], row["preserve (oracle lengths)"], row["preserve (Table-2 noise)"]
            L.append(f"| {f} | {seed} | {bname} | {_f(best)} | {_f(row[MUQ])} | {_f(po)} | {1 - po / best:.1%} | "
                     f"{_f(pt)} | {1 - pt / best:.1%} | {max(row.values()) / min(row.values()) - 1:.1%} |")
    return [*L, ""]


def write_doc(res: dict, cmd: str, note: str = "") -> str:
    L = ["# PreServe reproduction (issue 16)", "",
         f"Generated by `{cmd}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}{note}; do not edit by "
         "hand.",
         "Paper: ../shared/seeds/001 (authority), extraction ../shared/specs/001_spec.md. Engine: the compiled fleet "
         "simulator (docs/simulator.md), policies in simulations/engine/policies/preserve/.", "",
         "**Setting.** LLaMA-2-7B on one A40 per instance is a DERIVED deployment (fixtures/scenarios/"
         "preserve_routing.json): the llama-2-7b A100-80GB fit to the SLINFER authors' measured table, prefill "
         "coefficients x 1.99 and decode coefficients x 2.47, the median A40/A100 time ratios of Vidur's Llama-2-7B "
         "linear-operator profiles (128-4,096 tokens: p10-p90 1.88-2.26; 1-256 tokens: 2.12-2.91). Attention has "
         "no A40 profile and takes the same ratio: decode times are uncertain by roughly +/-15 %. KV = (0.9 x 48 GB "
         "- 12.6 GB) / 512 KiB = 58,365 tokens (the paper's '40 GB' would give 44,632). Lengths: log-normals "
         "fitted to the paper's ShareGPT quantiles. No model weights or ShareGPT text are reachable offline: "
         "the output-length predictor is an oracle, the oracle plus errors distributed as the paper's Table 2 "
         "(`table2-noise`), or the bucket-median baseline. SLO: normalised latency (E2E / output tokens) within "
         "3x the request's isolated run (the paper: 3x an isolated request's, 0.2 s on its testbed).", ""]
    if "rq3" in res:
        q = res["rq3"]
        t = q["targets"]
        L += ["## RQ3: routing (Fig. 10)", "",
              f"4 instances, Poisson, {q['minutes']:g} minutes per rate. Knee: the first rate of the grid "
              f"{q['grid']} at which the best of the baselines (least-requests, the paper's MU, Llumnix-like with and "
              f"without migration, our memory-usage + queued prompts) has a P99 normalised "
              f"latency above twice its value at the lowest rate: **{q['knee_rps']} req/s** (the paper's four "
              f"alone: {q.get('knee_paper_set_rps', '-')} req/s; paper: 9.3-9.5 "
              "req/s for 4 A40s; ours is higher, probably because our A40 is derived from A100 measurements "
              "without vLLM's scheduling and HTTP overheads and holds 58k KV tokens; not verified). vLLM 0.6.6 "
              "defaults (the paper's engine; checked in vllm-project/vllm): max_num_seqs 256, max_num_batched_tokens "
              "max(max_model_len, 2048) = 4,096, no chunked prefill (default on only above 32K context), "
              "gpu_memory_utilization 0.9, recompute preemption, watermark 0.01, max_model_len 4,096 (session 6: "
              "the limit was missing; 0.8 % of the requests have prompt + output > 4,096 and are now cut or "
              "rejected as vLLM does). MU is the paper's (sec. 3.2.2): the lowest 0.5 x GPU utilisation (1 with "
              "any unfinished request) + 0.5 x KV in use / capacity, queued prompts ignored as vLLM's "
              "gpu_cache_usage_perc ignores them; 'memory-usage (ours: + queued prompts)' is the token-aware "
              "variant earlier sessions used as MU, kept as an extra.", "",
              "Knee search (P99 normalised latency, s/token):", "",
              "| rate | " + " | ".join(BASELINES_EXT) + " |", "|---" * (len(BASELINES_EXT) + 1) + "|"]
        for rate in q["grid"]:
            L.append(f"| {rate} | " + " | ".join(_f(next((p["p99_nl_s"] for p in q["stage1"] if p["rate_rps"] == rate
                                                          and p["router"] == b), None)) for b in BASELINES_EXT) + " |")
        if q.get("by_rate"):
            L += ["", "PreServe against the best baseline at every grid rate (P99 normalised latency, s/token; cut = "
                  "1 - PreServe / best; paper's set = LR, MU, Llumnix-like with and without migration; extended = "
                  "+ our memory-usage with queued prompts):", "",
                  "| rate | best of the paper's set | its P99 | PreServe oracle | cut | PreServe Table-2 | cut | "
                  "best of the extended set | oracle cut | Table-2 cut |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
            for rate in q["grid"]:
                row = {p["router"]: p["p99_nl_s"] for p in q["stage1"] + q["by_rate"] if p["rate_rps"] == rate}
                po, pt = row["preserve (oracle lengths)"], row["preserve (Table-2 noise)"]
                cells = []
                for bset in (BASELINES, BASELINES_EXT):
                    bname = min(bset, key=lambda b: row.get(b, math.inf))
                    cells.append((bname, row[bname]))
                (bn, best), (xn, xbest) = cells
                L.append(f"| {rate} | {bn} | {_f(best)} | {_f(po)} | {1 - po / best:.1%} | {_f(pt)} | "
                         f"{1 - pt / best:.1%} | {xn} ({_f(xbest)}) | {1 - po / xbest:.1%} | {1 - pt / xbest:.1%} |")
        L += ["", "| x knee | rate | router | P99 norm. latency (s/token) | P99 counting drops | mean TTFT (s) | "
              "attainment | dropped | preemptions | migrations |", "|---|---|---|---|---|---|---|---|---|---|"]
        for p in q["points"]:
            wd = p["p99_nl_with_drops_s"]
            if (wd is None or math.isnan(wd)) and p["dropped"]:  # results saved before the percentile fix
                wd = math.inf if p["dropped"] >= 0.01 * p["requests"] else None
            L.append(f"| {p['factor']} | {p['rate_rps']} | {p['router']} | {_f(p['p99_nl_s'])} | "
                     f"{'inf (> 1 % dropped)' if wd == math.inf else _f(wd)} | {_f(p['mean_ttft_s'], 2)} | {_f(p['attainment'])} | "
                     f"{p['dropped']} | {p['preemptions']} | {p.get('migrations', 0)} |")
        sp = t["below_knee_spread"]
        ok3 = all(v <= 0.10 for v in sp.values())
        L += ["", "| target (issue 16) | paper | ours | met |", "|---|---|---|---|"]
        for suffix, label in (("", "the paper's set: LR / MU (paper's) / Llumnix-like with and without live "
                                   "migration"),
                              ("_ext", "the EXTENDED set: the paper's + our memory-usage with queued prompts")):
            t11 = t.get(f"1.1x{suffix}")
            if t11 is None:  # results saved before session 6
                continue
            ok1 = t11["cut_oracle"] >= 0.30
            ok2 = t11["cut_table2"] >= 0.20
            L += [f"| P99 cut vs best of {label}, 1.1x knee, oracle lengths, >= 30 % | 41.3 % (vs Llumnix, "
                  f"10.5 QPS: P99 Llumnix 0.767, Sia 0.956, Magnus 1.23, PreServe 0.45 s; LR / MU only in Fig. 10) | "
                  f"{t11['cut_oracle']:.1%} (best baseline {t11['best_baseline']}, P99 "
                  f"{t11['best_baseline_p99']:.3f}; {t11['drops_oracle']} requests dropped by the hold queue) | "
                  f"{'yes' if ok1 else 'NO'} |",
                  f"| same with Table-2 noise, >= 20 % | (robust, not quantified) | {t11['cut_table2']:.1%} "
                  f"({t11['drops_table2']} dropped) | {'yes' if ok2 else 'NO'} |",
                  f"| same, oracle, unbounded hold queue (no drops) | - | {t11['cut_oracle_unbounded_hold']:.1%} | - |",
                  f"| at 1.2x knee, oracle | - | {t['1.2x' + suffix]['cut_oracle']:.1%} | - |"]
        L += ["| below 0.95x knee all routers within 10 % (P99, max/min - 1) | 'comparable' below 9.3 QPS | "
              + ", ".join(f"{k}: {v:.1%}" for k, v in sp.items()) + f" | {'yes' if ok3 else 'NO'} |", ""]
    if "rq3_seeds" in res:
        L += _seed_section(res)
    if "sensitivity" in res:
        L += ["### RQ3 what-if testbeds (explaining the misses; not used for the targets)", "",
              "P99 normalised latency (s/token); cut = 1 - PreServe (oracle) / best of LR, MU (paper's), "
              "Llumnix-like.", ""]
        for label, blk in res["sensitivity"].items():
            L += [f"**{label}**", "", "| rate | " + " | ".join(SENS_ROUTERS) + " | cut |",
                  "|---" * (len(SENS_ROUTERS) + 2) + "|"]
            for rate in blk["grid"]:
                row = {p["router"]: p["p99_nl_s"] for p in blk["points"] if p["rate_rps"] == rate}
                best = min(row[n] for n in SENS_ROUTERS[:3])
                L.append(f"| {rate:g} | " + " | ".join(_f(row.get(n)) for n in SENS_ROUTERS)
                         + f" | {1 - row['preserve (oracle lengths)'] / best:.1%} |")
            L.append("")
    if "rq2" in res:
        q = res["rq2"]
        c = q["calibration"]
        L += ["## RQ2: scaling (Figs. 8/9) on a SYNTHETIC week", "",
              "The Azure 2024 week traces are not available offline. The replay runs on a **synthetic** week "
              f"(simulations/engine/policies/preserve/week.py) calibrated to the paper's section 3.1: peak/average "
              f"{c['peak_over_avg']:.2f}x (paper 3.3x), peak/minimum {c['peak_over_min']:.1f}x (35.6x), highest/"
              f"lowest weekday peak {c['weekday_peak_spread']:.2f} (+35 %), at 30-minute aggregation. Days 1-2 are "
              f"the forecasters' history, days 3-4 are replayed compressed {q['compression']:g}x (the paper: 24x, two "
              f"days in two hours), "
              f"{q['requests']:,} requests, peak 30-minute rate {q['peak_rps']:.1f} req/s (7 instances' worth at our "
              f"knee), windows of {q['window_s']:g} s (10 trace minutes), cold start = the deployment's 30 s, "
              f"N in [1, 8]. Capacity profile measured in our engine: mu_p {q['capacity']['mu_p']}, mu_d "
              f"{q['capacity']['mu_d']}, mu_t {q['capacity']['mu_t']} tokens/s per instance. The 'oracle-noise' "
              "forecaster is an ORACLE with Table 1's Azure-code errors, standing in for the paper's mLSTM; the "
              "seasonal-naive one is ours (forecasts.core).", "",
              "| strategy | instance-hours | vs static-8 | peak 5-min mean norm. latency (s/token) | x SLO | "
              "5-min windows over SLO | P99 norm. latency | dropped | scale-outs | migrations | drain after the last "
              "arrival (s) |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for x in q["runs"]:
            L.append(f"| {x['strategy']} | {x['instance_hours']:.2f} | {_f(x['saving_vs_static8'] and -x['saving_vs_static8'], 3)} | "
                     f"{_f(x['peak_5min_nl_s'])} | {x['peak_5min_nl_s'] / x['slo_s_per_token']:.2f} | "
                     f"{x['windows_over_slo']}/{x['windows']} | {_f(x['p99_nl_s'])} | {x['dropped']} | "
                     f"{x['scale_outs']} | {x.get('migrations', 0)} | {_f(x.get('drain_after_last_arrival_s'), 0)} |")
        L += ["", "(vs static-8: relative change of instance-hours; negative = fewer.) SLO = 3x the mean isolated "
              "normalised latency of the replay's requests.", ""]
        by = {x["strategy"]: x for x in q["runs"]}
        llx = by.get("Llumnix-like")
        llm = by.get("Llumnix-like (live migration)")
        s4 = by.get("static-4")
        L += ["| target (issue 16) | paper | ours | met |", "|---|---|---|---|"]
        for name in ("PreServe (Table-2 noise, oracle-noise forecast)", "PreServe (oracle lengths, oracle-noise forecast)",
                     "PreServe (Table-2 noise, seasonal-naive forecast)"):
            x = by.get(name)
            if not x or x.get("saving_vs_static8") is None:
                continue
            sv = x["saving_vs_static8"]
            ratio = x["peak_5min_nl_s"] / x["slo_s_per_token"]
            L.append(f"| {name}: 40-58 % fewer instance-hours than static-8 | 49.4 % | {sv:.1%} | "
                     f"{'yes' if 0.40 <= sv <= 0.58 else 'NO'} |")
            L.append(f"| {name}: peak 5-min norm. latency <= 1.25x SLO | 0.197-0.25 s vs SLO 0.2 s | {ratio:.2f}x | "
                     f"{'yes' if ratio <= 1.25 else 'NO'} |")
            for label, ll in (("Llumnix-like's (no migration)", llx), ("Llumnix-like's (live migration)", llm)):
                if ll:
                    cut = 1 - x["peak_5min_nl_s"] / ll["peak_5min_nl_s"]
                    L.append(f"| {name}: peak >= 30 % below {label} | 45.1 % (0.25 vs 0.455 s) | {cut:.1%} | "
                             f"{'yes' if cut >= 0.30 else 'NO'} |")
        if s4:
            L.append(f"| static-4 violates the SLO in most 5-min windows | 4.20 s peak (Fig. 9) | "
                     f"{s4['windows_over_slo']}/{s4['windows']} windows, peak {s4['peak_5min_nl_s']:.1f} s/token | "
                     f"{'yes' if s4['windows_over_slo'] > s4['windows'] / 2 else 'NO'} |")
        L.append("")
    L += ["## Differences from the paper, explained", "", *DIFFERENCES, ""]
    return "\n".join(L) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rq3", action="store_true", help="run RQ3 (routing)")
    ap.add_argument("--rq2", action="store_true", help="run RQ2 (scaling on the synthetic week)")
    ap.add_argument("--minutes", type=float, default=10.0, help="RQ3 minutes per rate (paper: 10)")
    ap.add_argument("--grid", default="9,10,11,11.5,12,12.5,13,14", help="RQ3 rate grid for the knee (req/s)")
    ap.add_argument("--knee", type=float, default=None, help="RQ2 only: the RQ3 knee (req/s) if RQ3 is not run")
    ap.add_argument("--write-doc", action="store_true", help=f"write {DOC.relative_to(ROOT)}")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--out", default="", help="also save the results JSON here")
    ap.add_argument("--load", action="append", default=[],
                    help="results JSON of an earlier run (--out) to include instead of running that part (a part "
                         "named by --rq3 / --rq2 / --sensitivity is run again)")
    ap.add_argument("--sensitivity", action="store_true",
                    help="also run the RQ3 what-if testbeds (KV of a 40 GB A40, flatter batch cost)")
    ap.add_argument("--seeds", default="2,3,4,5",
                    help="RQ3 seed spread: other workload seeds at 0.8x and 1.1x the knee ('' = none)")
    ap.add_argument("--compression", type=float, default=24.0, help="RQ2 time compression (paper: 24, 2 days in 2 h)")
    a = ap.parse_args(argv)
    if not (a.rq3 or a.rq2 or a.load or a.sensitivity):
        a.rq3 = a.rq2 = a.sensitivity = True

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    res = {}
    for path in a.load:
        res.update(json.loads(Path(path).read_text()))
    # a part asked for by name is run again even when a loaded JSON has it (e.g. --rq3 --load old.json: new RQ3,
    # the old RQ2 and what-ifs kept in the document)
    for flag, keys in ((a.rq3, ("rq3", "rq3_seeds")), (a.rq2, ("rq2",)), (a.sensitivity, ("sensitivity",))):
        if flag and a.load:
            for key in keys:
                res.pop(key, None)
    if "rq3" in res:  # the targets are a function of the points: recompute them with this code
        res["rq3"]["targets"] = rq3_targets(res["rq3"]["points"])
    if a.rq3 and "rq3" not in res:
        res["rq3"] = run_rq3(a.minutes, [float(x) for x in a.grid.split(",")], log)
    if a.rq3 and a.seeds and "rq3_seeds" not in res and "rq3" in res:
        res["rq3_seeds"] = run_seeds(a.minutes, res["rq3"]["knee_rps"], [int(x) for x in a.seeds.split(",")], log)
    if a.sensitivity and "sensitivity" not in res:
        res["sensitivity"] = run_sensitivity(a.minutes, log)
    if a.rq2 and "rq2" not in res:
        knee = res["rq3"]["knee_rps"] if "rq3" in res else (a.knee or 12.5)
        partial = Path(a.out + ".rq2-partial") if a.out else None
        res["rq2"] = run_rq2(knee, log, compression=a.compression,
                             save=(lambda runs: partial.write_text(json.dumps(runs, default=float)))
                             if partial else None)
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=1, default=float))
    if a.write_doc:
        cmd = "python tests/benchmarks/reproduce_preserve.py " + " ".join(argv or sys.argv[1:])
        note = ""
        if a.load:
            note = (", from results saved by a full run, `nice -n 10 python tests/benchmarks/reproduce_preserve.py "
                    "--write-doc --out docs/reproduction_preserve.json` (seeded: two full runs on 2026-11-24 gave "
                    "identical figures)")
        DOC.write_text(write_doc(res, cmd, note))
        log(f"wrote {DOC}")
    if a.json:
        print(json.dumps(res, indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
