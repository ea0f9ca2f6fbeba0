"""What each industry autoscaler costs to simulate: CPU seconds per run of fixtures/scenarios/industry_burst.json
(one llama-2-70B endpoint, 14,000 requests in an hour) under static and each autoscaler with its defaults.

    .venv/bin/python tests/benchmarks/bench_industry_autoscalers.py            # every autoscaler, 3 repeats
    .venv/bin/python tests/benchmarks/bench_industry_autoscalers.py --quick    # one repeat, no ARIMA

Prints one line per autoscaler (best CPU seconds of the repeats, scale-outs, GPU-hours) and, last, ONE JSON
object. The Dynamo planner's ARIMA predictor fits statsmodels' ARIMA three times per 180 s interval: it is the
costly one, which a leaderboard's time budget has to count.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from simulations.engine import build_workload, parse_scenario, simulate  # noqa: E402

CASES = [("static", {}), ("hpa", {}), ("knative-kpa", {}), ("aibrix-apa", {}), ("aibrix-kpa", {}),
         ("dynamo-planner", {"load_predictor": "constant"}), ("dynamo-planner", {"load_predictor": "kalman"}),
         ("dynamo-planner", {"load_predictor": "arima"}), ("llmd-wva", {})]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="one repeat, without the ARIMA predictor")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    base = json.loads((ROOT / "fixtures/scenarios/industry_burst.json").read_text())
    workload = build_workload(parse_scenario(base))
    repeats = 1 if args.quick else args.repeats
    out = []
    for name, params in CASES:
        if args.quick and params.get("load_predictor") == "arima":
            continue
        d = dict(base, strategy={"autoscaler": name, "params": params})
        best, res = None, None
        for _ in range(repeats):
            t0 = time.process_time()
            res = simulate(parse_scenario(d), workload)
            cpu = time.process_time() - t0
            best = cpu if best is None else min(best, cpu)
        label = name + (f"/{params['load_predictor']}" if params else "")
        row = {"autoscaler": label, "cpu_s": round(best, 3), "scale_outs": res.summary["scale_outs"],
               "gpu_hours": round(sum(u["gpu_hours"] for u in res.usage), 2)}
        out.append(row)
        print(f"{label:24} {best:8.3f} CPU-s   scale-outs {row['scale_outs']:3d}   GPU-h {row['gpu_hours']:.2f}")
    print(json.dumps({"scenario": "fixtures/scenarios/industry_burst.json", "repeats": repeats, "runs": out}))


if __name__ == "__main__":
    main()
