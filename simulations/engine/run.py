"""The light engine CLI: simulate a scenario without Django, pandas or statsmodels on the path.

    python -m simulations.engine.run fixtures/scenarios/code_anchor.json            # human summary
    python -m simulations.engine.run SCENARIO.json --json [--strategy NAME] [--mode fast|reference]
    python -m simulations.engine.run SCENARIO.json --trace my_trace.parquet --json  # a file on this machine
    python -m simulations.engine.run SCENARIO.json --stream [--chunk-s 3600]        # bounded-memory replay

It prints what ``python manage.py simulate --no-save`` prints (``--json``: one object with ``summary``,
``tiers``, ``usage``, ``scaling_events``, ``requests_simulated``, ``wall_s``), but pays only for the engine:
``manage.py`` loads Django and the planner's apps first. Trace files are read by ``traceio`` (numpy, pyarrow for
Parquet); a synthetic workload loads the generator (and pandas only for the kinds that build frames). Nothing is
stored: use ``manage.py simulate`` to keep the run in a workspace. ``--stream``: ``simulations.engine.streaming.stream``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m simulations.engine.run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", help="scenario JSON file (docs/simulator.md, fixtures/scenarios/)")
    ap.add_argument("--strategy", default="", help="autoscaler overriding strategy.autoscaler")
    ap.add_argument("--mode", default="", choices=["", "fast", "reference"])
    ap.add_argument("--trace", default="", help="a trace file (Parquet, CSV, JSONL) replacing the workload source")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--stream", action="store_true", help="streamed replay: bounded memory, accumulated results")
    ap.add_argument("--chunk-s", type=float, default=3600.0, help="with --stream: simulated seconds per chunk")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    from simulations.engine import ScenarioError, parse_scenario, simulate
    from simulations.engine.simulator.scenario import build_workload

    try:
        data = json.loads(Path(args.scenario).read_text())
    except (OSError, ValueError) as exc:
        print(f"error: cannot read {args.scenario}: {exc}", file=sys.stderr)
        return 2
    try:
        if args.stream:  # the streamed run's caps (runoptions.STREAM_LIMITS; PLANNER_MAX_STREAM_* in the app)
            from simulations.engine.scenario.runoptions import STREAM_LIMITS

            scenario = parse_scenario(data, limits=STREAM_LIMITS)
        else:
            scenario = parse_scenario(data)
        engine = {"mode": args.mode} if args.mode else {}
        scenario = scenario.with_strategy(args.strategy or None, **engine)
        if args.stream:
            from simulations.engine.streaming.dailysynth import daily_chunks, is_daily
            from simulations.engine.streaming.stream import simulate_stream

            chunks = None  # a multi-day diurnal workload is drawn one day at a time, as the app's streamed runs do
            if not args.trace and is_daily(scenario.workload_spec.get("synthetic")) and (86400.0 / args.chunk_s) % 1 == 0:
                chunks = daily_chunks(scenario, args.chunk_s)
            out = simulate_stream(scenario, trace=args.trace or None, chunk_s=args.chunk_s,
                                  workload_chunks=chunks).to_dict()
            out["wall_s"] = round(time.perf_counter() - start, 3)
            print(json.dumps(out) if args.json else _stream_text(out))
            return 0
        workload = build_workload(scenario, trace=args.trace or None)
    except ScenarioError as exc:
        hint = f" ({exc.hint})" if exc.hint else ""
        print(f"error: scenario field {exc.field}: {exc.message}{hint}", file=sys.stderr)
        return 2
    result = simulate(scenario, workload)
    out = result.to_dict()
    out.pop("timeline")
    out.pop("histograms")
    out["requests_simulated"] = result.summary["requests"]
    out["wall_s"] = round(time.perf_counter() - start, 3)
    out["simulate_wall_s"] = round(result.summary["wall_s"], 3)
    if args.json:
        print(json.dumps(out))
        return 0
    s = result.summary
    print(f"{scenario.name}: {s['requests']} requests, {out['wall_s']:.2f} s whole run, strategy {s['strategy']}, "
          f"mode {s['mode']}; GPU-hours {s['gpu_hours']:.2f}, cost ${s['cost_usd']:.0f}, scale-outs "
          f"{s['scale_outs']}, scale-ins {s['scale_ins']}")
    for tier, t in result.tiers.items():
        print(f"  {tier}: {t['requests']} req, SLO attainment {t['slo_attainment']:.4f}, TTFT p50/p95/p99 "
              f"{t['ttft']['p50']:.3f}/{t['ttft']['p95']:.3f}/{t['ttft']['p99']:.3f} s, E2E "
              f"{t['e2e']['p50']:.2f}/{t['e2e']['p95']:.2f}/{t['e2e']['p99']:.2f} s")
    return 0


def _stream_text(out: dict) -> str:
    s = out["summary"]
    lines = [f"{s['requests']} requests in {s['chunks']} chunks, {out['wall_s']:.2f} s whole run; completed "
             f"{s['completed']}, dropped {s['dropped']}; GPU-hours {s['gpu_hours']:.2f}"]
    for tier, t in out["tiers"].items():
        lines.append(f"  {tier}: {t['requests']} req, TTFT p50/p95/p99 {t['ttft']['p50']:.3f}/{t['ttft']['p95']:.3f}/"
                     f"{t['ttft']['p99']:.3f} s, E2E {t['e2e']['p50']:.2f}/{t['e2e']['p95']:.2f}/{t['e2e']['p99']:.2f} s"
                     f" (histogram percentiles, relative error <= {out['percentile_rel_error']:.1%})")
    return "\n".join(lines)


if __name__ == "__main__":
    # One replay in one process: numpy's OpenBLAS would start a worker thread per core at import (about a
    # third of numpy's start-up CPU) for a run that multiplies no large matrices. Set before numpy loads
    # (importing the package does not load it); an explicit setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    code = main()
    # At exit the interpreter clears every module and collects what that frees (pydantic's schemas, the
    # engine's classes, the run's arrays): frozen objects are left to the OS, about a fifth of this command's CPU.
    gc.freeze()
    sys.exit(code)
