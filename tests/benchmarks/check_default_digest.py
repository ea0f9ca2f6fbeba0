"""Digest of the engine's results on scenarios that use no optional scaling-signal mode: proves an engine change left
the defaults bit-identical by running the same file against two checkouts.

    PLANNER_ENGINE_BUILD=python python tests/benchmarks/check_default_digest.py --root ../main-before > before.json
    PLANNER_ENGINE_BUILD=python python tests/benchmarks/check_default_digest.py > after.json

Cases: those of check_fast_vs_reference.py (code trace 1x / 20x / chunked / 2x on 2 instances, burst_reactive,
bench_day slices under FCFS, EDF, DPA, overloads) in fast and reference mode at ``--requests`` (default 20,000),
plus two 24 h SageServe days at ``--day-rps`` through the comparison runner (unified reactive with the NIW queue
manager): sageserve_day.json and the authors'-code preset without the output reservation (signal_kv_tokens,
instant provisioning, lock, code NIW feed). The digest of a run hashes its summary (wall-clock fields removed), its scaling events and every
request's first-token and completion time. Prints one JSON object: case -> digest, and ``all`` (a digest of them).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

VOLATILE = {"wall_s", "requests_per_wall_s", "engine_build"}
# summary fields added to the comparison summaries (planner/comparisons/core/summary.py): left out so the
# digest compares the numbers both checkouts report
ADDED = {"queueing_p50", "queueing_p95"}
SIGNAL_OPTIONS = ("signal_reserve_output", "signal_queued")


def digest(r) -> str:
    import numpy as np

    h = hashlib.sha256()
    summary = {k: v for k, v in r.summary.items() if k not in VOLATILE}
    h.update(json.dumps(summary, sort_keys=True, default=str).encode())
    h.update(json.dumps(r.scaling_events, sort_keys=True, default=str).encode())
    for key in ("ttft_s", "e2e_s"):
        if key in r.requests:
            h.update(np.asarray(r.requests[key], dtype=float).tobytes())
    return h.hexdigest()[:16]


def _strip(x):
    if isinstance(x, dict):
        return {k: _strip(v) for k, v in x.items() if k not in VOLATILE and k not in ADDED and "wall" not in k}
    if isinstance(x, list):
        return [_strip(v) for v in x]
    return x


def day_digest(scenario: dict, rps: float, root: Path) -> str:
    """A SageServe day at ``rps`` requests/s through the comparison runner (unified reactive + NIW queue)."""
    from planner.comparisons.core.runner import run_variant

    scenario["workload"]["spec_overrides"] = {**(scenario["workload"].get("spec_overrides") or {}),
                                              "total_rps": rps}
    s = run_variant(scenario, {"key": "reactive-unified", "strategy": "reactive-unified"}, base_dir=str(root))
    return hashlib.sha256(json.dumps(_strip(s), sort_keys=True, default=str).encode()).hexdigest()[:16]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[2]), help="checkout whose engine runs")
    ap.add_argument("--requests", type=int, default=20_000)
    ap.add_argument("--day-rps", type=float, default=0.5, help="request rate of the two SageServe days (24 h)")
    ap.add_argument("--days-only", action="store_true", help="only the two SageServe days")
    args = ap.parse_args(argv)
    root = Path(args.root).resolve()
    sys.path.insert(0, str(root))
    sys.path.insert(0, str(root / "tests" / "benchmarks"))  # --root's own case list (it imports --root's engine)
    import warnings

    warnings.filterwarnings("ignore")
    from check_fast_vs_reference import scenarios  # the case list (built from --root's fixtures below)

    from simulations.engine import build_workload, parse_scenario, simulate

    load = lambda name: json.loads((root / "fixtures" / "scenarios" / name).read_text())  # noqa: E731
    cases = {} if args.days_only else scenarios(args.requests)
    out = {}
    for name, d in cases.items():
        sc = parse_scenario(d)
        w = build_workload(sc)
        for mode in ("fast", "reference"):
            out[f"{name}/{mode}"] = digest(simulate(sc.with_strategy(mode=mode), w))
            print(f"{name}/{mode}: {out[f'{name}/{mode}']}", file=sys.stderr, flush=True)
    code = load("sageserve_day_authors_code.json")
    for dep in code.get("deployments", {}).values():
        for opt in SIGNAL_OPTIONS:
            dep.pop(opt, None)
    for name, d in (("sageserve_day", load("sageserve_day.json")), ("authors_code_without_new_options", code)):
        out[f"{name}@{args.day_rps}rps"] = day_digest(d, args.day_rps, root)
        print(f"{name}: {out[f'{name}@{args.day_rps}rps']}", file=sys.stderr, flush=True)
    out["all"] = hashlib.sha256(json.dumps(out, sort_keys=True).encode()).hexdigest()[:16]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
