"""Streamed replay: a long horizon in bounded memory, results accumulated online, exact.

``simulate_stream(scenario, trace=None, chunk_s=3600)`` runs ONE continuous simulation fed chunk by chunk
(``chunk_s`` of simulated time each; a Parquet trace read in row batches through pyarrow, a synthetic workload one
generated day at a time): the ``Simulator`` runs to the next chunk's start (``run(until=t)``), the finished
requests are folded into a ``StreamAccumulator`` (streamacc.py) and their per-request rows dropped, the next
chunk is appended (window.py). So the streamed run is the unstreamed run
(same events, same decisions): counts, GPU-hours, cost, energy, scale events, SLO attainment and means are the
unstreamed run's; memory holds the requests in flight and the current chunk (see window.py for the bound and for the
policies that keep every row). The per-request table of the
default mode (``simulate``) stays the default; streaming is chosen by ``--stream`` on the light CLI
(``python -m simulations.engine.run``) and by the month benchmark.

**Percentiles** come from fixed-bin logarithmic histograms (``LogHistogram``): a reported percentile is within
``REL_ERR`` (0.5 %) relative of the exact nearest-rank percentile (``numpy.percentile(..., method="inverted_cdf")``)
for values in [1e-4 s, 1e6 s] (below: reported as 0, absolute error < 1e-4 s). Histograms merge by adding counts,
so separate runs (e.g. one per strategy or seed) combine exactly.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from simulations.engine.results.sketch import HI, LO, REL_ERR, LogHistogram, Stat  # noqa: F401  (re-exported)
from simulations.engine.scenario.config import ScenarioError
from simulations.engine.simulator.loop import Simulator
from simulations.engine.simulator.scenario import build_workload
from simulations.engine.streaming import window
from simulations.engine.streaming.streamacc import ChunkInfo, StreamAccumulator, StreamResult
from simulations.engine.workload.traceio import iter_parquet_chunks
from simulations.engine.workload.workload import Workload


def _slice(workload, sel: np.ndarray, t0: float):
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


def _absolute(w, t0: float):
    """A chunk's workload with absolute arrival times (chunks are given relative to their start ``t0``; for the
    chunks of ``chunks_of`` the round trip is exact: ``a - t0`` is exact for ``t0 <= a <= 2 t0``)."""
    if t0 == 0.0:
        return w
    kw = {"arrival_s": w.arrival_s + t0}
    if w.deadline_s is not None:
        kw["deadline_s"] = w.deadline_s + t0
    return replace(w, **kw)


def _count_unsimulated(sim, acc, nxt, i: int, on_chunk) -> None:
    """A chunk after the run's time limit: its requests are counted (dropped, unfinished), not simulated."""
    acc.fold_unsimulated(_absolute(nxt[1], nxt[0]))
    acc.chunks += 1
    if on_chunk is not None:
        on_chunk(i, nxt[0], ChunkInfo({
            "requests": len(nxt[1]), "t0": nxt[0], "t1": nxt[0], "sim_time_s": sim.state.now,
            "folded": acc.requests, "completed": acc.completed, "window": int(sim.state.n),
            "in_flight": window.in_flight(sim), "events": int(sim.state.events), "past_time_limit": True}))


def _run_to(sim, nxt, i: int, limit: float):
    """Run up to the next chunk's first arrival (to the end without one): (time reached, the next chunk's
    workload in absolute time or None, whether the run's time limit lies before the next chunk)."""
    if nxt is None:
        sim.more_arrivals = False
        sim.run()
        return sim.state.now, None, False
    w_next = _absolute(nxt[1], nxt[0])
    t1 = min(nxt[0], float(w_next.arrival_s[0])) if len(w_next) else nxt[0]
    last = float(sim.workload.arrival_s[-1]) if sim.state.n else -math.inf
    if len(w_next) and float(w_next.arrival_s[0]) < last:
        raise ValueError(f"simulate_stream: chunk {i + 1} (t0={nxt[0]:g}) starts at "
                         f"{float(w_next.arrival_s[0]):g} s, before the previous chunk's last arrival "
                         f"({last:g} s): chunks must be in time order")
    sim.run(until=t1)
    # the engine's max_time_s lies before the next chunk: the run is over (as unstreamed, the requests
    # it did not reach count as dropped "unfinished"; their rows never enter the window)
    stopped = limit < t1
    if not stopped:
        sim.state.events -= 1  # the loop counts the iteration that stopped it; an unstreamed run does not
    return t1, w_next, stopped


