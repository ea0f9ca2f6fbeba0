"""Capacity search wall time with 1 and 2 worker processes on the bench day (3 regions x 4 models).

    nice -n 10 .venv/bin/python tests/benchmarks/bench_capacity_search.py [--hours 24] [--seeds 1,2,3]
        [--band-draws 20] [--strategies static,reactive-unified,lt-ua,preserve.scaler-oracle,chiron.default]
        [--workers 1,2] [--stepping probe|round] [--probe-only [--model-fleets 2,3,4,5,6]] [--dump FILE]

The search is the one the workers run (planner.capacity.core.driver): the search is replayed over the probes so
far whenever the last seed of a (fleet, load) is in, and the missing (fleet, seed) probes are run on a process pool
of N workers (one probe per task, as one Celery child job each), so a slow probe of one sub-search holds up only
that sub-search, as on Celery (``--stepping round`` restores the old per-round barrier, for comparison); the broker's
and the database's overhead are not included. ``--hours`` truncates the bench day (the first H hours, the requests
scaled with it) when the full day does not fit the machine. The bench day's deployments get their KV bytes per
token (from the model shapes, consistent with their KV capacities) because Chiron's swap-out needs them.

Prints one line per worker count (wall time, the CPU seconds of all probes, the probe count, the load average
before and after) and, last, one JSON object with the same per pass, probes per phase and CPU per strategy, the
speed-up 1 -> 2 and the answer's headline. ``--probe-only`` runs no search: one probe per strategy (at its start
fleet, on the first seed) with its CPU seconds, and a model of the search's CPU and idle 2-worker wall from them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, wait
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

# bytes of K and V per token, all layers, fp16: layers x kv heads x head dim x 2 x 2 (Bloom: MHA, hidden 14336).
# (0.9 x GPU memory - weights) / these = the fixture's kv_capacity_tokens, within 1 %.
KV_BYTES = {"llama2-70b": 80 * 8 * 128 * 4, "bloom-176b": 70 * 14336 * 4, "llama3.1-8b": 32 * 8 * 128 * 4,
            "llama3.2-3b": 28 * 8 * 128 * 4}
BASE: dict = {}


def bench_scenario(hours: float) -> dict:
    base = json.loads((ROOT / "fixtures/scenarios/bench_day.json").read_text())
    for dep in base["deployments"].values():
        dep["kv_bytes_per_token"] = float(KV_BYTES[dep["model"]])
    syn = base["workload"]["synthetic"]
    if hours < 24:
        syn["total_requests"] = int(syn["total_requests"] * hours / 24)
        syn["duration_s"] = int(hours * 3600)
    return base


def _init(base: dict) -> None:
    BASE.clear()
    BASE.update(base)


def _probe(inputs: dict) -> tuple[dict, float]:
    """One probe in a pool process: its outcome and the CPU seconds it took (this process's user + system)."""
    from planner.capacity.core.driver import run_probe_inputs

    cpu = time.process_time()
    out = run_probe_inputs(BASE, inputs)
    return out, time.process_time() - cpu


def _siblings(pid: str) -> str:
    sub, fleet, _, load = pid.split("|")
    return f"{sub}|{fleet}|{load}"


def search(base: dict, spec, workers: int, stepping: str = "probe", spare: bool = True) -> dict:
    """The workers' search on a pool of ``workers`` processes. ``stepping="probe"``: the search is replayed as soon
    as the last seed of a (fleet, load) is in, and whatever it then needs is submitted at once, as the workers do
    (planner.capacity.services.record_probe); ``"round"``: every round waits for all its probes (the old barrier).
    ``spare``: a worker with nothing the search needs runs the next probe of ``state.spare`` (driver.spare_work),
    as the workers do with CAPACITY_SEARCH_WORKERS set; a submitted probe never waits behind a spare one."""
    from planner.capacity.core.driver import advance, estimate_start, probe_inputs, subs_of
    from planner.comparisons.core.bundles import bundle_names
    from planner.comparisons.core.runner import engine_scenario_dict, load_workload, with_seed
    from simulations.engine import parse_scenario

    names = set(bundle_names())
    started = time.perf_counter()
    first = with_seed(base, spec.seeds[0])
    wl = load_workload(first, parse_scenario(engine_scenario_dict(first, {"strategy": "static", "key": "s"})))
    start = {s.key: estimate_start(base, wl) for s in subs_of(spec, base, names)}
    known: dict[str, dict] = {}
    cpu: dict[str, float] = {}
    flying: dict = {}  # future -> probe id
    spared: list[str] = []  # probe ids run as spare work
    steps = 0
    with ProcessPoolExecutor(max_workers=workers, initializer=_init, initargs=(base,)) as pool:

        def fill(ids: list[str], limit: float) -> None:
            for pid in ids:
                if len(flying) >= limit:
                    return
                if pid not in known and pid not in flying.values():
                    flying[pool.submit(_probe, probe_inputs(state.subs, pid))] = pid
                    if limit != math.inf:
                        spared.append(pid)

        while True:
            state = advance(spec, base, known, start, names)
            steps += 1
            if state.done:
                break
            fill(state.pending, math.inf)
            if spare and stepping == "probe":
                fill(state.spare, workers)
            wanted = "ALL_COMPLETED" if stepping == "round" else "FIRST_COMPLETED"
            while flying:
                finished, _ = wait(list(flying), return_when=wanted)
                ready = False
                for fut in finished:
                    pid = flying.pop(fut)
                    known[pid], cpu[pid] = fut.result()
                    ready = ready or not any(_siblings(p) == _siblings(pid) for p in flying.values())
                if ready:  # the last seed of some (fleet, load) is in: the search can move
                    break
                if spare and stepping == "probe":
                    fill(state.spare, workers)
            print(f"  workers={workers} step {steps}: {len(known)} probes done, {len(flying)} running, "
                  f"{time.perf_counter() - started:.0f} s", flush=True)
    return {"wall_s": time.perf_counter() - started, "subs": state.subs, "known": known, "cpu": cpu, "steps": steps,
            "start": start, "names": names, "spared": spared}


def _used(pid: str, subs: dict, seeds: list[int]) -> bool:
    """Whether a probe run as spare work is one the finished search reads: its sub-search's rounds, bands or load
    check."""
    sub, fleet, seed, load = pid.split("|")
    entry = subs.get(sub) or {}
    rounds = {r["fleet"] for r in (entry.get("search") or {}).get("rounds") or []}
    if float(load) != 1.0:
        return bool(entry.get("load"))
    return fleet in rounds and (int(seed) in seeds or bool(entry.get("bands")))


def modelled_wall(base: dict, spec, run: dict, workers: int, stepping: str, spare: bool = True) -> float:
    """The wall time the same search would take on ``workers`` idle cores: the search is replayed with each probe
    taking its measured CPU seconds (list scheduling, first come first served, the same stepping and spare rules:
    of the spare work only the probes the measured run took), with no overhead and no other load. A model, not a
    measurement: it shows what the stepping and the probe mix allow."""
    import heapq

    from planner.capacity.core.driver import advance

    known, cpu, start, names = run["known"], run["cpu"], run["start"], run["names"]
    clock, done, queue, busy = 0.0, {}, [], []  # busy: heap of (finish time, probe id)
    spare_ids: list[str] = []

    def fill() -> None:
        while queue and len(busy) < workers:
            pid = queue.pop(0)
            heapq.heappush(busy, (clock + cpu[pid], pid))
        for pid in spare_ids:
            if len(busy) >= workers:
                break
            if pid not in done and pid not in {p for _, p in busy} and pid in known:
                heapq.heappush(busy, (clock + cpu[pid], pid))

    while True:
        state = advance(spec, base, done, start, names)
        if state.done:
            return clock
        missing = [pid for pid in state.pending if pid not in known]
        if missing:
            raise RuntimeError(f"the modelled search asked for {missing[0]}, which the measured one did not run")
        spare_ids = state.spare if spare and stepping == "probe" else []
        inflight = set(queue) | {pid for _, pid in busy}
        queue.extend(pid for pid in state.pending if pid not in inflight)
        fill()
        while busy:
            clock, pid = heapq.heappop(busy)
            done[pid] = known[pid]
            fill()
            left = set(queue) | {p for _, p in busy}
            if stepping == "round" and left:
                continue
            if stepping == "round" or not any(_siblings(p) == _siblings(pid) for p in left):
                break


def probe_costs(base: dict, spec, fleets: list[int]) -> dict:
    """CPU seconds of ONE probe per strategy (the first search seed, each strategy at its start fleet: the goodput
    table's estimate the search starts from), in this process, and a model of the whole search from them: per
    strategy F fleets x the search seeds, then the band draws and the load check, from one candidate replayed (the
    cheapest probe's: every other pruned) to all of them (none pruned or accepted; the load check the costliest's),
    divided by 2 idle workers with no overhead and perfect packing."""
    from planner.capacity.core.driver import estimate_start, probe_inputs, run_probe_inputs, subs_of
    from planner.capacity.core.probe import fleet_key
    from planner.comparisons.core.bundles import bundle_names
    from planner.comparisons.core.runner import engine_scenario_dict, load_workload, with_seed
    from simulations.engine import parse_scenario

    names = set(bundle_names())
    first = with_seed(base, spec.seeds[0])
    wl = load_workload(first, parse_scenario(engine_scenario_dict(first, {"strategy": "static", "key": "s"})))
    out: dict = {"probe": {}, "model": {}}
    subs = subs_of(spec, base, names)
    for sub in subs:
        fleet = fleet_key(estimate_start(base, wl))
        pid = f"{sub.key}|{fleet}|{spec.seeds[0]}|1"
        inputs = probe_inputs({sub.key: {"sub": sub.__dict__}}, pid)
        load = os.getloadavg()[0]
        cpu, wall = time.process_time(), time.perf_counter()
        outcome = run_probe_inputs(base, inputs)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        out["probe"][sub.key] = {"cpu_s": round(cpu, 2), "wall_s": round(wall, 2), "fleet": fleet,
                                 "requests": outcome["requests"], "load_before": round(load, 2)}
        print(f"  one probe of {sub.key}: {cpu:.1f} CPU-s ({wall:.1f} s wall at load {load:.1f}), "
              f"{outcome['requests']:,} requests, fleet {fleet}", flush=True)
    per = {k: v["cpu_s"] for k, v in out["probe"].items()}
    one_fleet = sum(per.values()) * len(spec.seeds)  # one fleet of every strategy on the search seeds
    bands_all = sum(per.values()) * spec.band_draws + max(per.values()) * len(spec.seeds)
    bands_one = min(per.values()) * (spec.band_draws + len(spec.seeds))
    for f in fleets:
        lo, hi = f * one_fleet + bands_one, f * one_fleet + bands_all
        out["model"][f] = {"search_cpu_s": round(f * one_fleet, 1), "bands_cpu_s": [round(bands_one, 1),
                                                                                  round(bands_all, 1)],
                           "cpu_s": [round(lo, 1), round(hi, 1)],
                           "idle_wall_2_workers_s": [round(lo / 2, 1), round(hi / 2, 1)]}
        print(f"  model, {f} fleets per strategy: search {f * one_fleet:,.0f} CPU-s ({f * len(spec.seeds)} probes "
              f"per strategy); bands and load check {bands_one:,.0f} (one candidate, the cheapest probe) to "
              f"{bands_all:,.0f} CPU-s (all replayed); {lo / 120:.1f}-{hi / 120:.1f} min on 2 idle workers",
              flush=True)
    return out


def main() -> int:
    os.environ.pop("DJANGO_SETTINGS_MODULE", None)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--band-draws", type=int, default=20)
    ap.add_argument("--strategies", default="static,reactive-unified,lt-ua,preserve.scaler-oracle,chiron.default")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--stepping", choices=["probe", "round"], default="probe",
                    help="replay the search after each finished (fleet, load) (the workers' way) or per round")
    ap.add_argument("--no-spare", action="store_true", help="idle workers wait instead of running the search's "
                    "likely next probes (driver.spare_work)")
    ap.add_argument("--probe-only", action="store_true", help="no search: the CPU seconds of one probe per strategy "
                    "at its start fleet and a model of the search from them (probe_costs)")
    ap.add_argument("--model-fleets", default="2,3,4,5,6", help="fleets per strategy's count search in the model")
    ap.add_argument("--dump", default="", help="write each pass's probe outcomes, CPU seconds and sub-searches "
                    "(JSON) to this file, the pass's worker count appended to the name")
    args = ap.parse_args()
    from planner.capacity.core.spec import parse_spec
    from planner.decisions.answer import build_answer

    base = bench_scenario(args.hours)
    spec = parse_spec({"strategies": args.strategies.split(","), "seeds": [int(s) for s in args.seeds.split(",")],
                       "band_draws": args.band_draws})
    out = {"hours": args.hours, "strategies": spec.strategies, "seeds": spec.seeds, "band_draws": spec.band_draws,
           "stepping": args.stepping, "cpus": os.cpu_count(), "passes": {}}
    if args.probe_only:
        out.update(probe_costs(base, spec, [int(f) for f in args.model_fleets.split(",")]))
        print(json.dumps(out))
        return 0
    for n in [int(w) for w in args.workers.split(",")]:
        load_before = os.getloadavg()
        run = search(base, spec, n, args.stepping, spare=not args.no_spare)
        load_after = os.getloadavg()
        known, subs = run["known"], run["subs"]
        answer = build_answer(spec, base, subs)
        by_kind = {"search": 0, "bands": 0, "load": 0}
        band_seeds = set(spec.band_seeds)
        cpu_by_strategy: dict[str, float] = {}
        for pid in known:
            sub, _, seed, load = pid.split("|")
            by_kind["load" if float(load) != 1.0 else "bands" if int(seed) in band_seeds else "search"] += 1
            cpu_by_strategy[sub] = cpu_by_strategy.get(sub, 0.0) + run["cpu"][pid]
        cpu_total = sum(run["cpu"].values())
        out["passes"][n] = {
            "wall_s": round(run["wall_s"], 1), "probe_cpu_s": round(cpu_total, 1), "probes": len(known),
            "steps": run["steps"], "probes_by_phase": by_kind, "probe_cpu_s_by_strategy": {k: round(v, 1) for k, v in cpu_by_strategy.items()},
            "pruned": sorted(k for k, e in subs.items() if e.get("pruned")),
            "requests": sum(o["requests"] for o in known.values()), "headline": answer["headline"],
            "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in load_after],
            "spare_probes": len(run["spared"]), "spare_probes_used": sum(1 for p in run["spared"] if _used(p, subs, spec.seeds)),
            "modelled_idle_wall_s": {f"{mode}/{w}": round(modelled_wall(base, spec, run, w, mode, not args.no_spare), 1)
                                     for mode in ("round", "probe") for w in (1, 2)}}
        if args.dump:
            Path(f"{args.dump}.{n}").write_text(json.dumps({"known": known, "cpu": run["cpu"], "subs": subs,
                                                            "start": run["start"]}, default=str))
        print(f"workers={n}: {run['wall_s']:.1f} s wall, {cpu_total:.1f} CPU-s in {len(known)} probes "
              f"({run['steps']} steps; {len(run['spared'])} of them spare work, "
              f"{out['passes'][n]['spare_probes_used']} used), load average {load_before[0]:.2f} before, "
              f"{load_after[0]:.2f} after; "
              f"{answer['headline']}", flush=True)
        model = out["passes"][n]["modelled_idle_wall_s"]
        print("  modelled on idle cores from these probes' CPU seconds: " + ", ".join(
            f"{k.replace('/', ' stepping, ')} workers {v:.1f} s" for k, v in model.items())
            + f"; speed-up 1 -> 2: {model['round/1'] / model['round/2']:.2f}x by round, "
              f"{model['probe/1'] / model['probe/2']:.2f}x by probe", flush=True)
    walls = {n: p["wall_s"] for n, p in out["passes"].items()}
    if 1 in walls and 2 in walls:
        out["speedup_1_to_2"] = round(walls[1] / walls[2], 2)
        print(f"speed-up 1 -> 2 workers: {out['speedup_1_to_2']:.2f}x", flush=True)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
