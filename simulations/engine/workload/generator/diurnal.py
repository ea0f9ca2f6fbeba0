"""Kind ``diurnal``: the engine's original one-day generator (a scenario's ``workload.synthetic`` without a kind).

Moved unchanged from ``simulations/engine/workload/workload.py`` (one workload generator): Poisson arrivals
with a diurnal rate (inverse-CDF sampling of sorted uniforms), model / region / tier drawn per request,
log-normal lengths. Needs the fleet's model and region names, so it returns a ``Workload`` directly.
"""

from __future__ import annotations

import numpy as np

from simulations.engine.scenario.config import TIERS, ScenarioError
from simulations.engine.workload.workload import Workload


def synthesise(spec: dict, *, seed: int, model_names: list[str], region_names: list[str]) -> Workload:
    """A deterministic synthetic workload: Poisson arrivals with a diurnal rate, per (region, model).

    spec keys: duration_s (86400), total_requests (or rps), diurnal_amplitude (0.6, peak at 14:00),
    tier_mix {"IW-F": .5, "IW-N": .25, "NIW": .25}, model_weights / region_weights (lists or dicts),
    input_tokens {"mean": 1024, "sigma": 1.0, "max": 8192} (log-normal), output_tokens likewise,
    burst {"at_s", "duration_s", "factor"} (optional).
    """
    ss = np.random.SeedSequence(seed)
    rng = np.random.default_rng(ss)
    duration = float(spec.get("duration_s", 86400.0))
    if "total_requests" in spec:
        total = int(spec["total_requests"])
    else:
        total = int(float(spec.get("rps", 10.0)) * duration)
    if total <= 0 or duration <= 0:
        raise ScenarioError("workload.synthetic", "needs total_requests (or rps) > 0 and duration_s > 0")
    amp = float(spec.get("diurnal_amplitude", 0.6))
    peak_h = float(spec.get("peak_hour", 14.0))

    def weights(key, names):
        w = spec.get(key)
        if w is None:
            return np.full(len(names), 1.0 / len(names))
        if isinstance(w, dict):
            w = [float(w.get(n, 0.0)) for n in names]
        w = np.asarray(w, dtype=float)
        if w.shape[0] != len(names) or w.sum() <= 0:
            raise ScenarioError(f"workload.synthetic.{key}", f"needs {len(names)} non-negative weights")
        return w / w.sum()

    # Arrivals: inverse-CDF sampling of a non-homogeneous Poisson process (sorted uniforms).
    grid = np.linspace(0.0, duration, 2049)
    rate = 1.0 + amp * np.cos(2 * np.pi * (grid / 86400.0 - peak_h / 24.0))
    burst = spec.get("burst")
    if burst:
        in_burst = (grid >= float(burst["at_s"])) & (grid < float(burst["at_s"]) + float(burst["duration_s"]))
        rate = np.where(in_burst, rate * float(burst.get("factor", 8.0)), rate)
    cdf = np.concatenate([[0.0], np.cumsum((rate[1:] + rate[:-1]) / 2 * np.diff(grid))])
    cdf /= cdf[-1]
    u = np.sort(rng.random(total))
    arrival = np.interp(u, cdf, grid)
    arrival -= arrival[0]

    model = rng.choice(len(model_names), size=total, p=weights("model_weights", model_names)).astype(np.int32)
    region = rng.choice(len(region_names), size=total, p=weights("region_weights", region_names)).astype(np.int32)
    mix = spec.get("tier_mix", {"IW-F": 0.5, "IW-N": 0.25, "NIW": 0.25})
    p = np.array([float(mix.get(t, 0.0)) for t in TIERS])
    if p.sum() <= 0:
        raise ScenarioError("workload.synthetic.tier_mix", "needs positive weights for IW-F, IW-N, NIW")
    tier = rng.choice(3, size=total, p=p / p.sum()).astype(np.int8)

    def lengths(key, mean, sigma, cap):
        d = spec.get(key, {})
        mu = float(d.get("mean", mean))
        s = float(d.get("sigma", sigma))
        hi = int(d.get("max", cap))
        x = rng.lognormal(np.log(mu) - s * s / 2, s, size=total)
        return np.clip(np.rint(x), 1, hi).astype(np.int64)

    return Workload(
        arrival_s=arrival, input_tokens=lengths("input_tokens", 1024, 1.0, 8192),
        output_tokens=lengths("output_tokens", 256, 1.0, 2048), tier=tier, model=model, region=region,
        model_names=list(model_names), region_names=list(region_names),
    )
