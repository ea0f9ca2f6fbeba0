"""Small builders for engine tests (plain dicts -> Scenario, Workload)."""

from __future__ import annotations

import numpy as np

from simulations.engine import Workload, parse_scenario

SPEC = {
    "name": "toy/gpu/tp1", "model": "toy", "gpu": "gpu", "tp": 1, "gpus_per_instance": 8,
    "weights_gb": 10.0, "kv_capacity_tokens": 100_000, "max_batch_size": 64, "max_batch_tokens": 100_000,
    "prefill": {"c0": 0.1, "c1": 0.001, "c2": 0.0},
    "decode": {"c0": 0.01, "c_batch": 0.001, "c_ctx": 0.0001},
    "startup": {"vm_acquire_s": 155.0, "load_same_region_s": 600.0, "load_cross_region_s": 7200.0,
                "spot_reclaim_s": 65.0},
    "price_per_instance_hour": {"on_demand": 36.0},
}


def scenario(*, spec=None, initial=1, lo=1, hi=1, mode="fast", strategy=None, regions=None, spot=None, vm=0,
             timeline_step_s=60.0, endpoint_extra=None, **extra):
    spec = dict(SPEC, **(spec or {}))
    regions = regions or ["r1"]
    d = {
        "name": "test", "seed": 3,
        "workload": {"synthetic": {"total_requests": 1}},
        "fleet": {
            "regions": [{"name": r, "spot_pool": spot or {}, "vm_capacity": vm} for r in regions],
            "endpoints": [{"region": r, "model": "toy", "deployment": spec, "initial": initial, "min": lo, "max": hi,
                           **(endpoint_extra or {})} for r in regions],
        },
        "strategy": strategy or {"autoscaler": "static"},
        "engine": {"mode": mode, "timeline_step_s": timeline_step_s},
    }
    d.update(extra)
    return parse_scenario(d)


def workload(arrivals, inputs, outputs, *, tiers=None, regions=None, region_names=("r1",)):
    n = len(arrivals)
    return Workload(
        arrival_s=np.asarray(arrivals, dtype=float), input_tokens=np.asarray(inputs, dtype=np.int64),
        output_tokens=np.asarray(outputs, dtype=np.int64),
        tier=np.asarray(tiers if tiers is not None else [0] * n, dtype=np.int8),
        model=np.zeros(n, dtype=np.int32),
        region=np.asarray(regions if regions is not None else [0] * n, dtype=np.int32),
        model_names=["toy"], region_names=list(region_names),
    )
