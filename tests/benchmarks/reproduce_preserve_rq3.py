"""PreServe RQ3 (Fig. 10) at the paper's operating point, with lengths shaped by vLLM's benchmark sampling.

    nice -n 10 .venv/bin/python tests/benchmarks/reproduce_preserve_rq3.py     # run, save, rewrite the PreServe doc

Rules (fixed before the first run; nothing is changed after seeing a number):

- Testbed and routers as tests/benchmarks/reproduce_preserve.py (fixtures/scenarios/preserve_routing.json: 4 x
  LLaMA-2-7B on the derived A40, vLLM 0.6.6 settings, 10 minutes per point). Routers: the paper's baselines
  (least-requests, MU, Llumnix-like without and with live migration) and PreServe (oracle lengths, Table-2 noise).
- Lengths as vLLM's serving benchmark samples ShareGPT (vllm-project/vllm benchmarks/benchmark_dataset.py
  ``is_valid_sequence``: min_len 4, max_prompt_len 1024, max_total_len 2048, "copied from the original
  sample_sharegpt_requests" of benchmarks/benchmark_serving.py, the 0.6.x benchmark): (prompt, output) pairs
  drawn from the fixture's ShareGPT-like log-normals, a pair dropped when prompt < 4 or output < 4 or prompt >
  1024 or prompt + output > 2048; arrivals Poisson at the rate (the benchmark's exponential intervals, burstiness
  1), the first ``rate x 600 s`` kept pairs in draw order.
- Seeds 1-5 (lengths and arrivals), every router on the same five workloads.
- Operating point: the paper's best baseline at 1.1x its knee (Llumnix, 10.5 QPS) has about 93 % SLO attainment.
  Rates are tried upwards from 8 req/s in steps of 0.5 up to 16; the operating point is the first rate at which
  the best of the paper's baselines (highest mean attainment over the five seeds) has a mean attainment <= 93 %.
  No rate in the range: the script fails (no fallback).
- At the operating point: P99 normalised latency (served requests) per router and seed, SLO attainment, P99 / SLO
  (SLO = 3x the request's isolated normalised latency, the fixture's), PreServe's cut against the best of the
  paper's set per seed, mean and a 95 % t-interval over the seeds. The same with chunked prefill on
  (``engine.chunked_prefill`` true, the deployment's token budget unchanged), side by side.
- Not modelled: the migration interference the paper gives as the reason for Llumnix's loss (our live migration
  copies without slowing either GPU).
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
from tests.benchmarks.reproduce_preserve import BASE, BASELINES, ROUTERS  # noqa: E402

RESULTS = ROOT / "docs" / "results" / "preserve.json"
SEEDS = (1, 2, 3, 4, 5)
MINUTES = 10.0
TARGET_ATTAINMENT = 0.93
RATES = tuple(8.0 + 0.5 * i for i in range(17))  # 8 .. 16 req/s
PRESERVE = ("preserve (oracle lengths)", "preserve (Table-2 noise)")
MIN_LEN, MAX_PROMPT, MAX_TOTAL = 4, 1024, 2048


def vllm_sampled_frame(d: dict, rate: float, seed: int, minutes: float):
    """(arrival, prompt, output) of ``rate x minutes`` requests: pairs from the scenario's length model, pruned as
    vLLM's benchmark prunes ShareGPT, Poisson arrivals."""
    import pandas as pd

    n = int(round(rate * minutes * 60))
    keep_in, keep_out = [], []
    draw = copy.deepcopy(d)
    k = 0
    while sum(len(x) for x in keep_in) < n:
        draw["workload"]["synthetic"].update(rate_rps=float(rate) * 2, duration_s=float(minutes) * 60,
                                             seed=int(seed) * 1000 + k)
        w = build_workload(parse_scenario(draw))
        p, o = np.asarray(w.input_tokens), np.asarray(w.output_tokens)
        ok = (p >= MIN_LEN) & (o >= MIN_LEN) & (p <= MAX_PROMPT) & (p + o <= MAX_TOTAL)
        keep_in.append(p[ok])
        keep_out.append(o[ok])
        k += 1
    p, o = np.concatenate(keep_in)[:n], np.concatenate(keep_out)[:n]
    gaps = np.random.default_rng(seed).exponential(1.0 / rate, size=n)
    arr = np.cumsum(gaps) - gaps[0]
    return pd.DataFrame({"arrival_s": arr, "input_tokens": p, "output_tokens": o})


