"""Month-scale benchmark: a synthetic month streamed in bounded memory, the fleet-size check and the
start-up of a small replay. One JSON object is printed as the last line.

    python tests/benchmarks/bench_month.py --days 1                  # one 10M-request day per strategy
    python tests/benchmarks/bench_month.py                           # the full month (30 x 10M requests)
    python tests/benchmarks/bench_month.py --only fleet              # 80 instances (10x hour) vs 8 (time-stretched)
    python tests/benchmarks/bench_month.py --only startup            # whole-process time of a small replay
    python tests/benchmarks/bench_month.py --only accuracy           # streamed vs exact percentiles, bench day
    python tests/benchmarks/bench_month.py --only month --days 1 --strategies reactive-unified --progress --endpoints
                                         # one day, a line per day and, per simulated hour, each endpoint's
                                         # instances, longest queue and mean TTFT (``--floor unscaled``: old scenario)

**month**: fixtures/scenarios/bench_day.json (3 regions x 4 models, reactive autoscaling) with its fleet scaled to
``--requests-per-day`` (10M: x6.25 every count of the bench day's fleet: initial, min and max instances per
endpoint, spot pools, VM capacity; so the per-instance load is the bench day's), replayed
day after day (each day generated with its own seed) through ``simulations.engine.streaming.stream`` in ``--chunk-s`` chunks
(one continuous simulation; the request window trimmed below the oldest request in flight). Each strategy runs in its own process (clean peak RSS); printed per strategy:
requests, CPU-seconds, requests per CPU-second, wall time, peak RSS, per day the RSS after its last chunk and the
largest request window, and the per-day CPU figure with the month
extrapolated from it when fewer than 30 days ran (``--days``; labelled ``extrapolated``).

Why the floor (``min``) scales too: the reactive autoscaler's signal is the KV memory in use, and with a
256-request batch cap llama2-70b (1.33M KV tokens) and the Llama-3 endpoints (0.98-1.2M) never use more than about
28-38 % of their KV cache, so their signal cannot reach the 70 % scale-out threshold: they sit at their floor
whatever the load (on the bench day too, where 2 instances carry the load). With the floor left at the bench day's
2 while the traffic is x6.25 (the earlier construction, ``--floor unscaled``), those endpoints queued
57k requests at the peak (TTFT p90 1,988 s, SLO attainment 0.785): a month no operator would run or plan.

**fleet**: the Azure code trace hour replicated ``--copies`` times (copy j shifted by 37.1 ms x j) into one
endpoint of 80 llama2-70b instances, against the same requests time-stretched x10 into 8 instances (same
per-instance load), static fleet, JSQ by tokens. CPU-seconds of the simulation (``Simulator.run``) per request,
and the ratio (target <= 1.3).

**startup**: ``python -m simulations.engine.run fixtures/scenarios/code_anchor.json --trace HOUR.parquet --json``
as a whole process, HOUR = the code trace hour replicated to ``--startup-requests`` requests (default 19,000, the
size of the chat-trace hour, which is not in this repository), user+sys CPU and wall over ``--repeat`` runs;
and ``manage.py simulate --no-save --json`` on the same file for comparison.

**accuracy**: the bench day (1.6M requests) simulated exactly and streamed (one chunk, hourly and 15-minute
chunks): the streamed percentiles against the exact nearest-rank ones (bound: ``stream.REL_ERR``), counts,
GPU-hours, cost, energy, scale events and SLO attainment against the exact run's, CPU-seconds of each.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(os.environ.get("BENCH_ROOT") or Path(__file__).resolve().parents[2])
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(ROOT))

DAY_S = 86400.0


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_now_mb() -> float:
    """Resident set size now (Linux /proc; the peak is ``_rss_mb``)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return float("nan")


def month_scenario(requests_per_day: int, strategy: str, floor: str = "scaled") -> dict:
    d = json.loads((ROOT / "fixtures" / "scenarios" / "bench_day.json").read_text())
    syn = d["workload"]["synthetic"]
    scale = requests_per_day / syn["total_requests"]
    for r in d["fleet"]["regions"]:  # as bench_simulate.py --ten-million: per-instance load of the bench day
        r["vm_capacity"] = math.ceil(r["vm_capacity"] * scale)
        r["spot_pool"] = {m: math.ceil(c * scale) for m, c in r["spot_pool"].items()}
    for e in d["fleet"]["endpoints"]:
        e["initial"] = math.ceil(e["initial"] * scale)
        e["max"] = math.ceil(e["max"] * scale)
        if floor == "scaled":
            e["min"] = math.ceil(e["min"] * scale)
    syn["total_requests"] = requests_per_day
    d["strategy"]["autoscaler"] = strategy
    d.setdefault("engine", {})["mode"] = "fast"
    return d


