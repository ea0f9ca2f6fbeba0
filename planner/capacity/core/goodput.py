"""Goodput: the largest Poisson request rate of a workload shape that one deployment (``instances`` of it)
serves within the SLOs on at least the required share of seeds. Django-free.

A *shape* is the request mix without its rate: prompt and response lengths (the generator's ``lengths``) and
a tier. The table (deployment x shape -> requests/s and input tokens/s per instance) is what the count search
starts from: peak demand / goodput is the first count it probes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from planner.capacity.core.probe import meets, run_probe
from planner.capacity.core.search import max_rate, share_meeting

DEFAULT_SHAPE = {"tier": "IW-F", "lengths": {"input": {"lognormal": {"median": 1000, "sigma": 1.0}, "max": 8192},
                                             "output": {"lognormal": {"median": 200, "sigma": 0.9}, "max": 2048}}}


def rate_key(rate: float) -> str:
    return f"rate={rate:.4g}"


def goodput_scenario(deployment: Mapping, shape: Mapping, rate: float, *, instances: int = 1,
                     duration_s: float = 600.0, slo: Mapping | None = None) -> dict:
    """One region, one endpoint of ``instances`` static instances, Poisson arrivals at ``rate``."""
    model = deployment["model"]
    return {"name": f"goodput {deployment.get('name', model)}", "seed": 0,
            "workload": {"synthetic": {"kind": "poisson", "rate_rps": float(rate), "duration_s": float(duration_s),
                                       "model": model, "region": "r1", "tier": shape.get("tier", "IW-F"),
                                       "lengths": dict(shape["lengths"])}},
            "fleet": {"regions": [{"name": "r1"}],
                      "endpoints": [{"region": "r1", "model": model, "deployment": dict(deployment),
                                     "initial": instances, "min": instances, "max": instances}]},
            **({"slo": dict(slo)} if slo else {}),
            "strategy": {"autoscaler": "static"}, "engine": {"timeline_step_s": 0}}


def goodput(evaluate: Callable[[str, Sequence[int]], list[dict]], seeds: Sequence[int], *,
            targets: Mapping[str, float], probability: float, start_rps: float, rel_tol: float = 0.03) -> dict:
    """Bisection on the rate; ``evaluate(rate_key(r), seeds)`` returns probe outcomes (see ``run_rate``)."""
    def ok(rate: float) -> bool:
        outcomes = evaluate(rate_key(rate), seeds)
        return share_meeting(outcomes, lambda o: meets(o["tiers"], targets)) >= probability

    found = max_rate(ok, start=start_rps, rel_tol=rel_tol)
    return found


def run_rate(deployment: Mapping, shape: Mapping, key: str, seed: int, *, instances: int = 1,
             duration_s: float = 600.0, slo: Mapping | None = None, limits=None) -> dict:
    """Run one goodput probe (``key`` = rate_key(rate))."""
    rate = float(key.split("=", 1)[1])
    scenario = goodput_scenario(deployment, shape, rate, instances=instances, duration_s=duration_s, slo=slo)
    group = f"r1/{deployment['model']}"
    out = run_probe(scenario, {"strategy": "static"}, {group: instances}, seed, limits=limits)
    out["rate_rps"] = rate
    return out
