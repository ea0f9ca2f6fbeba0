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


class FakeView:
    """A stand-in for the run's ``PolicyView`` in unit tests of one policy: per-request columns as lists or
    arrays (``tiers``, ``arrivals``, ``prompts``, ``outputs``, ``models``, ``regions``, ``prio``), the scenario's
    tier SLOs (``ttft_s`` / ``itl_s``), and any verb or attribute the test needs as a keyword (``send=...``).
    ``scaling_events`` collects ``record_scaling``; ``prio`` what ``set_priority`` set."""

    def __init__(self, *, tiers=(), arrivals=(), prompts=(), outputs=(), models=(), regions=(), prio=None,
                 ttft_s=None, itl_s=None, n_arrived=None, **attrs):
        self.tiers, self.arrivals, self.prompts, self.outputs = tiers, arrivals, prompts, outputs
        self.models, self.regions = models, regions
        self.prio = list(prio) if prio is not None else [1] * len(arrivals)
        self.ttft_s, self.itl_s = dict(ttft_s or {}), dict(itl_s or {})
        self.n_arrived = len(prompts) if n_arrived is None else n_arrived
        self.scaling_events: list[dict] = []
        for key, value in attrs.items():
            setattr(self, key, value)

    def tier_of(self, rid):
        return int(self.tiers[rid])

    def model_of(self, rid):
        return int(self.models[rid])

    def region_of(self, rid):
        return int(self.regions[rid])

    def arrival_s(self, rid):
        return float(self.arrivals[rid])

    def prompt_tokens(self, rid):
        return int(self.prompts[rid])

    def output_tokens(self, rid):
        return int(self.outputs[rid])

    def request_slo(self, rid):
        tier = ("IW-F", "IW-N", "NIW")[self.tier_of(rid)]
        return self.ttft_s.get(tier), self.itl_s.get(tier)

    def observed(self, now=None):
        return {"input_tokens": np.asarray(self.prompts)[: self.n_arrived]}

    def set_priority(self, rid, priority):
        self.prio[rid] = int(priority)

    def record_scaling(self, now, endpoint, action, **fields):
        self.scaling_events.append({"t": now, "endpoint": endpoint.name, "action": action, **fields})

    def last_scaling_event(self):
        return dict(self.scaling_events[-1]) if self.scaling_events else None