def simulate_stream(scenario, *, trace=None, chunk_s: float = 3600.0, workload_chunks=None, on_chunk=None):
    """One continuous simulation fed chunk by chunk, results folded online (see the module docstring).

    ``workload_chunks``: an iterable of (start time, Workload) pairs, sorted, each chunk's arrival times relative
    to its start (else the scenario's workload, or ``trace``, read and split into ``chunk_s`` seconds; a Parquet
    trace in row batches). ``on_chunk(i, t0, info)`` is called once per chunk after the run passed it
    (``info``: a ``streamacc.ChunkInfo``; ``info.summary["requests"]`` is the chunk's request count). Returns a
    ``StreamResult``."""

    for ep in scenario.fleet.endpoints:
        if ep.deployment.prefix_caching:
            raise ScenarioError(f"deployments.{ep.deployment.name}.prefix_caching",
                                "prefix caching is not simulated in streamed runs: use the result mode 'table'")
    if workload_chunks is None:
        if trace is not None and str(trace).lower().endswith(".parquet"):
            workload_chunks = _parquet_chunks(scenario, trace, chunk_s)
        else:
            workload_chunks = chunks_of(build_workload(scenario, trace=trace), chunk_s)
    chunks = iter(workload_chunks)
    first = next(chunks, None)
    if first is None:
        return StreamResult({"summary": {"requests": 0, "completed": 0, "dropped": 0, "chunks": 0}, "tiers": {},
                             "hourly": [], "hourly_endpoints": [], "usage": [], "result_mode": "streaming",
                             "percentile_rel_error": REL_ERR, "window": {"exact": True}})
    t0, w = first
    sim = Simulator(scenario, _absolute(w, t0))
    window.prepare(sim)
    trim = window.stream_safe(sim)
    acc = StreamAccumulator(sim)
    i, n_chunk = 0, len(w)
    del w, first
    limit = float(sim.engine.max_time_s)
    stopped = False  # the run reached its time limit: the chunks after it are counted, not simulated
    pending = None
    while True:
        nxt, pending = (pending if pending is not None else next(chunks, None)), None
        if stopped:
            if nxt is None:
                break
            _count_unsimulated(sim, acc, nxt, i, on_chunk)
            i += 1
            continue
        t1, w_next, stopped = _run_to(sim, nxt, i, limit)
        acc.chunks += 1
        acc.max_window = max(acc.max_window, int(sim.state.n))
        if stopped:
            pending = nxt  # counted at the top of the loop
        elif nxt is not None:
            keep = window.keep_mask(sim) if trim else None
            if keep is not None:
                acc.fold_requests(sim, np.flatnonzero(~keep))
            acc.fold_events(sim)
            acc.fold_timeline(sim)
            window.extend(sim, window.prepare_chunk(sim, w_next), keep)
        w_next = None
        if on_chunk is not None:
            on_chunk(i, t0, ChunkInfo({
                "requests": n_chunk, "t0": t0, "t1": t1, "sim_time_s": sim.state.now, "folded": acc.requests,
                "completed": acc.completed, "window": int(sim.state.n), "in_flight": window.in_flight(sim), "events": int(sim.state.events)}))
        if nxt is None:
            break
        i += 1
        t0, n_chunk = nxt[0], len(nxt[1])
        nxt = None
    return StreamResult(acc.finish(sim, scenario))


def _parquet_chunks(scenario, trace, chunk_s: float):
    """A Parquet trace read in row batches (pyarrow) and cut at chunk boundaries; rows must be sorted by arrival."""
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
