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


# A prefill-heavy queue for disaggregated serving: prompts of 200-600 tokens (mean 400) prefilled at 1 ms per token
# (batched prefill is linear in tokens: 1,000 prompt tokens/s per instance), outputs geometric with mean 50 tokens
# decoded in batches of up to 16 at 20 ms + 2 ms per request per step (16 / 0.052 s = 308 tokens/s per instance).
# At 8 requests/s the prompts need 3,200 tokens/s, so at least 4 prefill instances, and the outputs 400 tokens/s,
# so at least 2 decode instances. Three GPU types: the aggregated one at $1.00/h, a prefill and a decode one at $0.50/h.
PD_RATE = 8.0


def pd_queue(duration_s: float = 120.0, ceiling: int = 16) -> dict:
    rng = np.random.default_rng(0)

    def dep(name: str, gpu: str, price: float) -> dict:
        return {"name": name, "model": "m", "gpu": gpu, "tp": 1, "gpus_per_instance": 1, "weights_gb": 1.0,
                "kv_capacity_tokens": 200_000, "max_batch_size": 16, "max_batch_tokens": 8192,
                "kv_bytes_per_token": 1000, "prefill": {"c0": 0.0, "c1": 0.001, "c2": 0.0},
                "decode": {"c0": 0.02, "c_batch": 0.002, "c_ctx": 0.0},
                "price_per_instance_hour": {"on_demand": price}, "theta_tps": 800.0}

    lengths = {"empirical": {"input": rng.integers(200, 601, 4000).tolist(),
                             "output": rng.geometric(0.02, 4000).tolist()}}
    return {"name": "prefill-heavy queue", "seed": 1,
            "deployments": {"m/g/tp1": dep("m/g/tp1", "g", 1.0), "m/p/tp1": dep("m/p/tp1", "p", 0.5),
                            "m/d/tp1": dep("m/d/tp1", "d", 0.5)},
            "workload": {"synthetic": {"kind": "poisson", "rate_rps": PD_RATE, "duration_s": duration_s, "model": "m",
                                       "regions": {"r1": 1.0}, "tier": "IW-F", "lengths": lengths}},
            "fleet": {"regions": [{"name": "r1"}], "endpoints": [{"region": "r1", "model": "m", "deployment": "m/g/tp1",
                                                                  "initial": 1, "min": 1, "max": ceiling}]},
            "slo": {"ttft_s": {"IW-F": 2.0}, "e2e_s": {"IW-F": 10.0}},
            "strategy": {"autoscaler": "static"}, "engine": {"timeline_step_s": 0}}


PD_OPTIONS = {"m": {"prefill": ["m/p/tp1"], "decode": ["m/d/tp1"]}}
