"""Capacity profile mu_p / mu_d / mu_t (paper Alg. 1): the highest per-instance prefill, decode and total tokens/s
over windows without SLO violations, measured in our engine for a scenario's deployment and length mix.

    python -m simulations.engine.policies.preserve.profile fixtures/scenarios/preserve_routing.json

runs ONE instance of the scenario's deployment with Poisson arrivals at each rate of ``--rates`` (per instance,
``--minutes`` each, least-requests, oracle lengths), cuts each run into ``--window`` second windows by arrival and
keeps the windows whose requests all met the scenario's SLO (normalised latency within its multiple of an
isolated run); mu_x is the largest tokens/s of x over those windows. Prints JSON.
"""

from __future__ import annotations

import argparse
import copy
import json

import numpy as np


def profile(base: dict, rates, minutes: float = 5.0, window_s: float = 60.0) -> dict:
    from simulations.engine import build_workload, parse_scenario, simulate

    best = {"mu_p": 0.0, "mu_d": 0.0, "mu_t": 0.0}
    points = []
    for rate in rates:
        d = copy.deepcopy(base)
        syn = d["workload"]["synthetic"]
        syn["rate_rps"] = float(rate)
        syn["duration_s"] = float(minutes) * 60
        ep = d["fleet"]["endpoints"][0]
        ep.update(initial=1, min=1, max=1)
        d["strategy"] = dict(d.get("strategy") or {}, autoscaler="static", instance_router="least-requests",
                             predictor="oracle")
        sc = parse_scenario(d)
        w = build_workload(sc)
        r = simulate(sc, w)
        met = np.asarray(r.requests["slo_met"], dtype=bool)
        arr = np.asarray(w.arrival_s)
        idx = np.floor(arr / window_s).astype(int)
        clean = 0
        for k in range(int(idx.max())):  # full windows only
            sel = idx == k
            if not sel.any() or not met[sel].all():
                continue
            clean += 1
            p = float(np.asarray(w.input_tokens)[sel].sum()) / window_s
            dd = float(np.asarray(w.output_tokens)[sel].sum()) / window_s
            best["mu_p"] = max(best["mu_p"], p)
            best["mu_d"] = max(best["mu_d"], dd)
            best["mu_t"] = max(best["mu_t"], p + dd)
        points.append({"rate_rps": float(rate), "clean_windows": clean, "windows": int(idx.max()),
                       "attainment": (r.slo or {}).get("overall", {}).get("attainment")})
    return {**{k: round(v, 1) for k, v in best.items()}, "window_s": window_s, "points": points}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario")
    ap.add_argument("--rates", default="1.5,2,2.5,3,3.5")
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--window", type=float, default=60.0)
    a = ap.parse_args(argv)
    with open(a.scenario) as f:
        base = json.load(f)
    print(json.dumps(profile(base, [float(x) for x in a.rates.split(",")], a.minutes, a.window), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
