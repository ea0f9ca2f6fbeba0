"""Scenario builders for the Chiron reproduction: deployments from the hardware catalogue and the
paper's settings (Fig. 19, W_B, W_A). Django-free: the catalogue's built-in data is read as JSON.

- 8B: ``llama3.1-8b/a100-80gb/tp1`` (fitted to the SLINFER authors' measured A100 table; KV 426,788 tokens).
- 70B: the catalogue has no Llama-3.1-70B; ``llama2-70b/a100-80gb/tp<N>`` (SageServe's perf_model.csv fit; the
  same 80 layers and 8 KV heads as Llama-3.1-70B) with TP a parameter (default 4: the smallest TP whose KV cache
  holds more than a few dozen ShareGPT-like requests; TP2 leaves 18k tokens).
- KV bytes per token for swap: 2 x layers x KV heads x head dim x 2 bytes = 128 KiB (8B), 320 KiB (70B).
- Start-up: the paper's model load time (15-60 s; 30 s in Fig. 19) as the spot reclaim delay: every scale-out
  reclaims a same-model instance from the region's pool (size = the GPU cap).
- Lengths: ShareGPT-like log-normals fitted to published quantiles (prompt p5/p50/p95 = 7/52/911, response
  5/87/632; the same fit as fixtures/workloads/poisson_sharegpt.json).
- SLOs (sec. 6): interactive (IW-F) TTFT 10 s, ITL 200 ms; batch (NIW) TTFT 1 h, ITL 2 s (mean ITL per request).
- No prefix caching and no speculative decoding are modelled (the paper enables both).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

CATALOGUE = Path(__file__).resolve().parents[4] / "planner" / "catalogue" / "data" / "builtin.json"
KV_BYTES = {"llama3.1-8b": 2 * 32 * 8 * 128 * 2, "llama2-70b": 2 * 80 * 8 * 128 * 2}
SHAREGPT = {"input": {"quantiles": {"p5": 7, "p50": 52, "p95": 911}, "max": 4096},
            "output": {"quantiles": {"p5": 5, "p50": 87, "p95": 632}, "max": 4096}}
SLO = {"ttft_s": {"IW-F": 10.0, "NIW": 3600.0}, "e2e_s": {"IW-F": 1e9, "NIW": 1e9},
       "itl_s": {"IW-F": 0.2, "NIW": 2.0}, "itl_stat": "mean"}


def deployment(model: str = "8b", tp: int = 4, load_s: float = 30.0) -> dict:
    name = "llama3.1-8b/a100-80gb/tp1" if model == "8b" else f"llama2-70b/a100-80gb/tp{int(tp)}"
    data = json.loads(CATALOGUE.read_text())
    deps = data["deployments"]
    found = [d for d in deps if d["name"] == name]
    if not found:
        raise ValueError(f"no catalogue deployment {name}")
    d = found[0]
    keep = ("name", "model", "gpu", "tp", "gpus_per_instance", "max_batch_size", "max_batch_tokens", "prefill",
            "decode", "kv_capacity_tokens", "price_per_instance_hour", "theta_tps")
    spec = {k: copy.deepcopy(d[k]) for k in keep if k in d}
    spec["kv_bytes_per_token"] = KV_BYTES[d["model"]]
    spec["weights_gb"] = next(m["weights_gb"] for m in data["models"] if m["name"] == d["model"])
    spec["startup"] = {"vm_acquire_s": 0.0, "load_same_region_s": load_s, "load_cross_region_s": load_s,
                       "spot_reclaim_s": load_s}
    return spec


def scenario(*, parts: list, dep: dict, initial: int, cap: int, strategy: dict, max_time_s: float,
             seed: int = 1, name: str = "chiron") -> dict:
    model = dep["model"]
    return {
        "name": name, "seed": seed,
        "deployments": {dep["name"]: dep},
        "workload": {"synthetic": {"kind": "mix", "seed": seed, "parts": parts}},
        "fleet": {"regions": [{"name": "r1", "spot_pool": {model: cap}, "vm_capacity": 0}],
                  "endpoints": [{"region": "r1", "model": model, "deployment": dep["name"], "initial": initial,
                                 "min": 1, "max": cap}]},
        "slo": copy.deepcopy(SLO),
        "strategy": strategy,
        "engine": {"mode": "fast", "timeline_step_s": 30, "max_time_s": max_time_s},
    }


def interactive_part(model: str, rate: float, duration_s: float, cv: float | None = None) -> dict:
    part = {"kind": "gamma" if cv else "poisson", "rate_rps": rate, "duration_s": duration_s, "tier": "IW-F",
            "model": model, "region": "r1", "lengths": copy.deepcopy(SHAREGPT)}
    if cv:
        part["cv"] = cv
    return part


def batch_part(model: str, requests: int, at_s: float) -> dict:
    return {"kind": "batch", "requests": int(requests), "at_s": at_s, "tier": "NIW", "model": model,
            "region": "r1", "lengths": copy.deepcopy(SHAREGPT)}


STRATEGIES = {
    "chiron": {"autoscaler": "chiron", "params": {}},
    "chiron-static-batch": {"autoscaler": "chiron", "params": {"local": False}},
    "chiron-utilisation": {"autoscaler": "chiron", "params": {"global": "utilisation"}},
    "llumnix": {"autoscaler": "llumnix-batch", "params": {}, "instance_router": "llumnix-approx"},
}


def strategy(name: str, **params) -> dict:
    base = copy.deepcopy(STRATEGIES[name])
    base["params"].update(params)
    out = {"autoscaler": base["autoscaler"], "params": base["params"], "region_router": "local",
           "endpoint_router": "least-utilised", "instance_router": base.get("instance_router", "least-requests"),
           "scheduler": "fcfs"}
    return out


def fig19(strategy_name: str, scale: float = 1.0, seed: int = 1, **params) -> dict:
    """Fig. 19 / A.2: Gamma 30 req/s CV 4 interactive + 1M batch requests at t = 5 min, 50-instance cap, 30 s
    load; ``scale`` multiplies the rate, the dump and the cap (the shape kept). Runs 80 simulated minutes."""
    dep = deployment("8b", load_s=30.0)
    cap = max(2, round(50 * scale))
    parts = [interactive_part(dep["model"], 30.0 * scale, 80 * 60.0, cv=4.0),
             batch_part(dep["model"], round(1_000_000 * scale), 300.0)]
    initial = max(1, round(15 * scale)) if strategy_name.startswith("llumnix") else max(2, round(6 * scale))
    return scenario(parts=parts, dep=dep, initial=initial, cap=cap, strategy=strategy(strategy_name, **params),
                    max_time_s=80 * 60.0, seed=seed, name=f"chiron-fig19-{strategy_name}-x{scale:g}")
