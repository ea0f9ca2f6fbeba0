"""PreServe's Llumnix baseline like-for-like: RQ3 with the migration interference the paper blames, RQ2 at equal
resources.

    nice -n 10 .venv/bin/python tests/benchmarks/reproduce_preserve_llumnix.py   # run, save, rewrite the PreServe doc

Rules (fixed before the first run; nothing is changed after seeing a number):

- RQ3 interference. The paper gives "the communication overhead and delays from KV cache migration" as the reason
  for Llumnix's loss, with no figure. Modelled as ``blocking_copy`` of the migration loop
  (simulations/engine/policies/llumnix_migration.py): no pre-copy, a migrated request stops decoding while its
  whole KV is copied. Two rows beside the committed ones: blocking copy at the default 25 GB/s (PCIe 4.0 x16), and
  blocking copy at 1 GB/s, a bound for Llumnix's default gloo backend, which stages the copy through host memory
  (``MIGRATION_BACKEND = "gloo"`` in AlibabaPAI/llumnix llumnix/config/default.py; 1 GB/s is our bound, not a
  measurement). At the committed operating point (docs/results/preserve.json ``rq3_op``, not searched again),
  seeds 1-5, chunked prefill off (migration needs the non-chunked engine), vLLM-sampled lengths as
  tests/benchmarks/reproduce_preserve_rq3.py; the migrations of every Llumnix-like row are counted. The same
  three Llumnix-like rows at the knee search's 1.1x and 1.2x points (fixture lengths, seed 1, as
  reproduce_preserve.py), where migrations happen, to show what the interference costs when it acts. PreServe's
  cut is recomputed with the interference rows in the paper's set.
- RQ2 at equal resources. Llumnix-like (no migration, and live migration) with both scaling thresholds multiplied
  by k in 1, 1.5, 2, 3, 4, 6 (Llumnix's defaults scale up below 10 and down above 60 blocks of average freeness;
  higher thresholds hold more instances), on the same synthetic week replay as reproduce_preserve.py's RQ2. The
  equal-resource Llumnix-like peak is the linear interpolation of the peak 5-minute normalised latency in
  instance-hours at the instance-hours of PreServe (Table-2 noise, oracle-noise forecast), between the two sweep
  points that bracket it (sorted by instance-hours); PreServe outside the sweep's range: reported as such, no
  extrapolation. PreServe's peak cut against it is the paper's 45.1 % metric.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.benchmarks import reproduce_preserve as P  # noqa: E402
from tests.benchmarks import reproduce_preserve_rq3 as Q  # noqa: E402

RESULTS = ROOT / "docs" / "results" / "preserve.json"
BLOCK25 = "llumnix (live migration, blocking copy 25 GB/s)"
BLOCK1 = "llumnix (live migration, blocking copy 1 GB/s)"
LIVE = {"instance_router": "llumnix", "autoscaler": "llumnix-migrate"}
INTERFERENCE = {BLOCK25: {**LIVE, "params": {"scaling": False, "blocking_copy": True}},
                BLOCK1: {**LIVE, "params": {"scaling": False, "blocking_copy": True, "bandwidth_gb_s": 1.0}}}
LLUMNIX_ROWS = ("llumnix", P.MIG, BLOCK25, BLOCK1)
K_GRID = (1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
PRESERVE_RQ2 = "PreServe (Table-2 noise, oracle-noise forecast)"


def _register() -> None:
    P.ROUTERS.update(copy.deepcopy(INTERFERENCE))
    for k in K_GRID:
        knobs = {"scale_up_below": 10.0 * k, "scale_down_above": 60.0 * k}
        P.RQ2[f"Llumnix-like x{k:g}"] = ("llumnix", knobs, "", "llumnix")
        P.RQ2[f"Llumnix-like (live migration) x{k:g}"] = ("llumnix-migrate", knobs, "", "llumnix")


def _migrations_point(rate: float, name: str, seed: int) -> dict:
    """reproduce_preserve_rq3.point plus the run's live-migration count."""
    d = json.loads(P.BASE.read_text())
    d["seed"] = d["workload"]["synthetic"]["seed"] = int(seed)
    frame = Q.vllm_sampled_frame(d, rate, seed, Q.MINUTES)
    syn = d["workload"]["synthetic"]
    d["workload"] = {"frame": True, "model": syn["model"], "region": d["workload"]["region"], "tier": syn["tier"]}
    d["strategy"] = {**d["strategy"], **copy.deepcopy(P.ROUTERS[name])}
    sc = Q.parse_scenario(d)
    w = Q.build_workload(sc, frame=frame)
    t0 = time.process_time()
    r = Q.simulate(sc, w)
    nl = np.asarray(r.requests["normalised_latency"], dtype=float)
    iso = np.asarray(r.requests["isolated_e2e_s"], dtype=float) / np.maximum(np.asarray(w.output_tokens), 1)
    p99 = float(np.nanpercentile(nl, 99))
    return {"rate_rps": rate, "router": name, "seed": seed, "chunked": False, "requests": int(r.summary["requests"]),
            "dropped": int(r.summary["dropped"]), "p99_nl_s": p99, "attainment": float(r.slo["overall"]["attainment"]),
            "p99_over_slo": p99 / float(np.nanmean(3.0 * iso)), "migrations": int(r.summary.get("migrations", 0)),
            "cpu_s": round(time.process_time() - t0, 2)}