def point(rate: float, name: str, seed: int, chunked: bool = False, minutes: float = MINUTES) -> dict:
    d = json.loads(BASE.read_text())
    d["seed"] = d["workload"]["synthetic"]["seed"] = int(seed)
    frame = vllm_sampled_frame(d, rate, seed, minutes)
    syn = d["workload"]["synthetic"]
    d["workload"] = {"frame": True, "model": syn["model"], "region": d["workload"]["region"], "tier": syn["tier"]}
    d["strategy"] = {**d["strategy"], **copy.deepcopy(ROUTERS[name])}
    d["engine"]["chunked_prefill"] = bool(chunked)
    sc = parse_scenario(d)
    w = build_workload(sc, frame=frame)
    t0 = time.process_time()
    r = simulate(sc, w)
    nl = np.asarray(r.requests["normalised_latency"], dtype=float)
    iso = np.asarray(r.requests["isolated_e2e_s"], dtype=float) / np.maximum(np.asarray(w.output_tokens), 1)
    slo = 3.0 * iso
    p99 = float(np.nanpercentile(nl, 99))
    return {"rate_rps": rate, "router": name, "seed": seed, "chunked": chunked,
            "requests": int(r.summary["requests"]), "dropped": int(r.summary["dropped"]),
            "p99_nl_s": p99, "attainment": float(r.slo["overall"]["attainment"]),
            "slo_s_per_token_mean": float(np.nanmean(slo)), "p99_over_slo": p99 / float(np.nanmean(slo)),
            "min_output": int(np.min(w.output_tokens)), "cpu_s": round(time.process_time() - t0, 2)}


def t_interval(xs) -> tuple[float, float, float]:
    """Mean and a 95 % t-interval."""
    from scipy import stats

    x = np.asarray(xs, dtype=float)
    m = float(x.mean())
    if len(x) < 2:
        return m, m, m
    h = float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return m, m - h, m + h


def find_operating_point(log) -> tuple[float, list]:
    rows = []
    for rate in RATES:
        att = {}
        for name in BASELINES:
            pts = [point(rate, name, s) for s in SEEDS]
            rows += pts
            att[name] = float(np.mean([p["attainment"] for p in pts]))
        best = max(att, key=att.get)
        log(f"rate {rate:5.2f}: best {best} attainment {att[best]:.3f}")
        if att[best] <= TARGET_ATTAINMENT:
            return rate, rows
    raise SystemExit(f"no rate in {RATES[0]}-{RATES[-1]} req/s brings the best baseline's attainment to "
                     f"<= {TARGET_ATTAINMENT:.0%}: the operating point is outside the searched range")


def summarise(rows: list, rate: float, chunked: bool) -> dict:
    at = [p for p in rows if p["rate_rps"] == rate and p["chunked"] == chunked]
    by = {(p["router"], p["seed"]): p for p in at}
    out = {"rate_rps": rate, "chunked": chunked, "routers": {}}
    for name in (*BASELINES, *PRESERVE):
        ps = [by[(name, s)] for s in SEEDS if (name, s) in by]
        if ps:
            out["routers"][name] = {"p99_nl_s": t_interval([p["p99_nl_s"] for p in ps]),
                                    "attainment": t_interval([p["attainment"] for p in ps]),
                                    "p99_over_slo": t_interval([p["p99_over_slo"] for p in ps])}
    best_name = max(BASELINES, key=lambda b: out["routers"][b]["attainment"][0])
    out["best_baseline"] = best_name
    for name in PRESERVE:
        cuts = []
        for s in SEEDS:
            best = min(by[(b, s)]["p99_nl_s"] for b in BASELINES)
            cuts.append(1 - by[(name, s)]["p99_nl_s"] / best)
        out[f"cut {name}"] = {"per_seed": cuts, "mean_ci": t_interval(cuts)}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-doc", action="store_true", help="do not rewrite docs/reproduction_preserve.md")
    a = ap.parse_args(argv)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    rate, rows = find_operating_point(log)
    for name in PRESERVE:
        rows += [point(rate, name, s) for s in SEEDS]
    for name in (*BASELINES, *PRESERVE):
        rows += [point(rate, name, s, chunked=True) for s in SEEDS]
    res = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    res["rq3_op"] = {"rules": "tests/benchmarks/reproduce_preserve_rq3.py", "seeds": list(SEEDS), "minutes": MINUTES,
                     "target_attainment": TARGET_ATTAINMENT, "rates_tried": sorted({p["rate_rps"] for p in rows}),
                     "operating_point_rps": rate, "points": rows,
                     "off": summarise(rows, rate, False), "on": summarise(rows, rate, True)}
    RESULTS.write_text(json.dumps(res, indent=1, default=float))
    log(json.dumps({k: res["rq3_op"][k] for k in ("operating_point_rps", "off", "on")}, default=float)[:3000])
    if not a.no_doc:
        from tests.benchmarks.reproduce_preserve import main as doc_main

        doc_main(["--load", str(RESULTS), "--write-doc"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
