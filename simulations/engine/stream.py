"""Streamed replay (issue 15): a long horizon in bounded memory, results accumulated online.

``simulate_stream(scenario, trace=None, chunk_s=3600)`` replays the workload chunk by chunk (``chunk_s`` of
simulated time each): a chunk's requests are read (a Parquet trace in row batches through pyarrow; a synthetic
workload one generated day at a time), simulated, folded into a ``StreamAccumulator`` and dropped, so memory is
one chunk's, whatever the horizon. The fleet carries over: each chunk starts with the instance count every
(region, model) endpoint had at the end of the previous chunk (serving + provisioning, within min/max), and the
regions' spot pools and free VMs as they were left.

**What is approximate, and by how much** (measured on the bench day, BENCHMARKS.md "Month scale"): a chunk's
requests run to completion without the next chunk's arrivals, and the next chunk starts with idle instances; its
instances' life times restart (GPU-hours of a chunk's drain tail overlap the next chunk's start), and the
autoscaler's cooldown and state restart at every boundary. The per-request table of the default mode
(``simulate``) stays exact and stays the default; streaming is chosen by ``--stream`` on the light CLI
(``python -m simulations.engine.run``) and by the month benchmark.

**Accumulated results.** Exact: request, completion and drop counts (by tier and reason), sums and means of TTFT,
E2E and queueing, SLO-attainment counts, GPU-hours, cost, energy, scale events, preemptions; per-hour rollups per
endpoint and tier (requests by arrival hour, completions, TTFT and E2E sums, SLO met). Percentiles come from
fixed-bin logarithmic histograms (``LogHistogram``): a reported percentile is within ``REL_ERR`` (0.5 %) relative
of the exact nearest-rank percentile (``numpy.percentile(..., method="inverted_cdf")``) for values in
[1e-4 s, 1e6 s] (below: reported as 0, absolute error < 1e-4 s). Histograms merge by adding counts, so chunks (or
separate runs, e.g. one per day) combine exactly.
"""

from __future__ import annotations

import gc
import math
from dataclasses import replace

import numpy as np

from simulations.engine.config import TIERS

REL_ERR = 0.005
LO, HI = 1e-4, 1e6
RATIO = (1 + REL_ERR) / (1 - REL_ERR)  # bin [a, a*RATIO]: the harmonic mid-point is within REL_ERR of any value
NBINS = int(math.ceil(math.log(HI / LO) / math.log(RATIO)))
PCTS = (50, 90, 95, 99)


class LogHistogram:
    """Counts in fixed geometric bins over [LO, HI] plus an under- and an overflow bin; mergeable (add counts)."""

    def __init__(self) -> None:
        self.counts = np.zeros(NBINS + 2, dtype=np.int64)  # [0]: < LO, [1..NBINS]: bins, [NBINS+1]: >= HI

    def add(self, x: np.ndarray) -> None:
        x = np.asarray(x, dtype=np.float64)
        x = x[~np.isnan(x)]
        if not x.size:
            return
        idx = np.zeros(x.size, dtype=np.int64)
        ok = x >= LO
        idx[ok] = np.minimum(np.floor(np.log(x[ok] / LO) / math.log(RATIO)).astype(np.int64), NBINS) + 1
        # floating rounding at a bin edge: move into the bin that really holds the value
        lo_edge = LO * RATIO ** (idx[ok] - 1)
        fix = x[ok] < lo_edge
        sub = np.flatnonzero(ok)
        idx[sub[fix]] -= 1
        self.counts += np.bincount(idx, minlength=NBINS + 2)

    def merge(self, other: LogHistogram) -> None:
        self.counts += other.counts

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    def percentile(self, p: float) -> float | None:
        n = self.n
        if not n:
            return None
        k = max(1, int(math.ceil(p / 100.0 * n)))  # nearest rank (1-based), as method="inverted_cdf"
        b = int(np.searchsorted(np.cumsum(self.counts), k))
        if b == 0:
            return 0.0
        if b > NBINS:
            return HI
        a = LO * RATIO ** (b - 1)
        return 2 * a * (a * RATIO) / (a + a * RATIO)  # harmonic mid-point of [a, a*RATIO]


