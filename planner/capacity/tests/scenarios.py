"""Small scenarios for the search's tests: the hand-checkable queue in two regions."""

from __future__ import annotations

import copy

import numpy as np

RATE = 8.0
DECODE_S = 0.01
PREFILL_S = 0.001
WAIT_S = 0.2
EXPONENTIAL = {"empirical": {"input": [1] * 4000,
                             "output": np.random.default_rng(0).geometric(DECODE_S, 4000).tolist()}}


def two_region_queue(duration_s: float = 300.0, ceiling: int = 30, rate_per_region: float = RATE) -> dict:
    dep = {"name": "m/g/tp1", "model": "m", "gpu": "g", "tp": 1, "gpus_per_instance": 1, "weights_gb": 1.0,
           "kv_capacity_tokens": 10_000_000, "max_batch_size": 1, "max_batch_tokens": 1_000_000,
           "prefill": {"c0": 0.0, "c1": PREFILL_S, "c2": 0.0}, "decode": {"c0": DECODE_S, "c_batch": 0.0, "c_ctx": 0.0},
           "price_per_instance_hour": {"on_demand": 1.0}, "theta_tps": 0.8}
    ep = {"region": "r1", "model": "m", "deployment": "m/g/tp1", "initial": 1, "min": 1, "max": ceiling}
    return {"name": "two-region queue", "seed": 1, "deployments": {"m/g/tp1": dep},
            "workload": {"synthetic": {"kind": "poisson", "rate_rps": 2 * rate_per_region, "duration_s": duration_s,
                                       "model": "m", "regions": {"r1": 0.5, "r2": 0.5}, "tier": "IW-F",
                                       "lengths": copy.deepcopy(EXPONENTIAL)}},
            "fleet": {"regions": [{"name": "r1"}, {"name": "r2"}], "endpoints": [ep, dict(ep, region="r2")]},
            "slo": {"ttft_s": {"IW-F": WAIT_S + PREFILL_S + 1e-6}},
            "strategy": {"autoscaler": "static"}, "engine": {"timeline_step_s": 0}}
