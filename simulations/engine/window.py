"""The sliding request window of a streamed run (issue 15 item 2): one continuous simulation whose per-request
arrays hold only the requests from the oldest one still in flight onwards.

A streamed run (stream.py) is one ``Simulator`` run chunk by chunk: ``sim.run(until=t1)`` processes every event
before ``t1`` (the next chunk's first instant), then ``extend(sim, chunk, base)`` appends the next chunk's
requests and drops the first ``base`` rows of every per-request array: requests already finished (completed or
dropped) below the oldest one still in flight, folded into the accumulator just before. Request ids are
positions in the window: dropping ``base`` rows shifts every id the engine holds by ``-base`` (instances'
waiting queues, running sets, finish heaps, prefill and swap lists, endpoint backlogs, queued deliveries, the
drop log). A uniform shift keeps every comparison between ids, so heap orders and tie-breaks are those of the
unstreamed run; times are never shifted (absolute simulated seconds throughout), so the arithmetic is the
same; the network delay of a request is drawn from its global id (``ShiftedDelays``). The loop itself is the
default one (``run(until)`` stops before the first event at or after ``until``, so arrivals at that instant
still come first, as in one run).

**Bound.** The window spans the requests from the oldest unfinished one to the last one added: at most one
chunk plus every request that arrived after the oldest in-flight request. A request that stays in flight for long
(deferred batch work, a deep overload queue) holds the window open behind it.

**Policies.** Ids may only be shifted where the engine knows them. A policy that keeps request ids across events
must define ``rebase(sim, base)`` (shift its own) or the run keeps the whole window (``base`` stays 0: exact,
memory grows as in an unstreamed run); one that keeps none says ``stream_safe = True``. A policy reading
``observed()`` history declares how far back (``observed_history_s``): those arrivals stay in the window.
"""

from __future__ import annotations

from heapq import heapify

import numpy as np

from simulations.engine.config import TIER_INDEX
from simulations.engine.entities import RELEASED
from simulations.engine.state import EV_DELIVER

# per-request arrays of the Simulator: (attribute, dtype, initial value for a new request or None = workload column)
REQUEST_ARRAYS = (
    ("req_arr", np.float64, "arrival_s"), ("req_inp", np.int64, "input_tokens"),
    ("req_out", np.int64, "output_tokens"), ("req_tier", np.int8, "tier"), ("req_model", np.int32, "model"),
    ("req_region", np.int32, "region"),
)
STATE_ARRAYS = (
    ("gen", np.int32, 0), ("join", np.int32, 0), ("fin", np.int32, 0), ("t_first", np.float64, np.nan),
    ("t_done", np.float64, np.nan), ("t_admit", np.float64, np.nan), ("served_ep", np.int32, -1),
    ("served_inst", np.int32, -1), ("preempted", np.int32, 0), ("tok_t", np.float64, np.nan),
    ("tbt_max", np.float64, 0.0),
)
OPTIONAL_COLUMNS = ("deadline_s", "predicted_output_tokens", "ttft_slo_s", "tpot_slo_s", "class_id")


class ShiftedDelays:
    """The run's ``NetworkDelays`` read by global request id: window id + ``base`` (the ids dropped so far)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.base = 0

    def __getitem__(self, rid: int) -> float:
        return self.inner[rid + self.base]


def stream_safe(sim) -> bool:
    """Whether the run's window may drop finished requests: every policy holds no request id across events (or
    shifts its own by ``rebase``)."""
    for policy in (sim.autoscaler, sim.scheduler, sim.region_router, sim.endpoint_router, sim.instance_router):
        if hasattr(policy, "rebase"):
            continue
        if not getattr(policy, "stream_safe", False):
            return False
    return True


def history_s(sim) -> float:
    """The longest ``observed()`` history (seconds before now) a policy declares it reads (``observed_history_s``)."""
    return max([float(getattr(p, "observed_history_s", 0.0) or 0.0) for p in (
        sim.autoscaler, sim.scheduler, sim.region_router, sim.endpoint_router, sim.instance_router)])


def trim_base(sim) -> int:
    """How many window rows a streamed run may drop now: below the oldest unfinished request, and below the
    arrivals a policy still reads through ``observed()`` (``history_s``)."""
    base = oldest_unfinished(sim)
    h = history_s(sim)
    if h > 0 and base:
        keep = int(np.searchsorted(np.asarray(sim.req_arr)[:base], sim.now - h, side="left"))
        base = min(base, keep)
    return base


def prepare(sim) -> None:
    """Before the first ``run``: global-id network delays, later chunks announced (ticks and samples go on)."""
    sim.net_delay = ShiftedDelays(sim.net_delay)
    sim.rid_base = 0
    sim.more_arrivals = True


def oldest_unfinished(sim) -> int:
    """Window position of the first request not finished yet (completed or dropped); the arrived count if all."""
    k = int(sim.n_arrived)
    if k == 0:
        return 0
    todo = np.isnan(np.asarray(sim.t_done)[:k])
    if sim.dropped:
        ids = np.fromiter(sim.dropped.keys(), dtype=np.int64, count=len(sim.dropped))
        todo[ids[ids < k]] = False
    first = int(np.argmax(todo))
    return first if todo[first] else k


def in_flight(sim) -> int:
    """Requests arrived and not finished (completed or dropped)."""
    k = int(sim.n_arrived)
    todo = int(np.isnan(np.asarray(sim.t_done)[:k]).sum())
    return todo - sum(1 for r in sim.dropped if r < k and np.isnan(sim.t_done[r]))


def prepare_chunk(sim, chunk):
    """A chunk's workload as the run needs it: remapped to the fleet's names, context limits applied (counted into
    ``sim.context_limits``), the scenario's output-length predictor applied (drawn per chunk: with a noisy
    predictor the draws differ from an unstreamed run's)."""
    from dataclasses import replace

    from simulations.engine.limits import apply_context_limits

    sc = sim.scenario
    if sc.policy.predictor:
        from simulations.engine.predictors import predict_output_lengths

        chunk = replace(chunk, predicted_output_tokens=predict_output_lengths(
            chunk, sc.policy.predictor, sc.policy.predictor_params, sc.engine.seed))
    chunk = chunk.remap(sim.model_names, sim.region_names)
    chunk, info = apply_context_limits(sim.fleet, chunk, sim.model_names, sc.engine.over_context)
    total = sim.context_limits
    for k, v in info.items():
        if isinstance(v, int) and isinstance(total.get(k), int):
            total[k] += v
    return chunk