def rq3_interference(res: dict, log) -> dict:
    op = res["rq3_op"]
    rate = op["operating_point_rps"]
    rows = [_migrations_point(rate, name, s) for name in LLUMNIX_ROWS for s in Q.SEEDS]
    by = {(p["router"], p["seed"]): p for p in op["points"] if p["rate_rps"] == rate and not p["chunked"]}
    routers = {}
    for name in LLUMNIX_ROWS:
        ps = [p for p in rows if p["router"] == name]
        routers[name] = {"p99_nl_s": Q.t_interval([p["p99_nl_s"] for p in ps]),
                         "attainment": Q.t_interval([p["attainment"] for p in ps]),
                         "p99_over_slo": Q.t_interval([p["p99_over_slo"] for p in ps]),
                         "migrations": [p["migrations"] for p in ps]}
    cuts = {}
    for pres in Q.PRESERVE:
        per_seed = []
        for s in Q.SEEDS:
            best = min([by[(b, s)]["p99_nl_s"] for b in Q.BASELINES]
                       + [p["p99_nl_s"] for p in rows if p["seed"] == s])
            per_seed.append(1 - by[(pres, s)]["p99_nl_s"] / best)
        cuts[pres] = {"per_seed": per_seed, "mean_ci": Q.t_interval(per_seed)}
    log(f"rq3 interference at {rate}: " + json.dumps({k: v["migrations"] for k, v in routers.items()}))
    knee_rows = []
    knee = res["rq3"]["knee_rps"]
    for factor in (1.1, 1.2):
        for name in LLUMNIX_ROWS:
            pt = P.rq3_point(knee * factor, name, Q.MINUTES)  # the fixture's seed (1), as the knee search
            pt["x_knee"] = factor
            knee_rows.append(pt)
            log(f"rq3 {factor}x knee {name}: p99 {pt['p99_nl_s']:.3f} migrations {pt.get('migrations')}")
    return {"rules": "tests/benchmarks/reproduce_preserve_llumnix.py", "rate_rps": rate, "points": rows,
            "routers": routers, "cuts": cuts, "knee_points": knee_rows}


def _interp(points: list, x: float) -> dict | None:
    pts = sorted(points, key=lambda p: p["instance_hours"])
    for a, b in zip(pts, pts[1:], strict=False):
        if a["instance_hours"] <= x <= b["instance_hours"]:
            span = b["instance_hours"] - a["instance_hours"]
            t = 0.0 if span == 0 else (x - a["instance_hours"]) / span
            return {"peak_5min_nl_s": a["peak_5min_nl_s"] + t * (b["peak_5min_nl_s"] - a["peak_5min_nl_s"]),
                    "between": [a["strategy"], b["strategy"]]}
    return None


def rq2_equal(res: dict, log) -> dict:
    from planner.comparisons.core.bundles_preserve import CAPACITY
    from simulations.engine.policies.preserve.week import replay

    rq2 = res["rq2"]
    rep = replay(rq2["peak_rps"], compression=rq2["compression"], seed=0)
    pres = next(r for r in rq2["runs"] if r["strategy"] == PRESERVE_RQ2)
    out = {"rules": "tests/benchmarks/reproduce_preserve_llumnix.py", "k_grid": list(K_GRID),
           "preserve": {k: pres[k] for k in ("strategy", "instance_hours", "peak_5min_nl_s", "slo_s_per_token")}}
    for label, prefix in (("no migration", "Llumnix-like x"), ("live migration", "Llumnix-like (live migration) x")):
        sweep = [P.rq2_run(f"{prefix}{k:g}", rep, CAPACITY, log) for k in K_GRID]
        eq = _interp(sweep, pres["instance_hours"])
        out[label] = {"sweep": sweep, "equal": eq,
                      "range": [min(p["instance_hours"] for p in sweep), max(p["instance_hours"] for p in sweep)],
                      "cut": None if eq is None else 1 - pres["peak_5min_nl_s"] / eq["peak_5min_nl_s"]}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-doc", action="store_true", help="do not rewrite docs/reproduction_preserve.md")
    a = ap.parse_args(argv)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    _register()
    res = json.loads(RESULTS.read_text())
    res["rq3_interference"] = rq3_interference(res, log)
    res["rq2_equal"] = rq2_equal(res, log)
    RESULTS.write_text(json.dumps(res, indent=1, default=float))
    for name in INTERFERENCE:  # the document's RQ3 targets iterate the knee search's routers only
        P.ROUTERS.pop(name, None)
    if not a.no_doc:
        P.main(["--load", str(RESULTS), "--write-doc"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