class Stat:
    """Exact count, sum and max, plus a LogHistogram, of one latency."""

    def __init__(self) -> None:
        self.n = 0
        self.total = 0.0
        self.max = 0.0
        self.hist = LogHistogram()

    def add(self, x: np.ndarray) -> None:
        if x.size:
            self.n += int(x.size)
            self.total += float(x.sum())
            self.max = max(self.max, float(x.max()))
            self.hist.add(x)

    def to_dict(self) -> dict:
        out = {f"p{p}": self.hist.percentile(p) for p in PCTS}
        out["mean"] = self.total / self.n if self.n else None
        out["max"] = self.max if self.n else None
        return out


SUMMED = ("gpu_hours", "serving_gpu_hours", "idle_gpu_hours", "provisioning_gpu_hours", "instance_hours",
          "cost_usd", "scale_outs", "scale_ins", "preemptions", "events", "energy_kwh", "energy_cost_usd")


class StreamAccumulator:
    """Everything a streamed replay reports, folded in one chunk result at a time."""

    def __init__(self, endpoint_names: list[str]) -> None:
        self.endpoint_names = endpoint_names
        self.tiers = {name: {"requests": 0, "completed": 0, "slo_met": 0.0, "ttft": Stat(), "e2e": Stat(),
                             "queueing": Stat(), "drop_reasons": {}} for name in TIERS}
        self.all = {"ttft": Stat(), "e2e": Stat(), "queueing": Stat()}
        self.totals = dict.fromkeys(SUMMED, 0.0)
        self.requests = self.completed = self.chunks = 0
        self.duration_s = 0.0
        # hourly rollups: hour -> array [endpoint, tier, field] (requests, completed, ttft sum, e2e sum)
        self.hourly: dict[int, np.ndarray] = {}

    def fold(self, result, t0: float, endpoint_names: list[str]) -> None:
        r = result.requests
        done = np.asarray(r["completed"], dtype=bool)
        tier = np.asarray(r["tier"], dtype=np.int64)
        ttft, e2e, queue = r["ttft_s"], r["e2e_s"], r["queueing_s"]
        self.requests += int(tier.size)
        self.completed += int(done.sum())
        self.chunks += 1
        self.duration_s = max(self.duration_s, t0 + float(result.summary["duration_s"]))
        for key in ("ttft", "e2e", "queueing"):
            self.all[key].add(np.asarray(r[key + "_s"])[done])
        for i, name in enumerate(TIERS):
            sel = tier == i
            if not sel.any():
                continue
            acc = self.tiers[name]
            d = done & sel
            acc["requests"] += int(sel.sum())
            acc["completed"] += int(d.sum())
            acc["ttft"].add(ttft[d])
            acc["e2e"].add(e2e[d])
            acc["queueing"].add(queue[d])
            t = result.tiers.get(name) or {}
            if t.get("slo_attainment") is not None:
                acc["slo_met"] += round(t["slo_attainment"] * t["requests"])
            for why, c in (t.get("drop_reasons") or {}).items():
                acc["drop_reasons"][why] = acc["drop_reasons"].get(why, 0) + c
        s = result.summary
        for k in SUMMED:
            v = s.get(k)
            if isinstance(v, (int, float)):
                self.totals[k] += v
        # hourly rollups by the request's arrival hour, endpoint and tier
        hour = ((np.asarray(r["arrival_s"]) + t0) // 3600).astype(np.int64)
        ep_idx = np.asarray(r["endpoint"], dtype=np.int64)
        remap = np.array([self.endpoint_names.index(n) if n in self.endpoint_names else -1
                          for n in endpoint_names] + [-1], dtype=np.int64)
        ep = remap[np.where(ep_idx >= 0, ep_idx, len(endpoint_names))]
        n_ep, n_t = len(self.endpoint_names) + 1, len(TIERS)
        ep = np.where(ep >= 0, ep, n_ep - 1)  # last row: never served
        h0 = int(hour.min()) if hour.size else 0
        key = ((hour - h0) * n_ep + ep) * n_t + tier
        size = (int(hour.max()) - h0 + 1) * n_ep * n_t if hour.size else 0
        fields = [np.bincount(key, minlength=size), np.bincount(key, weights=done, minlength=size),
                  np.bincount(key[done], weights=ttft[done], minlength=size),
                  np.bincount(key[done], weights=e2e[done], minlength=size)]
        block = np.stack(fields, axis=-1).reshape(-1, n_ep, n_t, 4)
        for j in range(block.shape[0]):
            if block[j, ..., 0].any():
                h = h0 + j
                if h in self.hourly:
                    self.hourly[h] += block[j]
                else:
                    self.hourly[h] = block[j].copy()

    def to_dict(self) -> dict:
        tiers = {}
        for name, acc in self.tiers.items():
            if not acc["requests"]:
                continue
            tiers[name] = {"requests": acc["requests"], "completed": acc["completed"],
                           "dropped": acc["requests"] - acc["completed"], "drop_reasons": acc["drop_reasons"],
                           "slo_attainment": acc["slo_met"] / acc["requests"],
                           "ttft": acc["ttft"].to_dict(), "e2e": acc["e2e"].to_dict(),
                           "queueing": acc["queueing"].to_dict()}
        names = self.endpoint_names + ["(not served)"]
        hourly = []
        for h in sorted(self.hourly):
            block = self.hourly[h]
            for e, ep_name in enumerate(names):
                for i, tier in enumerate(TIERS):
                    req, comp, s_ttft, s_e2e = block[e, i]
                    if req:
                        hourly.append({"hour": h, "endpoint": ep_name, "tier": tier, "requests": int(req),
                                       "completed": int(comp), "ttft_mean_s": s_ttft / comp if comp else None,
                                       "e2e_mean_s": s_e2e / comp if comp else None})
        summary = {"requests": self.requests, "completed": self.completed, "dropped": self.requests - self.completed,
                   "chunks": self.chunks, "duration_s": self.duration_s,
                   "ttft": self.all["ttft"].to_dict(), "e2e": self.all["e2e"].to_dict(),
                   "queueing": self.all["queueing"].to_dict(),
                   "slo_attainment": (sum(a["slo_met"] for a in self.tiers.values()) / self.requests
                                      if self.requests else None),
                   **{k: (int(v) if k in ("scale_outs", "scale_ins", "preemptions", "events") else v)
                      for k, v in self.totals.items()}}
        return {"summary": summary, "tiers": tiers, "hourly": hourly, "result_mode": "streaming",
                "percentile_rel_error": REL_ERR}


class StreamResult:
    def __init__(self, acc: StreamAccumulator) -> None:
        self.acc = acc

    def to_dict(self) -> dict:
        return self.acc.to_dict()


def _slice(workload, sel: np.ndarray, t0: float):
    from simulations.engine.workload import Workload

    opt = {k: (v[sel] if v is not None else None) for k, v in (
        ("deadline_s", workload.deadline_s), ("predicted_output_tokens", workload.predicted_output_tokens),
        ("ttft_slo_s", workload.ttft_slo_s), ("tpot_slo_s", workload.tpot_slo_s), ("class_id", workload.class_id))}
    if opt["deadline_s"] is not None:
        opt["deadline_s"] = opt["deadline_s"] - t0
    return Workload(arrival_s=workload.arrival_s[sel] - t0, input_tokens=workload.input_tokens[sel],
                    output_tokens=workload.output_tokens[sel], tier=workload.tier[sel], model=workload.model[sel],
                    region=workload.region[sel], model_names=workload.model_names,
                    region_names=workload.region_names, **opt)


def chunks_of(workload, chunk_s: float, t_base: float = 0.0):
    """Split an in-memory workload into (start time, chunk workload) pairs of ``chunk_s`` seconds."""
    arr = workload.arrival_s
    if not len(arr):
        return
    edges = np.arange(0.0, float(arr[-1]) + chunk_s, chunk_s)
    bounds = np.searchsorted(arr, edges, side="left").tolist() + [len(arr)]
    for j in range(len(edges)):
        a, b = bounds[j], bounds[j + 1]
        if b > a:
            t0 = float(edges[j])
            yield t_base + t0, _slice(workload, slice(a, b), t0)


def _carry(scenario, sim):
    """The next chunk's scenario: each endpoint's instance count and the regions' spot pools / free VMs as left."""
    active: dict = {}
    for ep in sim.endpoints:
        key = (ep.region, ep.model)
        active[key] = active.get(key, 0) + ep.n_active
    endpoints = []
    for e in scenario.fleet.endpoints:
        n = active.get((e.region, e.model), e.initial)
        lo = e.min_instances or 0
        hi = e.max_instances if e.max_instances is not None else n
        endpoints.append(replace(e, initial=int(min(max(n, lo), hi))))
    regions = []
    for r_idx, r in enumerate(scenario.fleet.regions):
        spot = {m: int(sim.spot_count(r.name, m)) for m in r.spot_pool} if r.spot_pool else r.spot_pool
        vm = int(sim.vm_free[r_idx]) if hasattr(sim, "vm_free") else r.vm_capacity
        regions.append(replace(r, spot_pool=spot, vm_capacity=vm))
    fleet = replace(scenario.fleet, endpoints=tuple(endpoints), regions=tuple(regions))
    return replace(scenario, fleet=fleet)


def run_chunk(scenario, workload):
    """One chunk: the simulator and its result (``simulate`` without the validity report)."""
    import time

    from simulations.engine.energy import add_energy
    from simulations.engine.loop import Simulator
    from simulations.engine.metrics import build_result

    start = time.perf_counter()
    sim = Simulator(scenario, workload)
    sim.run()
    result = build_result(sim, time.perf_counter() - start)
    add_energy(result, scenario)
    return sim, result


def simulate_stream(scenario, *, trace=None, chunk_s: float = 3600.0, workload_chunks=None, on_chunk=None):
    """Replay chunk by chunk (see the module docstring). ``workload_chunks``: an iterable of (start time,
    Workload) pairs (else the scenario's workload, or ``trace``, read and split); ``on_chunk(i, t0, result)``
    is called after each chunk (progress, measurements)."""
    from simulations.engine.run import light_workload

    if workload_chunks is None:
        if trace is not None and str(trace).lower().endswith(".parquet"):
            workload_chunks = _parquet_chunks(scenario, trace, chunk_s)
        else:
            workload_chunks = chunks_of(light_workload(scenario, trace), chunk_s)
    acc = None
    current = scenario
    for i, (t0, w) in enumerate(workload_chunks):
        sim, result = run_chunk(current, w)
        names = [ep.name for ep in sim.endpoints]
        if acc is None:
            acc = StreamAccumulator(names)
        for n in names:
            if n not in acc.endpoint_names:
                acc.endpoint_names.append(n)
        acc.fold(result, t0, names)
        if on_chunk is not None:
            on_chunk(i, t0, result)
        current = _carry(scenario, sim)
        del sim, result, w
        gc.collect()  # the simulator, its policies and endpoints reference each other: free the chunk now
    return StreamResult(acc if acc is not None else StreamAccumulator([]))


def _parquet_chunks(scenario, trace, chunk_s: float):
    """A Parquet trace read in row batches (pyarrow) and cut at chunk boundaries; rows must be sorted by arrival."""
    from simulations.engine.traceio import iter_parquet_chunks
    from simulations.engine.workload import Workload

    wl = scenario.workload_spec
    models = sorted({e.model for e in scenario.fleet.endpoints})
    rate = float(wl.get("rate_scale", 1.0))
    pending: dict | None = None
    first = None
    chunk_end = chunk_s

    def make(cols, t0):
        w = Workload.from_arrays(cols, default_model=wl.get("model", models[0]),
                                 default_region=wl.get("region", scenario.fleet.region_names[0]),
                                 default_tier=wl.get("tier", "IW-F"))
        shift = (float(cols["arrival_s"].min()) - first) / rate - t0
        w.arrival_s = w.arrival_s / rate + shift
        return t0, w

    chunk_start = 0.0
    for cols in iter_parquet_chunks(trace):
        if first is None and len(cols["arrival_s"]):
            first = float(cols["arrival_s"][0])
        pending = cols if pending is None else {k: np.concatenate([pending[k], cols[k]]) for k in cols}
        t = (pending["arrival_s"] - first) / rate
        while len(t) and t[-1] >= chunk_end:
            cut = int(np.searchsorted(t, chunk_end, side="left"))
            if cut:
                yield make({k: v[:cut] for k, v in pending.items()}, chunk_start)
            pending = {k: v[cut:] for k, v in pending.items()}
            t = t[cut:]
            chunk_start, chunk_end = chunk_end, chunk_end + chunk_s
    if pending is not None and len(pending["arrival_s"]):
        yield make(pending, chunk_start)