def extend(sim, chunk, base: int) -> None:
    """Drop the first ``base`` window rows (finished, already folded) and append ``chunk`` (a Workload from
    ``prepare_chunk``, arrivals at or after the time the run stopped)."""
    from simulations.engine.workload import Workload

    n = int(sim.n)
    w = sim.workload
    cols = {}
    for name in ("arrival_s", "input_tokens", "output_tokens", "tier", "model", "region"):
        cols[name] = np.concatenate([getattr(w, name)[base:n], getattr(chunk, name)])
    for name in OPTIONAL_COLUMNS:
        a, b = getattr(w, name), getattr(chunk, name)
        if a is None and b is None:
            cols[name] = None
            continue
        fill = np.nan if name in ("deadline_s", "ttft_slo_s", "tpot_slo_s") else -1
        dtype = (a if a is not None else b).dtype
        a = a[base:n] if a is not None else np.full(n - base, fill, dtype=dtype)
        b = b if b is not None else np.full(len(chunk), fill, dtype=dtype)
        cols[name] = np.concatenate([a, b])
    nw = Workload(model_names=w.model_names, region_names=w.region_names, **cols)
    m = len(nw)
    sim.workload = nw
    for attr, dtype, col in REQUEST_ARRAYS:
        setattr(sim, attr, memoryview(np.ascontiguousarray(getattr(nw, col), dtype=dtype)))
    prio = np.asarray(sim.req_prio)[base:n]  # may have been escalated by a queue manager
    new_prio = (chunk.tier == TIER_INDEX["NIW"]).astype(np.int8)
    sim.req_prio = memoryview(np.concatenate([prio, new_prio]))
    for attr, dtype, fill in STATE_ARRAYS:
        a = np.empty(m, dtype=dtype)
        a[:n - base] = np.asarray(getattr(sim, attr))[base:n]
        a[n - base:] = fill
        setattr(sim, attr, memoryview(a))
    sim.req_pred_out = nw.predicted_output_tokens
    sim.n = m
    if base:
        _shift_ids(sim, base)
    sim._bind_views()


def _shift_ids(sim, b: int) -> None:
    """Every request id the engine holds, minus ``b`` (ids below ``b`` are finished: only stale entries remain)."""
    sim.n_arrived -= b
    sim.rid_base += b
    sim.net_delay.base += b
    for inst in sim.instances:
        if inst.state == RELEASED:
            inst.runs_i0, inst.runs_meta, inst.runs_old = [], [], []  # read only for its running requests
            if not (inst.waiting or inst.running or inst.fin_heap or inst.swapped or inst.pending):
                continue
        if inst.waiting:
            inst.waiting[:] = [(k, s, r - b) for k, s, r in inst.waiting]  # same positions: still a heap / sorted
        if inst.running:
            items = [(r - b, v) for r, v in inst.running.items()]  # same insertion order
            inst.running.clear()
            inst.running.update(items)
        if inst.fin_heap:
            fh = inst.fin_heap
            fh[:] = [(f, r - b) for f, r in fh if r >= b]  # entries of finished requests are stale: gone
            heapify(fh)
        for entry in inst.prefilling:  # shared with a chunked-prefill step's batch: shifted in place
            entry[0] -= b
        if inst.batch and not isinstance(inst.batch[0], tuple):
            inst.batch[:] = [r - b for r in inst.batch]
        if inst.swapped:
            inst.swapped[:] = [r - b for r in inst.swapped]
        if inst.pending:
            inst.pending[:] = [(r - b, s) for r, s in inst.pending]
    for ep in sim.endpoints:
        if ep.backlog:
            ep.backlog[:] = [r - b for r in ep.backlog]
    heap = sim.heap
    for j, ev in enumerate(heap):
        if ev[2] == EV_DELIVER:  # (t, seq, kind, rid, endpoint): ordered by (t, seq), the id is never compared
            heap[j] = (ev[0], ev[1], ev[2], ev[3] - b, ev[4])
    sim.dropped = {r - b: why for r, why in sim.dropped.items() if r >= b}
    sim.cold_started = {r - b for r in sim.cold_started if r >= b}
    if sim._done_buf:
        sim._done_buf = [r - b for r in sim._done_buf if r >= b]
    for policy in (sim.autoscaler, sim.scheduler, sim.region_router, sim.endpoint_router, sim.instance_router):
        if hasattr(policy, "rebase"):
            policy.rebase(sim, b)