def _endpoint_lines(out: dict) -> list[str]:
    """One line per simulated hour: per endpoint, mean serving instances, mean queue and mean TTFT (from the
    streamed result's ``hourly_endpoints`` and ``hourly`` rollups; the evidence for the scenario's floor, see the
    module docstring)."""
    ttft: dict = {}
    for row in out.get("hourly", []):
        if row.get("ttft_mean_s") is not None and row["completed"]:
            acc = ttft.setdefault((row["hour"], row["endpoint"]), [0.0, 0])
            acc[0] += row["ttft_mean_s"] * row["completed"]
            acc[1] += row["completed"]
    by_hour: dict = {}
    for row in out.get("hourly_endpoints", []):
        s, n = ttft.get((row["hour"], row["endpoint"]), (0.0, 0))
        by_hour.setdefault(row["hour"], []).append(
            f"{row['endpoint']}: n={row['serving_mean']:.1f} q={row['queue_mean']:.0f} ttft={s / n if n else 0:.2f}s")
    return [f"hour {h:4d} | " + " | ".join(parts) for h, parts in sorted(by_hour.items())]


def run_month(days: int, requests_per_day: int, strategy: str, chunk_s: float, floor: str = "scaled",
              progress: bool = False, endpoints: bool = False) -> dict:
    from simulations.engine import parse_scenario
    from simulations.engine.scenario.runoptions import STREAM_LIMITS
    from simulations.engine.streaming.stream import chunks_of, simulate_stream
    from simulations.engine.workload.workload import synthesise

    d = month_scenario(requests_per_day, strategy, floor)
    # a streamed run's caps (31 simulated days), as the product and the light CLI use for --stream: with the
    # default (table) cap of 8 days the engine's time limit would end the month on day 8
    sc = parse_scenario(d, limits=STREAM_LIMITS)
    syn = d["workload"]["synthetic"]
    models = sorted({e.model for e in sc.fleet.endpoints})
    per_day: list[dict] = []
    marks = {"cpu": time.process_time(), "wall": time.perf_counter(), "gen_cpu": 0.0}

    def workload_chunks():
        for day in range(days):
            c0 = time.process_time()
            w = synthesise(syn, seed=int(d.get("seed", 7)) * 1000 + day, model_names=models,
                           region_names=sc.fleet.region_names)
            marks["gen_cpu"] += time.process_time() - c0
            yield from chunks_of(w, chunk_s, t_base=day * DAY_S)
            del w

    def on_chunk(i, t0, result):
        day = int(t0 // DAY_S)
        if len(per_day) <= day:
            per_day.append({"day": day, "requests": 0, "cpu_s": 0.0, "rss_mb": 0.0, "rss_now_mb": 0.0,
                            "window_max": 0})
        per_day[day]["requests"] += result.summary["requests"]
        per_day[day]["window_max"] = max(per_day[day]["window_max"], result.summary.get("window", 0))
        per_day[day]["rss_now_mb"] = round(_rss_now_mb(), 1)
        now = time.process_time()
        per_day[day]["cpu_s"] += now - marks["cpu"]
        marks["cpu"] = now
        per_day[day]["rss_mb"] = round(_rss_mb(), 1)
        if progress and (i + 1) % max(1, round(DAY_S / chunk_s)) == 0:  # one line per simulated day
            p = per_day[day]
            print(f"{strategy} day {day + 1}/{days}: {p['requests']:,} requests, {p['cpu_s']:.1f} CPU-s "
                  f"({p['requests'] / max(p['cpu_s'], 1e-9):,.0f} req/CPU-s), peak RSS {_rss_mb():.0f} MB, "
                  f"wall {time.perf_counter() - w_start:,.0f} s", file=sys.stderr, flush=True)

    c_start, w_start = time.process_time(), time.perf_counter()
    out = simulate_stream(sc, workload_chunks=workload_chunks(), chunk_s=chunk_s, on_chunk=on_chunk).to_dict()
    if endpoints:
        print("\n".join(_endpoint_lines(out)), file=sys.stderr, flush=True)
    cpu = time.process_time() - c_start
    wall = time.perf_counter() - w_start
    s = out["summary"]
    res = {"strategy": strategy, "floor": floor, "days": days, "requests": s["requests"], "completed": s["completed"],
           "cpu_s": round(cpu, 1), "workload_generation_cpu_s": round(marks["gen_cpu"], 1), "wall_s": round(wall, 1),
           "requests_per_cpu_s": round(s["requests"] / cpu), "peak_rss_mb": round(_rss_mb(), 1),
           "per_day": [{**p, "cpu_s": round(p["cpu_s"], 1)} for p in per_day],
           "gpu_hours": round(s["gpu_hours"], 1), "scale_outs": s["scale_outs"], "scale_ins": s["scale_ins"],
           "ttft": s["ttft"], "e2e": s["e2e"], "slo_attainment": s["slo_attainment"], "chunks": s["chunks"],
           "window_max_requests": out.get("window", {}).get("max_requests_held")}
    if days < 30:
        res["month_cpu_s_extrapolated"] = round(cpu / days * 30, 0)
        res["month_minutes_one_core_extrapolated"] = round(cpu / days * 30 / 60, 1)
    return res


def fleet_case(n_inst: int, copies: int, stretch: float):
    import numpy as np

    from simulations.engine import build_workload, parse_scenario
    from simulations.engine.workload.workload import Workload

    d = json.loads((ROOT / "fixtures" / "scenarios" / "code_x20.json").read_text())
    d["workload"]["rate_scale"] = 1.0
    d["fleet"]["endpoints"][0].update(initial=n_inst, min=n_inst, max=n_inst)
    sc = parse_scenario(d)
    w = build_workload(sc)
    arr = (w.arrival_s[None, :] + (np.arange(copies) * 0.0371)[:, None]).ravel()
    order = np.argsort(arr, kind="stable")

    def rep(a):
        return np.tile(a, copies)[order]

    w2 = Workload(arrival_s=arr[order] * stretch, input_tokens=rep(w.input_tokens), output_tokens=rep(w.output_tokens),
                  tier=rep(w.tier), model=rep(w.model), region=rep(w.region), model_names=w.model_names,
                  region_names=w.region_names)
    return sc, w2


def run_fleet(n_inst: int, copies: int, stretch: float) -> dict:
    from simulations.engine.simulator.loop import Simulator

    sc, w = fleet_case(n_inst, copies, stretch)
    sim = Simulator(sc, w)
    c0 = time.process_time()
    sim.run()
    cpu = time.process_time() - c0
    return {"instances": n_inst, "requests": len(w), "events": sim.state.events, "sim_cpu_s": round(cpu, 3),
            "us_per_request": round(cpu / len(w) * 1e6, 2)}


def _sub(args: list[str]) -> dict:
    live = "--progress" in args or "--endpoints" in args  # let the progress lines through as they come
    proc = subprocess.run([sys.executable, __file__, *args], stdout=subprocess.PIPE,
                          stderr=None if live else subprocess.PIPE, text=True, cwd=ROOT)
    if proc.returncode:
        raise SystemExit(f"{args} failed:\n{(proc.stderr or '')[-3000:]}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    print(json.dumps(res), file=sys.stderr)
    return res


def fleet(copies: int, repeat: int) -> dict:
    big, small = [], []
    for _ in range(repeat):  # paired, alternating
        big.append(_sub(["--case", "fleet", "--instances", "80", "--copies", str(copies), "--stretch", "1"]))
        small.append(_sub(["--case", "fleet", "--instances", "8", "--copies", str(copies), "--stretch", "10"]))
    b = min(r["us_per_request"] for r in big)
    s = min(r["us_per_request"] for r in small)
    return {"requests": big[0]["requests"], "us_per_request_80": b, "us_per_request_8": s,
            "ratio_80_over_8": round(b / s, 3), "target": 1.3, "met": b / s <= 1.3, "runs_80": big, "runs_8": small,
            "note": "minimum over paired runs of the simulation's CPU time per request (Simulator.run)"}


def _write_hour(n: int, path: Path) -> int:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from simulations.engine.workload.traceio import read_trace_arrays

    cols = read_trace_arrays(ROOT / "fixtures" / "traces" / "azure_code_2023.csv")
    m = len(cols["arrival_s"])
    copies = -(-n // m)
    arr = (cols["arrival_s"][None, :] + (np.arange(copies) * 0.0371)[:, None]).ravel()
    idx = np.argsort(arr, kind="stable")[:n]  # the first n requests of the replicated hour, in arrival order
    table = pa.table({"arrival_s": arr[idx], "input_tokens": np.tile(cols["input_tokens"], copies)[idx],
                      "output_tokens": np.tile(cols["output_tokens"], copies)[idx]})
    pq.write_table(table, path)
    return n


def startup(n: int, repeat: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "hour.parquet"
        _write_hour(n, trace)
        scenario = str(ROOT / "fixtures" / "scenarios" / "code_anchor.json")
        # as installed: compiled bytecode cached (this sandbox sets PYTHONDONTWRITEBYTECODE, which makes every
        # process compile the project's sources again: reported separately for the light CLI)
        env = dict(os.environ, DEBUG="true", PYTHONPATH=str(ROOT), PYTHONPYCACHEPREFIX=str(Path(tmp) / "pyc"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        nocache = dict(env, PYTHONDONTWRITEBYTECODE="1")
        nocache.pop("PYTHONPYCACHEPREFIX")
        cmds = {"light_cli": [sys.executable, "-m", "simulations.engine.run", scenario, "--trace", str(trace), "--json"],
                "manage_py_simulate": [sys.executable, "manage.py", "simulate", scenario, "--trace", str(trace),
                                       "--json", "--no-save"],
                "python_baseline": [sys.executable, "-c", "pass"]}
        cmds["light_cli_no_bytecode_cache"] = cmds["light_cli"]
        out: dict = {"requests": n}
        runs: dict = {k: [] for k in cmds}
        for cmd in cmds.values():  # warm-up: writes the bytecode cache
            subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
        for _ in range(repeat):
            for name, cmd in cmds.items():
                before = os.times()
                w0 = time.perf_counter()
                proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                                      env=nocache if name.endswith("no_bytecode_cache") else env)
                wall = time.perf_counter() - w0
                after = os.times()
                if proc.returncode:
                    raise SystemExit(f"{name} failed:\n{proc.stderr[-2000:]}")
                cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
                runs[name].append({"cpu_s": round(cpu, 3), "wall_s": round(wall, 3)})
                if name == "light_cli":
                    out["light_cli_requests_simulated"] = json.loads(proc.stdout)["requests_simulated"]
        for name, rs in runs.items():
            cpus = [r["cpu_s"] for r in rs]
            walls = [r["wall_s"] for r in rs]
            out[name] = {"cpu_s_min": min(cpus), "cpu_s_median": statistics.median(cpus), "wall_s_min": min(walls),
                         "wall_s_median": statistics.median(walls)}
        out["target_s"] = 0.5
        out["load_average"] = os.getloadavg()
        return out


def accuracy(requests: int | None) -> dict:
    import numpy as np

    from simulations.engine import build_workload, parse_scenario, simulate
    from simulations.engine.streaming.stream import REL_ERR, chunks_of, simulate_stream

    d = json.loads((ROOT / "fixtures" / "scenarios" / "bench_day.json").read_text())
    if requests:
        syn = d["workload"]["synthetic"]
        scale = requests / syn["total_requests"]
        syn["duration_s"] *= scale
        syn["peak_hour"] = syn["duration_s"] / 7200
        syn["total_requests"] = requests
    sc = parse_scenario(d)
    w = build_workload(sc)
    c0 = time.process_time()
    exact = simulate(sc, w)
    exact_cpu = time.process_time() - c0
    done = exact.requests["completed"]
    out: dict = {"requests": len(w), "rel_error_bound": REL_ERR, "exact_cpu_s": round(exact_cpu, 2)}
    for label, chunk in (("one_chunk", 1e12), ("hourly_chunks", 3600.0), ("quarter_hour_chunks", 900.0)):
        c0 = time.process_time()
        st = simulate_stream(sc, workload_chunks=chunks_of(w, chunk)).to_dict()
        cpu = time.process_time() - c0
        s = st["summary"]
        worst = 0.0
        rows = {}
        for key in ("ttft", "e2e", "queueing"):
            x = exact.requests[key + "_s"][done]
            for p in (50, 90, 95, 99):
                ex = float(np.percentile(x, p, method="inverted_cdf"))
                est = s[key][f"p{p}"]
                rel = (est - ex) / ex if ex > 0 else 0.0
                rows[f"{key}_p{p}"] = {"exact": round(ex, 5), "streamed": round(est, 5), "rel": round(rel, 5)}
                worst = max(worst, abs(rel))
        out[label] = {"percentiles": rows, "worst_rel_error": round(worst, 5),
                      "within_bound": worst <= REL_ERR, "cpu_s": round(cpu, 2),
                      "window_max_requests": st.get("window", {}).get("max_requests_held"),
                      "same_counts": all(s[k] == exact.summary[k] for k in (
                          "requests", "completed", "dropped", "scale_outs", "scale_ins", "preemptions")),
                      "same_gpu_hours_cost_energy": all(s[k] == exact.summary[k] for k in (
                          "gpu_hours", "cost_usd", "energy_kwh")),
                      "completed": s["completed"], "exact_completed": exact.summary["completed"],
                      "gpu_hours": round(s["gpu_hours"], 2), "exact_gpu_hours": round(exact.summary["gpu_hours"], 2),
                      "slo_attainment": s["slo_attainment"], "exact_slo_attainment": exact.summary["slo_attainment"],
                      "scale_outs": s["scale_outs"], "exact_scale_outs": exact.summary["scale_outs"],
                      "chunks": s["chunks"]}
    return out


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--requests-per-day", type=int, default=10_000_000)
    ap.add_argument("--strategies", default="reactive-unified,reactive-siloed")
    ap.add_argument("--chunk-s", type=float, default=3600.0)
    ap.add_argument("--copies", type=int, default=10, help="fleet: replicas of the code-trace hour")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--startup-requests", type=int, default=19_000)
    ap.add_argument("--accuracy-requests", type=int, default=0, help="accuracy: bench day size (0: the full day)")
    ap.add_argument("--floor", choices=("scaled", "unscaled"), default="scaled",
                    help="month: endpoints' min instances scaled with the traffic (default) or left at the bench day's")
    ap.add_argument("--progress", action="store_true", help="month: one line per simulated day on stderr")
    ap.add_argument("--endpoints", action="store_true",
                    help="month: per chunk, each endpoint's instances, longest queue and mean TTFT on stderr")
    ap.add_argument("--only", choices=("month", "fleet", "startup", "accuracy"))
    ap.add_argument("--case", choices=("month", "fleet"), help=argparse.SUPPRESS)
    ap.add_argument("--strategy", help=argparse.SUPPRESS)
    ap.add_argument("--instances", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--stretch", type=float, default=1.0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.case == "month":
        print(json.dumps(run_month(args.days, args.requests_per_day, args.strategy, args.chunk_s, args.floor,
                                   args.progress, args.endpoints)))
        return
    if args.case == "fleet":
        print(json.dumps(run_fleet(args.instances, args.copies, args.stretch)))
        return
    from simulations.engine import BUILD

    res: dict = {"engine_build": BUILD["kind"], "load_average_start": os.getloadavg()}
    if args.only in (None, "fleet"):
        res["fleet"] = fleet(args.copies, args.repeat)
    if args.only in (None, "startup"):
        res["startup"] = startup(args.startup_requests, args.repeat)
    if args.only in (None, "accuracy"):
        res["accuracy"] = accuracy(args.accuracy_requests or None)
    if args.only in (None, "month"):
        res["month"] = {s: _sub(["--case", "month", "--strategy", s, "--days", str(args.days), "--requests-per-day",
                                 str(args.requests_per_day), "--chunk-s", str(args.chunk_s), "--floor", args.floor]
                                + (["--progress"] if args.progress else [])
                                + (["--endpoints"] if args.endpoints else []))
                        for s in args.strategies.split(",")}
    res["load_average_end"] = os.getloadavg()
    print(json.dumps(res))


if __name__ == "__main__":
    main(sys.argv[1:])
